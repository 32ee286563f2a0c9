"""The child side of an isolated target: ``python -m kvproof.stateful_tests.harness.host TARGET``.

It makes trees of one target (``targets.load_target``) and answers calls on them, one request at
a time, read from stdin and answered on stdout as length-prefixed pickles (both ends are kvproof;
pickling carries every Python value a row passes, hostile ones included). Its stdout carries
nothing else: Python's own ``sys.stdout`` is pointed at stderr, where the target's logs go too.

Requests: ``("open",)``, ``("call", tree, method, args)``, ``("calls", tree, method, [args, ...])``,
``("steps", tree, "steps", [(method, args), ...])``, ``("flush",)``, ``("close", tree)``. ``calls`` is a batch
(one round trip for many queries): the method is called with each argument tuple in turn, and the answer is
``("ok", [value, ...])`` ending at the first error, given as its error tuple, after which nothing more is called
(as a loop of ``call`` requests would stop). ``steps`` is a differential run's op and the reads after it: each
call is answered alone, ``("ok", [answer, ...])`` with one ``("ok", value)`` or error tuple per call, an error
ending only its own call.
Answers: ``("ok", value)``, or ``("error", type name, module, message, is_panic)`` for an exception
the target raised (the parent rebuilds it, ``isolation.rebuild``); a ``MemoryError`` (the address-space
limit met by Python code) is answered ``("memory", message)`` and the host exits. ``find_matches`` answers its
scores as a plain dict, the dump its lines. A request that cannot be unpickled (an argument of a
class the child cannot import) is answered ``("unpicklable", message)``.

The parent (``harness.isolation``) sets the limits (address space, time per call) and reads a
crash, an abort, an allocation failure or a hang from outside.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from collections.abc import Callable
from typing import Any

HEADER = struct.Struct("!Q")


def read_frame(fd: int) -> bytes | None:
    """One length-prefixed frame from ``fd``, or None at end of file."""
    head = _read_exactly(fd, HEADER.size)
    if head is None:
        return None
    body = _read_exactly(fd, HEADER.unpack(head)[0])
    if body is None:
        raise EOFError("the stream ended inside a frame")
    return body


def _read_exactly(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None if left == n else b""
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_frame(fd: int, body: bytes) -> None:
    data = HEADER.pack(len(body)) + body
    while data:
        data = data[os.write(fd, data) :]


def info_of(tree: Any) -> dict[str, Any]:
    """What a tree offers, for the parent's proxy (capabilities, surface, rule set)."""
    from .surface import surface_of

    return {
        "dump": callable(getattr(tree, "dump_tree_as_events", None)),
        "rank_removal": callable(getattr(tree, "remove_worker_dp_rank", None)),
        "many": callable(getattr(tree, "find_matches_many", None)),
        "send_many": callable(getattr(tree, "send_many", None)),
        "lockstep": bool(getattr(tree, "lockstep", False)),
        "surface": surface_of(tree),
        "rules": getattr(tree, "rules", None),
    }


def plain(value: Any) -> Any:
    """A call's answer as plain data: an ``OverlapScores``-like object as its scores and frequencies."""
    if hasattr(value, "scores") and not isinstance(value, dict):
        return {"scores": dict(value.scores), "frequencies": list(getattr(value, "frequencies", []) or [])}
    if isinstance(value, list) and value and hasattr(value[0], "scores"):
        return [plain(v) for v in value]
    return value


def error_of(exc: BaseException) -> tuple[Any, ...]:
    """An error of the target as the parent rebuilds it: ``("error", class name, module, message, is a panic)``."""
    return ("error", type(exc).__name__, type(exc).__module__, str(exc), type(exc).__name__ == "PanicException")


def step(tree: Any, method: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """One call of a ``steps`` request: ``("ok", answer)`` or the error it raised (``answer_of``)."""
    return answer_of(lambda: getattr(tree, method)(*args))


def answer_of(call: Callable[[], Any]) -> tuple[Any, ...]:
    """``("ok", plain answer)`` of ``call()``, or the error it raised as its error tuple (running out of memory, and
    an interrupt, still end the request)."""
    try:
        return ("ok", plain(call()))
    except MemoryError:
        raise
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return error_of(exc)


def serve(name: str) -> None:
    os.environ["KVPROOF_IN_HOST"] = "1"  # targets.HOST_VARIABLE: make the target itself here, not another host
    from .targets import dispose, load_target

    out = os.dup(1)
    os.dup2(2, 1)  # nothing but frames on the channel: print() and the target's own writes go to stderr
    sys.stdout = sys.stderr
    target = load_target(name)
    trees: dict[int, Any] = {}
    next_id = 1
    while True:
        frame = read_frame(0)
        if frame is None:
            break
        try:
            request = pickle.loads(frame)
        except Exception as exc:  # an argument whose class this process cannot import
            write_frame(out, pickle.dumps(("unpicklable", f"{type(exc).__name__}: {exc}")))
            continue
        kind = request[0]
        try:
            if kind == "open":
                if target.factory is None:
                    raise RuntimeError(f"{name} is unavailable: {target.reason}")
                tree = target.factory()
                trees[next_id] = tree
                answer: Any = ("ok", (next_id, info_of(tree)))
                next_id += 1
            elif kind == "call":
                _, tree_id, method, args = request
                answer = ("ok", plain(getattr(trees[tree_id], method)(*args)))
            elif kind == "calls":  # one method called with each argument tuple in turn, stopping at the first error
                _, tree_id, method, many = request
                call, done = getattr(trees[tree_id], method), []
                for args in many:
                    one = answer_of(lambda: call(*args))
                    if one[0] != "ok":  # the error tuple ends the batch
                        done.append(one)
                        break
                    done.append(one[1])
                answer = ("ok", done)
            elif kind == "steps":  # several calls in order, each answered alone: an error ends only its own step
                _, tree_id, _, steps = request
                answer = ("ok", [step(trees[tree_id], method, args) for method, args in steps])
            elif kind == "flush":
                from . import dynamo_selection

                for host in list(dynamo_selection._HOSTS.values()):
                    host.flush()
                answer = ("ok", None)
            elif kind == "close":
                dispose(trees.pop(request[1]))
                answer = ("ok", None)
            else:
                answer = ("error", "ValueError", "builtins", f"unknown request {kind!r}", False)
        except MemoryError as exc:  # the address-space limit, met by Python code: the target ran out of memory
            write_frame(out, pickle.dumps(("memory", f"MemoryError {exc}".strip())))
            os._exit(70)
        except BaseException as exc:  # every error of the target goes back to the parent, panics included
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            answer = error_of(exc)
        try:
            body = pickle.dumps(answer)
        except Exception as exc:
            body = pickle.dumps(("error", "TypeError", "builtins", f"the answer cannot be pickled: {exc}", False))
        write_frame(out, body)


if __name__ == "__main__":
    serve(sys.argv[1])

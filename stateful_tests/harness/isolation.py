"""A target that is not kvproof's own runs in a child process, so that nothing it does can take kvproof down.

The Dynamo binding of any release, the selection service, a user's ``module:Factory``: each runs in a
host process (``harness.host``) with limits, and kvproof holds a proxy (``IsolatedTree``) with the same
tree API. The host runs under ``process_guard`` (its own process group, a parent-death signal, killed
on every exit path), with an address-space limit (``setrlimit(RLIMIT_AS)``: an allocation past it fails
inside the target, which aborts or raises) and a time limit per call. Everything the target can do wrong
outside its API is a **finding about the target**, a ``TargetFailure``:

- ``crash``: the host died (a segmentation fault, a Rust abort, an exit), its exit status or signal and
  the last lines it wrote saying which;
- ``memory``: it died on the memory limit (an allocation failure in its last words, or killed while its
  resident memory was past the limit);
- ``hang``: a call ran past the time limit (the host is killed).

The failure carries the operation that met it and the tree's calls before it, as a log kvproof can
replay (``tree.log``); ``shrink_failure`` cuts that log to the smallest that still fails the same way,
each try in a fresh host. The next tree a row makes starts a fresh host, so the other rows still run.

Limits: ``KVPROOF_TARGET_MEMORY_MB`` (default 4096: a quarter of CI's 24 GB, with the suite beside it)
and ``KVPROOF_TARGET_CALL_S`` (default 120).
"""

from __future__ import annotations

import builtins
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ...spec import errors as spec_errors
from ...spec.match import OverlapScores
from . import lockstep, process_guard
from .host import read_frame, write_frame
from .services import ServiceFailure, limit_address_space, runtime_env, target_memory_mb
from .surface import NotOnSurface


def call_seconds() -> float:
    """The time limit of one call to a target, in seconds: ``KVPROOF_TARGET_CALL_S``, default 120."""
    return float(os.environ.get("KVPROOF_TARGET_CALL_S", "120"))


class PanicException(BaseException):
    """A native binding's panic, rebuilt on kvproof's side (pyo3 raises one of this name, a ``BaseException``)."""


class TargetFailure(ServiceFailure):
    """The target's process crashed, ran out of memory or hung: a finding about the target, never kvproof's death.

    ``kind`` is ``crash``, ``memory``, ``hang``, or ``protocol`` (a wire target's garbage, ``harness.wire_target``);
    ``op`` the call that met it; ``log`` the tree's calls before
    it, as log lines (``tree.log``), the failing call last.
    """

    def __init__(self, kind: str, target: str, op: str, detail: str, log: Iterable[str] | None = None) -> None:
        self.kind, self.target, self.op, self.detail = kind, target, op, detail
        self.log = list(log or [])
        super().__init__(f"the target {target} {WHAT[kind]} in {op}: {detail}")


WHAT = {"crash": "crashed", "memory": "ran out of memory", "hang": "hung", "protocol": "broke the wire protocol"}


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MiB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def rebuild(name: str, module: str, message: str, panic: bool) -> BaseException:
    """The exception the host reported, as an object of the same class name on this side."""
    if panic:
        return PanicException(message)
    known = getattr(spec_errors, name, None)
    if isinstance(known, type) and issubclass(known, BaseException) and module.startswith("kvproof"):
        error = known.__new__(known)
        Exception.__init__(error, message)
        if isinstance(error, spec_errors.KvCacheEventError):
            error.detail = message.removeprefix("Failed to apply event: ")
        return error
    if module == "builtins" and isinstance(getattr(builtins, name, None), type):
        return getattr(builtins, name)(message)
    return type(name, (Exception,), {"__module__": module})(message)


class Host:
    """One host process serving trees of one target; started on first use and again after it died."""

    def __init__(self, target: str, memory_mb: int | None = None, call_s: float | None = None) -> None:
        self.target = target
        self.memory_mb = memory_mb if memory_mb is not None else target_memory_mb()
        self.call_s = call_s if call_s is not None else call_seconds()
        self.proc: subprocess.Popen | None = None
        self.generation = 0
        self.peak_mb = 0.0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _start(self) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the host writes to it until it is replaced
        env = runtime_env(PYTHONUNBUFFERED="1")
        self.proc = process_guard.spawn_guarded(
            [sys.executable, "-m", "kvproof.stateful_tests.harness.host", self.target],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            **_preexec_with_limit(self.memory_mb),
        )
        self.generation += 1

    def said(self) -> str:
        """Everything the host wrote to stderr."""
        try:
            self.stderr.seek(0)
            return self.stderr.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def last_words(self, lines: int = 6) -> str:
        """The first line of its last panic or error message and the lines after it (at most ``lines``)."""
        text = self.said().strip().splitlines()
        start = next(
            (
                i
                for i in range(len(text) - 1, -1, -1)
                if text[i].startswith(("memory allocation", "thread '", "Traceback", "fatal", "Fatal"))
            ),
            len(text) - lines,
        )
        return " | ".join(line.strip() for line in text[max(start, 0) :][:lines])

    def request(self, request: tuple[Any, ...], op: str, log: Iterable[str]) -> Any:
        """Send one request and wait for its answer within the time limit; a death or hang is a ``TargetFailure``."""
        if not self.alive():
            self._start()
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        try:
            body = pickle.dumps(request)
        except Exception as exc:  # an argument that cannot cross to the host (a class defined in a function)
            raise NotOnSurface("python_objects", f"the argument cannot cross to the target's process: {exc}") from None
        try:
            write_frame(self.proc.stdin.fileno(), body)
        except BrokenPipeError:
            pass  # it died: read what it said
        deadline = time.monotonic() + self.call_s
        out = self.proc.stdout.fileno()
        while True:
            ready, _, _ = select.select([out], [], [], 0.05)
            if ready:
                frame = read_frame(out)
                if frame is not None:
                    answer = pickle.loads(frame)
                    if answer[0] == "memory":
                        self.kill()
                        raise TargetFailure(
                            "memory",
                            self.target,
                            op,
                            f"{answer[1]} (the limit is {self.memory_mb} MiB of address space, KVPROOF_TARGET_MEMORY_MB)",
                            log,
                        )
                    return self.unwrap(answer)
                self.proc.wait(10)
                raise self._death(op, log)
            rss = rss_mb(self.proc.pid)
            self.peak_mb = max(self.peak_mb, rss)
            if rss > self.memory_mb:
                self.kill()
                raise TargetFailure(
                    "memory",
                    self.target,
                    op,
                    f"its resident memory passed {self.memory_mb} MiB (KVPROOF_TARGET_MEMORY_MB); killed",
                    log,
                )
            if self.proc.poll() is not None:
                raise self._death(op, log)
            if time.monotonic() > deadline:
                self.kill()
                raise TargetFailure(
                    "hang", self.target, op, f"no answer within {self.call_s:.0f} s (KVPROOF_TARGET_CALL_S); killed", log
                )

    def unwrap(self, answer: tuple[Any, ...]) -> Any:
        if answer[0] == "ok":
            return answer[1]
        if answer[0] == "unpicklable":
            raise NotOnSurface("python_objects", f"the argument cannot cross to the target's process: {answer[1]}")
        _, name, module, message, panic = answer
        raise rebuild(name, module, message, panic)

    def _death(self, op: str, log: Iterable[str]) -> TargetFailure:
        assert self.proc is not None
        code = self.proc.returncode
        said = self.last_words()
        how = f"killed by signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit status {code}"
        everything = self.said()
        out_of_memory = any(
            sign in everything for sign in ("memory allocation of", "handle_alloc_error", "MemoryError", "Cannot allocate memory")
        )
        kind = "memory" if out_of_memory else "crash"
        limit = f" (the limit is {self.memory_mb} MiB of address space, KVPROOF_TARGET_MEMORY_MB)" if out_of_memory else ""
        return TargetFailure(kind, self.target, op, f"{how}{limit}; its last words: {said or '(none)'}", log)

    def kill(self) -> None:
        if self.proc is not None:
            process_guard.GUARD.kill(self.proc, grace=1.0)

    def flush(self) -> None:
        self.request(("flush",), "flush", [])


def _preexec_with_limit(memory_mb: int) -> dict[str, Any]:
    """Popen keywords that apply the memory limit in the child (``spawn_guarded`` chains its own pre-exec)."""
    return {"preexec_extra": limit_address_space(memory_mb)}


_HOSTS: dict[str, Host] = {}


def host_for(target: str) -> Host:
    host = _HOSTS.get(target)
    if host is None:
        host = _HOSTS[target] = Host(target)
    return host


def close_hosts() -> None:
    for host in _HOSTS.values():
        host.kill()
    _HOSTS.clear()


class CallLog:
    """The calls a tree received, kept as made and written as log lines (``_line_of``) only when read.

    A differential run makes half a million calls and reads their log only on a failure; writing each call's
    line as it was made cost about 6% of its main process's CPU (kvproof issue 32). A query is copied when made, so
    a caller that reuses its list cannot change what the log says was asked.
    """

    def __init__(self) -> None:
        self._calls: list[tuple[str, tuple[Any, ...]]] = []

    def add(self, method: str, args: tuple[Any, ...]) -> None:
        if method == "find_matches" and type(args[0]) is list:
            args = (list(args[0]), *args[1:])
        self._calls.append((method, args))

    def __iter__(self) -> Iterator[str]:
        for method, args in self._calls:
            line = _line_of(method, args)
            if line is not None:
                yield line


class IsolatedTree:
    """A tree in a host process, behind the tree API (see the module docstring); it logs its own calls."""

    batches_early_exit = True  # find_matches_many takes early_exit: a batch of any queries is one round trip

    def __init__(self, host: Host) -> None:
        self.host = host
        self.log = CallLog()
        self.tree_id, info = host.request(("open",), "a fresh tree", self.log)
        self.info = info
        self.generation = host.generation
        self.surface = info["surface"]
        self.lockstep = info["lockstep"]
        self.rules = info["rules"]
        self._many = info["many"]
        self._dirty = False

    def _call(self, method: str, args: tuple[Any, ...]) -> Any:
        self._log(method, args)
        return self._request("call", method, args)

    def _log(self, method: str, args: tuple[Any, ...]) -> None:
        """Log a call of the tree, read as a line kvproof can replay (``CallLog``; a call with no such line is left out)."""
        self.log.add(method, args)

    def _request(self, kind: str, method: str, payload: Any) -> Any:
        """A ``call`` or ``calls`` request on this tree, to the host that made it (a TargetFailure if that one died)."""
        if self.host.generation != self.generation or not self.host.alive():
            raise TargetFailure("crash", self.host.target, method, "its process died earlier in this run", self.log)
        return self.host.request((kind, self.tree_id, method, payload), method, self.log)

    def apply_event(self, worker_id: Any, payload: Any) -> None:
        self._dirty = True
        self._call("apply_event", (worker_id, payload))

    def find_matches(self, sequence: Any, early_exit: Any = False) -> OverlapScores:
        self._sync()
        answer = self._call("find_matches", (sequence, early_exit))
        return OverlapScores(answer["scores"], answer.get("frequencies", []))

    def find_matches_many(self, sequences: list[Any], early_exit: bool = False) -> list[OverlapScores]:
        """``find_matches`` of each sequence, in one round trip: the target's own batch where it has one (and no early
        exit is asked), else a ``calls`` batch in the host; an error raises as the first failing call would."""
        self._sync()
        for s in sequences:
            self._log("find_matches", (s,))
        if self._many and not early_exit:
            answers = self._request("call", "find_matches_many", (sequences,))
        else:
            answers = self._calls("find_matches", [(s, early_exit) for s in sequences])
        return [OverlapScores(a["scores"], a.get("frequencies", [])) for a in answers]

    def _calls(self, method: str, many: list[tuple[Any, ...]]) -> list[Any]:
        """The host's ``calls`` batch: the answers, or the first error the target raised, rebuilt."""
        answers = self._request("calls", method, many)
        if answers and isinstance(answers[-1], tuple) and answers[-1][:1] == ("error",):
            self.host.unwrap(answers[-1])
        return answers

    def steps(self, calls: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """Several calls in one round trip, in order, each answered alone: its answer, or the error it raised (rebuilt,
        returned, not raised). Every call is logged as its own call would be. Not for a tree in lockstep (``_sync``)."""
        assert not self.lockstep, "a tree in lockstep flushes around its reads: call it one call at a time"
        for method, args in calls:
            self._log(method, args)
        return [self._answer(answer) for answer in self._request("steps", "steps", calls)]

    def _answer(self, answer: tuple[Any, ...]) -> Any:
        try:
            value = self.host.unwrap(answer)
        except BaseException as exc:  # every rebuilt error is returned (a rebuilt panic is a BaseException)
            return exc
        return OverlapScores(value["scores"], value.get("frequencies", [])) if isinstance(value, dict) else value

    def _sync(self) -> None:
        """A target that pays a fixed delay per round trip flushes in lockstep with the other trees (``lockstep``)."""
        if self.lockstep and self._dirty:
            if not lockstep.wait_for_flush(id(self.host), self.host.flush):
                self.host.flush()
            self._dirty = False

    def remove_worker(self, worker_id: Any) -> None:
        self._sync()
        self._call("remove_worker", (worker_id,))

    def clear_all_blocks(self, worker_id: Any) -> None:
        self._dirty = True
        self._call("clear_all_blocks", (worker_id,))

    def dump_tree_as_events(self) -> list[str]:
        self._sync()
        return self._call("dump_tree_as_events", ())

    def close(self) -> None:
        if self.host.generation == self.generation and self.host.alive():
            try:
                self.host.request(("close", self.tree_id), "close", [])
            except (TargetFailure, NotOnSurface):
                pass


class _RankRemoval:
    def remove_worker_dp_rank(self: Any, worker_id: Any, dp_rank: Any) -> None:
        self._call("remove_worker_dp_rank", (worker_id, dp_rank))


class _SendMany:
    """Production mode's door for a target that takes events at once: the events are queued in the host, then one
    flush applies the round (in lockstep with the other streams); no outcomes come back."""

    def send_many(self: Any, events: Any) -> list[tuple[str, str]]:
        from ...spec.events import encode_event

        for rank, event in events:
            self.apply_event(rank.worker_id, encode_event(event))
        self._sync()
        return []


class _NoDump:
    dump_tree_as_events = None  # the target has none (releases before 0.6.1): has_dump reads it as absent


_CLASSES: dict[tuple[bool, bool, bool], type] = {}


def _class_for(rank_removal: bool, dump: bool, send_many: bool) -> type:
    """The proxy class with exactly the methods the target has (rows probe them with ``callable``)."""
    key = (rank_removal, dump, send_many)
    if key not in _CLASSES:
        mixins = ((_RankRemoval,) if rank_removal else ()) + (() if dump else (_NoDump,)) + ((_SendMany,) if send_many else ())
        _CLASSES[key] = type("IsolatedTree", (*mixins, IsolatedTree), {}) if mixins else IsolatedTree
    return _CLASSES[key]


def isolated(target: str) -> Callable[[], Any]:
    """The factory of trees of ``target`` in a host process (one host per target name, started again after it died)."""

    def make() -> Any:
        tree = IsolatedTree(host_for(target))
        # send_many crosses the boundary only for a target that queues (one flush for a round); the indexer is not hosted
        tree.__class__ = _class_for(tree.info["rank_removal"], tree.info["dump"], tree.info["send_many"] and tree.lockstep)
        return tree

    make.__name__ = f"isolated[{target}]"
    return make


def _line_of(method: str, args: tuple[Any, ...]) -> str | None:
    """The log line of one call of the tree (a RouterEvent, or a call as ``tree.log`` spells it), or None for a call
    whose arguments no log line can carry (a hostile payload, a worker id that is not an int)."""
    if method == "apply_event":
        return _event_line(*args)
    if method == "find_matches":
        return json.dumps({"find_matches": _ints(args[0])})
    if method in ("remove_worker", "clear_all_blocks") and isinstance(args[0], int):
        return json.dumps({method: args[0]})
    if method == "remove_worker_dp_rank" and isinstance(args[0], int):
        return json.dumps({method: list(args)})
    return json.dumps({"dump": True}) if method == "dump_tree_as_events" else None


def _ints(sequence: Any) -> Any:
    try:
        return [int(x) for x in sequence]
    except Exception:
        return repr(sequence)


def _event_line(worker_id: Any, payload: Any) -> str | None:
    """The log line of an event (a RouterEvent), when the payload is JSON text; None for anything else."""
    try:
        text = payload.decode() if isinstance(payload, (bytes, bytearray)) else payload
        event = json.loads(text) if isinstance(text, str) else None
    except (UnicodeDecodeError, ValueError, RecursionError):  # hostile payloads: not logged as events
        return None
    if not isinstance(event, dict) or not isinstance(worker_id, int):
        return None
    return json.dumps({"worker_id": worker_id, "event": event}, separators=(",", ":"))

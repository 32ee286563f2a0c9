"""A target in any language: ``--target exec:CMD`` or ``--target http://127.0.0.1:PORT``, over the wire protocol.

kvproof holds a ``RemoteTree`` per tree a row makes, with the tree API of every other target, and
speaks ``harness.protocol`` to the implementation:

- ``exec:CMD`` starts ``CMD`` (split as a shell would, without a shell; a leading ``kvproof`` is this
  kvproof, ``python -m kvproof``) under ``process_guard``: its own process group, a parent-death
  signal, killed when the run ends, with the run's address-space limit (``KVPROOF_TARGET_MEMORY_MB``)
  and time limit per call (``KVPROOF_TARGET_CALL_S``); requests go one per line on its stdin,
  answers come one per line on its stdout, its stderr is kept for its last words;
- ``http://127.0.0.1:PORT`` posts each request to ``/`` on loopback (any other host is refused),
  several at once on their own connections.

One link (process or server) serves every tree of a run, started on first use and again after it
died; the handshake (``hello``) comes first and its capabilities shape the trees: no dump, no rank
removal or no early exit make the rows that need them skip or leave those calls out, and a
``concurrent`` implementation gets ``send_many`` (production mode: events of different workers in
flight at once, reads racing them, every round checked for linearizability).

Everything the implementation does wrong outside the tree API is a ``TargetFailure`` (a finding,
never a hang of kvproof): ``crash`` (the process died, or the server cannot be reached), ``memory``,
``hang`` (no answer in time: the process is killed) and ``protocol`` (a line that is no answer of
this protocol, an answer to no request, a refused version). Its detail ends with the last messages
on the wire, and the tree's calls (``tree.log``) replay it.
"""

from __future__ import annotations

import base64
import collections
import http.client
import itertools
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from typing import Any, NoReturn

from ...spec.match import OverlapScores
from . import process_guard
from . import protocol as p
from .isolation import Host, PanicException, TargetFailure, _event_line, _ints, _preexec_with_limit, call_seconds, rebuild, rss_mb
from .services import runtime_env
from .surface import NotOnSurface, Surface

TRANSCRIPT = 24
"""How many of the last messages on the wire a failure shows."""

START_S = 60.0
"""The time limit of the handshake, the implementation's start included (an interpreter importing its packages on a
loaded machine); each call after it has the call limit, ``KVPROOF_TARGET_CALL_S``."""

TAPS: list[Callable[[str, bytes], None]] = []
"""Callables given every message on the wire, ``(">", sent)`` or ``("<", received)`` (the suite validates them)."""


def is_remote(name: str) -> bool:
    """Whether a target name is a wire target (``exec:CMD``, or a URL: only ``http://127.0.0.1:PORT`` is accepted)."""
    return name.startswith(("exec:", "http://", "https://"))


def command_of(name: str) -> list[str]:
    """The argv of ``exec:CMD``: ``CMD`` split as a shell would; a leading ``kvproof`` runs this kvproof."""
    argv = shlex.split(name.removeprefix("exec:"))
    if argv and argv[0] == "kvproof":
        return [sys.executable, "-m", "kvproof", *argv[1:]]
    return argv


def loopback_port(name: str) -> int | str:
    """The port of ``http://127.0.0.1:PORT``, or why the address is refused (only loopback is spoken to)."""
    parts = urllib.parse.urlsplit(name)
    if parts.scheme != "http" or parts.hostname != "127.0.0.1" or parts.port is None or parts.path not in ("", "/"):
        return f"{name!r}: an http target must be http://127.0.0.1:PORT (loopback only, no path)"
    return parts.port


class Link:
    """One implementation speaking the protocol: requests in flight by id, the handshake, failures typed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ids = itertools.count(1)
        self.pending: dict[int, Future] = {}
        self.lock = threading.Lock()
        self.transcript: collections.deque[str] = collections.deque(maxlen=TRANSCRIPT)
        self.capabilities: p.WireCapabilities | None = None
        self.implementation = ""
        self.generation = 0
        self.start_lock = threading.RLock()  # one start and one handshake at a time (a reader thread may race the rows)
        self.call_s = call_seconds()  # the time limit of one exchange (KVPROOF_TARGET_CALL_S)

    # -- what a transport provides
    def _ensure(self) -> None:
        """Make sure the implementation is up (start it again after a death)."""
        raise NotImplementedError

    def _send(self, request: p.WireRequest, future: Future) -> None:
        raise NotImplementedError

    def _watch(self, op: str, log: list[str], deadline: float) -> None:
        """Between waits: raise a ``TargetFailure`` if the implementation died, passed its limits or the deadline."""
        raise NotImplementedError

    def kill(self) -> None:
        raise NotImplementedError

    def alive(self) -> bool:
        """Whether the implementation is up (a server kvproof did not start is taken to be)."""
        return True

    # -- requests
    def hello(self) -> p.WireCapabilities:
        """The handshake, once per start: the capabilities (a refusal or a wrong answer is a ``protocol`` failure)."""
        with self.start_lock:
            self._ensure()
            if self.capabilities is None:
                answer = self._exchange([p.HelloRequest(v=p.VERSION, id=self._id())], "hello", [], max(self.call_s, START_S))[0]
                if not isinstance(answer, p.HelloAnswer):
                    raise self.failure("protocol", "hello", f"the handshake was answered {_describe(answer)}", [])
                self.capabilities, self.implementation = answer.capabilities, answer.implementation
            return self.capabilities

    def call(self, request: p.WireRequest, op: str, log: list[str]) -> p.AnyAnswer:
        """One request and its answer."""
        return self.many([request], op, log)[0]

    def many(
        self, requests: Sequence[p.WireRequest], op: str, log: list[str], generation: int | None = None
    ) -> list[p.AnyAnswer]:
        """Several requests in flight at once; their answers in the order of the requests. With ``generation`` (the
        start a tree was made in), requests of a tree whose process has died are refused, never sent to a fresh one."""
        self.hello()
        if generation is not None and generation != self.generation:
            raise self.failure("crash", op, "its process died earlier in this run", log)
        return self._exchange(requests, op, log)

    def _exchange(
        self, requests: Sequence[p.WireRequest], op: str, log: list[str], limit: float | None = None
    ) -> list[p.AnyAnswer]:
        """Send ``requests`` all at once and wait for every answer, within ``limit`` seconds (default: the call limit)."""
        futures = []
        for request in requests:
            future: Future = Future()
            with self.lock:
                self.pending[request.id] = future
            raw = p.encode(request)
            self.transcript.append(f"> {raw.decode()}")
            for tap in TAPS:
                tap(">", raw)
            self._send(request, future)
            futures.append(future)
        deadline = time.monotonic() + (limit or self.call_s)
        while True:
            _, not_done = wait_all(futures, timeout=0.05)
            if not not_done:
                break
            self._watch(op, log, deadline)
        answers = [f.result() for f in futures]
        for answer in answers:
            if isinstance(answer, p.ErrorAnswer) and answer.error in ("BadRequest", "UnsupportedVersion", "UnknownTree"):
                raise self.failure("protocol", op, f"it refused kvproof's request: {answer.error}: {answer.message}", log)
        return answers

    def _id(self) -> int:
        return next(self.ids)

    def deliver(self, raw: bytes) -> None:
        """An answer line came in: hand it to the request it answers (anything else fails every request in flight)."""
        self.transcript.append(f"< {raw.decode(errors='replace').rstrip()[:2000]}")
        for tap in TAPS:
            tap("<", raw)
        try:
            answer = p.decode_answer(raw)
        except p.ProtocolError as exc:
            self.fail_all("protocol", f"it wrote a line that is no answer of protocol version {p.VERSION} ({exc})")
            return
        with self.lock:
            future = self.pending.pop(answer.id, None) if answer.id is not None else None
        if future is None:
            self.fail_all("protocol", f"it answered a request that is not in flight: {_describe(answer)}")
            return
        future.set_result(answer)

    def fail_all(self, kind: str, detail: str) -> None:
        """Fail every request in flight with the same finding (the link is then unusable: it is stopped)."""
        self.kill()  # first: a caller woken by the failure finds the process gone
        with self.lock:
            pending, self.pending = list(self.pending.values()), {}
        for future in pending:
            if not future.done():
                future.set_exception(_Broken(kind, detail))

    def failure(self, kind: str, op: str, detail: str, log: list[str]) -> TargetFailure:
        """A ``TargetFailure`` whose detail ends with the last messages on the wire."""
        messages = "\n    ".join(self.transcript) or "(none)"
        return TargetFailure(
            kind, self.name, op, f"{detail}\n  the last messages on the wire (> sent, < received):\n    {messages}", log
        )


class _Broken(Exception):
    """Set on the futures of a link that broke: re-raised as a ``TargetFailure`` by the waiting caller."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


class ExecLink(Link):
    """An implementation in a process of its own, speaking on its stdin and stdout (``exec:CMD``)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.host = _ExecHost(name, command_of(name))
        self.write_lock = threading.Lock()

    def _ensure(self) -> None:
        if not self.host.alive():
            with self.lock:
                self.pending.clear()
            self.capabilities = None
            self.host._start()
            self.generation = self.host.generation
            assert self.host.proc is not None and self.host.proc.stdout is not None
            threading.Thread(
                target=self._read, args=(self.host.proc, self.generation), name="kvproof-wire-reader", daemon=True
            ).start()

    def _read(self, proc: Any, generation: int) -> None:
        """The reader thread: every line the process writes, delivered; at its end, the requests still in flight fail
        (unless a fresh process has replaced this one meanwhile: its requests are not this one's)."""
        for line in proc.stdout:
            if line.strip() and generation == self.generation:
                self.deliver(line)
        with self.lock:
            if generation != self.generation:
                return
            pending, self.pending = list(self.pending.values()), {}
        for future in pending:
            if not future.done():
                future.set_exception(_Broken("ended", "its stdout ended"))

    def _send(self, request: p.WireRequest, future: Future) -> None:
        proc = self.host.proc
        assert proc is not None and proc.stdin is not None
        try:
            with self.write_lock:
                proc.stdin.write(p.encode(request) + b"\n")
                proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # it died: the reader fails what is in flight, and _watch says why

    def _exchange(
        self, requests: Sequence[p.WireRequest], op: str, log: list[str], limit: float | None = None
    ) -> list[p.AnyAnswer]:
        try:
            return super()._exchange(requests, op, log, limit)
        except _Broken as broken:
            if broken.kind == "ended":
                self._reap()
                raise self._death(op, log) from None
            raise self.failure(broken.kind, op, broken.detail, log) from None

    def _reap(self) -> None:
        proc = self.host.proc
        if proc is not None:
            try:
                proc.wait(10)
            except Exception:  # still running with its stdout closed: killed below
                self.host.kill()

    def _death(self, op: str, log: list[str]) -> TargetFailure:
        died = self.host._death(op, log)
        self.host.kill()
        return self.failure(died.kind, op, died.detail, log)

    def _watch(self, op: str, log: list[str], deadline: float) -> None:
        proc = self.host.proc
        assert proc is not None
        rss = rss_mb(proc.pid)
        self.host.peak_mb = max(self.host.peak_mb, rss)
        if rss > self.host.memory_mb:
            self.host.kill()
            raise self.failure(
                "memory", op, f"its resident memory passed {self.host.memory_mb} MiB (KVPROOF_TARGET_MEMORY_MB); killed", log
            )
        if proc.poll() is not None:
            raise self._death(op, log)
        if time.monotonic() > deadline:
            self.host.kill()
            limit = (
                f"{max(self.call_s, START_S):.0f} s for the handshake"
                if op == "hello"
                else f"{self.call_s:.0f} s (KVPROOF_TARGET_CALL_S)"
            )
            raise self.failure("hang", op, f"no answer within {limit}; killed", log)

    def kill(self) -> None:
        self.host.kill()

    def alive(self) -> bool:
        return self.host.alive()


class _ExecHost(Host):
    """``isolation.Host``'s process machinery (limits, last words, death) for a command of the user's choosing."""

    def __init__(self, name: str, argv: list[str]) -> None:
        super().__init__(name)
        self.argv = argv

    def _start(self) -> None:
        import tempfile

        if not self.argv or shutil.which(self.argv[0]) is None:
            raise TargetFailure("crash", self.target, "start", f"no such program: {self.argv[:1]}")
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the process writes to it until it is replaced
        self.proc = process_guard.spawn_guarded(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=runtime_env(PYTHONUNBUFFERED="1"),
            **_preexec_with_limit(self.memory_mb),
        )
        self.generation += 1


class HttpLink(Link):
    """An implementation behind ``POST /`` on 127.0.0.1 (``http://127.0.0.1:PORT``): each request on a connection of
    its own thread, so several are in flight at once."""

    def __init__(self, name: str, port: int) -> None:
        super().__init__(name)
        self.port = port
        self.local = threading.local()
        self.pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="kvproof-wire-http")
        self.generation = 1

    def _ensure(self) -> None:
        pass

    def _connection(self) -> socket.socket:
        """This thread's connection (kept alive), with Nagle off."""
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = socket.create_connection(("127.0.0.1", self.port), timeout=self.call_s)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def _post(self, body: bytes) -> None:
        """POST one request; the request line, headers and body leave in one write (http.client sends the body in a
        second one, which a delayed ACK then holds for 40 ms)."""
        head = (
            f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        try:
            conn = self._connection()
            conn.sendall(head + body)
            response = http.client.HTTPResponse(conn)
            response.begin()
            data = response.read()
        except TimeoutError:
            self._drop()
            self._fail_request(body, "hang", f"no answer within {self.call_s:.0f} s (KVPROOF_TARGET_CALL_S)")
            return
        except (OSError, http.client.HTTPException) as exc:
            self._drop()
            self._fail_request(body, "crash", f"127.0.0.1:{self.port} cannot be reached: {type(exc).__name__}: {exc}")
            return
        if response.status != 200:
            self._fail_request(body, "protocol", f"HTTP status {response.status}: {data[:200]!r}")
            return
        self.deliver(data)

    def _drop(self) -> None:
        conn, self.local.conn = getattr(self.local, "conn", None), None
        if conn is not None:
            conn.close()

    def _fail_request(self, body: bytes, kind: str, detail: str) -> None:
        request = p.decode_request(body)
        with self.lock:
            future = self.pending.pop(request.id, None)
        if future is not None and not future.done():
            future.set_exception(_Broken(kind, detail))

    def _send(self, request: p.WireRequest, future: Future) -> None:
        self.pool.submit(self._post, p.encode(request))

    def _exchange(
        self, requests: Sequence[p.WireRequest], op: str, log: list[str], limit: float | None = None
    ) -> list[p.AnyAnswer]:
        try:
            return super()._exchange(requests, op, log, limit)
        except _Broken as broken:
            raise self.failure(broken.kind, op, broken.detail, log) from None

    def _watch(self, op: str, log: list[str], deadline: float) -> None:
        if time.monotonic() > deadline + 1:
            raise self.failure("hang", op, f"no answer within {self.call_s:.0f} s (KVPROOF_TARGET_CALL_S)", log)

    def kill(self) -> None:
        pass  # kvproof did not start the server; nothing of it is kvproof's to stop


def _describe(answer: Any) -> str:
    return p.encode(answer).decode() if isinstance(answer, (p.WireRequest, p.WireAnswer)) else repr(answer)


_LINKS: dict[str, Link] = {}


def link_for(name: str) -> Link:
    """The one link of ``name`` in this process (made on first use)."""
    link = _LINKS.get(name)
    if link is None:
        if name.startswith("exec:"):
            link = ExecLink(name)
        else:
            port = loopback_port(name)
            if isinstance(port, str):
                raise ValueError(port)
            link = HttpLink(name, port)
        _LINKS[name] = link
    return link


def close_links() -> None:
    """Stop every process this module started."""
    for link in _LINKS.values():
        link.kill()
    _LINKS.clear()


# ----------------------------------------------------------------------------- the tree


def _integer(value: Any, what: str) -> int:
    """``value`` as the JSON integer the wire carries; ``NotOnSurface`` for anything else (a string, a float, None)."""
    if type(value) is not int:
        number = getattr(value, "__index__", None)
        if number is None or isinstance(value, bool):
            raise NotOnSurface("python_objects", f"the wire carries {what} as JSON integers, not {type(value).__name__}")
        value = number()
    return value


class RemoteTree:
    """A tree of a wire target, behind the tree API (see the module docstring); it logs its calls as ``tree.log``."""

    batches_early_exit = True  # find_matches_many takes early_exit: its queries are all in flight at once

    def __init__(self, link: Link) -> None:
        self.link = link
        self.log: list[str] = []
        caps = link.hello()
        self.surface = Surface(
            early_exit=None if caps.early_exit else "the implementation has no early_exit (its hello said so)",
            rank_removal=None if caps.rank_removal else "the implementation has no remove_worker_dp_rank (its hello said so)",
        )
        self.generation = link.generation
        opened = link.many([p.OpenRequest(v=p.VERSION, id=link._id())], "a fresh tree", self.log, self.generation)[0]
        if not isinstance(opened, p.OpenedAnswer):
            self._raise(opened, "open")
        self.tree_id = opened.tree

    def _request(self, op: str, line: str | None, **fields: Any) -> p.AnyAnswer:
        if line is not None:
            self.log.append(line)
        return self._checked(op, [REQUEST_OF[op](v=p.VERSION, id=self.link._id(), tree=self.tree_id, **fields)])[0]

    def _checked(self, op: str, requests: Sequence[p.WireRequest]) -> list[p.AnyAnswer]:
        return self.link.many(requests, op, self.log, self.generation)

    def _raise(self, answer: p.AnyAnswer, op: str) -> NoReturn:
        """Raise what an answer that is not the expected one stands for: the tree's typed error, rebuilt."""
        if isinstance(answer, p.ErrorAnswer):
            raise rebuilt(answer)
        raise self.link.failure("protocol", op, f"{op} was answered {_describe(answer)}", self.log)

    def _done(self, answer: p.AnyAnswer, op: str) -> None:
        if not isinstance(answer, p.DoneAnswer):
            self._raise(answer, op)

    def apply_event(self, worker_id: Any, payload: Any) -> None:
        worker = _integer(worker_id, "worker ids")
        event, encoded = _payload(payload)
        self._done(
            self._request("apply_event", _event_line(worker_id, payload), worker_id=worker, event=event, base64=encoded),
            "apply_event",
        )

    def _find(self, sequence: Any, early_exit: Any) -> p.FindMatchesRequest:
        if not isinstance(sequence, (list, tuple)):
            raise NotOnSurface("python_objects", f"the wire carries a query as a JSON array, not {type(sequence).__name__}")
        if type(early_exit) is not bool:
            raise NotOnSurface(
                "python_objects", f"the wire carries early_exit as a JSON boolean, not {type(early_exit).__name__}"
            )
        hashes = [_integer(h, "local block hashes") for h in sequence]
        return p.FindMatchesRequest(v=p.VERSION, id=self.link._id(), tree=self.tree_id, sequence=hashes, early_exit=early_exit)

    def _scores(self, answer: p.AnyAnswer) -> OverlapScores:
        if not isinstance(answer, p.ScoresAnswer):
            self._raise(answer, "find_matches")
        assert isinstance(answer, p.ScoresAnswer)
        plain = self.link.capabilities is not None and not self.link.capabilities.dp_ranks
        scores = {(w if plain else (w, dp)): s for w, dp, s in answer.scores}
        return OverlapScores(scores, list(answer.frequencies))  # type: ignore[arg-type]

    def find_matches(self, sequence: Any, early_exit: Any = False) -> OverlapScores:
        request = self._find(sequence, early_exit)
        self.log.append(_query_line(sequence))
        return self._scores(self._checked("find_matches", [request])[0])

    def find_matches_many(self, sequences: list[Any], early_exit: bool = False) -> list[OverlapScores]:
        """``find_matches`` of each sequence, all in flight at once; an error raises as the first failing one would."""
        requests = [self._find(s, early_exit) for s in sequences]
        self.log.extend(_query_line(s) for s in sequences)
        return [self._scores(a) for a in self._checked("find_matches", requests)]

    def remove_worker(self, worker_id: Any) -> None:
        self._done(
            self._request("remove_worker", _call_line("remove_worker", worker_id), worker_id=_integer(worker_id, "worker ids")),
            "remove_worker",
        )

    def clear_all_blocks(self, worker_id: Any) -> None:
        self._done(
            self._request(
                "clear_all_blocks", _call_line("clear_all_blocks", worker_id), worker_id=_integer(worker_id, "worker ids")
            ),
            "clear_all_blocks",
        )

    def close(self) -> None:
        """Forget the tree on the implementation's side (nothing to do when its process is gone)."""
        if self.link.generation != self.generation or not self.link.alive():
            return
        try:
            self.link.many([p.CloseRequest(v=p.VERSION, id=self.link._id(), tree=self.tree_id)], "close", [], self.generation)
        except (TargetFailure, NotOnSurface):
            pass


class _WireRankRemoval:
    def remove_worker_dp_rank(self: Any, worker_id: Any, dp_rank: Any) -> None:
        line = _call_line("remove_worker_dp_rank", [worker_id, dp_rank])
        self._done(
            self._request(
                "remove_worker_dp_rank", line, worker_id=_integer(worker_id, "worker ids"), dp_rank=_integer(dp_rank, "dp ranks")
            ),
            "remove_worker_dp_rank",
        )


class _WireDump:
    def dump_tree_as_events(self: Any) -> list[str]:
        answer = self._request("dump", _call_line("dump", True))
        if not isinstance(answer, p.DumpAnswer):
            self._raise(answer, "dump")
        return list(answer.events)


class _WireCheck:
    def check(self: Any) -> None:
        self._done(self._request("check", None), "check")


class _WireSendMany:
    """Production mode's door (``explore.production``): a round's events all in flight at once, their outcomes as
    the indexer's labels, in the order sent."""

    def send_many(self: Any, events: Any) -> list[tuple[str, str]]:
        from ...spec.events import encode_event

        label = INDEXER_LABELS
        requests, lines = [], []
        for rank, event in events:
            payload = encode_event(event)
            lines.append(_event_line(rank.worker_id, payload))
            requests.append(
                p.ApplyEventRequest(
                    v=p.VERSION, id=self.link._id(), tree=self.tree_id, worker_id=rank.worker_id, event=payload.decode()
                )
            )
        self.log.extend(line for line in lines if line)
        out = []
        for answer in self._checked("apply_event", requests):
            if isinstance(answer, p.DoneAnswer):
                out.append(("event", "ok"))
            elif isinstance(answer, p.ErrorAnswer) and answer.error in label:
                out.append(("event", label[answer.error]))
            else:
                self._raise(answer, "apply_event")
        return out


INDEXER_LABELS = {
    "ParentBlockNotFound": "parent_block_not_found",
    "BlockNotFound": "block_not_found",
    "InvalidBlockSequence": "invalid_block",
}
"""The refusals production mode reads from ``send_many`` as Dynamo's indexer labels them (``explore.production``'s
``LABEL_OUTCOMES``, the other way round; a test holds the two together)."""

REQUEST_OF: dict[str, Any] = {
    "apply_event": p.ApplyEventRequest,
    "remove_worker": p.RemoveWorkerRequest,
    "clear_all_blocks": p.ClearAllBlocksRequest,
    "remove_worker_dp_rank": p.RemoveWorkerDpRankRequest,
    "dump": p.DumpRequest,
    "check": p.CheckRequest,
}

_CLASSES: dict[tuple[bool, ...], type] = {}


def _class_for(caps: p.WireCapabilities) -> type:
    """The tree class with exactly the methods the implementation offers (rows probe them with ``callable``)."""
    key = (caps.rank_removal, caps.dump, caps.check, caps.concurrent)
    if key not in _CLASSES:
        mixins = tuple(m for m, on in zip((_WireRankRemoval, _WireDump, _WireCheck, _WireSendMany), key) if on)
        _CLASSES[key] = type("RemoteTree", (*mixins, RemoteTree), {}) if mixins else RemoteTree
    return _CLASSES[key]


def rebuilt(answer: p.ErrorAnswer) -> BaseException:
    """The exception an ``error`` answer stands for, on this side: a contract refusal as kvproof's typed error, a bad
    argument or other failure as the class the implementation named (a builtin) or a class of that name, a panic as
    a ``PanicException``, an unsupported call as ``NotOnSurface``."""
    if answer.error in ("ParentBlockNotFound", "BlockNotFound", "InvalidBlockSequence", "MalformedEvent"):
        return rebuild(answer.error, "kvproof.spec.errors", answer.message, False)
    if answer.error == "Panic":
        return PanicException(answer.message)
    if answer.error == "Unsupported":
        return NotOnSurface("unsupported", answer.message)
    name = (
        answer.exception
        if answer.exception.isidentifier()
        else ("ValueError" if answer.error == "InvalidArgument" else "RuntimeError")
    )
    return rebuild(name, "builtins", answer.message, False)


def _payload(payload: Any) -> tuple[str, bool]:
    """An event payload as the wire carries it: UTF-8 text as it is, other bytes base64 (``base64: true``)."""
    if isinstance(payload, (bytes, bytearray, memoryview)):
        raw = bytes(payload)
        try:
            return raw.decode(), False
        except UnicodeDecodeError:
            return base64.b64encode(raw).decode(), True
    raise NotOnSurface("python_objects", f"the wire carries an event as the bytes of its JSON, not a {type(payload).__name__}")


def _query_line(sequence: Any) -> str:
    import json

    return json.dumps({"find_matches": _ints(sequence)})


def _call_line(op: str, value: Any) -> str | None:
    import json

    try:
        return json.dumps({op: value})
    except (TypeError, ValueError):
        return None


def wire_factory(name: str) -> tuple[Callable[[], Any] | None, str]:
    """The factory of ``name``'s trees, after a handshake (``(None, why)`` when the implementation cannot be reached
    or refuses it: the target is then unavailable, with the messages on the wire in the reason)."""
    try:
        link = link_for(name)
        caps = link.hello()
    except (ValueError, TargetFailure) as exc:
        return None, str(exc)
    cls = _class_for(caps)

    def make() -> Any:
        tree = cls(link_for(name))
        if link_for(name).capabilities != caps:
            tree.__class__ = _class_for(link_for(name).capabilities or caps)
        return tree

    make.__name__ = f"wire[{name}]"
    return make, ""

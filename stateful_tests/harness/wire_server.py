"""``kvproof serve``: any Python target answering the wire protocol (``harness.protocol``), on stdio or loopback HTTP.

So that another language's test suite can ask kvproof's reference for the expected answer, and so
that the protocol is tested against itself (``--target "exec:kvproof serve --stdio --target T"``).

A ``Server`` holds the trees of one target (``targets.load_target``) and answers one request at a
time or several at once:

- a tree with lanes (``lane(i)``: kvproof's concurrent tree, its broken twins, ``impl-lanes``) is
  served **concurrently** (capability ``concurrent``): an event of worker ``w`` runs on lane
  ``w % lanes`` under that lane's lock (one writer per lane, as the tree requires), reads take no
  lock and race the writers, and a removal, clear, dump or check takes every lane's lock;
- any other tree is served **sequentially**: one lock around every request. One that takes the events
  of several workers at once in process (``send_many``: a production-mode door) still says
  ``concurrent``, so that production mode runs over the wire as in process; its requests in flight
  run one at a time, in the order they come.

On stdio, requests are read one per line and run on a thread pool (concurrent) or in turn
(sequential); answers are written one per line, each whole, in the order they finish. Python's
own ``sys.stdout`` is pointed at stderr first, so nothing but answers reaches the channel. Over
HTTP each ``POST /`` carries one request and its answer; the server binds 127.0.0.1 only.
"""

from __future__ import annotations

import base64
import binascii
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from ...spec.rules import DEFAULT_RULES, RuleSet
from . import protocol as p
from . import targets
from .surface import NotOnSurface, lacks

SPEC_KINDS = frozenset({"ParentBlockNotFound", "BlockNotFound", "InvalidBlockSequence", "MalformedEvent"})
ARGUMENT_ERRORS = (TypeError, ValueError, OverflowError, KeyError, IndexError)


class _Unknown(Exception):
    """A request on a tree that is not open: answered ``UnknownTree``."""


class _BadRequest(Exception):
    """A request whose fields decode but do not make sense (an event flagged base64 that is not): ``BadRequest``."""


def error_answer(request_id: int | None, exc: BaseException) -> p.ErrorAnswer:
    """The typed ``error`` answer an exception stands for: the server's own refusals, then the tree's errors under
    the same names as ``targets.outcome_of`` (a refusal by the contract, a bad argument, a panic, anything else)."""
    name = type(exc).__name__
    if isinstance(exc, _Unknown):
        return p.ErrorAnswer(v=p.VERSION, id=request_id, error="UnknownTree", message=str(exc))
    if isinstance(exc, _BadRequest):
        return p.ErrorAnswer(v=p.VERSION, id=request_id, error="BadRequest", message=str(exc))
    if isinstance(exc, NotOnSurface):
        return p.ErrorAnswer(v=p.VERSION, id=request_id, error="Unsupported", message=str(exc), exception=name)
    if targets.is_panic(exc):
        return p.ErrorAnswer(v=p.VERSION, id=request_id, error="Panic", message=str(exc), exception=name)
    outcome = targets.outcome_of(exc)
    if outcome in SPEC_KINDS:
        return p.ErrorAnswer(v=p.VERSION, id=request_id, error=cast(p.ErrorKind, outcome), message=str(exc), exception=name)
    kind: p.ErrorKind = "InvalidArgument" if isinstance(exc, ARGUMENT_ERRORS) else "Failure"
    return p.ErrorAnswer(v=p.VERSION, id=request_id, error=kind, message=str(exc), exception=name)


def score_triples(answer: Any) -> list[tuple[int, int, int]]:
    """``find_matches``' scores as ``[worker_id, dp_rank, score]`` triples (a plain worker id is rank 0)."""
    out = []
    for rank, score in answer.scores.items():
        worker, dp = (rank, 0) if isinstance(rank, int) else tuple(rank)
        out.append((int(worker), int(dp), int(score)))
    return sorted(out)


def lane_count(tree: Any) -> int:
    """How many lanes a tree offers through ``lane(i)`` (its ``lanes``, a list or a count), 0 for a tree without."""
    if not callable(getattr(tree, "lane", None)):
        return 0
    lanes = getattr(tree, "lanes", 0)
    return lanes if isinstance(lanes, int) else len(lanes)


class Server:
    """The trees of one target behind the protocol (see the module docstring)."""

    def __init__(self, name: str, rules: RuleSet = DEFAULT_RULES) -> None:
        target = targets.load_target(name, rules)
        if target.factory is None:
            raise ValueError(f"{name!r} is unavailable: {target.reason}")
        self.name, self.factory = name, target.factory
        self.trees: dict[int, Any] = {}
        self.next_tree = 1
        self.table_lock = threading.Lock()  # the trees table
        self.capabilities, self.lane_count = self._probe()
        self.lane_locks = [threading.Lock() for _ in range(max(1, self.lane_count))]

    def _probe(self) -> tuple[p.WireCapabilities, int]:
        """What the target supports, read from the methods of one fresh tree (never calling them: a target that hangs
        or aborts on a call must still say hello, so that the call is a finding), and its lane count (0: none)."""
        tree = self.factory()
        try:
            caps = p.WireCapabilities(
                dump=targets.has_dump(tree),
                rank_removal=callable(getattr(tree, "remove_worker_dp_rank", None)),
                early_exit=lacks(tree, "early_exit") is None,
                check=callable(getattr(tree, "check", None)),
                concurrent=lane_count(tree) > 0 or callable(getattr(tree, "send_many", None)),
            )
            return caps, lane_count(tree)
        finally:
            targets.dispose(tree)

    # ------------------------------------------------------------------ one request

    def answer(self, raw: bytes) -> p.AnyAnswer:
        """The answer to one request line (a refusal for anything that is not a request of this version)."""
        try:
            request = p.decode_request(raw)
        except p.ProtocolError as exc:
            return p.ErrorAnswer(v=p.VERSION, id=exc.id, error=cast(p.ErrorKind, exc.kind), message=str(exc))
        try:
            with self._locks(request):
                return self._run(request)
        except MemoryError:
            raise  # the run's memory limit: the process ends and kvproof reads why
        except BaseException as exc:  # every error of the target is answered, a binding's panic included
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return error_answer(request.id, exc)

    def _locks(self, request: p.AnyRequest) -> ExitStack:
        """The locks ``request`` runs under: a lane's for an event, none for a read, every lane's for the rest."""
        stack = ExitStack()
        if isinstance(request, (p.HelloRequest, p.OpenRequest, p.CloseRequest)):
            return stack
        if self.lane_count and isinstance(request, p.FindMatchesRequest):
            return stack
        if self.lane_count and isinstance(request, p.ApplyEventRequest):
            stack.enter_context(self.lane_locks[self._lane_of(request.worker_id)])
            return stack
        for lock in self.lane_locks:
            stack.enter_context(lock)
        return stack

    def _lane_of(self, worker_id: int) -> int:
        return worker_id % self.lane_count if worker_id >= 0 else 0

    def _tree(self, tree_id: int) -> Any:
        with self.table_lock:
            tree = self.trees.get(tree_id)
        if tree is None:
            raise _Unknown(f"no tree {tree_id} is open")
        return tree

    def _run(self, request: p.AnyRequest) -> p.AnyAnswer:
        v, rid = p.VERSION, request.id
        if isinstance(request, p.HelloRequest):
            return p.HelloAnswer(
                v=v, id=rid, implementation=f"kvproof serve --target {self.name}", capabilities=self.capabilities
            )
        if isinstance(request, p.OpenRequest):
            tree = self.factory()
            with self.table_lock:
                number, self.next_tree = self.next_tree, self.next_tree + 1
                self.trees[number] = tree
            return p.OpenedAnswer(v=v, id=rid, tree=number)
        if isinstance(request, p.CloseRequest):
            with self.table_lock:
                tree = self.trees.pop(request.tree, None)
            if tree is None:
                raise _Unknown(f"no tree {request.tree} is open")
            targets.dispose(tree)
            return p.DoneAnswer(v=v, id=rid)
        tree = self._tree(request.tree)
        if isinstance(request, p.ApplyEventRequest):
            self._apply(tree, request)
        elif isinstance(request, p.FindMatchesRequest):
            found = tree.find_matches(request.sequence, request.early_exit)
            return p.ScoresAnswer(
                v=v,
                id=rid,
                scores=score_triples(found),
                frequencies=[int(f) for f in (getattr(found, "frequencies", None) or [])],
            )
        elif isinstance(request, p.RemoveWorkerRequest):
            tree.remove_worker(request.worker_id)
        elif isinstance(request, p.RemoveWorkerDpRankRequest):
            self._optional(tree, "remove_worker_dp_rank", "rank_removal")(request.worker_id, request.dp_rank)
        elif isinstance(request, p.ClearAllBlocksRequest):
            tree.clear_all_blocks(request.worker_id)
        elif isinstance(request, p.DumpRequest):
            return p.DumpAnswer(v=v, id=rid, events=[str(line) for line in self._optional(tree, "dump_tree_as_events", "dump")()])
        elif isinstance(request, p.CheckRequest):
            self._optional(tree, "check", "check")()
        return p.DoneAnswer(v=v, id=rid)

    def _apply(self, tree: Any, request: p.ApplyEventRequest) -> None:
        if request.base64:
            try:
                payload = base64.b64decode(request.event, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise _BadRequest(f"event is not base64: {exc}") from None
        else:
            payload = request.event.encode()
        if self.lane_count:
            tree.lane(self._lane_of(request.worker_id)).apply_event(request.worker_id, payload)
        else:
            tree.apply_event(request.worker_id, payload)

    @staticmethod
    def _optional(tree: Any, method: str, capability: str) -> Callable[..., Any]:
        call = getattr(tree, method, None)
        if not callable(call):
            raise NotOnSurface(capability, f"the target has no {method}")
        return call

    def close(self) -> None:
        with self.table_lock:
            trees, self.trees = list(self.trees.values()), {}
        for tree in trees:
            targets.dispose(tree)


# ----------------------------------------------------------------------------- transports


def serve_stdio(server: Server, stdin: Any = None, out_fd: int | None = None) -> None:
    """Answer requests read one per line from ``stdin`` until it ends (see the module docstring)."""
    if out_fd is None:
        out_fd = os.dup(1)
        os.dup2(2, 1)  # nothing but answers on the channel: print() and the target's own writes go to stderr
        sys.stdout = sys.stderr
    stream = stdin if stdin is not None else sys.stdin.buffer
    write_lock = threading.Lock()

    def reply(raw: bytes) -> None:
        try:
            data = p.encode(server.answer(raw)) + b"\n"
        except MemoryError:  # the memory limit, met in a pool thread or not: the process ends saying why
            os.write(2, b"MemoryError: the target ran out of memory serving a request\n")
            os._exit(70)
        with write_lock:
            while data:
                data = data[os.write(out_fd, data) :]

    pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="kvproof-serve") if server.capabilities.concurrent else None
    try:
        for line in stream:
            if not line.strip():
                continue
            if pool is not None:
                pool.submit(reply, line)
            else:
                reply(line)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
        server.close()


LOOPBACK = "127.0.0.1"


class _LoopbackServer(ThreadingHTTPServer):
    """A thread per connection; a listen backlog for a client's many connections opened at once (the default, 5,
    drops their SYNs, which then wait a second to be sent again)."""

    daemon_threads = True
    request_queue_size = 128


def http_server(server: Server, port: int = 0) -> ThreadingHTTPServer:
    """A threading HTTP server on 127.0.0.1:``port`` (0: any free port) answering ``POST /`` with the protocol."""

    class WireHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # no wait for an ACK between small writes
        wbufsize = -1  # the status line, headers and body leave in one write (http.server flushes after each request)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = p.encode(server.answer(self.rfile.read(length)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = _LoopbackServer((LOOPBACK, port), WireHandler)
    return httpd


def run(name: str, rules_name: str | None, stdio: bool, port: int | None) -> int:
    """``kvproof serve``: serve target ``name`` on stdio or on 127.0.0.1:``port``; the exit code (2: usage)."""
    from ...spec.rules import rule_set_named

    if stdio == (port is not None):
        print("kvproof serve: choose one of --stdio and --http PORT", file=sys.stderr)
        return 2
    try:
        server = Server(name, rule_set_named(rules_name) if rules_name else DEFAULT_RULES)
    except Exception as exc:  # an unavailable target, or one that fails when its first tree is made: said, exit 2
        print(f"kvproof serve: cannot serve {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if stdio:
        serve_stdio(server)
        return 0
    assert port is not None
    httpd = http_server(server, port)
    print(f"kvproof serve: {name} on http://{LOOPBACK}:{httpd.server_address[1]} (protocol version {p.VERSION})", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        server.close()
    return 0

"""Dynamo's standalone KV indexer, ``python -m dynamo.indexer --threads N``, as a tree target.

With ``--threads 1`` the indexer runs Dynamo's single-threaded ``KvIndexer`` (the tree the
``RadixTree`` binding wraps); with N >= 2 it runs ``ThreadPoolIndexer<ConcurrentRadixTreeCompressed>``,
the concurrent indexer Dynamo's frontend router uses (4 event threads by default). kvproof reaches it
as production does: each rank publishes its events on a ZMQ socket the indexer subscribes to, and
queries go over HTTP. Target names: ``dynamo-indexer`` (4 threads), ``dynamo-indexer@N``.

How the tree API maps onto that surface (docs/dynamo-surface.md, "The standalone indexer"):

- One indexer process per thread count serves every tree the factory makes; each tree is a model
  of its own (``kvproof-tN``), so trees never see each other. A tree's workers are registered
  under instance ids unique in the process (the indexer refuses one id under two models) and
  mapped back in every answer.
- ``apply_event(worker, payload)``: the payload is read by kvproof's strict reader, so a malformed
  one gets the reference's typed error and never reaches the indexer (the ZMQ door carries
  msgpack, not the JSON a tree takes: the wire's hostile input cannot be asked of this target).
  The event goes out on its rank's XPUB (bound on 127.0.0.1, registered with ``/register``, used
  only after the indexer's subscription has arrived) as vLLM's msgpack batch with contiguous
  sequence numbers. **The fence**: the call returns only when the indexer's outcome counter in
  ``/metrics`` has moved by one; the label that moved is the event's outcome (``ok``,
  ``parent_block_not_found``, ...). One event is in flight at a time, so the concurrent tree
  steps deterministically.
- Local hashes travel as tokens at block size 1: each tree maps a local hash to a token of its
  own, and the indexer's ``tokens_hash`` of that token back (``compute_block_hash_for_seq``).
  External hashes pass unchanged.
- ``find_matches(query)`` is ``/query`` with the mapped tokens; ``find_matches_many`` pipelines
  many queries on one connection. ``early_exit`` is not on the surface (``NotOnSurface``).
- ``remove_worker`` is ``/unregister`` (the indexer drops the worker's blocks and its listener);
  a worker that publishes again is registered afresh, on a new socket counting from 0.
  There is no ``remove_worker_dp_rank`` (as on the 1.6.1 binding). ``clear_all_blocks(worker)`` sends
  ``AllBlocksCleared`` from each of the worker's ranks.
- ``dump_tree_as_events`` is ``/dump``, mapped back.
- Stores the ZMQ converter would rewrite (a parent among its own blocks, a hash listed twice: it
  turns them into an empty removal) are ``NotOnSurface``; the rows leave them out and say so.

**Concurrent mode** (``send_many``): events of different ranks go out on their own sockets at
once and are fenced together, so the indexer's lanes apply them in parallel, as in production.

The process binds 0.0.0.0 (no host flag); kvproof talks to it on 127.0.0.1 only, and the
run's notice says so unless it runs in a private network namespace.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...spec.errors import BlockNotFound, InvalidBlockSequence, ParentBlockNotFound
from ...spec.events import Cleared, KvCacheEvent, Removed, Stored, encode_router_event, parse_event
from ...spec.match import OverlapScores, check_early_exit, check_query
from ...spec.primitives import Block, Rank
from . import services
from .surface import NotOnSurface, Surface, store_not_carried

DEFAULT_THREADS = 4
"""The frontend router's default (``KvRouterConfig.router_event_threads``)."""

FENCE_TIMEOUT_S = 10.0
"""How long an event may take to show in ``/metrics`` before the indexer counts as hung."""

METRIC = "dynamo_kvrouter_kv_cache_events_applied"

SURFACE = Surface(
    early_exit="the indexer's /query has no early_exit",
    rank_removal="/unregister removes the whole worker; there is no per-rank removal",
    wire="events travel as msgpack over ZMQ, so a malformed JSON payload cannot reach the indexer",
    self_parented="the ZMQ converter rewrites a store whose parent is among its own blocks into an empty removal",
    duplicate_hashes="the ZMQ converter rewrites a store that lists a block hash twice into an empty removal",
)


class IndexerUnavailable(RuntimeError):
    """The indexer (or pyzmq / msgpack, which the harness needs to feed it) is not installed."""


def unavailable() -> str | None:
    """Why the standalone indexer cannot run here, or None."""
    import importlib.util

    for module, extra in (("dynamo._core", "ai-dynamo-runtime"), ("zmq", "pyzmq"), ("msgpack", "msgpack")):
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:
            found = False
        if not found:
            return f"{extra} is not installed (install the [dynamo] extra)"
    from .targets import dynamo_core

    try:
        dynamo_core().run_kv_indexer  # noqa: B018 - the standalone indexer's entry point, present from 1.1.0
    except (ImportError, AttributeError):
        return "this ai-dynamo-runtime has no standalone indexer (dynamo.indexer; 1.1.0 and later ship it)"
    return None


# ----------------------------------------------------------------------------- the process


class IndexerProcess(services.HttpService):
    """One ``python -m dynamo.indexer --threads N`` on a free port, with its outcome counters."""

    name = "dynamo.indexer"

    def __init__(self, threads: int, log_path: str | None = None) -> None:
        port = services.free_port()
        super().__init__(services.python_module("dynamo.indexer", "--port", str(port), "--threads", str(threads)), port, log_path)
        self.threads = threads
        self.counts: Counter[tuple[str, str]] = Counter()
        self._ids = itertools.count(1)
        self._models = itertools.count(1)
        self.events = 0

    def next_instance(self) -> int:
        return next(self._ids)

    def next_model(self) -> str:
        return f"kvproof-t{next(self._models)}"

    def outcome_counts(self) -> Counter[tuple[str, str]]:
        """``(event_type, status)`` -> events applied, read from ``/metrics``."""
        status, text = self.request("GET", "/metrics")
        if status != 200 or not isinstance(text, str):
            raise services.ServiceFailure(f"{self.name}: GET /metrics answered {status}")
        counts: Counter[tuple[str, str]] = Counter()
        for line in text.splitlines():
            if line.startswith(METRIC + "{"):
                labels, _, value = line[len(METRIC) + 1 :].partition("} ")
                fields = dict(part.split("=", 1) for part in labels.split(","))
                counts[(fields["event_type"].strip('"'), fields["status"].strip('"'))] = int(float(value))
        return counts

    def fence(self, sent: int, what: str) -> list[tuple[str, str]]:
        """Wait until ``sent`` more events show in the counters; return the labels that moved (one per event)."""
        deadline = time.monotonic() + FENCE_TIMEOUT_S
        pause = 0.0002
        while True:
            now = self.outcome_counts()
            moved = now - self.counts
            if sum(moved.values()) >= sent:
                self.counts = now
                self.events += sent
                return list(moved.elements())
            if time.monotonic() > deadline:
                died = self.death()
                raise services.ServiceFailure(
                    f"{self.name} --threads {self.threads} applied {sum(moved.values())} of {sent} events of {what} "
                    f"within {FENCE_TIMEOUT_S} s" + (f"; {died}" if died else " (hung)")
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.01)

    def settle(self, sent: int) -> int:
        """Wait until ``sent`` more events show in the counters, or until they stop moving for ``SETTLE_S`` (events of
        a worker unregistered meanwhile are dropped, never counted); return how many showed."""
        moved, still_since = 0, time.monotonic()
        while moved < sent and time.monotonic() - still_since < SETTLE_S:
            time.sleep(0.01)
            now = sum((self.outcome_counts() - self.counts).values())
            if now != moved:
                moved, still_since = now, time.monotonic()
        self.counts = self.outcome_counts()
        self.events += moved
        return moved

    def fence_missing(self) -> str | None:
        """Why this indexer cannot be fenced (None: it can): one probe event on a model of its own must show in the
        outcome counters within ``PROBE_S`` (the standalone indexer of 1.1.x to 1.2.x exposes no such counter)."""
        probe = IndexerTree(self.threads, process=self)
        pub = probe._publisher(Rank(1, 0))
        before = sum(self.counts.values())
        pub.send([{"type": "AllBlocksCleared"}], 0)
        deadline = time.monotonic() + PROBE_S
        try:
            while time.monotonic() < deadline:
                now = self.outcome_counts()
                if sum(now.values()) > before:
                    self.counts = now
                    return None
                time.sleep(0.01)
        finally:
            probe.close()
        return (
            f"this release's standalone indexer reports no per-event outcome in /metrics ({METRIC} never moved within "
            f"{PROBE_S:.0f} s of an event), so kvproof cannot fence its events one at a time"
        )


PROBE_S = 3.0

SETTLE_S = 0.5
"""How long the counters must stand still before ``settle`` takes the events not counted as dropped."""

_PROCESSES: dict[int, IndexerProcess] = {}


def indexer_process(threads: int) -> IndexerProcess:
    """The shared indexer process of ``threads`` threads, started (again) when none is alive."""
    proc = _PROCESSES.get(threads)
    if proc is None or not proc.alive():
        if proc is not None:
            proc.close()
        proc = _started(threads)
        proc.counts = proc.outcome_counts()
        _PROCESSES[threads] = proc
    return proc


def _started(threads: int, attempts: int = 3) -> IndexerProcess:
    """A started indexer; a free port can be taken by another process before the indexer binds it, so try again."""
    for attempt in range(attempts):
        proc = IndexerProcess(threads)
        try:
            proc.start()
            return proc
        except services.ServiceFailure:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def fence_unavailable(threads: int) -> str | None:
    """Why the indexer of ``threads`` threads cannot be driven here (it does not start, or cannot be fenced), or None."""
    try:
        return indexer_process(threads).fence_missing()
    except services.ServiceFailure as exc:
        return str(exc)


def close_processes() -> None:
    """Stop every indexer process this interpreter started."""
    for proc in _PROCESSES.values():
        proc.close()
    _PROCESSES.clear()


# ----------------------------------------------------------------------------- a rank's socket


class Publisher:
    """One rank's ZMQ XPUB on 127.0.0.1: the indexer subscribes to it; messages carry contiguous sequence numbers."""

    def __init__(self, context: Any) -> None:
        import zmq

        self.socket = context.socket(zmq.XPUB)
        self.socket.setsockopt(zmq.XPUB_VERBOSE, 1)
        self.socket.setsockopt(zmq.LINGER, 0)
        port = self.socket.bind_to_random_port(f"tcp://{services.LOOPBACK}")
        self.endpoint = f"tcp://{services.LOOPBACK}:{port}"
        self.seq = 0

    def await_subscriber(self, timeout_ms: int = 10_000) -> bool:
        """Wait for the indexer's subscription frame (a PUB drops what it sends before then)."""
        if not self.socket.poll(timeout_ms):
            return False
        self.socket.recv()
        return True

    def send(self, events: list[dict[str, Any]], dp_rank: int) -> None:
        import msgpack

        payload = msgpack.packb([time.time(), events, dp_rank])
        self.socket.send_multipart([b"", self.seq.to_bytes(8, "big"), payload])
        self.seq += 1

    def close(self) -> None:
        self.socket.close(0)


_CONTEXT: list[Any] = []


def zmq_context() -> Any:
    import zmq

    if not _CONTEXT:
        _CONTEXT.append(zmq.Context())
    return _CONTEXT[0]


# ----------------------------------------------------------------------------- the tree


_REFUSALS = {
    "parent_block_not_found": ParentBlockNotFound,
    "block_not_found": BlockNotFound,
    "invalid_block": InvalidBlockSequence,
}
"""The indexer's outcome labels that are kvproof's typed rejections; any other label is ``IndexerRefusal``."""


class IndexerRefusal(RuntimeError):
    """The indexer counted an event under a label kvproof has no rejection for (the label is the message)."""


@dataclass(frozen=True)
class Observed:
    """One event's outcome as the indexer counted it: ``(event_type, status)``."""

    event_type: str
    status: str


def raise_for(label: tuple[str, str], event: KvCacheEvent) -> None:
    """Turn the indexer's outcome label into kvproof's outcome (return: accepted; raise: the typed rejection)."""
    _, status = label
    if status == "ok":
        return
    error = _REFUSALS.get(status)
    if error is not None:
        raise error(f"dynamo.indexer counted {status} for {event.data!r}")
    raise IndexerRefusal(f"dynamo.indexer counted {status} for {event.data!r}")


def signed(value: int) -> int:
    """A u64 as the i64 of the same bits (the indexer's JSON reads hashes as i64)."""
    return value - 2**64 if value >= 2**63 else value


class IndexerTree:
    """The tree API over one model of a shared ``dynamo.indexer`` process (see the module docstring)."""

    surface = SURFACE
    #: A rank's ZMQ socket is used by one thread: the removal race sends the racing event just before ``/unregister``.
    submits_during_removal = False

    def __init__(self, threads: int = DEFAULT_THREADS, process: IndexerProcess | None = None) -> None:
        from .targets import rules_of_target

        self.threads = threads
        self.rules = rules_of_target(f"dynamo-indexer@{threads}")  # the rule set this component follows (spec.rules)
        self.process = process or indexer_process(threads)
        self.model = self.process.next_model()
        self._instances: dict[int, int] = {}  # worker id -> instance id
        self._workers: dict[int, int] = {}  # instance id -> worker id
        self._publishers: dict[Rank, Publisher] = {}
        self._tokens: dict[int, int] = {}  # local hash -> token
        self._locals: dict[int, int] = {}  # the indexer's tokens_hash of a token -> local hash
        self._closed = False
        self._unfenced = 0  # events ``send_unfenced`` sent that no fence has counted yet

    # -- mapping

    def _token(self, local: int) -> int:
        token = self._tokens.get(local)
        if token is None:
            token = self._tokens[local] = len(self._tokens) + 1
        return token

    def _learn_hashes(self, locals_: Sequence[int]) -> list[int]:
        """The tokens of ``locals_``, remembering the indexer's hash of each (for the dump)."""
        from .targets import dynamo_core

        tokens = [self._token(local) for local in locals_]
        for local, hashed in zip(locals_, dynamo_core().compute_block_hash_for_seq(tokens, 1)):
            self._locals[hashed] = local
        return tokens

    def _instance(self, worker_id: int) -> int:
        instance = self._instances.get(worker_id)
        if instance is None:
            instance = self._instances[worker_id] = self.process.next_instance()
            self._workers[instance] = worker_id
        return instance

    def _publisher(self, rank: Rank) -> Publisher:
        pub = self._publishers.get(rank)
        if pub is not None:
            return pub
        pub = Publisher(zmq_context())
        body = {
            "instance_id": self._instance(rank.worker_id),
            "endpoint": pub.endpoint,
            "model_name": self.model,
            "block_size": 1,
            "dp_rank": rank.dp_rank,
        }
        status, answer = self.process.request("POST", "/register", body)
        if status != 201:
            pub.close()
            raise services.ServiceFailure(f"dynamo.indexer refused /register {body}: {status} {answer}")
        if not pub.await_subscriber():
            pub.close()
            raise services.ServiceFailure(f"dynamo.indexer never subscribed to {pub.endpoint} (rank {rank})")
        self._publishers[rank] = pub
        return pub

    # -- events

    def wire_event(self, event: KvCacheEvent) -> dict[str, Any]:
        """The event as vLLM's publisher writes it; ``NotOnSurface`` for a store the converter would rewrite."""
        data = event.data
        if isinstance(data, Stored):
            hashes = [b.ext for b in data.blocks]
            refused = store_not_carried(SURFACE, data.parent_hash, hashes)
            if refused is not None:
                raise refused
            return {
                "type": "BlockStored",
                "block_hashes": hashes,
                "parent_block_hash": data.parent_hash,
                "token_ids": self._learn_hashes([b.local for b in data.blocks]),
                "block_size": 1,
            }
        if isinstance(data, Removed):
            return {"type": "BlockRemoved", "block_hashes": list(data.block_hashes)}
        assert isinstance(data, Cleared)
        return {"type": "AllBlocksCleared"}

    def apply_event(self, worker_id: int, payload: Any) -> None:
        """Apply one event behind the fence; raise the typed rejection the indexer's outcome stands for."""
        rank, event = parse_event(worker_id, payload)
        [label] = self.send_many([(rank, event)])
        raise_for(label, event)

    def send_many(self, events: Iterable[tuple[Rank, KvCacheEvent]]) -> list[tuple[str, str]]:
        """Send events at once, each on its rank's socket, then fence them together; return the labels that moved.

        With one event the label is that event's outcome; with several the labels are a multiset
        (the indexer's lanes may apply them in any order across ranks).
        """
        self._live()
        wired = [(rank, self.wire_event(event)) for rank, event in events]
        for rank, message in wired:
            self._publisher(rank).send([message], rank.dp_rank)
        return self.process.fence(len(wired), f"model {self.model}")

    def send_unfenced(self, worker_id: int, payload: Any) -> None:
        """Send one event and return at once (``settle`` waits for it): the removal race's door
        (``explore.removal_race``; not ``submit``, which promises the pool's acknowledgement of each event). A
        malformed payload is refused here, before anything is sent."""
        self._live()
        rank, event = parse_event(worker_id, payload)
        self._publisher(rank).send([self.wire_event(event)], rank.dp_rank)
        self._unfenced += 1

    def settle(self) -> None:
        """Wait until every event ``send_unfenced`` sent was applied, or dropped by an ``/unregister`` it raced."""
        self._live()
        sent, self._unfenced = self._unfenced, 0
        self.process.settle(sent)

    # -- calls

    def remove_worker(self, worker_id: int) -> None:
        """``/unregister`` the worker (the indexer drops its blocks); its ranks publish on fresh sockets afterwards."""
        from ...spec.events import check_worker_id

        worker_id = check_worker_id(worker_id)
        self._live()
        instance = self._instances.get(worker_id)
        if instance is None:
            return
        mine = [rank for rank in self._publishers if rank.worker_id == worker_id]
        if mine:
            status, answer = self.process.request("POST", "/unregister", {"instance_id": instance, "model_name": self.model})
            if status != 200:
                raise services.ServiceFailure(f"dynamo.indexer refused /unregister of instance {instance}: {status} {answer}")
        for rank in mine:
            self._publishers.pop(rank).close()

    def clear_all_blocks(self, worker_id: int) -> None:
        """``AllBlocksCleared`` from every rank of ``worker_id`` that has published (one fenced event each)."""
        from ...spec.events import check_worker_id

        worker_id = check_worker_id(worker_id)
        ranks = sorted(rank for rank in self._publishers if rank.worker_id == worker_id)
        for rank in ranks:
            self.send_many([(rank, KvCacheEvent(0, Cleared(), rank.dp_rank))])

    # -- reads

    def _query_body(self, sequence: Any) -> dict[str, Any]:
        return {"model_name": self.model, "token_ids": [self._token(local) for local in check_query(sequence)]}

    def _scores(self, status: int, answer: Any) -> OverlapScores:
        if status == 404 and isinstance(answer, dict) and str(answer.get("error", "")).startswith("no indexer for model"):
            return OverlapScores({})  # no worker registered yet (or any more): the model has no indexer
        if status != 200 or not isinstance(answer, dict):
            raise services.ServiceFailure(f"dynamo.indexer answered /query with {status}: {answer!r}"[:300])
        return OverlapScores(
            {
                Rank(self._workers[int(instance)], int(dp)): score
                for instance, ranks in answer["scores"].items()
                for dp, score in ranks.items()
            }
        )

    def find_matches(self, sequence: Any, early_exit: bool = False) -> OverlapScores:
        if check_early_exit(early_exit):
            raise NotOnSurface("early_exit", SURFACE.early_exit or "")
        self._live()
        return self._scores(*self.process.request("POST", "/query", self._query_body(sequence)))

    def find_matches_many(self, sequences: list[Any]) -> list[OverlapScores]:
        """``find_matches`` of each sequence (no early exit)."""
        self._live()
        bodies = [self._query_body(s) for s in sequences]
        return [self._scores(*answer) for answer in self.process.request_many("POST", "/query", bodies)]

    def dump_tree_as_events(self) -> list[str]:
        """This model's part of ``/dump``, as the binding's RouterEvent lines, mapped back to kvproof's ids."""
        self._live()
        status, answer = self.process.request("GET", "/dump")
        if status != 200 or not isinstance(answer, dict):
            raise services.ServiceFailure(f"dynamo.indexer answered /dump with {status}")
        part = answer.get(f"{self.model}:default", {"events": []})
        lines = []
        for entry in part["events"]:
            event = entry["event"]
            stored = event["data"]["stored"]
            blocks = tuple(Block(self._locals[b["tokens_hash"]], b["block_hash"]) for b in stored["blocks"])
            worker = self._workers[entry["worker_id"]]
            lines.append(
                encode_router_event(
                    worker, KvCacheEvent(event["event_id"], Stored(stored["parent_hash"], blocks), event.get("dp_rank", 0))
                )
            )
        return lines

    # -- lifetime

    def _live(self) -> None:
        if self._closed:
            raise RuntimeError("this indexer tree was closed")

    def close(self) -> None:
        """Unregister every worker of this tree and close its sockets (the indexer process stays for other trees)."""
        if self._closed:
            return
        self._closed = True
        instances = {self._instances[rank.worker_id] for rank in self._publishers}
        for pub in self._publishers.values():
            pub.close()
        self._publishers.clear()
        if self.process.alive():
            for instance in sorted(instances):
                try:
                    self.process.request("POST", "/unregister", {"instance_id": instance, "model_name": self.model})
                except services.ServiceFailure:
                    break

    def __del__(self) -> None:
        try:
            for pub in self._publishers.values():
                pub.close()
        except Exception:
            pass

"""Dynamo's in-process selection service, ``dynamo._core.SelectionService(indexer_threads=N)``, as a tree target.

The selection service is the runtime-free core of ``python -m dynamo.select_service``: Dynamo's
indexer (``ThreadPoolIndexer`` over the concurrent tree for N >= 2, the single-threaded
``KvIndexer`` for N = 1), its scheduler and the Rust ``ActiveSequences``. kvproof feeds it raw
RouterEvents through **peer recovery**: ``recover_indexer_from_peers([url])`` fetches ``/dump``
from a loopback HTTP server kvproof runs and applies every event it lists. That door carries what
the ZMQ converter rewrites (a store whose parent is among its own blocks, a hash listed twice) and
takes the local hashes as they are. Target names: ``dynamo-selection`` (4 threads),
``dynamo-selection@N``. (docs/dynamo-surface.md, "The selection service".)

How the tree API maps onto it:

- One service per thread count serves the trees; each tree is a partition (model) of its own,
  with one schedulable stand-in worker (an ``inproc://`` endpoint, no network) so that
  ``overlap_scores`` answers. Worker ids are global in the service (upserting an id under another
  model moves it), so each tree maps its workers to ids unique in the service, and back.
- ``apply_event`` reads the payload with kvproof's strict reader and queues the event; nothing
  reaches the service until a read needs it. Recovery reports no outcome per event, so **outcomes
  are not on this surface**: ``apply_event`` returns as if accepted and the rows compare scores
  and dumps (``Surface.outcomes``).
- A read first **flushes**: one recovery call with every queued event of every tree, then
  ``indexer_snapshot()``, a FIFO barrier over every lane. Each recovery call sleeps one second
  before it fetches (a fixed delay in Dynamo), so rows run many trees at once
  (``harness.lockstep``) and pay that second once per step for all of them.
- **Deterministic by default**: the lanes of a partition are given round-robin to ranks by first
  appearance, so after each new rank's first event kvproof queues N-1 no-op events (``removed []``)
  of fresh stand-in ranks: every real rank lands on lane 0 and the events apply in order. With
  ``pinned=False`` (production mode) ranks spread over the lanes and apply at once.
- ``find_matches`` is ``overlap_scores`` with the local hashes (blocks per rank); no ``early_exit``.
- ``remove_worker(w)`` is ``upsert_worker`` of w's id into the partition, then ``delete_worker``
  (which drops its blocks); ``clear_all_blocks(w)`` queues ``cleared`` from each rank of w seen.
- ``dump_tree_as_events`` is the partition's part of ``indexer_snapshot()``.

The service opens no listening socket; the peer server kvproof runs listens on 127.0.0.1 only.
A service is retired (its threads freed) once it has served ``PARTITIONS_PER_SERVICE`` trees
and none of them is open.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ...impl import _sync
from ...spec.events import (
    Cleared,
    KvCacheEvent,
    check_worker_id,
    decode_router_event,
    encode_router_event,
    event_data_json,
    parse_event,
)
from ...spec.match import OverlapScores, check_early_exit, check_query
from ...spec.primitives import Rank
from . import lockstep, services
from .surface import NotOnSurface, Surface

DEFAULT_THREADS = 4
PARTITIONS_PER_SERVICE = 200
"""Trees one service serves before a fresh one takes over (each partition keeps N indexer threads)."""

STAND_IN_BASE = 1 << 62
"""Ids at and above this are kvproof's: a tree's workers, the partitions' stand-in workers, the pinning ranks."""

SURFACE = Surface(
    early_exit="overlap_scores has no early_exit",
    rank_removal="delete_worker removes the whole worker; there is no per-rank removal",
    wire="events reach the service as the JSON of a peer's /dump that kvproof writes, so a malformed payload cannot",
    outcomes="peer recovery applies events without reporting an outcome per event",
)


def unavailable() -> str | None:
    """Why the selection service cannot run here, or None."""
    from .targets import dynamo_core

    try:
        service = dynamo_core().SelectionService
    except (ImportError, AttributeError):
        return "this ai-dynamo-runtime has no SelectionService (1.3.0 and later ship it; ai-dynamo-runtime is an extra)"
    if not hasattr(service, "recover_indexer_from_peers"):
        return "this ai-dynamo-runtime's SelectionService has no recover_indexer_from_peers (1.4.0 and later)"
    return None


def signed(value: int) -> int:
    """A u64 as the i64 of the same bits (the service reads hashes in queries as i64)."""
    return value - 2**64 if value >= 2**63 else value


# ----------------------------------------------------------------------------- the peer


class Peer:
    """A loopback HTTP server whose ``/dump`` answers with ``body`` (the batch the next recovery call applies)."""

    def __init__(self) -> None:
        peer = self
        self.body = b"{}"

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                body = peer.body if self.path.startswith("/dump") else b"{}"
                self.send_response(200 if self.path.startswith("/dump") else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((services.LOOPBACK, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{services.LOOPBACK}:{self.server.server_address[1]}"
        self.thread = _sync.Thread(self.server.serve_forever, "kvproof-peer")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# ----------------------------------------------------------------------------- the service


class SelectionHost:
    """One ``SelectionService`` on an event loop of its own, with the peer it recovers from."""

    def __init__(self, threads: int) -> None:
        from .targets import dynamo_core

        self.threads = threads
        self.loop = asyncio.new_event_loop()
        self.loop_thread = _sync.Thread(self.loop.run_forever, "kvproof-selection-loop")
        self.peer = Peer()
        self.service = self.call_sync(lambda: dynamo_core().SelectionService(indexer_threads=threads))
        self.partitions = 0
        self.open_trees = 0
        self.pending: dict[str, list[dict[str, Any]]] = {}  # partition -> queued RouterEvents
        self.snapshot: dict[str, Any] | None = None  # the last barrier's dump (valid until the next flush)
        self.flushes = 0
        self.closed = False

    def call_sync(self, make: Any) -> Any:
        async def build() -> Any:
            return make()

        return asyncio.run_coroutine_threadsafe(build(), self.loop).result(60)

    def call(self, method: str, *args: Any, timeout: float = 120.0, **kwargs: Any) -> Any:
        """Call a method of the service (async or not) on its loop and wait for the answer; a hang is a ``ServiceFailure``."""

        async def invoke() -> Any:
            answer = getattr(self.service, method)(*args, **kwargs)
            return await answer if hasattr(answer, "__await__") else answer

        future = asyncio.run_coroutine_threadsafe(invoke(), self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise services.ServiceFailure(f"SelectionService did not answer within {timeout} s (hung)") from None

    def flush(self) -> None:
        """Apply every queued event of every tree: one recovery call, then the snapshot barrier."""
        if not self.pending:
            return
        batch = {f"{partition}:default": {"block_size": 1, "events": events} for partition, events in self.pending.items()}
        self.pending = {}
        self.peer.body = json.dumps(batch).encode()
        ok = self.call("recover_indexer_from_peers", [self.peer.url])
        if not ok:
            raise services.ServiceFailure(f"SelectionService refused a recovery batch of {len(batch)} partitions")
        self.snapshot = self.call("indexer_snapshot")
        self.flushes += 1

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.service.shutdown()
        except Exception:
            pass
        self.service = None
        self.peer.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.loop_thread.join(10)
        self.loop.close()


_HOSTS: dict[int, SelectionHost] = {}
_RETIRED: list[SelectionHost] = []
_IDS = itertools.count(STAND_IN_BASE)


def host_for(threads: int) -> SelectionHost:
    """The service new trees of ``threads`` threads go to (a fresh one once the last has served its share)."""
    host = _HOSTS.get(threads)
    if host is None or host.partitions >= PARTITIONS_PER_SERVICE:
        if host is not None:
            _RETIRED.append(host)
        host = _HOSTS[threads] = SelectionHost(threads)
    for old in [h for h in _RETIRED if h.open_trees == 0]:
        old.close()
        _RETIRED.remove(old)
    return host


def close_hosts() -> None:
    for host in [*_HOSTS.values(), *_RETIRED]:
        host.close()
    _HOSTS.clear()
    _RETIRED.clear()


# ----------------------------------------------------------------------------- the tree


class SelectionTree:
    """The tree API over one partition of a shared ``SelectionService`` (see the module docstring)."""

    surface = SURFACE
    lockstep = True  # every flush costs a recovery call's fixed second: rows run many trees at once (harness.lockstep)

    def __init__(self, threads: int = DEFAULT_THREADS, pinned: bool = True) -> None:
        from .targets import rules_of_target

        self.threads, self.pinned = threads, pinned
        self.rules = rules_of_target(f"dynamo-selection@{threads}")
        self.host = host_for(threads)
        self.host.partitions += 1
        self.host.open_trees += 1
        self.partition = f"kvproof-s{next(_IDS) - STAND_IN_BASE}"
        self.stand_in = next(_IDS)
        self._ids: dict[int, int] = {}  # worker id -> the service's id
        self._workers: dict[int, int] = {}  # the service's id -> worker id
        self._ranks: set[Rank] = set()  # ranks that have published (pinned on lane 0)
        self._closed = False
        self.host.call(
            "upsert_worker",
            {
                "worker_id": self.stand_in,
                "model_name": self.partition,
                "endpoint": f"dyn://kvproof/{self.stand_in}",
                "block_size": 1,
                "kv_events_endpoint": f"inproc://kvproof-{self.stand_in}",
                "total_kv_blocks": 1 << 20,
            },
        )

    # -- mapping

    def _id(self, worker_id: int) -> int:
        mapped = self._ids.get(worker_id)
        if mapped is None:
            mapped = self._ids[worker_id] = next(_IDS)
            self._workers[mapped] = worker_id
        return mapped

    def _router_event(self, rank: Rank, event: KvCacheEvent) -> dict[str, Any]:
        return {
            "worker_id": self._id(rank.worker_id),
            "event": {"event_id": event.event_id, "data": event_data_json(event.data), "dp_rank": rank.dp_rank},
        }

    def _queue(self, rank: Rank, event: KvCacheEvent) -> None:
        queue = self.host.pending.setdefault(self.partition, [])
        queue.append(self._router_event(rank, event))
        if rank not in self._ranks:
            self._ranks.add(rank)
            if self.pinned:  # the next threads-1 lanes go to stand-ins: every real rank shares lane 0
                for _ in range(self.threads - 1):
                    queue.append(
                        {
                            "worker_id": next(_IDS),
                            "event": {"event_id": 0, "data": {"removed": {"block_hashes": []}}, "dp_rank": 0},
                        }
                    )

    def _sync(self) -> None:
        """Bring the service up to date with this tree's queued events (in lockstep with other trees when run so)."""
        self._live()
        if self.partition in self.host.pending and not lockstep.wait_for_flush(id(self.host), self.host.flush):
            self.host.flush()

    # -- events

    def apply_event(self, worker_id: int, payload: Any) -> None:
        """Queue the event (its outcome is not reported by this surface: ``Surface.outcomes``)."""
        self._live()
        rank, event = parse_event(worker_id, payload)
        self._queue(rank, event)

    def send_many(self, events: Iterable[tuple[Rank, KvCacheEvent]]) -> list[tuple[str, str]]:
        """Queue events of several ranks and flush them as one batch (unpinned, they run on their lanes at once);
        no outcomes come back (an empty list)."""
        for rank, event in events:
            self._queue(rank, event)
        self._sync()
        return []

    def remove_worker(self, worker_id: int) -> None:
        """Drop the worker: its id upserted into this partition, then deleted (the service drops its blocks)."""
        worker_id = check_worker_id(worker_id)
        self._sync()
        mapped = self._ids.get(worker_id)
        if mapped is None:
            return
        self.host.call(
            "upsert_worker",
            {
                "worker_id": mapped,
                "model_name": self.partition,
                "endpoint": f"dyn://kvproof/{mapped}",
                "block_size": 1,
                "kv_events_endpoint": f"inproc://kvproof-{mapped}",
            },
        )
        self.host.call("delete_worker", mapped)
        self.host.snapshot = None
        self._ranks -= {rank for rank in self._ranks if rank.worker_id == worker_id}
        del self._workers[mapped], self._ids[worker_id]  # a worker that comes back is a fresh id

    def clear_all_blocks(self, worker_id: int) -> None:
        worker_id = check_worker_id(worker_id)
        for rank in sorted(r for r in self._ranks if r.worker_id == worker_id):
            self._queue(rank, KvCacheEvent(0, Cleared(), rank.dp_rank))

    # -- reads

    def find_matches(self, sequence: Any, early_exit: bool = False) -> OverlapScores:
        if check_early_exit(early_exit):
            raise NotOnSurface("early_exit", SURFACE.early_exit or "")
        return self.find_matches_many([sequence])[0]

    def find_matches_many(self, sequences: list[Any]) -> list[OverlapScores]:
        queries = [check_query(s) for s in sequences]
        if not queries:
            return []
        self._sync()
        return [self._scores(q) for q in queries]

    def _scores(self, query: list[int]) -> OverlapScores:
        if not query:
            return OverlapScores({})
        hashes = [signed(h) for h in query]
        answer = self.host.call(
            "overlap_scores",
            {"model_name": self.partition, "block_hashes": hashes, "sequence_hashes": hashes, "isl_tokens": len(query)},
        )
        return OverlapScores(
            {
                Rank(self._workers[row["worker_id"]], row["dp_rank"]): row["device_blocks"]
                for row in answer["workers"]
                if row["device_blocks"] > 0 and row["worker_id"] in self._workers
            }
        )

    def dump_tree_as_events(self) -> list[str]:
        self._sync()
        if self.host.snapshot is None:
            self.host.snapshot = self.host.call("indexer_snapshot")
        part = self.host.snapshot.get(f"{self.partition}:default", {"events": []})
        lines = []
        for entry in part["events"]:
            if entry["worker_id"] not in self._workers:
                continue  # a stand-in
            _, event = decode_router_event(json.dumps(entry))
            lines.append(encode_router_event(self._workers[entry["worker_id"]], event))
        return lines

    # -- lifetime

    def _live(self) -> None:
        if self._closed:
            raise RuntimeError("this selection tree was closed")

    def close(self) -> None:
        """Forget this tree: its queued events are dropped, its stand-in deleted (the partition's blocks stay until the
        service is retired)."""
        if self._closed:
            return
        self._closed = True
        self.host.pending.pop(self.partition, None)
        self.host.open_trees -= 1
        try:
            self.host.call("delete_worker", self.stand_in)
        except Exception:
            pass

"""The thread-pool indexer: N event threads over one concurrent tree, reads on the caller.

- **Sticky routing.** Each worker's events go to one event thread (round robin on first
  sight), so one worker's events are applied in FIFO order on one lane while different workers
  mutate shared nodes side by side. Routing by worker (not by rank) keeps every rank of a worker
  on one lane, so ``remove_worker`` is one task.
- **Removal is linearizable with the worker's own racing events.** A route is forgotten (so that
  fresh worker ids do not grow the table) only when the worker holds nothing and nothing of it is
  queued: its last task on the lane was its removal and no task of it is pending. An event that
  races the removal lands before or after it on the same lane, and while it is held the worker
  keeps its lane, so a later removal reaches it. (Forgetting the route at once, while an event of
  the worker still waited behind the removal, routed its next event to another lane and left the
  late event's blocks where no later removal looked: the broken twin ``ForgetsRouteWithEventsInFlight``.)
- **Decoding on the caller.** A malformed payload is rejected on the caller's thread with a
  typed error before anything is queued.
- **Visibility.** ``apply_event`` waits for the lane's acknowledgement and re-raises the
  event's error there: completion is the visibility boundary. ``submit`` queues without
  waiting and returns the acknowledgement; ``flush`` waits until every event queued before
  it has been applied on every lane.
- **Reads.** ``find_matches`` runs inline on the caller's thread, takes no gate, and passes
  ``early_exit`` through.

Source: docs/sources.md#dynamo-crtc-readme "Concurrency Model"; docs/sources.md#crtc-7 "Event routing
(ThreadPoolIndexer)".
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

from ..reference.wire import parse_event_fast
from ..spec.events import KvCacheEvent, Payload, check_worker_id
from ..spec.match import OverlapScores
from . import _sync
from .radix_tree import ConcurrentRadixTree


class Ack:
    """The acknowledgement of one queued task: ``wait()`` returns once it ran, re-raising its error."""

    __slots__ = ("_done", "error")

    def __init__(self) -> None:
        self._done = _sync.Event()
        self.error: BaseException | None = None

    def complete(self, error: BaseException | None = None) -> None:
        self.error = error
        self._done.set()

    def wait(self) -> None:
        self._done.wait()
        if self.error is not None:
            raise self.error


_STOP = object()


class ThreadPoolIndexer:
    """Event threads over a ``ConcurrentRadixTree``, with the ``dynamo._core.RadixTree`` API."""

    def __init__(self, threads: int = 4, tree: ConcurrentRadixTree | None = None) -> None:
        self.tree = tree or ConcurrentRadixTree(lanes=threads)
        assert len(self.tree.lanes) >= threads, "the tree needs one lane per event thread"
        self._channels = [_sync.Channel() for _ in range(threads)]
        self._routes: dict[int, int] = {}
        self._pending: dict[int, int] = {}  # worker -> its tasks queued and not yet run
        self._removed_last: set[int] = set()  # workers whose last task run on their lane was their removal
        self._routing = _sync.Lock("indexer.routing")
        self._next = itertools.count()
        self._threads = [_sync.Thread(self._loop_for(i), name=f"kvproof-event-{i}") for i in range(threads)]

    # ------------------------------------------------------------------ routing

    def lane_of(self, worker_id: int) -> int:
        """Return the event thread that owns ``worker_id`` (assigned round robin on first sight)."""
        lane = self._routes.get(worker_id)
        if lane is None:
            with self._routing:
                lane = self._routes.get(worker_id)
                if lane is None:
                    lane = self._routes[worker_id] = next(self._next) % len(self._channels)
        return lane

    def _reserve(self, worker_id: int) -> int:
        """The worker's lane (assigned on first sight), with one more task of it counted as queued."""
        with self._routing:
            lane = self._routes.get(worker_id)
            if lane is None:
                lane = self._routes[worker_id] = next(self._next) % len(self._channels)
            self._pending[worker_id] = self._pending.get(worker_id, 0) + 1
            return lane

    def _ran(self, worker_id: int, removal: bool) -> None:
        """A task of the worker ran on its lane: forget the route once the worker holds nothing and nothing is queued."""
        with self._routing:
            if removal:
                self._removed_last.add(worker_id)
            else:
                self._removed_last.discard(worker_id)
            left = self._pending[worker_id] - 1
            if left:
                self._pending[worker_id] = left
                return
            del self._pending[worker_id]
            if worker_id in self._removed_last:
                self._forget_route(worker_id)

    def _forget_route(self, worker_id: int) -> None:
        """Forget a removed worker's route (under ``_routing``): its next event starts afresh, round robin."""
        self._removed_last.discard(worker_id)
        del self._routes[worker_id]

    def _for_worker(self, worker_id: int, work: Callable[[Any], None], removal: bool = False) -> Ack:
        """Queue a task of ``worker_id`` on its lane, counted until it ran (see ``_ran``)."""
        lane = self._reserve(worker_id)

        def counted(handle: Any) -> None:
            try:
                work(handle)
            finally:
                self._ran(worker_id, removal)

        return self._enqueue(lane, counted)

    def _loop_for(self, i: int) -> Callable[[], None]:
        channel, lane = self._channels[i], self.tree.lanes[i]

        def loop() -> None:
            while True:
                task = channel.get()
                if task is _STOP:
                    return
                work, ack = task
                try:
                    work(lane)
                except BaseException as exc:  # delivered to the waiter, never lost on the lane
                    ack.complete(exc)
                else:
                    ack.complete()

        return loop

    def _enqueue(self, lane_index: int, work: Callable[[Any], None]) -> Ack:
        ack = Ack()
        self._channels[lane_index].put((work, ack))
        return ack

    # ------------------------------------------------------------------ the API

    def submit(self, worker_id: int, event: Payload | KvCacheEvent) -> Ack:
        """Queue one event on the worker's lane; return its acknowledgement (errors surface in ``wait``)."""
        rank, event = parse_event_fast(worker_id, event)  # on the caller's thread: a bad payload is never queued
        worker_id = rank.worker_id
        return self._for_worker(worker_id, lambda lane: self.tree.apply_on(lane, worker_id, event))

    def apply_event(self, worker_id: int, event: Payload | KvCacheEvent) -> None:
        """Apply one event and wait until it is visible; raise its typed error if it was rejected."""
        self.submit(worker_id, event).wait()

    def remove_worker(self, worker_id: int) -> None:
        """Drop the worker on its lane and wait; its route goes once nothing of it is queued or held (``_ran``).

        An event of the worker that races the removal lands before or after it, on the same lane: a
        later removal reaches it.
        """
        worker_id = check_worker_id(worker_id)
        self._for_worker(worker_id, lambda l: self.tree.lane(l.index).remove_worker(worker_id), removal=True).wait()

    def clear_all_blocks(self, worker_id: int) -> None:
        worker_id = check_worker_id(worker_id)
        self._for_worker(worker_id, lambda l: self.tree.lane(l.index).clear_all_blocks(worker_id)).wait()

    def find_matches(self, sequence: Iterable[int], early_exit: bool = False) -> OverlapScores:
        """Read inline on the caller's thread (no gate, no queue)."""
        return self.tree.find_matches(sequence, early_exit)

    def flush(self) -> None:
        """Wait until every event queued before this call has been applied, on every lane."""
        acks = [self._enqueue(i, lambda lane: None) for i in range(len(self._channels))]
        for ack in acks:
            ack.wait()

    def dump_tree_as_events(self) -> list[str]:
        self.flush()
        return self.tree.dump_tree_as_events()

    def snapshot(self) -> dict:
        self.flush()
        return self.tree.snapshot()

    def check(self) -> None:
        self.flush()
        self.tree.check()

    def statistics(self):
        self.flush()
        return self.tree.statistics()

    def shape(self) -> list[tuple]:
        self.flush()
        return self.tree.shape()

    def close(self) -> None:
        """Stop the event threads (after the events already queued)."""
        for channel in self._channels:
            channel.put(_STOP)
        for thread in self._threads:
            thread.join()

    def __enter__(self) -> ThreadPoolIndexer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""Deliberately broken concurrent trees: the negative controls of the concurrency checks.

Each is the concurrent tree with one protection removed:

- ``NoVersionCheck``: plans are committed without checking the node's shape version, so a
  plan made before another lane's split or extension is applied to the changed node.
- ``RepairRestoresEntries``: lookup repair writes an entry for every block of the resolved
  edge and every rank of the lane, whether or not the entry still named the stale node (or
  the rank covers the block): deleted entries come back.
- ``ConcurrentExtendsInternalNode`` (short name ``ExtendsInternalNode``): decode extension ignores the sticky ``internal`` flag.
- ``RejectsStoresUnderSomeParents``: stores under held parents are refused (caught only by the
  checkpoint's acceptance verdicts in chaos mode).
- ``FanoutWithoutGate``: a prefill fanout insert checks the parent's version but does not hold its
  shared gate, so a split can move the parent's children between the check and the insert.
- ``ReadSkipsVersionCheck``: ``find_matches`` descends into a child without checking that the
  node's version did not move since it read the edge (the child may belong to another edge).
- ``TornEdgeRead``: ``find_matches`` reads a node's edge and its coverage from two moments.
- ``DropReadsLinksFirst``: a worker's removal reads a node's split links before dropping the worker
  from it, missing a suffix split off in between.
- ``DescendsIntoReleasedChild``: a store covers the child it looked up after another lane released it
  as dead (the race the explorer found in the embedded tree, now fixed).

The interleaving explorer (``stateful_tests.explore``) finds each of them deterministically.

And three broken thread-pool indexers (``POOL_MUTANTS``). The pipelined check
(``pipeline.check_pipelined``, the gate's pool row) catches the first two (``PIPELINE_MUTANTS``):

- ``RoutesByEvent``: events go to the event threads in turn, not by worker, so one worker's
  events can apply out of order;
- ``FlushReturnsEarly``: ``flush`` does not wait, so reads after it can miss queued events;

the removal race (``pool_stress``, the gate's row "pool: removal racing its workers' events") and the
explorer's scenario ``remove-vs-own-events`` catch the third:

- ``ForgetsRouteWithEventsInFlight``: a removal forgets the worker's route while an event of the
  worker still waits behind it on the lane.

``docs/concurrency.md`` records how often real-thread stress catches each per 100 runs
(``kvproof stress tree --mutant NAME --runs 100 ...``); the suite also catches each one
deterministically (the lockstep twin machine and a forced interleaving).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ...impl import _sync
from ...impl.indexer import ThreadPoolIndexer
from ...impl.lane import Direction, Lane
from ...impl.node import ReadStep
from ...impl.radix_tree import ConcurrentRadixTree
from ...spec.coverage import EdgeState, covers
from ...spec.errors import ParentBlockNotFound
from ...spec.events import parse_event


class NoVersionCheck(ConcurrentRadixTree):
    """Stale plans commit: the version check before every commit is switched off."""

    validate_plans = False


class _RestoringLane(Lane):
    def redirect(self, stale, resolved, h, direction: Direction) -> None:
        for lookup in self.lookups.values():
            for block in resolved.view.state.edge:
                lookup[block.ext] = resolved


class RepairRestoresEntries(ConcurrentRadixTree):
    """Repair rewrites every entry of the resolved edge for every rank, restoring deleted ones."""

    def __init__(self, lanes: int = 1) -> None:
        super().__init__(lanes)
        self.lanes = [_RestoringLane(i) for i in range(len(self.lanes))]


class ConcurrentExtendsInternalNode(ConcurrentRadixTree):
    """Decode extension ignores the sticky internal flag (only the tail coverage is checked).

    The concurrent twin of ``mutants.ExtendsInternalNode``; its short name on the command line and in
    saved schedules stays ``ExtendsInternalNode`` (``short_name``).
    """

    short_name = "ExtendsInternalNode"

    def _may_extend(self, node, rank) -> bool:
        state = node.view.state
        return covers(state, rank, len(state.edge) - 1)


class RejectsStoresUnderSomeParents(ConcurrentRadixTree):
    """Rejects every store whose parent hash is a multiple of 7, held or not: only the acceptance verdicts see it
    in chaos mode, where the checkpoint's contract follows the tree's own outcomes."""

    def _store(self, lane, rank, stored) -> None:
        if stored.parent_hash is not None and stored.parent_hash % 7 == 0:
            raise ParentBlockNotFound(f"(deliberately) parent block {stored.parent_hash}")
        super()._store(lane, rank, stored)


class FanoutWithoutGate(ConcurrentRadixTree):
    """A dropped gate: prefill fanout validates the parent's version, then inserts without holding its shared gate."""

    def _insert_child(self, lane, parent, key, fresh, version) -> str:
        if not parent.internal:
            return super()._insert_child(lane, parent, key, fresh, version)
        if parent.version != version:
            lane.stats["stale_plan_retries"] += 1
            return "stale"
        with parent.children_lock:  # a split may run between the check and here: nothing holds it off
            if key in parent.children:
                return "existing"
            parent.children[key] = fresh
        lane.stats["fanout_inserts"] += 1
        return "inserted"


class DescendsIntoReleasedChild(ConcurrentRadixTree):
    """The race the explorer found in kvproof's own tree: a store descends into the child it looked up without
    checking that the parent kept its shape, so a child another lane released as dead gets the coverage, lost."""

    def _still_below(self, parent, version) -> bool:
        return True


class _UncheckedStep(ReadStep):
    __slots__ = ()

    def child(self, local: int):
        child = self.node.children.get(local)
        _sync.yield_point("read.after_child")
        return None if child is None else type(self)(child)


class ReadSkipsVersionCheck(ConcurrentRadixTree):
    """A missing version check on the read path: the walk descends into whatever child the node has now."""

    read_step = _UncheckedStep


class _TornStep(ReadStep):
    __slots__ = ()

    def edge_state(self) -> EdgeState:
        self.version = self.node.version
        edge = self.node.view.state.edge
        _sync.yield_point("read.between_edge_and_coverage")
        now = self.node.view.state
        return EdgeState(edge, now.full_edge_workers, now.worker_cutoffs)


class TornEdgeRead(ConcurrentRadixTree):
    """A torn read: the walk takes a node's edge from one published view and its full set and cutoffs from a later one."""

    read_step = _TornStep


class DropReadsLinksFirst(ConcurrentRadixTree):
    """A worker's removal reads each node's split links before it drops the worker there, so a suffix split off
    in between keeps the worker's coverage (the bug ``drop_ranks``'s docstring records)."""

    def _drop_from(self, lane, node, targets):
        links = list(node.splits)  # read before the gate: the broken order
        super()._drop_from(lane, node, targets)
        return links


def short_name(broken: type) -> str:
    """A broken structure's name on the command line and in saved schedules: its ``short_name``, else its class name."""
    return str(getattr(broken, "short_name", broken.__name__))


IMPL_MUTANTS = [NoVersionCheck, RepairRestoresEntries, ConcurrentExtendsInternalNode, RejectsStoresUnderSomeParents]
"""The mutants the lockstep twin and real-thread stress are measured against (docs/concurrency.md)."""


class ReleasesWithoutRecheck(ConcurrentRadixTree):
    """An eviction releases the leaf it saw unowned without re-checking under the gates: a store that covered the leaf
    in between loses its blocks with the released node (the race ``_release_if_dead`` revalidates against)."""

    def _release_if_dead(self, lane, node):
        parent = node.parent
        if node is self.root or parent is None or node.children or node.holders():
            return
        _sync.yield_point("release.before_gates")
        with parent.gate.exclusive():
            key = node.view.state.edge[0].local
            if parent.children.get(key) is node:
                parent.begin_shape_change()
                with parent.children_lock:
                    del parent.children[key]
                parent.end_shape_change()


EXPLORER_MUTANTS = [
    *IMPL_MUTANTS,
    FanoutWithoutGate,
    ReadSkipsVersionCheck,
    TornEdgeRead,
    DropReadsLinksFirst,
    DescendsIntoReleasedChild,
    ReleasesWithoutRecheck,
]
"""Every broken concurrent tree: the explorer must find each (``kvproof explore --mutants``)."""


class NeverPoisoned(ConcurrentRadixTree):
    """A tree that never poisons itself: a fault mid-operation leaves it torn and it goes on answering from the
    torn state (caught by the fault row: ``explore.faults`` judges such pairs broken)."""

    @contextmanager
    def guard(self, call: str) -> Iterator[None]:
        yield


FAULT_MUTANTS = [NeverPoisoned]
"""The broken trees the fault-injection row must catch (``kvproof explore --faults``)."""


# ----------------------------------------------------------------------------- broken pools
# Caught by the pipelined check (``pipeline.check_pipelined``; the gate's pool row).


class RoutesByEvent(ThreadPoolIndexer):
    """Routes each event to the next event thread in turn, not by its worker: one worker's events reorder."""

    def submit(self, worker_id, event):
        rank, decoded = parse_event(worker_id, event)
        lane = next(self._next) % len(self._channels)
        return self._enqueue(lane, lambda l: self.tree.apply_on(l, rank.worker_id, decoded))


class FlushReturnsEarly(ThreadPoolIndexer):
    """``flush`` queues its markers but returns without waiting for them: reads may miss queued events."""

    def flush(self) -> None:
        for i in range(len(self._channels)):
            self._enqueue(i, lambda lane: None)


class ForgetsRouteWithEventsInFlight(ThreadPoolIndexer):
    """``remove_worker`` forgets the worker's route as soon as its removal ran, while an event of the worker may still
    wait behind it on the lane: that event lands after the removal, the worker's next event is routed to another
    lane, and a later removal reaches only that one, so the late event's blocks are credited forever (the pool before
    kvproof issue 31)."""

    def remove_worker(self, worker_id):
        lane = self.lane_of(worker_id)
        self._enqueue(lane, lambda l: self.tree.lane(l.index).remove_worker(worker_id)).wait()
        with self._routing:
            self._routes.pop(worker_id, None)

    def submit(self, worker_id, event):
        rank, decoded = parse_event(worker_id, event)
        return self._enqueue(self.lane_of(rank.worker_id), lambda l: self.tree.apply_on(l, rank.worker_id, decoded))


PIPELINE_MUTANTS = [RoutesByEvent, FlushReturnsEarly]
POOL_MUTANTS = [*PIPELINE_MUTANTS, ForgetsRouteWithEventsInFlight]

"""Deliberately broken concurrent trees: the negative controls of the concurrency checks.

Each is the concurrent tree with one protection removed:

- ``NoVersionCheck``: plans are committed without checking the node's shape version, so a
  plan made before another lane's split or extension is applied to the changed node.
- ``RepairRestoresEntries``: lookup repair writes an entry for every block of the resolved
  edge and every rank of the lane, whether or not the entry still named the stale node (or
  the rank covers the block): deleted entries come back.
- ``ExtendsInternalNode``: decode extension ignores the sticky ``internal`` flag.
- ``RejectsStoresUnderSomeParents``: stores under held parents are refused (caught only by the
  checkpoint's acceptance verdicts in chaos mode).

And two broken thread-pool indexers (``POOL_MUTANTS``), caught by the pipelined check
(``pipeline.check_pipelined``, the gate's pool row):

- ``RoutesByEvent``: events go to the event threads in turn, not by worker, so one worker's
  events can apply out of order;
- ``FlushReturnsEarly``: ``flush`` does not wait, so reads after it can miss queued events.

``docs/concurrency.md`` records how often real-thread stress catches each per 100 runs
(``kvproof stress tree --mutant NAME --runs 100 ...``); the suite also catches each one
deterministically (the lockstep twin machine and a forced interleaving).
"""

from __future__ import annotations

from ...impl.indexer import ThreadPoolIndexer
from ...impl.lane import Direction, Lane
from ...impl.radix_tree import ConcurrentRadixTree
from ...spec.coverage import covers
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


class ExtendsInternalNode(ConcurrentRadixTree):
    """Decode extension ignores the sticky internal flag (only the tail coverage is checked)."""

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


IMPL_MUTANTS = [NoVersionCheck, RepairRestoresEntries, ExtendsInternalNode, RejectsStoresUnderSomeParents]


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


POOL_MUTANTS = [RoutesByEvent, FlushReturnsEarly]

"""Per-event-thread worker lookups and their lazy repair.

Each event thread (a *lane*) owns one ``Lane``: for every rank routed to it, a map from
external block hash to the node that should hold that block. Another lane's split can move
a hash into a new suffix node below the one an entry names; entries are never validated
on read, so the staleness is discovered by the locked operation itself (the parent check
of a store, or a removal run finding the hash gone from the edge) and repaired then:

- ``find_moved(stale, h)``: breadth-first search of the nodes split off the stale node
  (each split records its suffix). Dynamo scans the stale node's current descendants
  instead, which fails once a children-clear has detached the suffix; following the split
  links finds the block wherever it went, so a sequential run with several lanes equals the
  reference (whose lookups are updated synchronously) exactly.
- ``repair(stale, h, direction)``: for every rank on this lane, redirect *only the entries
  that still name the stale node*, over the part of the resolved edge the rank covers:
  toward the tail (stores: from ``h`` up to the rank's cutoff) or toward the head
  (removals: from the head up to ``h``, excluding what the removal is about to scrub).
  An entry that was deleted, or that names another node, is never written: a repair can
  never restore a scrubbed entry (Dynamo PR #11891).

A failed search rejects a store with ``ParentBlockNotFound`` and makes a removal skip the
hash (treated as already gone, its entry deleted: the #10774 leak fix).

Source: docs/sources.md#dynamo-crtc-readme "Lookup Repair"; docs/sources.md#crtc-2 "Per-lane lookup",
docs/sources.md#crtc-6.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, fields
from enum import Enum

from ..spec.coverage import current_cutoff
from ..spec.primitives import Rank
from . import _sync
from .node import ConcurrentNode


@dataclass(frozen=True)
class ImplStatistics:
    """What the concurrent tree did, summed over lanes.

    Fields: ``splits``; ``leaf_extensions``; ``demotions``; ``reuses``; ``fanout_inserts``
    (children added under an internal parent on the shared gate); ``first_child_inserts``
    (exclusive); ``stale_plan_retries``; ``repairs`` / ``repair_failures``;
    ``children_cleared``; ``released_dead_nodes``; ``cutoffs_set``; ``sticky_refusals``;
    ``rejected``; ``gate_shared`` / ``gate_exclusive`` (acquisitions over reachable nodes and
    the root); ``nodes``.
    """

    splits: int
    leaf_extensions: int
    demotions: int
    reuses: int
    fanout_inserts: int
    first_child_inserts: int
    stale_plan_retries: int
    repairs: int
    repair_failures: int
    children_cleared: int
    released_dead_nodes: int
    cutoffs_set: int
    sticky_refusals: int
    rejected: int
    gate_shared: int
    gate_exclusive: int
    nodes: int


TREE_WIDE_COUNTERS = ("gate_shared", "gate_exclusive", "nodes")
"""The ``ImplStatistics`` fields read off the reachable nodes; every other field is a lane counter."""

LANE_COUNTERS = tuple(f.name for f in fields(ImplStatistics) if f.name not in TREE_WIDE_COUNTERS)
"""What each lane counts in ``Lane.stats`` (summed over lanes by ``ConcurrentRadixTree.statistics``)."""


class Direction(Enum):
    TOWARD_TAIL = "toward tail"  # store path
    TOWARD_HEAD = "toward head"  # remove path


def find_moved(stale: ConcurrentNode, h: int) -> ConcurrentNode | None:
    """Return the node that now holds ``h``, following the suffixes split off ``stale`` (breadth first).

    Splits are the only way a block leaves an edge, and every split records its suffix on
    the node it cut, so the search reaches the block even after a children-clear detached
    the suffix (where a search of the current children would fail). None means the block
    was never on ``stale`` (an out-of-contract stream).
    """
    queue = deque(list(stale.splits))
    while queue:
        node = queue.popleft()
        if h in node.view.index:
            return node
        queue.extend(list(node.splits))
    return None


class Lane:
    """One event thread's lookups, repair, and statistics."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.lookups: dict[Rank, dict[int, ConcurrentNode]] = {}
        self.ranks_of: dict[int, dict[Rank, None]] = {}  # worker -> its ranks with a lookup here, in order of first sight
        # Written only by this lane's thread; every key exists from the start so readers can sum safely.
        self.stats: Counter[str] = Counter({name: 0 for name in LANE_COUNTERS})

    def lookup_for(self, rank: Rank) -> dict[int, ConcurrentNode]:
        """Return (registering if new) the rank's lookup on this lane."""
        lookup = self.lookups.get(rank)
        if lookup is None:
            lookup = self.lookups[rank] = {}
            self.ranks_of.setdefault(rank.worker_id, {})[rank] = None
        return lookup

    def worker_ranks(self, worker_id: int) -> list[Rank]:
        """The worker's ranks with a lookup on this lane, without scanning every rank (thousands may share a tree)."""
        return [rank for rank in self.ranks_of.get(worker_id, ()) if rank in self.lookups]

    def forget(self, rank: Rank) -> None:
        """Drop the rank's lookup and its place in the worker index."""
        self.lookups.pop(rank, None)
        ranks = self.ranks_of.get(rank.worker_id)
        if ranks is not None:
            ranks.pop(rank, None)
            if not ranks:
                del self.ranks_of[rank.worker_id]

    def point(self, rank: Rank, blocks, node: ConcurrentNode) -> None:
        """Make the rank's entries for ``blocks`` name ``node``."""
        lookup = self.lookups[rank]
        for block in blocks:
            lookup[block.ext] = node

    def repair(self, stale: ConcurrentNode, h: int, direction: Direction) -> ConcurrentNode | None:
        """Resolve ``h`` below ``stale`` and redirect this lane's entries that still name ``stale``."""
        _sync.yield_point("repair.before_scan")
        resolved = find_moved(stale, h)
        if resolved is None:
            self.stats["repair_failures"] += 1
            return None
        self.stats["repairs"] += 1
        self.redirect(stale, resolved, h, direction)
        _sync.yield_point("repair.after_redirect")
        return resolved

    def redirect(self, stale: ConcurrentNode, resolved: ConcurrentNode, h: int, direction: Direction) -> None:
        """Rewrite the covered range of ``resolved`` for every rank, only where an entry still names ``stale``."""
        view = resolved.view
        pos = view.index.get(h)
        if pos is None:
            return
        for rank, lookup in self.lookups.items():
            cut = current_cutoff(view.state, rank)
            positions = range(pos, cut) if direction is Direction.TOWARD_TAIL else range(0, min(pos, cut))
            for k in positions:
                ext = view.state.edge[k].ext
                if lookup.get(ext) is stale:
                    lookup[ext] = resolved

    def resolve(self, rank: Rank, h: int, direction: Direction) -> ConcurrentNode | None:
        """Return the node that holds ``h`` for ``rank``: the entry's node, or its repair (None if neither)."""
        node = self.lookups.get(rank, {}).get(h)
        if node is None:
            return None
        if h in node.view.index:
            return node
        return self.repair(node, h, direction)

"""An exact, sequential, compressed radix tree: the reference the concurrent tree must equal.

It mirrors the behaviour of Dynamo's single-threaded compressed ``RadixTree`` (the one the
``ai-dynamo-runtime`` 1.6.1 binding ships), and its public API mirrors
``dynamo._core.RadixTree`` so that either can stand in for the other:

=====================================  ==================================================
``apply_event(worker_id, event)``      Dynamo KV event JSON (bytes, str or dict), or a
                                       ``spec.events.KvCacheEvent``; ``dp_rank`` honoured
``find_matches(seq, early_exit)``      ``OverlapScores`` with ``.scores[(worker, dp)]``
``remove_worker(worker_id)``           drop every rank of a worker
``remove_worker_dp_rank(w, dp)``       drop one rank
``clear_all_blocks(worker_id)``        drop every rank's blocks, keep the ranks registered
``dump_tree_as_events()``              JSON ``RouterEvent`` strings that rebuild the tree
=====================================  ==================================================

plus ``check()`` (every invariant), ``snapshot()`` (the spec's abstract index) and
``statistics()`` (how often each shape rule fired).

Representation
--------------
Each ``Node`` holds a frozen ``spec.coverage.EdgeState`` (edge, full-edge workers,
cutoffs), a child map keyed by first local hash, the sticky ``internal`` flag and an
``edge_index`` (external hash -> last position). Each rank has one lookup, external hash
-> node, which splits update synchronously, so it is never stale (unlike the concurrent
tree's per-thread lookups, which are repaired lazily).

All decisions (cover, promote, split, extend, store plans, descend plans, removal
cutoffs, the match walk) are taken by the pure functions of ``spec``; this module only
applies them to mutable nodes and keeps the lookups in step. So are the release variants
(``spec.rules.Variant``): the tree holds its ``RuleSet`` and passes it to the spec functions whose
rules a variant changes, and never asks which variants it follows.

Errors and atomicity
--------------------
Every rejected event leaves the tree exactly as it was, except a ``removed`` batch that
names unknown hashes: like Dynamo (E4, E39) it applies every valid hash first and then
raises ``BlockNotFound`` for the first invalid one.

Complexity: a store or removal of ``b`` blocks costs ``O(b + depth)`` plus ``O(edge)`` per
split; ``find_matches`` costs ``O(len(query))`` node steps.

Source: docs/sources.md#crtc-12 "The plain RadixTree it must agree with", docs/sources.md#crtc-3 to
docs/sources.md#crtc-5; docs/sources.md#dynamo-crtc-readme.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ..spec.contract import cleared_ranks
from ..spec.coverage import (
    EdgeState,
    cover_prefix,
    covers,
    current_cutoff,
    drop_worker,
    holders,
    new_edge,
    promote,
    removal_run,
    remove_at,
    remove_batch,
    stale_hashes,
)
from ..spec.dump import TreeReads
from ..spec.errors import KvCacheEventError, ParentBlockNotFound
from ..spec.events import (
    KvCacheEvent,
    Payload,
    Removed,
    Stored,
    check_rank,
    check_worker_id,
    dispatch,
)
from ..spec.invariants import edge_index_of, is_lookup_entry_on_holder, node_violations, root_violations
from ..spec.match import OverlapScores, check_early_exit, check_query, find_matches_walk
from ..spec.primitives import Block, Rank
from ..spec.rules import DEFAULT_RULES, RuleSet
from ..spec.shape import (
    CoverPrefix,
    InsertBelow,
    PassThrough,
    Reuse,
    ReuseAndExtend,
    SplitAndAttach,
    attached_edges,
    check_store_parent,
    extend_leaf,
    is_released_at_eviction,
    is_released_by_store,
    may_extend_leaf,
    plan_descend,
    plan_store_at,
    should_clear_children,
    split_at,
)
from .wire import parse_event_fast

ROOT_STATE = EdgeState(())


class Node:
    """One node: a frozen edge state, children by first local hash, the sticky internal flag."""

    __slots__ = ("state", "children", "internal", "edge_index", "parent")

    def __init__(self, state: EdgeState, parent: Node | None = None) -> None:
        self.state = state
        self.children: dict[int, Node] = {}
        self.internal = False
        self.parent = parent  # the node whose child map holds this one (None: the root; a released node keeps its last)
        self.edge_index: dict[int, int] = edge_index_of(state.edge)

    def _index_edge(self) -> None:
        self.edge_index = edge_index_of(self.state.edge)

    def set_edge_state(self, state: EdgeState) -> None:
        """Replace the state; re-index when the edge itself changed."""
        edge_changed = state.edge is not self.state.edge and state.edge != self.state.edge
        self.state = state
        if edge_changed:
            self._index_edge()

    # spec.match.NodeView
    def edge_state(self) -> EdgeState:
        return self.state

    def child(self, local: int) -> Node | None:
        return self.children.get(local)

    def __repr__(self) -> str:
        return f"Node({self.state!r}, internal={self.internal}, children={sorted(self.children)})"


@dataclass(frozen=True, slots=True)
class TreeStatistics:
    """How often each shape rule fired since the tree was built.

    Fields: ``splits``; ``leaf_extensions``; ``demotions`` (full ranks cut to the old tail by
    an extension); ``reuses`` (stores absorbed by an existing edge); ``child_inserts``;
    ``sticky_refusals`` (a store below a childless internal node that could not extend it);
    ``cutoffs_set`` (removals that left a partial cutoff); ``children_cleared``;
    ``released_dead_nodes`` (holder-less nodes released: a leaf at eviction, or one a store passed); ``rejected`` (events
    refused with an error); ``nodes`` (currently reachable).
    """

    splits: int
    leaf_extensions: int
    demotions: int
    reuses: int
    child_inserts: int
    sticky_refusals: int
    cutoffs_set: int
    children_cleared: int
    released_dead_nodes: int
    rejected: int
    nodes: int


class RadixTree(TreeReads):
    """The sequential compressed radix tree (see the module docstring)."""

    def __init__(self, rules: RuleSet = DEFAULT_RULES) -> None:
        """``rules``: the rule set to follow (``spec.rules``); the default is the reference as written."""
        self.rules = rules  # passed to every spec function whose rule a variant changes (spec.dump.TreeReads too)
        self.root = Node(ROOT_STATE)
        self._lookups: dict[Rank, dict[int, Node]] = {}
        self._ranks_of: dict[int, dict[Rank, None]] = {}  # worker -> its ranks with a lookup, in order of first sight
        self._stats: Counter[str] = Counter()

    # spec.dump.TreeReads (dump_tree_as_events, snapshot, shape, child_states) reads nodes through this
    @staticmethod
    def state_of(node: Node) -> EdgeState:
        return node.state

    # ------------------------------------------------------------------ events

    def apply_event(self, worker_id: int, event: Payload | KvCacheEvent) -> None:
        """Apply one KV event from ``worker_id``; raise a typed error if it is rejected."""
        rank, event = parse_event_fast(worker_id, event)
        try:
            dispatch(
                event.data,
                lambda stored: self._apply_stored(rank, stored),
                lambda removed: self._apply_removed(rank, removed),
                lambda _: self._drop_ranks(cleared_ranks(rank, self._worker_ranks(rank.worker_id), self.rules), forget=True),
            )
        except KvCacheEventError:
            self._stats["rejected"] += 1
            raise

    def remove_worker(self, worker_id: int) -> None:
        """Drop every rank of ``worker_id`` and forget them."""
        worker_id = check_worker_id(worker_id)
        self._drop_ranks(self._worker_ranks(worker_id), forget=True)

    def remove_worker_dp_rank(self, worker_id: int, dp_rank: int) -> None:
        """Drop the one rank ``(worker_id, dp_rank)`` and forget it."""
        self._drop_ranks([check_rank(worker_id, dp_rank)], forget=True)

    def clear_all_blocks(self, worker_id: int) -> None:
        """Drop every block of every rank of ``worker_id``; the ranks stay registered."""
        worker_id = check_worker_id(worker_id)
        self._drop_ranks(self._worker_ranks(worker_id), forget=False)

    def copy(self) -> RadixTree:
        """Return a tree that shares nothing mutable with this one and answers every call as it would from here on.

        Each node reachable from the root or from a lookup (a released node a lookup still names included) is copied
        once and relinked; its frozen edge state and its edge index (replaced, never changed in place) are shared.
        The explorer's linearizability search copies a state for every write it tries; ``copy.deepcopy`` walked
        every frozen value as well (kvproof issue 32).
        """
        twin = copy.copy(self)  # its class and rule set; every mutable part is replaced below
        made: dict[int, Node] = {}
        order: list[Node] = []
        stack = [self.root, *(node for lookup in self._lookups.values() for node in lookup.values())]
        while stack:
            node = stack.pop()
            if id(node) in made:
                continue
            new = made[id(node)] = Node.__new__(Node)
            new.state, new.internal, new.edge_index = node.state, node.internal, node.edge_index
            order.append(node)
            stack.extend(node.children.values())
            if node.parent is not None:
                stack.append(node.parent)
        for node in order:
            new = made[id(node)]
            new.children = {local: made[id(child)] for local, child in node.children.items()}
            new.parent = None if node.parent is None else made[id(node.parent)]
        twin.root = made[id(self.root)]
        twin._lookups = {rank: {h: made[id(node)] for h, node in lookup.items()} for rank, lookup in self._lookups.items()}
        twin._ranks_of = {worker: dict(ranks) for worker, ranks in self._ranks_of.items()}
        twin._stats = Counter(self._stats)
        return twin

    # ------------------------------------------------------------------ reads

    def find_matches(self, sequence: Iterable[int], early_exit: bool = False) -> OverlapScores:
        """Return the overlap score of every rank along ``sequence`` (local hashes)."""
        return OverlapScores(find_matches_walk(self.root, check_query(sequence), check_early_exit(early_exit)))

    def statistics(self) -> TreeStatistics:
        """Return the shape-rule counters (see ``TreeStatistics``)."""
        fields = TreeStatistics.__dataclass_fields__
        values = {name: self._stats[name] for name in fields if name != "nodes"}
        return TreeStatistics(**values, nodes=sum(1 for _ in self._reachable_nodes()))

    def check(self, lookups: bool = True) -> None:
        """Assert every invariant; an expensive no-op when the tree is sound (for tests).

        Structural invariants always hold. ``lookups=True`` also checks that every lookup
        entry names a node that holds the hash and that the rank covers there, which holds
        for every in-contract stream (hash collisions can strand entries, as in Dynamo).
        """
        problems = [f"root: {name}" for name in root_violations(self.root.state, self.child_states(self.root))]
        for path, node in self._reachable_nodes():
            if not self._is_parent_link_consistent(node):
                problems.append(f"node {path}: is_parent_link_consistent")
            for name in node_violations(node.state, node.internal, self.child_states(node), node.edge_index, self.rules):
                problems.append(f"node {path}: {name}")
        indexed = {rank for ranks in self._ranks_of.values() for rank in ranks}
        if indexed != set(self._lookups) or any(r.worker_id != w for w, ranks in self._ranks_of.items() for r in ranks):
            problems.append("the worker index of the ranks differs from the lookups: is_rank_index_exact")
        if lookups:
            for rank, lookup in self._lookups.items():
                for ext, node in lookup.items():
                    if not is_lookup_entry_on_holder(node.state, rank, ext, node.edge_index):
                        problems.append(f"lookup {rank}[{ext}] names {node!r}: {is_lookup_entry_on_holder.__name__}")
        if problems:
            raise AssertionError("RadixTree.check failed:\n  " + "\n  ".join(problems) + f"\n{self.debug_dump()}")

    @staticmethod
    def _is_parent_link_consistent(node: Node) -> bool:
        """A reachable node's ``parent`` is the node whose child map holds it: the link releasing a dead
        branch walks up (``_release_if_dead``); a wrong one leaves the branch attached for good."""
        parent = node.parent
        return parent is not None and parent.children.get(node.state.edge[0].local) is node

    def debug_dump(self) -> str:
        """Return a multi-line picture of the reachable tree, for failure messages."""
        lines = []

        def walk(node: Node, indent: int) -> None:
            for key in sorted(node.children):
                child = node.children[key]
                s = child.state
                lines.append(
                    "  " * indent
                    + f"[{' '.join(str(b.local) for b in s.edge)}] full={sorted(s.full_edge_workers)}"
                    + f" cut={dict(sorted(s.worker_cutoffs.items()))}" * bool(s.worker_cutoffs)
                    + " internal" * child.internal
                )
                walk(child, indent + 1)

        walk(self.root, 1)
        return "tree:\n" + ("\n".join(lines) or "  (empty)")

    def known_ranks(self) -> set[Rank]:
        """Return the ranks the tree keeps a lookup for: every rank it was told of, less those removed.

        ``remove_worker`` and ``remove_worker_dp_rank`` forget a rank; ``clear_all_blocks`` and a
        ``cleared`` event empty it and keep it registered (Dynamo 1.6.1 alike: the removed worker's
        map entry goes, a cleared one stays, empty)."""
        return set(self._lookups)

    def cutoff_nodes(self) -> int:
        """Return how many reachable nodes carry at least one per-worker cutoff."""
        return sum(1 for _, node in self._reachable_nodes() if node.state.worker_cutoffs)

    def sticky_internal_nodes(self) -> int:
        """Return how many reachable nodes are internal but childless (kept closed to extension)."""
        return sum(1 for _, node in self._reachable_nodes() if node.internal and not node.children)

    # ------------------------------------------------------------------ store

    def _apply_stored(self, rank: Rank, stored: Stored) -> None:
        check_store_parent(stored, self.rules)  # RadixTree only (crtc.md §12 item 1, E14)
        parent_hash, blocks = stored.parent_hash, stored.blocks
        lookup = self._lookup_of(rank)
        if parent_hash is None:
            if blocks:
                self._insert_below(self.root, rank, blocks)
            return
        # The parent must be held by this very rank (E2, E16, E40).
        node = lookup.get(parent_hash)
        pos = None if node is None else node.edge_index.get(parent_hash)
        if node is None or pos is None:
            raise ParentBlockNotFound(f"Failed to find parent block {parent_hash} for {rank}")
        if not covers(node.state, rank, pos):
            del lookup[parent_hash]
            raise ParentBlockNotFound(f"parent block {parent_hash} is no longer held by {rank}")
        if not blocks:
            return
        plan = plan_store_at(node.state, node.internal, pos, blocks)
        if isinstance(plan, InsertBelow):
            self._insert_below(node, rank, blocks)
        elif isinstance(plan, Reuse):
            self._stats["reuses"] += 1
            node.set_edge_state(cover_prefix(node.state, rank, plan.cutoff))
            self._point(rank, blocks, node)
        elif isinstance(plan, ReuseAndExtend):
            self._extend(node, rank, plan.tail)
            self._point(rank, blocks, node)
        else:  # SplitThenInsert, the last of the closed spec.shape.StorePlan
            self._split(node, plan.at)
            self._insert_below(node, rank, blocks)

    def _insert_below(self, parent: Node, rank: Rank, blocks: tuple[Block, ...]) -> None:
        remaining = blocks
        while remaining:
            child = parent.children.get(remaining[0].local)
            if child is not None and is_released_by_store(child.state, self.rules):
                # A node nobody holds is released, not reused: the store builds a fresh node
                # in its place (observed on ai-dynamo-runtime 1.6.1; docs/dynamo-findings.md F1).
                del parent.children[remaining[0].local]
                self._stats["released_dead_nodes"] += 1
                child = None
            if child is None:
                if parent is not self.root and self._may_extend(parent, rank):
                    self._extend(parent, rank, remaining)
                    self._point(rank, remaining, parent)
                else:
                    if parent.internal and not parent.children and parent is not self.root:
                        self._stats["sticky_refusals"] += 1
                    self._attach(parent, rank, remaining)
                return
            plan = plan_descend(child.state.edge, remaining)
            if isinstance(plan, CoverPrefix):
                child.set_edge_state(cover_prefix(child.state, rank, plan.m))
                self._point(rank, remaining, child)
                return
            if isinstance(plan, SplitAndAttach):
                self._split(child, plan.m)
                child.set_edge_state(promote(child.state, rank))
                self._point(rank, remaining[: plan.m], child)
                self._attach(child, rank, remaining[plan.m :])
                return
            assert isinstance(plan, PassThrough)
            n = len(child.state.edge)
            child.set_edge_state(promote(child.state, rank))
            self._point(rank, remaining[:n], child)
            parent, remaining = child, remaining[n:]

    def _may_extend(self, node: Node, rank: Rank) -> bool:
        return may_extend_leaf(node.internal, node.state, rank, self.rules)

    def _attach(self, parent: Node, rank: Rank, blocks: tuple[Block, ...]) -> None:
        """Attach ``blocks`` below ``parent`` as the chain of new nodes ``spec.shape.attached_edges`` cuts."""
        for edge in attached_edges(blocks, self.rules):
            child = Node(new_edge(edge, rank), parent)
            parent.children[edge[0].local] = child
            parent.internal = True
            self._stats["child_inserts"] += 1
            self._point(rank, edge, child)
            parent = child

    def _extend(self, node: Node, rank: Rank, tail: tuple[Block, ...]) -> None:
        before = node.state
        node.set_edge_state(extend_leaf(before, rank, tail))
        self._stats["leaf_extensions"] += 1
        self._stats["demotions"] += len(before.full_edge_workers - {rank})

    def _split(self, node: Node, p: int) -> None:
        """Split ``node`` before ``p``: ``node`` keeps the prefix, a new child takes the suffix and every child."""
        old = node.state
        prefix_state, suffix_state = split_at(old, p)
        suffix = Node(suffix_state, node)
        suffix.children = node.children
        for moved in suffix.children.values():
            moved.parent = suffix
        suffix.internal = node.internal  # the RadixTree's suffix inherits the sticky flag (crtc.md §12 item 8)
        node.children = {suffix_state.edge[0].local: suffix}
        node.internal = True
        node.set_edge_state(prefix_state)
        self._stats["splits"] += 1
        # The lookups are global per rank, so the split redirects them at once (crtc.md §12 item 2).
        for rank in holders(old):
            lookup = self._lookups[rank]  # a holder always has its lookup: only _drop_ranks removes one, after the rank
            for block in suffix_state.edge:
                if lookup.get(block.ext) is node:
                    lookup[block.ext] = suffix

    def _point(self, rank: Rank, blocks: Iterable[Block], node: Node) -> None:
        lookup = self._lookups[rank]
        for block in blocks:
            lookup[block.ext] = node

    # ------------------------------------------------------------------ remove

    def _apply_removed(self, rank: Rank, removed: Removed) -> None:
        known = rank in self._lookups  # whether the tree has seen the rank (spec.coverage.remove_batch)
        lookup = self._lookup_of(rank)
        hashes = removed.block_hashes
        remove_batch(rank, hashes, lambda i, scrubbed: self._remove_run(rank, lookup, hashes, i, scrubbed), self.rules, known)

    def _remove_run(self, rank: Rank, lookup: dict[int, Node], hashes: tuple[int, ...], i: int, scrubbed: set[int]) -> int | None:
        """Remove the run of hashes from ``i`` on one node; return how many it consumed, None if ``hashes[i]`` is not held."""
        h = hashes[i]
        node = lookup.pop(h, None)
        if node is None:
            return 1 if h in scrubbed else None  # already scrubbed by this batch: skipped silently
        pos = node.edge_index.get(h)
        if pos is None:
            lookup[h] = node  # an entry whose node no longer holds the hash stays (E8)
            return None
        # One cut for the run of following hashes on the same node (spec.coverage.removal_run).
        state = node.state
        end, low = removal_run(hashes, i, node.edge_index, current_cutoff(state, rank), lambda other: lookup.get(other) is node)
        # The run's other hashes lie in [low, cutoff): the cut uncovers them, so the scrub below drops their entries.
        state, uncovered = remove_at(state, rank, low)
        if uncovered:
            node.set_edge_state(state)
            if state.worker_cutoffs.get(rank):
                self._stats["cutoffs_set"] += 1
        # Scrub by hash, whichever node the entries name (spec.coverage.stale_hashes).
        self._scrub(lookup, stale_hashes(node.state.edge, uncovered, h), scrubbed)
        self._clear_children_if_unheld(node)
        self._release_if_dead(node)
        return end - i

    def _scrub(self, lookup: dict[int, Node], stale: list[int], scrubbed: set[int]) -> None:
        """Delete the rank's lookup entries for blocks it no longer covers (remembering them for this event)."""
        for ext in stale:
            lookup.pop(ext, None)
        scrubbed.update(stale)

    def _release_if_dead(self, node: Node) -> None:
        """Release a leaf nobody holds at eviction time, then its parent if that is left so too (a branch).

        Dynamo releases an unowned branch as soon as an eviction leaves it unowned (PR #14878, first
        shipped in 1.6.0; docs/dynamo-findings.md F1); before that a dead leaf stayed attached until
        a later store passed it, so under churn such leaves piled up (docs/sources.md#kvproof-robustness: the soak). Nothing a
        query, a store or a dump can see changes: a dead node credits no one and a store passing it
        builds a fresh node anyway. A node that still has children, and the root, stay. Which releases
        release so is ``spec.shape.is_released_at_eviction``'s (the older ones keep dead nodes).
        """
        while (
            node is not self.root
            and node.parent is not None
            and is_released_at_eviction(node.state, len(node.children), self.rules)
        ):
            parent, key = node.parent, node.state.edge[0].local
            if parent.children.get(key) is not node:
                return
            del parent.children[key]  # its parent link may stay: the walk above rechecks the child map
            self._stats["released_dead_nodes"] += 1
            node = parent

    def _clear_children_if_unheld(self, node: Node) -> None:
        # Removal clears children only when no full-edge worker remains; internal stays sticky.
        # Which releases clear (the per-block tree never does) is spec.shape.should_clear_children's.
        if should_clear_children(node.state, len(node.children), self.rules):
            node.children = {}
            self._stats["children_cleared"] += 1

    def _drop_ranks(self, ranks: Iterable[Rank], forget: bool) -> None:
        for rank in list(ranks):
            lookup = self._lookups.get(rank)
            if lookup is None:
                continue
            nodes = {id(node): node for node in lookup.values()}
            for node in nodes.values():
                node.set_edge_state(drop_worker(node.state, rank))
                self._clear_children_if_unheld(node)
            for node in nodes.values():
                self._release_if_dead(node)
            if forget:
                del self._lookups[rank]
                ranks = self._ranks_of[rank.worker_id]
                del ranks[rank]
                if not ranks:
                    del self._ranks_of[rank.worker_id]
            else:
                lookup.clear()

    def _lookup_of(self, rank: Rank) -> dict[int, Node]:
        """The rank's lookup (ext hash -> node), made and indexed under its worker on first sight."""
        lookup = self._lookups.get(rank)
        if lookup is None:
            lookup = self._lookups[rank] = {}
            self._ranks_of.setdefault(rank.worker_id, {})[rank] = None
        return lookup

    def _worker_ranks(self, worker_id: int) -> list[Rank]:
        """The worker's ranks with a lookup, without scanning every rank (thousands of ranks may share a tree)."""
        return list(self._ranks_of.get(worker_id, ()))

    # ------------------------------------------------------------------ helpers

    def _reachable_nodes(self):
        stack = [((key,), child) for key, child in self.root.children.items()]
        while stack:
            path, node = stack.pop()
            yield path, node
            stack.extend((path + (key,), child) for key, child in node.children.items())

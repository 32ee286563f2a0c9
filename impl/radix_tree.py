"""The concurrent compressed radix tree: a drop-in for the reference, safe under many event threads.

It takes every decision from ``spec`` (coverage algebra, store and descend plans, split,
extension, removal cutoffs, the match walk) and adds what concurrency needs: per-node shape
gates and versions (``node.py``), per-lane lookups with lazy repair (``lane.py``), and
plan / validate / commit-or-retry around every shape change. Run sequentially it equals the
reference exactly (same outcomes, scores, snapshot and shape); under real threads it never
credits a rank past what the rank held during a read, and at quiescence it equals the
reference built from the same per-worker event orders (for streams without holes).

Paths (docs/sources.md#dynamo-crtc-readme, "Store Paths"):

- **Prefill fanout**: a child added under a parent that is already internal goes in under
  the parent's *shared* gate, validated by the parent's version; many lanes add different
  children side by side.
- **Decode extension**: appending to a leaf in place needs the exclusive gate, a node that
  was never internal, the parent hash still at the tail, and the storing rank covering it.
- **Suffix reuse, split**: a store naming a parent inside an edge reuses the edge (shared
  gate), extends a leaf (exclusive), or splits at the parent (exclusive) and inserts below.
- **Removal** changes coverage only (exclusive gate on the node, one cut per grouped run);
  children are cleared only when no full-edge worker remains; ``internal`` stays set.
- **Reads** (``find_matches``) take no gate: each step reads a published view and checks the
  node's version around its child lookup (``node.ReadStep``).

Lanes: ``lane(i)`` is the event interface of event thread ``i`` (its own lookups); the
tree's own ``apply_event`` uses lane 0, so the tree is also a plain single-threaded drop-in.
One lane must be used by one thread at a time (``ThreadPoolIndexer`` routes each worker to
one lane). Whole-tree reads (``dump_tree_as_events``, ``snapshot``, ``check``) expect
quiescence.

Every place another thread's interleaving matters calls ``_sync.yield_point(name)``.

Source: docs/sources.md#dynamo-crtc-readme; docs/sources.md#crtc-3 to docs/sources.md#crtc-7.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable

from ..reference.wire import parse_event_fast
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
    check_not_self_parented,
    check_rank,
    check_worker_id,
    dispatch,
)
from ..spec.invariants import node_violations, root_violations
from ..spec.match import OverlapScores, check_early_exit, check_query, find_matches_walk
from ..spec.primitives import Block, Rank
from ..spec.shape import (
    CoverPrefix,
    InsertBelow,
    PassThrough,
    Reuse,
    ReuseAndExtend,
    SplitAndAttach,
    SplitThenInsert,
    extend_leaf,
    may_extend_leaf,
    plan_descend,
    plan_store_at,
    should_clear_children,
    split_at,
)
from . import _sync
from .lane import LANE_COUNTERS, Direction, ImplStatistics, Lane, find_moved
from .node import ConcurrentNode, ReadStep, RootStep
from .poison import Poisonable

_Where = tuple[ConcurrentNode, int | None, tuple[Block, ...]]
"""Where a store goes on: the parent to look below, its tail block (None: the root) and the blocks left to insert."""


class ConcurrentRadixTree(Poisonable, TreeReads):
    """The concurrent compressed radix tree (see the module docstring).

    A write interrupted by an untyped exception poisons the tree when it no longer checks
    (``poison``): every later call, reads included, then raises ``Poisoned``.
    """

    #: Checks the version of a plan before committing it (the negative controls switch it off).
    validate_plans = True
    #: How ``find_matches`` steps through a node (the negative controls swap in broken reads).
    read_step: type[ReadStep] = ReadStep

    def __init__(self, lanes: int = 1) -> None:
        self.root = ConcurrentNode(EdgeState(()))
        self.root.internal = True  # the root is a fanout point from the start; it is never extended
        self.lanes = [Lane(i) for i in range(max(1, lanes))]

    # spec.dump.TreeReads (dump_tree_as_events, snapshot, shape, child_states; quiescent) reads nodes through this
    @staticmethod
    def state_of(node: ConcurrentNode) -> EdgeState:
        return node.view.state

    # ------------------------------------------------------------------ API (lane 0)

    def lane(self, index: int) -> LaneHandle:
        """Return the event interface of lane ``index`` (one thread at a time)."""
        return LaneHandle(self, self.lanes[index])

    def apply_event(self, worker_id: int, event: Payload | KvCacheEvent) -> None:
        """Apply one KV event on lane 0 (see ``lane`` for concurrent use)."""
        self.apply_on(self.lanes[0], worker_id, event)

    def remove_worker(self, worker_id: int) -> None:
        """Drop every rank of ``worker_id`` (whichever lanes hold them) and forget them."""
        worker_id = check_worker_id(worker_id)
        for index in range(len(self.lanes)):
            self.lane(index).remove_worker(worker_id)

    def remove_worker_dp_rank(self, worker_id: int, dp_rank: int) -> None:
        """Drop the one rank ``(worker_id, dp_rank)`` and forget it."""
        rank = check_rank(worker_id, dp_rank)
        for lane in self.lanes:
            self.drop_ranks(lane, [rank] if rank in lane.lookups else [], forget=True)

    def clear_all_blocks(self, worker_id: int) -> None:
        """Drop every block of every rank of ``worker_id``; the ranks stay registered."""
        worker_id = check_worker_id(worker_id)
        for index in range(len(self.lanes)):
            self.lane(index).clear_all_blocks(worker_id)

    def find_matches(self, sequence: Iterable[int], early_exit: bool = False) -> OverlapScores:
        """Return every rank's overlap score along ``sequence``; takes no gate, never overcounts."""
        with self.guard("find_matches"):
            walk = find_matches_walk(RootStep(self.root, self.read_step), check_query(sequence), check_early_exit(early_exit))
        return OverlapScores(walk)

    def dump_tree_as_events(self) -> list[str]:
        """Return the dump (``spec.dump``; quiescent); ``Poisoned`` if a fault left the tree inconsistent."""
        self.refuse_if_poisoned()
        return super().dump_tree_as_events()

    def snapshot(self) -> dict[Rank, frozenset[int]]:
        """Return the credited index (``spec.dump``; quiescent); ``Poisoned`` if a fault left the tree inconsistent."""
        self.refuse_if_poisoned()
        return super().snapshot()

    # ------------------------------------------------------------------ events on a lane

    def apply_on(self, lane: Lane, worker_id: int, event: Payload | KvCacheEvent) -> None:
        """Apply one event through ``lane``'s lookups; raise the reference's typed errors."""
        with self.guard("apply_event"):
            rank, event = parse_event_fast(worker_id, event)
            try:
                dispatch(
                    event.data,
                    lambda stored: self._store(lane, rank, stored),
                    lambda removed: self._remove(lane, rank, removed),
                    lambda _: self._drop_ranks(lane, [rank], forget=True),
                )
            except KvCacheEventError:
                lane.stats["rejected"] += 1
                raise

    # ------------------------------------------------------------------ store

    def _store(self, lane: Lane, rank: Rank, stored: Stored) -> None:
        check_not_self_parented(stored)  # crtc.md §12 item 1, E14
        parent_hash, blocks = stored.parent_hash, stored.blocks
        lookup = lane.lookup_for(rank)
        if parent_hash is None:
            if blocks:
                self._insert_below(lane, rank, self.root, blocks, None)
            return
        node = lookup.get(parent_hash)
        if node is None:
            raise ParentBlockNotFound(f"Failed to find parent block {parent_hash} for {rank}")
        self._store_at(lane, rank, node, parent_hash, blocks)

    def _store_at(self, lane: Lane, rank: Rank, node: ConcurrentNode, parent_hash: int, blocks: tuple[Block, ...]) -> None:
        """Store ``blocks`` below ``parent_hash``, which ``node`` holds (or held before a split)."""
        lookup = lane.lookups[rank]
        passed = [node]  # every node a repair came through: the entry may name any of them
        while True:
            with node.gate.shared():
                version, view = node.version, node.view
                pos = view.index.get(parent_hash)
                if pos is not None and covers(view.state, rank, pos):
                    if not blocks:
                        return
                    plan = plan_store_at(view.state, node.internal, pos, blocks)
                    if isinstance(plan, Reuse):
                        lane.stats["reuses"] += 1
                        node.update(lambda s: cover_prefix(s, rank, plan.cutoff))
                        lane.point(rank, blocks, node)
                        return
            _sync.yield_point("store.after_plan")
            if pos is None:
                # The entry is stale: a split moved the parent into a suffix below this node.
                resolved = lane.repair(node, parent_hash, Direction.TOWARD_TAIL)
                if resolved is None:
                    raise ParentBlockNotFound(f"parent block {parent_hash} moved and was not found for {rank}")
                node = resolved
                passed.append(node)
                continue
            if not covers(view.state, rank, pos):
                if lookup.get(parent_hash) in passed:
                    del lookup[parent_hash]
                raise ParentBlockNotFound(f"parent block {parent_hash} is no longer held by {rank}")
            if isinstance(plan, InsertBelow):
                self._insert_below(lane, rank, node, blocks, parent_hash)
                return
            with node.gate.exclusive():
                if self.validate_plans and node.version != version:
                    lane.stats["stale_plan_retries"] += 1
                    continue
                if isinstance(plan, ReuseAndExtend):
                    self._extend_locked(lane, node, rank, plan.tail)
                    lane.point(rank, blocks, node)
                    return
                assert isinstance(plan, SplitThenInsert)
                self._split_locked(lane, node, plan.at)
            self._insert_below(lane, rank, node, blocks, parent_hash)
            return

    def _insert_below(
        self, lane: Lane, rank: Rank, parent: ConcurrentNode, remaining: tuple[Block, ...], last: int | None
    ) -> None:
        """Insert ``remaining`` below ``parent``, whose tail is ``last`` (None: the root).

        Each step reads the parent once (its version, its tail, the child under the first block) and acts on what it
        saw: follows a parent whose tail moved (``_follow_moved_parent``), releases a dead child, attaches the blocks
        as an extension or a new child (``_attach_below``), or covers, passes through or splits the child
        (``_descend_into``). A step returns where to look next (a stale plan: the same place again) or None when the
        blocks are in the tree.
        """
        where: _Where | None = (parent, last, remaining)
        while where is not None:
            where = self._insert_step(lane, rank, *where)

    def _insert_step(
        self, lane: Lane, rank: Rank, parent: ConcurrentNode, last: int | None, remaining: tuple[Block, ...]
    ) -> _Where | None:
        """One step of ``_insert_below``: plan on the parent as read now, and act."""
        if not remaining:
            return None
        key = remaining[0].local
        with parent.gate.shared():
            version, view = parent.version, parent.view
            tail = view.state.edge[-1].ext if view.state.edge else None
            child = parent.children.get(key)
        _sync.yield_point("store.after_child_plan")
        if last is not None and tail != last:
            return self._follow_moved_parent(lane, rank, parent, last, remaining, last in view.index)
        if child is not None and not child.is_held():
            self._release_dead_child(lane, parent, key, child)
            return parent, last, remaining
        if child is None:
            return self._attach_below(lane, rank, parent, last, remaining, version)
        return self._descend_into(lane, rank, parent, last, remaining, version, child)

    def _follow_moved_parent(
        self, lane: Lane, rank: Rank, parent: ConcurrentNode, last: int, remaining: tuple[Block, ...], still_on_edge: bool
    ) -> _Where | None:
        """The parent's tail is no longer ``last``: someone extended it after we planned (``last`` still on its edge:
        plan again on that edge), or split it (``last`` moved down: go on from the node that holds it now)."""
        if still_on_edge:
            self._store_at(lane, rank, parent, last, remaining)
            return None
        resolved = lane.resolve(rank, last, Direction.TOWARD_TAIL)
        if resolved is None or resolved is parent:
            raise ParentBlockNotFound(f"parent block {last} moved and was not found for {rank}")
        return resolved, last, remaining

    def _attach_below(
        self, lane: Lane, rank: Rank, parent: ConcurrentNode, last: int | None, remaining: tuple[Block, ...], version: int
    ) -> _Where | None:
        """No child under the first block: extend the parent's edge when the rank may (decode extension), else add a
        new child. A plan gone stale (the version moved, the key taken) is planned again."""
        key = remaining[0].local
        if parent is not self.root and self._may_extend(parent, rank):
            with parent.gate.exclusive():
                current = parent.view.state
                if (self.validate_plans and parent.version != version) or key in parent.children:
                    lane.stats["stale_plan_retries"] += 1
                    return parent, last, remaining
                if current.edge[-1].ext == last and self._may_extend(parent, rank):
                    self._extend_locked(lane, parent, rank, remaining)
                    lane.point(rank, remaining, parent)
                    return None
            return parent, last, remaining
        if parent.internal and not parent.children and parent is not self.root:
            lane.stats["sticky_refusals"] += 1
        fresh = ConcurrentNode(new_edge(remaining, rank), parent)
        if self._insert_child(lane, parent, key, fresh, version) == "inserted":
            lane.point(rank, remaining, fresh)
            return None
        return parent, last, remaining  # "existing" or "stale": look again

    def _descend_into(
        self,
        lane: Lane,
        rank: Rank,
        parent: ConcurrentNode,
        last: int | None,
        remaining: tuple[Block, ...],
        version: int,
        child: ConcurrentNode,
    ) -> _Where | None:
        """The child under the first block: cover a prefix of its edge, pass through it whole (go on below it), or
        split it and attach the rest; a plan gone stale is planned again from the parent."""
        with child.gate.shared():
            if not self._still_below(parent, version):
                lane.stats["stale_plan_retries"] += 1
                return parent, last, remaining
            child_version, child_view = child.version, child.view
            plan = plan_descend(child_view.state.edge, remaining)
            if isinstance(plan, CoverPrefix):
                child.update(lambda s: cover_prefix(s, rank, plan.m))
                lane.point(rank, remaining, child)
                return None
            if isinstance(plan, PassThrough):
                n = len(child_view.state.edge)
                child.update(lambda s: promote(s, rank))
                lane.point(rank, remaining[:n], child)
        _sync.yield_point("store.after_descend_plan")
        if isinstance(plan, PassThrough):
            return child, child_view.state.edge[-1].ext, remaining[n:]
        assert isinstance(plan, SplitAndAttach)
        with child.gate.exclusive():
            if (self.validate_plans and child.version != child_version) or not self._still_below(parent, version):
                lane.stats["stale_plan_retries"] += 1
                return parent, last, remaining
            self._split_locked(lane, child, plan.m)
            child.update(lambda s: promote(s, rank))
            lane.point(rank, remaining[: plan.m], child)
            tail_node = ConcurrentNode(new_edge(remaining[plan.m :], rank), child)
            child.begin_shape_change()
            child.children[remaining[plan.m].local] = tail_node
            child.end_shape_change()
            lane.point(rank, remaining[plan.m :], tail_node)
        return None

    def _still_below(self, parent: ConcurrentNode, version: int) -> bool:
        """Check, holding the child's gate, that the parent has not changed shape since the child was looked up.

        A child nobody holds can be released by another lane (``_release_dead_child``, which bumps the
        parent's version under the child's exclusive gate); covering it after that would put the rank's
        blocks on a detached node, lost. The interleaving explorer found this race (docs/concurrency.md).
        """
        return not self.validate_plans or parent.version == version

    def _may_extend(self, node: ConcurrentNode, rank: Rank) -> bool:
        """Decode extension: never internal, and the rank covers the tail (spec.shape.may_extend_leaf)."""
        return may_extend_leaf(node.internal, node.view.state, rank)

    def _insert_child(self, lane: Lane, parent: ConcurrentNode, key: int, fresh: ConcurrentNode, version: int) -> str:
        """Add ``fresh`` under ``parent`` if the key is still free: "inserted", "existing" or "stale"."""
        if parent.internal:
            with parent.gate.shared():  # prefill fanout: no exclusive ownership of the parent's shape
                if self.validate_plans and parent.version != version:
                    lane.stats["stale_plan_retries"] += 1
                    return "stale"
                with parent.children_lock:
                    if key in parent.children:
                        return "existing"
                    parent.children[key] = fresh
                lane.stats["fanout_inserts"] += 1
                return "inserted"
        _sync.yield_point("store.before_first_child")
        with parent.gate.exclusive():
            if self.validate_plans and parent.version != version:
                lane.stats["stale_plan_retries"] += 1
                return "stale"
            if key in parent.children:
                return "existing"
            parent.begin_shape_change()
            with parent.children_lock:
                parent.children[key] = fresh
            parent.internal = True
            parent.end_shape_change()
            lane.stats["first_child_inserts"] += 1
            return "inserted"

    def _release_dead_child(
        self, lane: Lane, parent: ConcurrentNode, key: int, child: ConcurrentNode, leaf_only: bool = False
    ) -> bool:
        """Unlink a child nobody holds (with ``leaf_only``, only if it has no children); return whether it was.

        A store releases one it passes, so it builds a fresh node (docs/dynamo-findings.md F1); an
        eviction releases a leaf it left unowned (``_release_if_dead``). Parent's gate, then the child's.
        """
        with parent.gate.exclusive(), child.gate.exclusive():
            if parent.children.get(key) is not child or child.is_held() or (leaf_only and child.children):
                return False
            parent.begin_shape_change()
            child.begin_shape_change()
            with parent.children_lock:
                del parent.children[key]
            child.parent = None
            child.end_shape_change()
            parent.end_shape_change()
        lane.stats["released_dead_nodes"] += 1
        return True

    def _release_if_dead(self, lane: Lane, node: ConcurrentNode) -> None:
        """Release a leaf nobody holds after an eviction, then its parent if that is left so too (the reference's rule).

        Called with no gate held. The unlocked reads (parent, children, holders) only decide whether to
        try; ``_release_dead_child`` revalidates all three under the parent's and the node's gates, so a
        concurrent split (which re-parents), store (which covers again) or insert (which adds a child)
        makes it give up, and the leaf waits for the next eviction or for a store to pass it.
        """
        while node is not self.root:
            parent = node.parent
            if parent is None or node.children or node.is_held():
                return
            # (the parent gate's acquire below is a decision point of the explorer: no yield point needed here)
            if not self._release_dead_child(lane, parent, node.view.state.edge[0].local, node, leaf_only=True):
                return
            node = parent

    def _extend_locked(self, lane: Lane, node: ConcurrentNode, rank: Rank, tail: tuple[Block, ...]) -> None:
        """Append ``tail`` to a leaf (exclusive gate held): the rank becomes full, other full ranks are cut."""
        before = node.view.state
        node.begin_shape_change()
        node.publish(extend_leaf(before, rank, tail))
        node.end_shape_change()
        lane.stats["leaf_extensions"] += 1
        lane.stats["demotions"] += len(before.full_edge_workers - {rank})

    def _split_locked(self, lane: Lane, node: ConcurrentNode, p: int) -> None:
        """Split ``node`` before ``p`` (exclusive gate held): it keeps the prefix, a new suffix takes every child."""
        prefix, suffix_state = split_at(node.view.state, p)
        suffix = ConcurrentNode(suffix_state, node)
        suffix.children = node.children  # the same child objects move down, not copies
        for moved in suffix.children.values():
            moved.parent = suffix
        suffix.internal = node.internal  # as the reference (and Dynamo's RadixTree) do
        node.splits += (suffix,)
        node.begin_shape_change()
        node.children = {suffix_state.edge[0].local: suffix}
        node.internal = True
        node.publish(prefix)
        node.end_shape_change()
        lane.stats["splits"] += 1
        # Only the splitting lane redirects its own entries now; other lanes repair lazily.
        for rank in holders(suffix_state):
            lookup = lane.lookups.get(rank)
            if lookup is None:
                continue
            for block in suffix_state.edge[: current_cutoff(suffix_state, rank)]:
                if lookup.get(block.ext) is node:
                    lookup[block.ext] = suffix

    # ------------------------------------------------------------------ remove

    def _remove(self, lane: Lane, rank: Rank, removed: Removed) -> None:
        lookup = lane.lookup_for(rank)
        hashes = removed.block_hashes
        remove_batch(rank, hashes, lambda i, scrubbed: self._remove_from(lane, rank, lookup, hashes, i, scrubbed))

    def _remove_from(
        self, lane: Lane, rank: Rank, lookup: dict[int, ConcurrentNode], hashes: tuple[int, ...], i: int, scrubbed: set[int]
    ) -> int | None:
        """Remove the run of hashes from ``i``, following splits; return how many it consumed, None if ``hashes[i]`` is not held."""
        h = hashes[i]
        node = lookup.get(h)
        if node is None:
            return 1 if h in scrubbed else None  # already scrubbed by this batch: skipped silently
        owners: tuple[ConcurrentNode, ...] = (node,)
        consumed = self._remove_run(lane, rank, node, owners, hashes, i, scrubbed)
        while consumed is None:
            # The entry is stale: follow the hash to where splits moved it and run there. The
            # resolved node can itself be split before we lock it, so keep following (each
            # step moves down a finite chain of splits); entries may name any node passed.
            resolved = lane.repair(owners[-1], h, Direction.TOWARD_HEAD)
            if resolved is None:
                if lookup.get(h) in owners:
                    del lookup[h]  # treated as already gone: no entry may leak (#10774)
                return None
            owners += (resolved,)
            consumed = self._remove_run(lane, rank, resolved, owners, hashes, i, scrubbed)
        return consumed

    def _remove_run(
        self,
        lane: Lane,
        rank: Rank,
        node: ConcurrentNode,
        owners: tuple[ConcurrentNode, ...],
        hashes: tuple[int, ...],
        i: int,
        scrubbed: set[int],
    ) -> int | None:
        """Remove the run of hashes starting at ``i`` that this node holds; return how many were consumed.

        Returns None when the first hash is not on the node's edge (a stale entry). The run takes
        the following hashes whose entries name one of ``owners`` (this node, or the stale nodes a
        repair came through), while the first one is covered; one cut at the minimum position
        (docs/sources.md#crtc-4-1; docs/dynamo-findings.md F3).
        """
        lookup = lane.lookups[rank]
        _sync.yield_point("remove.before_gate")
        with node.gate.exclusive():
            view = node.view
            pos = view.index.get(hashes[i])
            if pos is None:
                return None
            j, low = removal_run(
                hashes, i, view.index, current_cutoff(view.state, rank), lambda other: lookup.get(other) in owners
            )
            state, uncovered = remove_at(view.state, rank, low)
            if uncovered:
                node.publish(state)  # coverage first, then the entries: a fault in between leaves an entry, never a hole
                if state.worker_cutoffs.get(rank):
                    lane.stats["cutoffs_set"] += 1
            # The scrub takes every entry the run removed: each hash of the run is covered at or past the
            # cut, so inside ``uncovered``; a first hash the rank did not cover is the scrub's ``removed``.
            self._scrub(lookup, stale_hashes(view.state.edge, uncovered, hashes[i]), scrubbed)
            self._clear_children_if_unheld(lane, node)
        self._release_if_dead(lane, node)
        return j - i

    def _scrub(self, lookup: dict[int, ConcurrentNode], stale: list[int], scrubbed: set[int]) -> None:
        """Delete the rank's entries for blocks it no longer covers, by hash (as the reference does)."""
        for ext in stale:
            lookup.pop(ext, None)
        scrubbed.update(stale)

    def _clear_children_if_unheld(self, lane: Lane, node: ConcurrentNode) -> None:
        """Drop the children of a node no rank holds in full (exclusive gate held); internal stays set."""
        if should_clear_children(node.view.state, len(node.children)):
            node.begin_shape_change()
            node.children = {}
            node.end_shape_change()
            lane.stats["children_cleared"] += 1

    # ------------------------------------------------------------------ clear / remove rank

    def drop_ranks(self, lane: Lane, ranks: list[Rank], forget: bool) -> None:
        """Remove ``ranks`` from every node that holds them (``_drop_ranks``), guarded: a fault may poison the tree."""
        with self.guard("clear_all_blocks" if not forget else "remove_worker"):
            self._drop_ranks(lane, ranks, forget)

    def _drop_ranks(self, lane: Lane, ranks: list[Rank], forget: bool) -> None:
        """Remove ``ranks`` from every node that holds them.

        A rank holds a node only if it stored into it (its lookup names the node) or the node
        is a suffix split off such a node, so the sweep visits the nodes the ranks' lookups
        name and follows their split links: the rank's own footprint, as the reference walks
        its lookups, not the whole forest. A node's split links are read *under its exclusive
        gate, after the ranks were dropped from it*: a later split copies a state without
        them, an earlier one left its suffix in the list. (Reading the links first would miss
        a suffix split off in between and leave the ranks' coverage on it: the stress test
        found exactly that with an earlier, forest-snapshot sweep.)
        """
        if not ranks:
            return
        targets = set(ranks)
        queue = deque(node for rank in ranks for node in lane.lookups.get(rank, {}).values())
        seen: set[int] = set()
        dropped = []
        while queue:
            node = queue.popleft()
            if node.id in seen:
                continue
            seen.add(node.id)
            if _holds_any(node, targets):  # a node the ranks held (a split link may lead to one they never did)
                dropped.append(node)
            queue.extend(self._drop_from(lane, node, targets))
        for node in dropped:  # as the reference: release only what the drop left unowned, not what it passed
            self._release_if_dead(lane, node)
        for rank in ranks:
            if forget:
                lane.forget(rank)
            elif rank in lane.lookups:
                lane.lookups[rank] = {}

    def _drop_from(self, lane: Lane, node: ConcurrentNode, targets: set[Rank]) -> list[ConcurrentNode]:
        """Drop ``targets`` from one node; return its split links, read under its exclusive gate after the drop."""
        _sync.yield_point("drop.before_gate")
        with node.gate.exclusive():
            if _holds_any(node, targets):
                state = node.view.state
                for rank in targets:
                    state = drop_worker(state, rank)
                node.publish(state)
                self._clear_children_if_unheld(lane, node)
            return list(node.splits)

    def _forest(self) -> list[ConcurrentNode]:
        """Return every node reachable from the root (children snapshots under shared gates)."""
        out, queue = [], deque(self.root.children_snapshot())
        while queue:
            node = queue.popleft()
            out.append(node)
            with node.gate.shared():
                queue.extend(node.children_snapshot())
        return out

    # ------------------------------------------------------------------ whole-tree reads (quiescent)

    def statistics(self) -> ImplStatistics:
        """Return the counters of every lane plus the gate acquisitions of reachable nodes."""
        total: Counter[str] = Counter()
        for lane in self.lanes:
            total.update(lane.stats)
        nodes = self._forest()
        gates = [self.root.gate.statistics()] + [n.gate.statistics() for n in nodes]
        return ImplStatistics(
            **{name: total[name] for name in LANE_COUNTERS},
            gate_shared=sum(g.shared for g in gates),
            gate_exclusive=sum(g.exclusive for g in gates),
            nodes=len(nodes),
        )

    def cutoff_nodes(self) -> int:
        return sum(1 for n in self._forest() if n.view.state.worker_cutoffs)

    def sticky_internal_nodes(self) -> int:
        return sum(1 for n in self._forest() if n.internal and not n.children)

    def check(self, lookups: bool = True) -> None:
        """Assert every invariant (quiescent; an expensive no-op when sound).

        Structure: the spec's node predicates on every reachable node, the root's, stable
        (even) versions and released gates. Lookups: every lane entry names a node that holds
        the block and that the rank covers there, or a stale node whose subtree does (a lane
        never keeps an entry for a block its rank no longer holds).
        """
        problems = [f"root: {name}" for name in root_violations(self.root.view.state, self.child_states(self.root))]
        for node in [self.root] + self._forest():
            if node is not self.root:
                for name in node_violations(node.view.state, node.internal, self.child_states(node), node.view.index):
                    problems.append(f"{node!r}: {name}")
            if node.version % 2:
                problems.append(f"{node!r}: shape version {node.version} is odd at quiescence")
            if node.gate.held_exclusive() or node.gate.held_shared():
                problems.append(f"{node!r}: shape gate still held")
        for lane in self.lanes:
            problems += [
                f"lane {lane.index} rank {rank} is missing from its worker index (a removal would miss it)"
                for rank in lane.lookups
                if rank not in lane.ranks_of.get(rank.worker_id, {})
            ]
        if lookups:
            for lane in self.lanes:
                for rank, lookup in lane.lookups.items():
                    for ext, node in lookup.items():
                        if not self._entry_is_sound(node, rank, ext):
                            problems.append(f"lane {lane.index} entry {rank}[{ext}] -> {node!r} names no holder")
            problems += self._unlooked_blocks()
        if problems:
            raise AssertionError("ConcurrentRadixTree.check failed:\n  " + "\n  ".join(problems[:20]))

    def _unlooked_blocks(self) -> list[str]:
        """Every block a rank is credited with but no lane can find: the tree would score it, yet reject a store
        below it and a removal of it (the converse of a sound entry; a fault between the two writes made one)."""
        entries: dict[Rank, set[int]] = {}
        for lane in self.lanes:
            for rank, lookup in lane.lookups.items():
                entries.setdefault(rank, set()).update(lookup)
        return [
            f"{rank}[{ext}] is credited but has no lane entry"
            for rank, held in self._credited_index().items()
            for ext in sorted(held - entries.get(rank, set()))
        ]

    def _credited_index(self) -> dict[Rank, frozenset[int]]:
        """The credited index (``spec.dump``), even when poisoned: what ``check()`` inspects."""
        return super().snapshot()

    def _entry_is_sound(self, node: ConcurrentNode, rank: Rank, ext: int) -> bool:
        """Check one lane entry: the node, or the suffix a split moved the block to, holds it for the rank."""
        pos = node.view.index.get(ext)  # the edge index (checked per node above): one lookup, not a scan
        if pos is None:
            moved = find_moved(node, ext)
            if moved is None:
                return False
            node, pos = moved, moved.view.index[ext]  # find_moved returns only a node whose edge has the hash
        return covers(node.view.state, rank, pos)


class LaneHandle:
    """The event interface of one lane: what one event thread calls."""

    __slots__ = ("tree", "lane")

    def __init__(self, tree: ConcurrentRadixTree, lane: Lane) -> None:
        self.tree, self.lane = tree, lane

    def apply_event(self, worker_id: int, event: Payload | KvCacheEvent) -> None:
        self.tree.apply_on(self.lane, worker_id, event)

    def remove_worker(self, worker_id: int) -> None:
        worker_id = check_worker_id(worker_id)
        self.tree.drop_ranks(self.lane, self.lane.worker_ranks(worker_id), forget=True)

    def clear_all_blocks(self, worker_id: int) -> None:
        worker_id = check_worker_id(worker_id)
        self.tree.drop_ranks(self.lane, self.lane.worker_ranks(worker_id), forget=False)


def _holds_any(node: ConcurrentNode, ranks: Iterable[Rank]) -> bool:
    """Whether any of ``ranks`` holds part of ``node``'s edge (O(len(ranks)), not O(the node's holders))."""
    state = node.view.state
    return any(r in state.full_edge_workers or r in state.worker_cutoffs for r in ranks)

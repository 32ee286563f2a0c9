"""One node of the concurrent compressed tree, and its protection.

Design
------
A node's *edge state* (the frozen ``spec.coverage.EdgeState`` plus its external-hash
index) and its *child map* are protected separately, as docs/sources.md#dynamo-crtc-readme describes ("Node
internals use separate protection for edge state and child maps"):

- ``view`` -- an immutable ``ConcurrentNodeView(state, index)``. Writers build a new view and publish
  it with one attribute store, under ``state_lock`` (coverage writers on a shared gate can
  run side by side and must not lose each other's update). Readers take no lock: one
  attribute load gives them a view that existed.
- ``children`` -- a dict keyed by the first local hash of each child's edge. Lookups are
  single ``dict.get`` calls (atomic under the interpreter lock); inserts and snapshots take
  ``children_lock``. A split *replaces* the dict (the suffix takes the old one), it never
  edits it in place.
- ``gate`` -- the shape gate (``_sync.RWGate``). Shared: planning, coverage updates
  (promote, cover-prefix), adding a child under a parent that is already internal (prefill
  fanout). Exclusive: split, leaf extension, first child (sets ``internal``), grouped
  removal, clearing children, releasing a dead child. Lock order: a parent's gate before a
  child's; never upgrade a shared hold (release, take exclusive, revalidate).
- ``version`` -- the shape version. Every change of the edge or of the child map's shape
  (not coverage) bumps it twice: to an odd value before the change and to the next even
  value after. Writers use it as a post-commit token: a plan made at version ``v`` commits
  only if the version is still ``v`` under the gate, otherwise it is stale and retried.
  Readers use it as a sequence check around one walk step (``ReadStep``): a step whose
  version was odd or moved does not descend, so a reader never pairs one edge with another
  edge's children. [Relaxed: find_matches is best effort during splits; it may stop early
  (undercount), it never credits a block past what a rank held during the read.]
- ``internal`` -- sticky: set with the first child, never cleared.
- ``splits`` -- the suffixes split off this node; lazy lookup repair follows them.
- ``parent`` -- the node holding this one in its child map, so that an eviction can release
  a leaf it left unowned (``ConcurrentRadixTree._release_if_dead``).

Source: docs/sources.md#dynamo-crtc-readme "Node State", "Concurrency Model"; docs/sources.md#crtc-2,
docs/sources.md#crtc-7 "Per-node protection".
"""

from __future__ import annotations

import itertools

from ..spec.coverage import EdgeState, holders, is_held
from ..spec.invariants import edge_index_of
from . import _sync

_ids = itertools.count(1)


class ConcurrentNodeView:
    """An edge state with its index (external hash -> last position), published as one object.

    Immutable by contract: never written after construction (a writer publishes a new view). A plain
    slotted class rather than a frozen dataclass: one is built on every coverage change, and a frozen
    dataclass's ``__init__`` costs three times as much.
    """

    __slots__ = ("state", "index")

    def __init__(self, state: EdgeState, index: dict[int, int]) -> None:
        self.state = state
        self.index = index

    @staticmethod
    def of(state: EdgeState, previous: ConcurrentNodeView | None = None) -> ConcurrentNodeView:
        """Return the view of ``state``, reusing ``previous``'s index when the edge is unchanged."""
        if previous is not None and previous.state.edge is state.edge:
            return ConcurrentNodeView(state, previous.index)
        return ConcurrentNodeView(state, edge_index_of(state.edge))


class ConcurrentNode:
    """A node of the concurrent tree (see the module docstring for what guards what)."""

    __slots__ = ("view", "children", "internal", "gate", "version", "state_lock", "children_lock", "id", "splits", "parent")

    def __init__(self, state: EdgeState, parent: ConcurrentNode | None = None) -> None:
        self.view = ConcurrentNodeView.of(state)
        self.children: dict[int, ConcurrentNode] = {}
        self.internal = False  # sticky; written under the exclusive gate
        self.id = next(_ids)
        self.gate = _sync.RWGate(f"node{self.id}.shape_gate")
        self.version = 0  # even when stable; see the module docstring
        # Never held together (nothing takes one while holding the other), so natively one bare lock is both.
        self.state_lock = _sync.lock(lambda: f"node{self.id}.state")
        self.children_lock = _sync.lock(lambda: f"node{self.id}.children", like=self.state_lock)
        # Every suffix split off this node, in order (a new tuple published under the exclusive gate, so a
        # reader's copy never changes under it; none kept for the many nodes never split). Blocks only
        # ever leave an edge through a split, so a block that was on this edge is on this node or on
        # a node reachable through these links, whether or not that node is still attached.
        self.splits: tuple[ConcurrentNode, ...] = ()
        # The node whose child map holds this one (None: the root, or released). Written under that
        # parent's exclusive gate (a split re-parents the children it moves to its suffix), read without
        # a lock: a releaser revalidates it under the parent's gate, so a stale value only skips a release.
        self.parent = parent

    # --------------------------------------------------------------- writers

    def publish(self, state: EdgeState) -> None:
        """Replace the edge state (caller holds this node's gate, shared or exclusive)."""
        with self.state_lock:
            self.view = ConcurrentNodeView.of(state, self.view)

    def update(self, change) -> EdgeState:
        """Apply ``change(state) -> state`` atomically with respect to other coverage writers."""
        with self.state_lock:
            state = change(self.view.state)
            self.view = ConcurrentNodeView.of(state, self.view)
            return state

    def begin_shape_change(self) -> None:
        """Mark the start of an edge or child-map change (caller holds the exclusive gate)."""
        assert self.gate.owns_exclusive(), "shape changes take the exclusive gate (held by this thread)"
        self.version += 1

    def end_shape_change(self) -> None:
        """Mark the end of a shape change: the version is even again and has moved."""
        self.version += 1

    def children_snapshot(self) -> list[ConcurrentNode]:
        """Return the current children (a copy, safe against concurrent inserts)."""
        with self.children_lock:
            return list(self.children.values())

    def holders(self) -> frozenset:
        """Return every rank that holds part of the edge now (``spec.coverage.holders``; O(ranks))."""
        return holders(self.view.state)

    def is_held(self) -> bool:
        """Whether any rank holds part of the edge now (``spec.coverage.is_held``; O(1))."""
        return is_held(self.view.state)

    def __repr__(self) -> str:
        s = self.view.state
        return (
            f"Node#{self.id}([{' '.join(str(b.local) for b in s.edge)}] full={sorted(s.full_edge_workers)} "
            f"cut={dict(s.worker_cutoffs)} internal={self.internal} v={self.version})"
        )


class ReadStep:
    """One lock-free walk step over a node, for ``spec.match.find_matches_walk``.

    ``edge_state()`` records the version and the view; ``child()`` descends only if the version
    was even and has not moved, so the child belongs to the edge the walk just matched.
    """

    __slots__ = ("node", "version")

    def __init__(self, node: ConcurrentNode) -> None:
        self.node = node
        self.version = -1

    def edge_state(self) -> EdgeState:
        self.version = self.node.version
        _sync.yield_point("read.after_version")
        return self.node.view.state

    def child(self, local: int) -> ReadStep | None:
        child = self.node.children.get(local)
        _sync.yield_point("read.after_child")
        if child is None or self.version % 2 or self.node.version != self.version:
            return None
        return type(self)(child)


class RootStep:
    """The walk's entry: the root has no edge, only children (its map is never replaced); ``step`` walks below it."""

    __slots__ = ("root", "step")

    def __init__(self, root: ConcurrentNode, step: type[ReadStep] = ReadStep) -> None:
        self.root, self.step = root, step

    def child(self, local: int) -> ReadStep | None:
        child = self.root.children.get(local)
        return None if child is None else self.step(child)

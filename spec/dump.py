"""Whole-tree reads as pure functions: the dump, and the abstract index a query can credit.

Both walk any tree given two accessors: ``state_of(node) -> EdgeState`` and
``children_of(node) -> Mapping[first local hash, node]``. The sequential reference and the
concurrent implementation mix in ``TreeReads``, which answers ``dump_tree_as_events``
(``dump_router_events``), ``snapshot`` and ``shape`` with these functions, so their dumps and
snapshots follow one rule.

**Dump.** Breadth first from the root's children. Chains are merged: a node with no cutoffs
whose only live child (a child some rank holds) has no cutoffs and the same full set is
written together with that child. Each full rank gets one ``stored`` event for the merged
edge, each cutoff rank one for ``edge[:cutoff]``; ``parent_hash`` is the last block of the
parent chain (None under the root). A rank is written below a parent only if it holds every
node above in full, so the dump is replayable: applied in order to an empty tree it is
accepted event by event and rebuilds the same index.

**Index.** For each rank, the external hashes of the blocks a query can credit it with: a
node's whole edge (full rank) or its cutoff prefix, when the rank holds every node above in
full. This is the tree's abstract state, compared with ``spec.contract``.

Source: docs/sources.md#crtc-5, docs/sources.md#crtc-7 "Dump (newest)"; Dynamo test
``dump_skips_ranks_that_do_not_cover_the_parent``; docs/dynamo-findings.md F2 (where 1.6.1's dump departs from this
rule).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .coverage import EdgeState, holders
from .events import KvCacheEvent, Stored, encode_router_event
from .primitives import Rank
from .rules import DEFAULT_RULES, RuleSet, Variant
from .shape import child_key

N = TypeVar("N")
StateOf = Callable[[Any], EdgeState]
ChildrenOf = Callable[[Any], Mapping[int, Any]]


def dump_chains(root: N, state_of: StateOf, children_of: ChildrenOf, merge: bool = True) -> list[tuple[Rank, Stored]]:
    """Return the dump as ``(rank, Stored)`` pairs, parents before children.

    ``merge=False`` writes every node as its own events (``Variant.PER_BLOCK_NODES`` of
    ``spec.rules``: the per-block tree's dump is one event per block).
    """
    out: list[tuple[Rank, Stored]] = []
    queue: deque = deque((child, None, None) for child in children_of(root).values())
    while queue:
        node, parent_hash, eligible = queue.popleft()
        state = state_of(node)
        blocks = list(state.edge)
        tail = node
        while merge and not state_of(tail).worker_cutoffs:
            live = [c for c in children_of(tail).values() if holders(state_of(c))]
            if len(live) != 1:
                break
            nxt = state_of(live[0])
            if nxt.worker_cutoffs or nxt.full_edge_workers != state.full_edge_workers:
                break
            tail = live[0]
            blocks.extend(nxt.edge)
        full = state.full_edge_workers if eligible is None else state.full_edge_workers & eligible
        for rank in sorted(full):
            out.append((rank, Stored(parent_hash, tuple(blocks))))
        for rank, k in sorted(state.worker_cutoffs.items()):
            if eligible is None or rank in eligible:
                out.append((rank, Stored(parent_hash, state.edge[:k])))
        if full:
            for child in children_of(tail).values():
                queue.append((child, blocks[-1].ext, frozenset(full)))
    return out


def dump_router_events(root: N, state_of: StateOf, children_of: ChildrenOf, merge: bool = True) -> list[str]:
    """Return the dump as ``RouterEvent`` JSON lines, numbered from 0: what ``dump_tree_as_events`` returns.

    Each ``(rank, Stored)`` pair of ``dump_chains`` becomes one line, its ``event_id`` its
    index, its ``dp_rank`` and ``worker_id`` the rank's (``spec.events.encode_router_event``).
    """
    return [
        encode_router_event(rank.worker_id, KvCacheEvent(i, stored, rank.dp_rank))
        for i, (rank, stored) in enumerate(dump_chains(root, state_of, children_of, merge))
    ]


def credited_index(root: N, state_of: StateOf, children_of: ChildrenOf) -> dict[Rank, frozenset[int]]:
    """Return, per rank, the external hashes a query can credit it with."""
    index: dict[Rank, set[int]] = {}
    stack: list = [(c, None) for c in children_of(root).values()]
    while stack:
        node, active = stack.pop()
        state = state_of(node)
        full = state.full_edge_workers if active is None else state.full_edge_workers & active
        for rank in full:
            index.setdefault(rank, set()).update(b.ext for b in state.edge)
        for rank, k in state.worker_cutoffs.items():
            if active is None or rank in active:
                index.setdefault(rank, set()).update(b.ext for b in state.edge[:k])
        if full:
            stack.extend((c, frozenset(full)) for c in children_of(node).values())
    return {rank: frozenset(blocks) for rank, blocks in index.items()}


def tree_shape(root: N, state_of: StateOf, children_of: ChildrenOf, internal_of: Callable[[Any], bool]) -> list[tuple]:
    """Return the reachable tree as a sorted list of ``(path of first locals, edge, full, cutoffs, internal)``.

    Two trees with equal shapes answer every query alike, ``early_exit`` included.
    """
    out = []
    stack: list = [((), c) for c in children_of(root).values()]
    while stack:
        path, node = stack.pop()
        state = state_of(node)
        key = path + (child_key(state),)
        out.append((key, state.edge, state.full_edge_workers, dict(state.worker_cutoffs), internal_of(node)))
        stack.extend((key, c) for c in children_of(node).values())
    return sorted(out, key=repr)


def merges_chains(rules: RuleSet = DEFAULT_RULES) -> bool:
    """Check if a tree following ``rules`` dumps merged chains (``dump_chains(merge=True)``).

    Every compressed tree (1.3.0 on) merges; the per-block tree (``Variant.PER_BLOCK_NODES``, releases up
    to 1.2.1) writes one event per node, that is per block.

    Source: spec/rules.py (``Variant.PER_BLOCK_NODES``); docs/releases.md.
    """
    return not rules.has(Variant.PER_BLOCK_NODES)


class TreeReads:
    """The whole-tree reads, answered by the functions above for any tree that has a ``root``.

    A tree mixes this in and says how to read one of its nodes: ``state_of(node)`` (its
    ``EdgeState``; no default), ``children_of(node)`` (first local hash -> child; default
    ``node.children``) and ``internal_of(node)`` (the sticky flag; default ``node.internal``).
    Every method only reads; a concurrent tree calls them at quiescence. So the reference
    and the concurrent tree dump, snapshot and show their shape by one rule.
    """

    root: Any
    rules: RuleSet = DEFAULT_RULES  # the rule set the tree follows (``merges_chains``)

    @staticmethod
    def state_of(node: Any) -> EdgeState:
        raise NotImplementedError

    @staticmethod
    def children_of(node: Any) -> Mapping[int, Any]:
        return node.children

    @staticmethod
    def internal_of(node: Any) -> bool:
        return node.internal

    def dump_tree_as_events(self) -> list[str]:
        """Return the tree as ``RouterEvent`` JSON strings; applied in order to an empty tree they rebuild it."""
        return dump_router_events(self.root, self.state_of, self.children_of, merges_chains(self.rules))

    def snapshot(self) -> dict[Rank, frozenset[int]]:
        """Return the spec's abstract index: for each rank, the external hashes a query can credit it with."""
        return credited_index(self.root, self.state_of, self.children_of)

    def shape(self) -> list[tuple]:
        """Return the reachable tree as ``(path, edge, full, cutoffs, internal)`` tuples (``tree_shape``)."""
        return tree_shape(self.root, self.state_of, self.children_of, self.internal_of)

    def child_states(self, node: Any) -> dict[int, EdgeState]:
        """Return ``node``'s children as first local hash -> edge state (what ``spec.invariants`` checks)."""
        return {key: self.state_of(child) for key, child in self.children_of(node).items()}

"""Shape rules of the compressed tree: split, leaf extension, sticky internal, store plans.

The tree splits but never merges. A store that names a parent inside an edge either reuses
the edge, extends a leaf, or splits; a store that walks down from a node descends into the
child keyed by its first local hash. These decisions are pure functions here so that the
sequential reference and the concurrent implementation take them from one place.

Worked example of a split at ``p = 3`` (docs/sources.md#crtc-3-5)::

    before:  edge [b0..b5]  full {0, 300}  cutoffs {1:1, 2:3, 3:5, 301:4}
    prefix:  edge [b0 b1 b2]  full {0, 2, 3, 300, 301}  cutoffs {1:1}
    suffix:  edge [b3 b4 b5]  full {0, 300}             cutoffs {3:2, 301:1}

Source: docs/sources.md#dynamo-crtc-readme "Store Paths", "Suffix Reuse And Splitting"; docs/sources.md#crtc-3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .arith import PY, Arith
from .coverage import EdgeState, covers, current_cutoff, holders, is_held
from .events import Stored, check_not_self_parented
from .primitives import Block, FrozenMap, FrozenSet, Rank
from .rules import DEFAULT_RULES, RuleSet, Variant


def prefix_cutoff(c: Any, p: Any, ops: Arith = PY) -> Any:
    """Return how much of a split's prefix ``edge[:p]`` a rank with cutoff ``c`` holds (``p``: full)."""
    return ops.min(c, p)


def suffix_cutoff(c: Any, p: Any, ops: Arith = PY) -> Any:
    """Return how much of a split's suffix ``edge[p:]`` a rank with cutoff ``c`` holds: the remainder past ``p``."""
    return ops.ite(c > p, c - p, 0)


def extended_cutoff(c: Any, storing: Any, n: Any, tail: Any, ops: Arith = PY) -> Any:
    """Return a rank's cutoff after a leaf of ``n`` blocks is extended by ``tail`` blocks.

    The storing rank becomes full (``n + tail``); every other rank keeps exactly the blocks
    it held, so a full one is demoted to a cutoff at the old length.
    """
    return ops.ite(storing, n + tail, c)


def state_with_cutoffs(edge: tuple[Block, ...], cutoffs: dict[Rank, int]) -> EdgeState:
    """Return the edge state in which each rank holds ``edge[:cutoffs[rank]]`` (full at ``len``, absent at 0)."""
    full = FrozenSet(r for r, k in cutoffs.items() if k == len(edge))
    partial = {r: k for r, k in cutoffs.items() if 0 < k < len(edge)}
    return EdgeState(edge, full, FrozenMap(partial))


def split_at(state: EdgeState, p: int) -> tuple[EdgeState, EdgeState]:
    """Split the edge before position ``p``; return ``(prefix, suffix)`` states.

    - The prefix keeps ``edge[:p]``; the suffix gets ``edge[p:]``.
    - The suffix's full set is the full set before the split.
    - A cutoff ``k < p`` stays on the prefix and is absent from the suffix.
    - A cutoff ``k >= p`` becomes full on the prefix and leaves ``k - p`` on the suffix when
      that is positive.

    Per rank this is ``prefix_cutoff`` and ``suffix_cutoff``; ``proofs/`` proves that together
    they preserve every rank's covered prefix of the concatenated edge.

    Children (not part of the edge state) all move to the suffix; the prefix gets the suffix
    as its only child and becomes internal.

    Source: docs/sources.md#crtc-3-5 ``split_off_suffix``; Dynamo test
    ``split_moves_cutoffs_at_and_past_the_boundary``.
    """
    assert 0 < p < len(state.edge), "split position must be strictly inside the edge"
    before = {r: current_cutoff(state, r) for r in holders(state)}
    prefix = state_with_cutoffs(state.edge[:p], {r: prefix_cutoff(c, p) for r, c in before.items()})
    suffix = state_with_cutoffs(state.edge[p:], {r: suffix_cutoff(c, p) for r, c in before.items()})
    return prefix, suffix


def extend_leaf(state: EdgeState, rank: Rank, tail: tuple[Block, ...]) -> EdgeState:
    """Append ``tail`` to the edge; ``rank`` becomes full and every other full rank is cut at the old length.

    Ranks that already had a cutoff keep it (``extended_cutoff``). Only a leaf that was never
    internal may be extended (``may_extend_leaf``).

    Source: docs/sources.md#crtc-3-2(c), docs/sources.md#crtc-3-3 step 2; docs/sources.md#dynamo-crtc-readme "Decode
    Extension".
    """
    assert tail, "extension needs at least one block"
    n = len(state.edge)
    cutoffs = {r: extended_cutoff(current_cutoff(state, r), r == rank, n, len(tail)) for r in holders(state) | {rank}}
    return state_with_cutoffs(state.edge + tuple(tail), cutoffs)


def may_extend_leaf(internal: bool, state: EdgeState, rank: Rank, rules: RuleSet = DEFAULT_RULES) -> bool:
    """Check if ``rank`` may append to this node's edge in place (decode extension).

    Allowed only when the node was never internal (the flag is sticky: a node that ever had
    a child is never reopened, even after cleanup removes every child) and the rank holds
    the tail. The caller has already established that the parent hash is the tail.

    ``rules``: under ``Variant.PER_BLOCK_NODES`` (releases up to 1.2.1) no edge is ever extended: every
    node holds one block. Every compressed tree (1.3.0 on) extends.

    Source: docs/sources.md#dynamo-crtc-readme "Decode Extension", "Sticky internal nodes"; docs/sources.md#crtc-4-2
    (``test_cleanup_does_not_reopen_internal_node_for_extension``).
    """
    return not rules.has(Variant.PER_BLOCK_NODES) and not internal and covers(state, rank, len(state.edge) - 1)


def attached_edges(blocks: tuple[Block, ...], rules: RuleSet = DEFAULT_RULES) -> tuple[tuple[Block, ...], ...]:
    """Return the edges of the chain of new nodes a store attaches for ``blocks``, first to last.

    One node for the whole run (the compressed tree, 1.3.0 on); under ``Variant.PER_BLOCK_NODES``
    (releases up to 1.2.1) one node per block.

    Source: spec/rules.py (``Variant.PER_BLOCK_NODES``); docs/releases.md.

    >>> from kvproof.spec.primitives import Block
    >>> from kvproof.spec.rules import RULE_SETS
    >>> from kvproof.spec.shape import attached_edges
    >>> blocks = (Block(1, 10), Block(2, 20))
    >>> [len(edge) for edge in attached_edges(blocks)], [len(edge) for edge in attached_edges(blocks, RULE_SETS["dynamo-0.6"])]
    ([2], [1, 1])
    """
    if rules.has(Variant.PER_BLOCK_NODES):
        return tuple((block,) for block in blocks)
    return (blocks,)


def is_released_by_store(state: EdgeState, rules: RuleSet = DEFAULT_RULES) -> bool:
    """Check if a store that reaches a node nobody holds releases it and builds a fresh node in its place.

    So 1.6.0 on (ai-dynamo/dynamo PR #14878; docs/dynamo-findings.md F1). Under ``Variant.REUSE_DEAD_NODES``
    (1.3.0.post1 to 1.5.1) the dead node is reused (covered again, split) like any other.

    Source: docs/dynamo-findings.md F1; spec/rules.py (``Variant.REUSE_DEAD_NODES``).
    """
    return not is_held(state) and not rules.has(Variant.REUSE_DEAD_NODES)


def is_released_at_eviction(state: EdgeState, child_count: int, rules: RuleSet = DEFAULT_RULES) -> bool:
    """Check if a non-root node is released as soon as a removal leaves it so: nobody holds it and it has no child.

    So 1.6.0 on (a dead branch goes leaf by leaf up; ai-dynamo/dynamo PR #14878). The older trees keep
    dead nodes until a store passes them: ``Variant.REUSE_DEAD_NODES`` (1.3.0.post1 to 1.5.1) and
    ``Variant.PER_BLOCK_NODES`` (up to 1.2.1).

    Source: docs/dynamo-findings.md F1; spec/rules.py.
    """
    if rules.has(Variant.REUSE_DEAD_NODES) or rules.has(Variant.PER_BLOCK_NODES):
        return False
    return child_count == 0 and not is_held(state)


def check_store_parent(stored: Stored, rules: RuleSet = DEFAULT_RULES) -> None:
    """Raise ``InvalidBlockSequence`` if ``stored`` names its own parent and ``rules`` refuse that.

    The single-threaded compressed tree (1.3.0 on) refuses it (``spec.events.check_not_self_parented``, E14);
    under ``Variant.SELF_PARENT_ALLOWED`` (the per-block tree up to 1.2.1, and the concurrent indexer) such a
    store is handled like any other.

    Source: docs/sources.md#crtc-12 item 1; spec/rules.py (``Variant.SELF_PARENT_ALLOWED``).
    """
    if not rules.has(Variant.SELF_PARENT_ALLOWED):
        check_not_self_parented(stored)


# ---------------------------------------------------------------------------------------
# Store plans


@dataclass(frozen=True, slots=True)
class InsertBelow:
    """The parent is the edge tail: continue by child lookup (or leaf extension) below the node."""


@dataclass(frozen=True, slots=True)
class Reuse:
    """The blocks already follow the parent on the edge: raise the rank's coverage to ``cutoff``."""

    cutoff: int


@dataclass(frozen=True, slots=True)
class ReuseAndExtend:
    """The blocks run past the edge tail on a leaf: append ``tail`` in place."""

    tail: tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class SplitThenInsert:
    """The blocks diverge inside the edge (or the node is internal): split at ``at``, then insert below the prefix."""

    at: int


StorePlan = InsertBelow | Reuse | ReuseAndExtend | SplitThenInsert


def plan_store_at(state: EdgeState, internal: bool, pos: int, blocks: tuple[Block, ...]) -> StorePlan:
    """Decide how a store whose parent sits at edge position ``pos`` proceeds.

    (a) the parent is the tail: insert below the node;
    (b) the edge after ``pos`` starts with all the blocks (local and external hashes equal):
        reuse, new cutoff ``pos + 1 + len(blocks)``;
    (c) the node is a leaf that was never internal and the blocks strictly extend the edge
        suffix after ``pos``: reuse the suffix and append the rest;
    (d) otherwise split at ``pos + 1`` and insert below the prefix.

    Source: docs/sources.md#crtc-3-2 "Covered"; docs/sources.md#dynamo-crtc-readme "Suffix Reuse And Splitting".
    """
    assert 0 <= pos < len(state.edge) and blocks
    if pos == len(state.edge) - 1:
        return InsertBelow()
    suffix = state.edge[pos + 1 :]
    if len(blocks) <= len(suffix) and suffix[: len(blocks)] == blocks:
        return Reuse(pos + 1 + len(blocks))
    if not internal and len(blocks) > len(suffix) and blocks[: len(suffix)] == suffix:
        return ReuseAndExtend(blocks[len(suffix) :])
    return SplitThenInsert(pos + 1)


@dataclass(frozen=True, slots=True)
class CoverPrefix:
    """The remaining blocks end inside the child's edge: cover its first ``m`` blocks."""

    m: int


@dataclass(frozen=True, slots=True)
class SplitAndAttach:
    """The remaining blocks diverge inside the child's edge: split at ``m`` and attach the rest below."""

    m: int


@dataclass(frozen=True, slots=True)
class PassThrough:
    """The remaining blocks cover the whole child edge: promote the rank and continue below it."""


DescendPlan = CoverPrefix | SplitAndAttach | PassThrough


def common_local_prefix(edge: tuple[Block, ...], blocks: tuple[Block, ...]) -> int:
    """Return the length of the common prefix of ``edge`` and ``blocks``, compared by local hash only.

    Source: docs/sources.md#crtc-3-3 step 4 ("compared by local hash only").
    """
    m = 0
    for a, b in zip(edge, blocks):
        if a.local != b.local:
            break
        m += 1
    return m


def plan_descend(edge: tuple[Block, ...], remaining: tuple[Block, ...]) -> DescendPlan:
    """Decide how a store descends into the child found by its first local hash.

    ``m`` is the common local prefix (at least 1, since the child was found by
    ``remaining[0].local``):

    - ``m < len(edge)`` and ``m == len(remaining)``: cover the child's first ``m`` blocks;
    - ``m < len(edge)`` otherwise: split the child at ``m``, promote the rank on the prefix,
      attach ``remaining[m:]`` below it;
    - ``m == len(edge)``: promote the rank on the child and continue below it.

    Source: docs/sources.md#crtc-3-3 step 4 "Descend(child)".
    """
    m = common_local_prefix(edge, remaining)
    assert m >= 1, "a child is found by its first local hash"
    if m == len(edge):
        return PassThrough()
    if m == len(remaining):
        return CoverPrefix(m)
    return SplitAndAttach(m)


def child_key(state: EdgeState) -> int:
    """Return the key under which a node hangs in its parent's child map: its first local hash.

    Source: docs/sources.md#crtc-8 "a child's key equals the first local hash of its edge".
    """
    return state.edge[0].local


__all__ = [
    "CoverPrefix",
    "DescendPlan",
    "InsertBelow",
    "PassThrough",
    "Reuse",
    "ReuseAndExtend",
    "SplitAndAttach",
    "SplitThenInsert",
    "StorePlan",
    "attached_edges",
    "check_store_parent",
    "child_key",
    "common_local_prefix",
    "extend_leaf",
    "extended_cutoff",
    "is_released_at_eviction",
    "is_released_by_store",
    "may_extend_leaf",
    "plan_descend",
    "plan_store_at",
    "prefix_cutoff",
    "split_at",
    "state_with_cutoffs",
    "suffix_cutoff",
]


def should_clear_children(state: EdgeState, child_count: int, rules: RuleSet = DEFAULT_RULES) -> bool:
    """Check if a removal (or a dropped rank) clears a node's children: it has some, and no full-edge worker remains.

    A rank that holds only a prefix of the edge holds nothing below it, so once no rank
    holds the whole edge the subtree is unreachable for every query and is dropped; the
    ``internal`` flag stays set (sticky). The tree invariant
    ``spec.invariants.is_holderless_childless`` is exactly "this never needs to fire".

    ``rules``: the per-block tree (``Variant.PER_BLOCK_NODES``, releases up to 1.2.1) never clears a node's
    children; every compressed tree (1.3.0 on) does.

    Source: docs/sources.md#dynamo-crtc-readme "Removal" ("removal may clear children only when no full-edge workers
    remain"); docs/sources.md#crtc-4-1.
    """
    return child_count > 0 and not state.full_edge_workers and not rules.has(Variant.PER_BLOCK_NODES)

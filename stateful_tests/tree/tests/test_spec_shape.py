"""Named tests of spec.shape: split, extension, and the store and descend plans.

The laws (spec/shape.py's docstrings; crtc.md §3.2-§3.5, §4.1-§4.2), each on a small hand-computed case:

- a split moves cutoffs at and past the boundary (crtc.md §3.5's worked example), and only strictly inside
  the edge;
- an extension makes the storing rank full and keeps every other rank's coverage of the old edge; it needs
  at least one block, and only a leaf that was never internal, whose tail the rank holds, may be extended;
- the store plans (a)-(d) of crtc.md §3.2, with (b) reaching up to the whole suffix, for a parent on the edge
  and at least one block; the descend plans compare local hashes only, from a first block the child starts with;
- a removal clears a node's children when it has at least one and no full-edge worker remains.
"""

import pytest

from kvproof.spec.coverage import EdgeState
from kvproof.spec.primitives import Block, FrozenMap, Rank
from kvproof.spec.shape import (
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

EDGE = tuple(Block(i + 1, 100 * (i + 1)) for i in range(6))


def ranks(*ids):
    return frozenset(Rank(i) for i in ids)


def test_split_moves_cutoffs_at_and_past_the_boundary():
    """crtc.md §3.5, Dynamo test ``split_moves_cutoffs_at_and_past_the_boundary``."""
    state = EdgeState(EDGE, ranks(0, 300), FrozenMap({Rank(1): 1, Rank(2): 3, Rank(3): 5, Rank(301): 4}))
    prefix, suffix = split_at(state, 3)
    assert prefix.edge == EDGE[:3] and suffix.edge == EDGE[3:]
    assert prefix.full_edge_workers == ranks(0, 2, 3, 300, 301)
    assert dict(prefix.worker_cutoffs) == {Rank(1): 1}
    assert suffix.full_edge_workers == ranks(0, 300)
    assert dict(suffix.worker_cutoffs) == {Rank(3): 2, Rank(301): 1}


def test_extension_demotes_other_full_ranks_to_the_old_tail():
    """crtc.md §10 test 40: full {w1}, cutoff {w2: 3} after w1 extends a shared [1 2 3]."""
    state = EdgeState(EDGE[:3], ranks(1, 2), FrozenMap())
    after = extend_leaf(state, Rank(1), EDGE[3:5])
    assert after.full_edge_workers == ranks(1) and dict(after.worker_cutoffs) == {Rank(2): 3}


def test_extension_promotes_a_partial_extender_and_keeps_other_cutoffs():
    state = EdgeState(EDGE[:3], ranks(1), FrozenMap({Rank(2): 2, Rank(3): 1}))
    after = extend_leaf(state, Rank(2), EDGE[3:4])
    assert after.full_edge_workers == ranks(2)
    assert dict(after.worker_cutoffs) == {Rank(1): 3, Rank(3): 1}


def test_sticky_internal_never_extends():
    state = EdgeState(EDGE[:3], ranks(1), FrozenMap())
    assert may_extend_leaf(False, state, Rank(1))
    assert not may_extend_leaf(True, state, Rank(1))
    assert not may_extend_leaf(False, state, Rank(2))  # must hold the tail


def test_store_plans():
    state = EdgeState(EDGE[:4], ranks(1), FrozenMap())
    assert plan_store_at(state, False, 3, EDGE[4:5]) == InsertBelow()
    assert plan_store_at(state, False, 0, EDGE[1:3]) == Reuse(3)
    assert plan_store_at(state, False, 1, EDGE[2:6]) == ReuseAndExtend(EDGE[4:6])
    assert plan_store_at(state, True, 1, EDGE[2:6]) == SplitThenInsert(2)  # internal: never extended
    assert plan_store_at(state, False, 1, (Block(9, 900),)) == SplitThenInsert(2)


def test_descend_plans_compare_local_hashes_only():
    edge = EDGE[:4]
    foreign = tuple(Block(b.local, b.ext + 1) for b in EDGE)
    assert plan_descend(edge, foreign[:2]) == CoverPrefix(2)
    assert plan_descend(edge, foreign[:2] + (Block(9, 900),)) == SplitAndAttach(2)
    assert plan_descend(edge, foreign[:5]) == PassThrough()


@pytest.mark.parametrize("p", [0, 6, -1, 7])
def test_a_split_is_strictly_inside_the_edge(p):
    """split_at: "the split position must be strictly inside the edge" (0 < p < len; a split at 0 or len is no split).

    Each assertion message is matched whole: pytest may add the failed comparison on a line of its own.
    """
    state = EdgeState(EDGE, ranks(1), FrozenMap())
    with pytest.raises(AssertionError, match=r"^split position must be strictly inside the edge(\n|$)"):
        split_at(state, p)


def test_a_split_at_either_end_of_the_inside_keeps_every_block():
    state = EdgeState(EDGE, ranks(1), FrozenMap({Rank(2): 5}))
    prefix, suffix = split_at(state, 1)
    assert (prefix.edge, suffix.edge) == (EDGE[:1], EDGE[1:]) and dict(suffix.worker_cutoffs) == {Rank(2): 4}
    prefix, suffix = split_at(state, 5)
    assert (prefix.edge, suffix.edge) == (EDGE[:5], EDGE[5:]) and suffix.full_edge_workers == ranks(1)
    assert prefix.full_edge_workers == ranks(1, 2) and not suffix.worker_cutoffs  # cutoff 5 == p: nothing past it


def test_an_extension_needs_at_least_one_block():
    with pytest.raises(AssertionError, match=r"^extension needs at least one block(\n|$)"):
        extend_leaf(EdgeState(EDGE[:3], ranks(1), FrozenMap()), Rank(1), ())


def test_only_a_rank_holding_the_tail_may_extend_a_leaf():
    """may_extend_leaf: the rank must cover the edge's last block (seed 004 "Decode Extension")."""
    state = EdgeState(EDGE[:3], ranks(1), FrozenMap({Rank(2): 2, Rank(3): 1}))
    assert may_extend_leaf(False, state, Rank(1))
    assert not may_extend_leaf(False, state, Rank(2))  # holds all but the tail
    assert not may_extend_leaf(False, state, Rank(3))
    one = EdgeState(EDGE[:1], ranks(1), FrozenMap())
    assert may_extend_leaf(False, one, Rank(1)) and not may_extend_leaf(False, one, Rank(2))  # a stranger never


def test_blocks_equal_to_the_whole_suffix_reuse_the_edge_up_to_its_end():
    """crtc.md §3.2(b): reuse when ``len(blocks)`` is at most the suffix length, the new cutoff ``pos + 1 + len(blocks)``."""
    state = EdgeState(EDGE[:4], ranks(1), FrozenMap())
    assert plan_store_at(state, False, 0, EDGE[1:4]) == Reuse(4)
    assert plan_store_at(state, True, 1, EDGE[2:4]) == Reuse(4)
    assert plan_store_at(state, False, 2, EDGE[3:4]) == Reuse(4)
    assert plan_store_at(state, False, 2, EDGE[3:5]) == ReuseAndExtend(EDGE[4:5])  # one past the end: extend


@pytest.mark.parametrize("pos, blocks", [(4, EDGE[4:5]), (5, EDGE[4:5]), (-1, EDGE[0:1]), (1, ())])
def test_a_store_plan_needs_a_parent_on_the_edge_and_at_least_one_block(pos, blocks):
    """plan_store_at: the parent sits at edge position ``0 <= pos < len(edge)`` and the store names blocks."""
    state = EdgeState(EDGE[:4], ranks(1), FrozenMap())
    with pytest.raises(AssertionError):
        plan_store_at(state, False, pos, blocks)


def test_a_descent_starts_at_a_child_found_by_the_first_local_hash():
    """plan_descend: ``m >= 1``, since the child was found by ``remaining[0].local`` (crtc.md §3.3 step 4)."""
    with pytest.raises(AssertionError, match=r"^a child is found by its first local hash(\n|$)"):
        plan_descend(EDGE[:3], (Block(9, 100), Block(2, 200)))


def test_children_are_cleared_when_there_are_some_and_no_full_edge_worker_remains():
    """seed 004 "Removal", crtc.md §4.1: "If the node has no full ranks left, clear its children"."""
    cut_only = EdgeState(EDGE[:3], frozenset(), FrozenMap({Rank(1): 2}))
    assert should_clear_children(cut_only, 1) and should_clear_children(cut_only, 3)
    assert not should_clear_children(cut_only, 0)
    assert not should_clear_children(EdgeState(EDGE[:3], ranks(2), FrozenMap({Rank(1): 2})), 1)

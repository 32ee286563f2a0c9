"""Named tests of spec.shape: split, extension, and the store and descend plans."""

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

"""Named tests of spec.coverage: each rule with its source's worked values."""

import pytest

from kvproof.spec.coverage import EdgeState, cover_prefix, covers, current_cutoff, drop_worker, promote, removal_cutoff, remove_at
from kvproof.spec.primitives import Block, FrozenMap, FrozenSet, Rank

EDGE = tuple(Block(i + 1, 100 * (i + 1)) for i in range(6))
R0, R1, R2, R3 = Rank(0), Rank(1), Rank(2), Rank(3)
STATE = EdgeState(EDGE, FrozenSet({R0}), FrozenMap({R1: 1, R2: 3}))


def test_current_cutoff_is_len_for_full_cutoff_for_partial_zero_for_strangers():
    assert [current_cutoff(STATE, r) for r in (R0, R1, R2, R3)] == [6, 1, 3, 0]


def test_covers_is_strictly_below_the_cutoff():
    assert covers(STATE, R2, 2) and not covers(STATE, R2, 3)
    assert covers(STATE, R0, 5) and not covers(STATE, R3, 0)


def test_cover_prefix_only_ever_raises():
    assert cover_prefix(STATE, R2, 2) == STATE  # already holds more
    assert cover_prefix(STATE, R2, 0) == STATE  # c == 0: no change
    assert current_cutoff(cover_prefix(STATE, R2, 5), R2) == 5
    assert R2 in cover_prefix(STATE, R2, 6).full_edge_workers  # c >= len promotes
    assert cover_prefix(STATE, R0, 2) == STATE  # a full rank stays full


def test_promote_deletes_the_ranks_own_cutoff():
    after = promote(STATE, R1)
    assert R1 in after.full_edge_workers and R1 not in after.worker_cutoffs


def test_removal_cutoff_rule():
    assert removal_cutoff(6, 3) == 3  # inside coverage: keep the blocks before it
    assert removal_cutoff(3, 3) == 3  # at the cutoff: already gone
    assert removal_cutoff(3, 5) == 3  # past the cutoff: no-op


def test_remove_at_returns_only_the_newly_uncovered_range():
    after, uncovered = remove_at(STATE, R0, 2)
    assert current_cutoff(after, R0) == 2 and uncovered == range(2, 6)
    after, uncovered = remove_at(STATE, R2, 4)
    assert after == STATE and not uncovered


def test_remove_at_position_zero_drops_the_rank():
    after, uncovered = remove_at(STATE, R1, 0)
    assert R1 not in after.worker_cutoffs and R1 not in after.full_edge_workers and uncovered == range(0, 1)


def test_drop_worker_removes_full_and_cutoff_alike():
    assert current_cutoff(drop_worker(STATE, R0), R0) == 0
    assert current_cutoff(drop_worker(STATE, R2), R2) == 0
    assert drop_worker(STATE, R3) is STATE


def test_cover_prefix_returns_the_same_state_when_coverage_does_not_rise():
    """No change, no new state: ``c == 0``, ``c`` at or below the cutoff, or a full rank (the identity the trees rely on)."""
    a, b = Rank(1, 0), Rank(2, 0)
    state = EdgeState(tuple(Block(i, 100 + i) for i in range(4)), FrozenSet({a}), FrozenMap({b: 2}))
    for rank, c in ((a, 0), (a, 3), (a, 4), (b, 0), (b, 1), (b, 2)):
        assert cover_prefix(state, rank, c) is state
    assert cover_prefix(state, b, 3) is not state and current_cutoff(cover_prefix(state, b, 3), b) == 3


def test_edge_state_repr_names_blocks_holders_and_cutoffs():
    """The failure messages print states this way: blocks as (local, ext) pairs, the holders, the cutoffs."""
    state = EdgeState((Block(1, 100), Block(2, 200)), FrozenSet({Rank(7, 0)}), FrozenMap({Rank(8, 1): 1}))
    assert repr(state) == "EdgeState(edge=[(1, 100), (2, 200)], full_edge_workers={(7, 0)}, worker_cutoffs={(8, 1): 1})"
    assert repr(EdgeState((Block(3, 300),))) == "EdgeState(edge=[(3, 300)], full_edge_workers=set(), worker_cutoffs={})"


EDGE_POSITIONS = {10: 0, 11: 1, 12: 2, 13: 3, 14: 4}  # an edge of five blocks, by external hash


def run_of(hashes, cutoff=5, i=0, same_node=lambda h: True):
    from kvproof.spec.coverage import removal_run

    return removal_run(tuple(hashes), i, EDGE_POSITIONS, cutoff, same_node)


@pytest.mark.parametrize(
    "hashes, cutoff, i, expected",
    [
        ((14, 13, 12), 5, 0, (3, 2)),  # a chain listed tail first: one cut at its lowest position
        ((10, 12, 11), 5, 0, (3, 0)),  # any order on the node: the cut at the minimum
        ((14, 13, 14, 12), 5, 0, (2, 3)),  # a hash already in the run ends it
        ((14, 13, 13, 12), 5, 0, (2, 3)),  # so does a repeat of a hash the run absorbed, not only of its first
        ((14, 99, 12), 5, 0, (1, 4)),  # a hash not on the edge ends it
        ((12, 13), 3, 0, (1, 2)),  # a hash at the cutoff is not covered: it ends the run
        ((12, 11), 3, 0, (2, 1)),  # one below the cutoff is covered: absorbed
        ((13, 12), 3, 0, (1, 3)),  # an uncovered first hash is a run of itself
        ((99, 14, 13), 5, 1, (3, 3)),  # a run may start anywhere in the batch
    ],
)
def test_removal_run_absorbs_covered_following_hashes_of_the_node_and_cuts_at_the_lowest(hashes, cutoff, i, expected):
    assert run_of(hashes, cutoff, i) == expected


def test_removal_run_stops_at_a_hash_of_another_node():
    assert run_of((14, 13, 12), same_node=lambda h: h != 13) == (1, 4)


def test_removal_run_starts_on_the_edge():
    with pytest.raises(AssertionError, match=r"^the run starts at a hash on the node's edge"):
        run_of((99, 14))


def test_a_removal_batch_reports_the_first_hash_the_rank_did_not_hold():
    """Every held hash is removed first; then the first not held is named (E4, E39)."""
    from kvproof.spec.coverage import remove_batch
    from kvproof.spec.errors import BlockNotFound

    removed = []

    def remove_from(i, scrubbed):
        h = (7, 5, 8, 6)[i]
        if h in (5, 6):
            return None
        removed.append(h)
        return 1

    with pytest.raises(BlockNotFound, match=r"block 5 "):
        remove_batch(Rank(1, 0), (7, 5, 8, 6), remove_from)
    assert removed == [7, 8]


def test_under_removal_skips_unknown_a_rank_is_known_unless_the_tree_says_it_is_not():
    """The concurrent indexer's variant skips the hashes a rank it has seen does not hold (``rank_known``, by default
    true: a caller that says nothing has seen the rank); a rank it never saw still gets ``BlockNotFound``."""
    from kvproof.spec.coverage import remove_batch
    from kvproof.spec.errors import BlockNotFound
    from kvproof.spec.rules import rule_set_named

    concurrent = rule_set_named("dynamo-1.6-concurrent")

    def none_held(i, scrubbed):
        return None

    remove_batch(Rank(1, 0), (5,), none_held, concurrent)  # skipped: nothing raised
    with pytest.raises(BlockNotFound, match=r"block 5 "):
        remove_batch(Rank(1, 0), (5,), none_held, concurrent, rank_known=False)
    with pytest.raises(BlockNotFound, match=r"block 5 "):
        remove_batch(Rank(1, 0), (5,), none_held)  # the single-threaded rule reports


def test_an_edge_state_built_from_plain_containers_holds_the_persistent_ones():
    """``EdgeState`` takes a ``set``/``frozenset`` and a ``dict`` as a caller has them, and keeps the spec's persistent
    ``FrozenSet`` and ``FrozenMap`` (so a later promote or cutoff change is O(log ranks), kvproof issue 31)."""
    from kvproof.spec.coverage import promote, with_cutoff

    a, b, c = Rank(1, 0), Rank(2, 0), Rank(3, 0)
    edge = (Block(1, 100), Block(2, 200), Block(3, 300))
    state = EdgeState(edge, frozenset({a}), {b: 1})
    assert type(state.full_edge_workers) is FrozenSet and type(state.worker_cutoffs) is FrozenMap
    assert state.full_edge_workers == {a} and dict(state.worker_cutoffs) == {b: 1}
    grown = with_cutoff(promote(state, c), b, 2)
    assert grown.full_edge_workers == {a, c} and dict(grown.worker_cutoffs) == {b: 2}
    kept = EdgeState(edge, state.full_edge_workers, state.worker_cutoffs)
    assert kept.full_edge_workers is state.full_edge_workers and kept.worker_cutoffs is state.worker_cutoffs

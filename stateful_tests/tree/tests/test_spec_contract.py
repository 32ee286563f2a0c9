"""Named tests of spec.contract: held and reachable blocks, verdicts, the hole undercount."""

from kvproof.spec import contract as law
from kvproof.spec.events import Removed, Stored
from kvproof.spec.primitives import Block, Rank

W = Rank(1)
C4 = tuple(Block(i, 100 * i) for i in (1, 2, 3, 4))


def stored(parent, *ids):
    return Stored(parent, tuple(Block(i, 100 * i) for i in ids))


def test_a_store_under_a_reachable_parent_is_reachable():
    s = law.on_stored(law.EMPTY_CONTRACT, W, stored(None, 1, 2, 3, 4), True)
    assert law.reachable_score(s, W, [100, 200, 300, 400]) == 4


def test_mid_chain_removal_prunes_reachability_but_not_holdings():
    """E5: after removing 200, 300 and 400 are still held (a hole) but no longer reachable."""
    s = law.on_stored(law.EMPTY_CONTRACT, W, stored(None, 1, 2, 3, 4), True)
    s = law.on_removed(s, W, Removed((200,)))
    assert law.holdings(s, W).reachable == {100}
    assert set(law.holdings(s, W).held) == {100, 300, 400}
    assert law.has_holes(s, W)
    s = law.on_stored(s, W, stored(100, 2), True)  # re-store only the removed block
    assert law.reachable_score(s, W, [100, 200, 300, 400]) == 2
    assert law.held_score(s, W, [100, 200, 300, 400]) == 4


def test_store_verdicts():
    s = law.on_stored(law.EMPTY_CONTRACT, W, stored(None, 1, 2, 3), True)
    s = law.on_removed(s, W, Removed((200,)))
    assert law.store_verdict(s, W, stored(100, 2)) is law.Verdict.MUST_APPLY
    assert law.store_verdict(s, W, stored(300, 5)) is law.Verdict.MAY_REJECT  # held, unreachable
    assert law.store_verdict(s, W, stored(999, 5)) is law.Verdict.MUST_REJECT
    assert law.store_verdict(s, Rank(2), stored(100, 2)) is law.Verdict.MUST_REJECT  # E16


def test_score_verdicts():
    assert law.score_verdict(4, 4, 2) is law.ScoreVerdict.EXACT
    assert law.score_verdict(3, 4, 2) is law.ScoreVerdict.HOLE_UNDERCOUNT
    assert law.score_verdict(5, 4, 2) is law.ScoreVerdict.OVERCOUNT
    assert law.score_verdict(1, 4, 2) is law.ScoreVerdict.UNEXPLAINED_UNDERCOUNT


def test_index_verdict_names_overcounts_and_missing_reachable_blocks():
    s = law.on_stored(law.EMPTY_CONTRACT, W, stored(None, 1, 2), True)
    assert law.index_verdict(s, {W: frozenset({100, 200})}) == []
    assert law.index_verdict(s, {W: frozenset({100, 200, 300})})  # credits a block it does not hold
    assert law.index_verdict(s, {W: frozenset({100})})  # misses a reachable block

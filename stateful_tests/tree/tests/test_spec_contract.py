"""Named tests of spec.contract: held and reachable blocks, verdicts, the hole undercount.

The laws (spec/contract.py's docstrings; crtc.md §4.3, §10, §14), each on a small hand-computed case:

- an accepted store under a reachable parent makes its blocks reachable; a rejected store changes nothing;
- a removal takes its blocks out of held and reachable and prunes exactly the reachable blocks whose chain
  passes through them; one that names no held block changes nothing;
- ``prefix_closed`` keeps a candidate iff its parent chain reaches the root inside the candidates; a cycle
  of parents never reaches it;
- ``Cleared`` drops its own rank only, unless ``Variant.CLEARED_CLEARS_WORKER`` asks for the worker;
- ``on_event`` is exactly the handler of the event's kind and refuses anything else;
- store and removal verdicts (law 4 and 5 of the module docstring), score verdicts;
- ``index_verdict`` names, per rank, indexed blocks the rank does not hold and reachable blocks not indexed,
  for ranks only the index or only the contract knows too.
"""

import pytest

from kvproof.spec import contract
from kvproof.spec.events import Cleared, Removed, Stored
from kvproof.spec.primitives import Block, FrozenMap, Rank
from kvproof.spec.rules import Variant, with_variants

W = Rank(1)
C4 = tuple(Block(i, 100 * i) for i in (1, 2, 3, 4))


def stored(parent, *ids):
    return Stored(parent, tuple(Block(i, 100 * i) for i in ids))


def test_a_store_under_a_reachable_parent_is_reachable():
    s = contract.on_stored(contract.EMPTY_CONTRACT, W, stored(None, 1, 2, 3, 4), True)
    assert contract.reachable_score(s, W, [100, 200, 300, 400]) == 4


def test_mid_chain_removal_prunes_reachability_but_not_holdings():
    """E5: after removing 200, 300 and 400 are still held (a hole) but no longer reachable."""
    s = contract.on_stored(contract.EMPTY_CONTRACT, W, stored(None, 1, 2, 3, 4), True)
    s = contract.on_removed(s, W, Removed((200,)))
    assert contract.holdings(s, W).reachable == {100}
    assert set(contract.holdings(s, W).held) == {100, 300, 400}
    assert contract.has_holes(s, W)
    s = contract.on_stored(s, W, stored(100, 2), True)  # re-store only the removed block
    assert contract.reachable_score(s, W, [100, 200, 300, 400]) == 2
    assert contract.held_score(s, W, [100, 200, 300, 400]) == 4


def test_store_verdicts():
    s = contract.on_stored(contract.EMPTY_CONTRACT, W, stored(None, 1, 2, 3), True)
    s = contract.on_removed(s, W, Removed((200,)))
    assert contract.store_verdict(s, W, stored(100, 2)) is contract.Verdict.MUST_APPLY
    assert contract.store_verdict(s, W, stored(300, 5)) is contract.Verdict.MAY_REJECT  # held, unreachable
    assert contract.store_verdict(s, W, stored(999, 5)) is contract.Verdict.MUST_REJECT
    assert contract.store_verdict(s, Rank(2), stored(100, 2)) is contract.Verdict.MUST_REJECT  # E16


def test_score_verdicts():
    assert contract.score_verdict(4, 4, 2) is contract.ScoreVerdict.EXACT
    assert contract.score_verdict(3, 4, 2) is contract.ScoreVerdict.HOLE_UNDERCOUNT
    assert contract.score_verdict(5, 4, 2) is contract.ScoreVerdict.OVERCOUNT
    assert contract.score_verdict(1, 4, 2) is contract.ScoreVerdict.UNEXPLAINED_UNDERCOUNT


def test_index_verdict_names_overcounts_and_missing_reachable_blocks():
    s = contract.on_stored(contract.EMPTY_CONTRACT, W, stored(None, 1, 2), True)
    assert contract.index_verdict(s, {W: frozenset({100, 200})}) == []
    assert contract.index_verdict(s, {W: frozenset({100, 200, 300})})  # credits a block it does not hold
    assert contract.index_verdict(s, {W: frozenset({100})})  # misses a reachable block


def test_a_rejected_store_changes_nothing():
    """on_stored: "A rejected store changes nothing" (its blocks are neither held nor reachable)."""
    s = contract.on_stored(contract.EMPTY_CONTRACT, W, stored(None, 1, 2), True)
    assert contract.on_stored(s, W, stored(200, 3), False) == s
    assert contract.on_stored(contract.EMPTY_CONTRACT, W, stored(None, 1), False) == contract.EMPTY_CONTRACT


def test_removing_the_tail_keeps_the_chain_above_it_reachable():
    """A removal prunes only the reachable blocks whose chain passes through a removed block."""
    s = contract.on_stored(contract.EMPTY_CONTRACT, W, stored(None, 1, 2, 3, 4), True)
    s = contract.on_removed(s, W, Removed((400,)))
    assert contract.holdings(s, W).reachable == {100, 200, 300}
    s = contract.on_removed(s, W, Removed((300,)))
    assert contract.holdings(s, W) == contract.RankHoldings(FrozenMap({100: None, 200: 100}), frozenset({100, 200}))


def test_a_removal_naming_no_held_block_changes_nothing():
    """on_removed: the named blocks leave ``held``; naming none of them, for a known or an unknown rank, leaves the state as it was."""
    s = contract.on_stored(contract.EMPTY_CONTRACT, W, stored(None, 1, 2), True)
    assert contract.on_removed(s, W, Removed((999,))) == s
    assert contract.on_removed(s, Rank(2), Removed((100,))) == s
    assert contract.on_removed(contract.EMPTY_CONTRACT, W, Removed((100,))) == contract.EMPTY_CONTRACT


class CountedParents(dict):
    """A held map that refuses to be asked for parents more than ``limit`` times (a walk that goes round a cycle)."""

    limit = 100

    def get(self, key, default=None):
        self.limit -= 1
        assert self.limit >= 0, "prefix_closed walked round a cycle of parents"
        return super().get(key, default)


@pytest.mark.parametrize(
    "held, candidates, closed",
    [
        ({100: None, 200: 100, 300: 200}, {100, 200, 300}, {100, 200, 300}),
        ({100: None, 200: 100, 300: 200}, {100, 300}, {100}),  # 300's chain passes through 200, not a candidate
        ({100: None, 200: 100, 300: 200}, {200, 300}, set()),
        ({100: None, 200: 100, 300: 200, 500: 100}, {100, 200, 500}, {100, 200, 500}),  # two branches
        ({100: 200, 200: 100, 300: None}, {100, 200, 300}, {300}),  # a cycle never reaches the root
        ({100: 100}, {100}, set()),  # nor a block that is its own parent
        ({100: 300, 200: 100, 300: 200, 400: 200}, {100, 200, 300, 400}, set()),  # nor a chain that leads into one
    ],
)
def test_prefix_closed_keeps_exactly_the_candidates_whose_chain_reaches_the_root(held, candidates, closed):
    """spec.contract.prefix_closed: "the largest subset of candidates whose every member's parent chain stays inside it"."""
    assert contract.prefix_closed(CountedParents(held), candidates) == closed


def test_removal_verdicts():
    """Law 5: a removal naming only reachable blocks must be applied; one naming a hole or a stranger may be rejected."""
    s = contract.on_stored(contract.EMPTY_CONTRACT, W, stored(None, 1, 2, 3), True)
    assert contract.remove_verdict(s, W, Removed((300, 100))) is contract.Verdict.MUST_APPLY
    s = contract.on_removed(s, W, Removed((200,)))
    assert contract.remove_verdict(s, W, Removed((100,))) is contract.Verdict.MUST_APPLY
    assert contract.remove_verdict(s, W, Removed((300,))) is contract.Verdict.MAY_REJECT  # held, not reachable
    assert contract.remove_verdict(s, W, Removed((100, 999))) is contract.Verdict.MAY_REJECT
    assert contract.remove_verdict(s, Rank(2), Removed((100,))) is contract.Verdict.MAY_REJECT


def two_ranks_of_one_worker():
    s = contract.on_stored(contract.EMPTY_CONTRACT, Rank(1, 0), stored(None, 1, 2), True)
    s = contract.on_stored(s, Rank(1, 1), stored(None, 1), True)
    return contract.on_stored(s, Rank(2, 0), stored(None, 3), True)


def test_cleared_drops_its_own_rank_only_unless_the_variant_clears_the_worker():
    """crtc.md §4.3: only this (worker_id, dp_rank) is cleared; releases before 1.4.0 cleared every rank of the worker."""
    s = two_ranks_of_one_worker()
    for after in (contract.on_cleared(s, Rank(1, 0)), contract.on_event(s, Rank(1, 0), Cleared(), True)):
        assert set(after) == {Rank(1, 1), Rank(2, 0)} and after[Rank(1, 1)] == s[Rank(1, 1)]
    whole = with_variants(frozenset({Variant.CLEARED_CLEARS_WORKER}))
    for after in (contract.on_cleared(s, Rank(1, 0), whole), contract.on_event(s, Rank(1, 0), Cleared(), True, whole)):
        assert set(after) == {Rank(2, 0)}


def test_on_event_is_the_handler_of_the_events_kind():
    """on_event dispatches each kind to its handler with the same arguments and refuses anything that is not an event."""
    s = two_ranks_of_one_worker()
    for accepted in (True, False):
        assert contract.on_event(s, Rank(1, 1), stored(100, 2), accepted) == contract.on_stored(
            s, Rank(1, 1), stored(100, 2), accepted
        )
    assert contract.holdings(contract.on_event(s, Rank(1, 1), stored(100, 2), True), Rank(1, 1)).reachable == {100, 200}
    assert contract.on_event(s, Rank(1, 1), stored(100, 2), False) == s
    assert contract.on_event(s, Rank(1, 0), Removed((200,)), True) == contract.on_removed(s, Rank(1, 0), Removed((200,)))
    with pytest.raises(TypeError, match=r"^not an event: None$"):
        contract.on_event(s, W, None, True)


def test_index_verdict_names_each_problem_with_its_rank_and_blocks():
    """index_verdict: per rank, the indexed blocks it does not hold and the reachable blocks not indexed, sorted."""
    s = contract.on_stored(contract.EMPTY_CONTRACT, W, stored(None, 1, 2), True)
    assert contract.index_verdict(s, {W: frozenset({100, 200, 300})}) == ["(1, 0): indexed blocks it does not hold: [300]"]
    assert contract.index_verdict(s, {W: frozenset({300})}) == [
        "(1, 0): indexed blocks it does not hold: [300]",
        "(1, 0): reachable blocks not indexed: [100, 200]",
    ]
    assert contract.index_verdict(s, {}) == ["(1, 0): reachable blocks not indexed: [100, 200]"]  # a rank the index lacks
    assert contract.index_verdict(contract.EMPTY_CONTRACT, {Rank(2, 1): frozenset({5})}) == [
        "(2, 1): indexed blocks it does not hold: [5]"
    ]

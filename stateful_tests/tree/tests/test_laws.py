"""Each law of stateful_tests.tree.laws (the spec's node rules, sampled) as its own test."""

import pytest

from kvproof.spec.coverage import EdgeState, with_cutoff
from kvproof.spec.match import find_matches_walk
from kvproof.spec.primitives import FrozenMap
from kvproof.spec.shape import PassThrough, Reuse, split_at
from kvproof.stateful_tests.tree import laws
from kvproof.stateful_tests.tree.laws import LAWS, fresh


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.__name__)
def test_law(law):
    fresh(law)()


# Negative controls: each law run over a deliberately broken rule must fail.


def _split_drops_carried_cutoffs(state, p):
    prefix, suffix = split_at(state, p)
    return prefix, EdgeState(suffix.edge, suffix.full_edge_workers, FrozenMap())


def _walk_overcounting_by_one(root, query, early_exit=False):
    return {rank: score + 1 for rank, score in find_matches_walk(root, query, early_exit).items()}


BROKEN_RULES = {
    "law_cover_prefix_only_raises": ("cover_prefix", lambda s, r, c: with_cutoff(s, r, min(c, len(s.edge)))),
    "law_removal_never_raises_and_is_idempotent": ("remove_at", lambda s, r, pos: (s, range(0))),
    "law_split_preserves_every_ranks_coverage": ("split_at", _split_drops_carried_cutoffs),
    "law_extension_keeps_other_ranks_coverage_of_the_old_edge": (
        "extend_leaf",
        lambda s, r, tail: EdgeState(s.edge + tuple(tail), s.full_edge_workers | {r}, s.worker_cutoffs.delete(r)),
    ),
    "law_promote_and_drop_keep_the_invariants": ("promote", lambda s, r: s),
    "law_store_plan_is_consistent": ("plan_store_at", lambda s, internal, pos, blocks: Reuse(pos + 1 + len(blocks))),
    "law_descend_plan_matches_by_local_hash": ("plan_descend", lambda edge, remaining: PassThrough()),
    "law_match_walk_equals_the_per_rank_model": ("find_matches_walk", _walk_overcounting_by_one),
}


def test_every_law_has_a_broken_rule():
    assert set(BROKEN_RULES) == {law.__name__ for law in LAWS}


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.__name__)
def test_law_catches_its_broken_rule(law, monkeypatch):
    name, broken = BROKEN_RULES[law.__name__]
    monkeypatch.setattr(laws, name, broken)
    with pytest.raises((AssertionError, ExceptionGroup)) as info:
        laws.run_law(law, 300)
    # The law's own assertion must be what fails (Hypothesis groups several distinct ones), not a crash.
    failures = info.value.exceptions if isinstance(info.value, ExceptionGroup) else (info.value,)
    assert all(isinstance(f, AssertionError) for f in failures), failures

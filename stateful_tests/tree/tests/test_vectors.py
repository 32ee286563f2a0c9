"""The vectors (``tree/vectors.py``) are observations of the real package, replayed on every tree: the real package
itself (they must still hold on it; skips visibly without it), the sequential reference and the concurrent tree, each
of kvproof's with ``check()`` after every event."""

import pytest

from kvproof.impl.radix_tree import ConcurrentRadixTree
from kvproof.reference import RadixTree
from kvproof.stateful_tests.tree.steps import checked_after_every_event, run_scenario
from kvproof.stateful_tests.tree.vectors import SCENARIOS

TARGETS = ["reference", "impl", pytest.param("dynamo", marks=pytest.mark.dynamo)]
"""The trees the vectors are replayed on (the pool and the lanes reach the same tree: ``conform``'s runs cover them)."""


def factory_for(target, scenario, request):
    if target == "dynamo":
        return request.getfixturevalue("dynamo_tree")
    return checked_after_every_event({"reference": RadixTree, "impl": ConcurrentRadixTree}[target], scenario)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("target", TARGETS)
def test_every_tree_reproduces_each_observed_behaviour(target, scenario, request):
    assert run_scenario(factory_for(target, scenario, request), scenario) == []

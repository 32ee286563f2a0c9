"""The vectors are observations of the real package: they must still hold on it (skips visibly without it)."""

import pytest

from kvproof.stateful_tests.tree.steps import run_scenario
from kvproof.stateful_tests.tree.vectors import SCENARIOS


@pytest.mark.dynamo
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_dynamo_behaves_as_recorded(dynamo_tree, scenario):
    assert run_scenario(dynamo_tree, scenario) == []

"""Every upstream reference value of the active-sequence state (sequences.md §3, §4, §7, §8) on the spec,
the reference and the concurrent implementation: the 10 s / 6 s spillover, the multi-worker re-anchoring,
the credit continuity and cap, the zero-duration anchors, the token-load experiments R1-R24."""

import pytest

from kvproof.stateful_tests.sequences.model import TARGETS
from kvproof.stateful_tests.sequences.steps import run_value_scenario
from kvproof.stateful_tests.sequences.values import VALUE_SCENARIOS


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("scenario", VALUE_SCENARIOS, ids=lambda s: s.name)
def test_upstream_value(scenario, target):
    assert run_value_scenario(TARGETS[target], scenario) == []


def test_the_named_cases_of_the_issue_are_all_present():
    names = " ".join(s.name for s in VALUE_SCENARIOS)
    for needle in (
        "10 s / 6 s spillover",
        "re-anchoring",
        "continuity",
        "caps_anchor_shift",
        "R19 repeated credits",
        "zero_duration_anchor",
        "zero-duration anchor",
        "R2 aggregate",
        "R3 ",
        "R24a",
        "R24b",
    ):
        assert needle in names, needle

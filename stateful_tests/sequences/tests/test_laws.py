"""Each law of stateful_tests.sequences.laws (the active-sequence rules, sampled over random histories) on the
spec, the reference and the concurrent implementation."""

import pytest

from kvproof.stateful_tests.harness.profiles import profile_named
from kvproof.stateful_tests.sequences.laws import LAWS, run_law
from kvproof.stateful_tests.sequences.model import TARGETS

EXAMPLES = profile_named().sequences.law_examples


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.__name__)
def test_law(law, target):
    assert run_law(law, EXAMPLES, make=TARGETS[target]) >= EXAMPLES // 2

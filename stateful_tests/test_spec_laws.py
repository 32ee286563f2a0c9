"""Each law of stateful_tests.laws (the spec's node rules, sampled) as its own test."""

import pytest

from kvproof.stateful_tests.laws import LAWS


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.__name__)
def test_law(law):
    law()

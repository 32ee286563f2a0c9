"""Each law of stateful_tests.sequences.laws (the active-sequence rules, sampled over random histories) on the
spec, the reference and the concurrent implementation: one test per strategy, whose histories every law drawing
from it walks on every tracker (``run_laws``)."""

import pytest

from kvproof.stateful_tests.harness.profiles import profile_named
from kvproof.stateful_tests.sequences.laws import LAWS, run_laws, sharing_histories
from kvproof.stateful_tests.sequences.model import TARGETS

EXAMPLES = profile_named().sequences.law_examples


def _ids(laws):
    return laws[0].name + (f"-and-{len(laws) - 1}-more" if len(laws) > 1 else "")


@pytest.mark.parametrize("laws", sharing_histories(LAWS), ids=_ids)
def test_laws(laws):
    walks = run_laws(laws, EXAMPLES, makes=list(TARGETS.values()))
    assert walks >= len(laws) * len(TARGETS) * (EXAMPLES // 2)

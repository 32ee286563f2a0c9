"""The suite's pytest plugin (loaded by the root conftest.py): the profile, the slow marker, the oracle fixtures.

One variable selects the profile, for the suite as for the gate: ``KVPROOF_PROFILE`` (``quick``,
``ci`` by default, ``deep``; ``harness.profiles``). It picks the Hypothesis settings profile of
the same name (``quick`` and ``ci`` are derandomized, so every run explores the same examples
and a failure reproduces by rerunning the test; ``deep`` explores ten times more with fresh
randomness, print_blob giving the replay decorator), the seed policy (``harness.seeding``) and,
under ``deep``, the tests marked ``slow`` (also ``--run-slow``). ``HYPOTHESIS_PROFILE`` still
overrides the Hypothesis part alone (``debug`` is verbose).

Every test runs inside ``seeding.history_free``: Hypothesis's draws for a test are then a function of
its seed alone, not of which modules the process (a pytest-xdist worker, say) imported before it.

Tests that need the real Dynamo package skip with the reason when it is absent; with
``KVPROOF_REQUIRE_DYNAMO=1`` (as ``.ci/run`` sets) they fail instead, so CI cannot pass
a skipped conformance check off as a pass.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Verbosity, settings

# The real slot tracker, started once per session for every test that needs it.
from kvproof.stateful_tests.harness.profiles import profile_named
from kvproof.stateful_tests.harness.seeding import history_free
from kvproof.stateful_tests.sequences.fixtures import slot_tracker_oracle, slot_tracker_process  # noqa: F401

# The gate's rows, run by a test through the command, go one after another in the test's process: pytest-xdist
# already gives every core a worker (a test of the pooled run asks for --processes itself).
os.environ.setdefault("KVPROOF_PROCESSES", "1")

settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("quick", parent=settings.get_profile("ci"))
settings.register_profile(
    "deep", max_examples=1000, derandomize=False, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("debug", derandomize=True, database=None, deadline=None, verbosity=Verbosity.verbose)
PROFILE = profile_named()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", PROFILE.name))
DEEP = PROFILE.name == "deep"


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="run tests marked slow (long explorations)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow") or DEEP:
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow or KVPROOF_PROFILE=deep")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with history_free():
        return (yield)


@pytest.fixture(scope="session")
def dynamo_tree():
    """The real ``dynamo._core.RadixTree`` factory; skips visibly when the package is absent."""
    from kvproof.stateful_tests.harness.targets import dynamo_tree_factory

    factory, reason = dynamo_tree_factory()
    if factory is None:
        if os.environ.get("KVPROOF_REQUIRE_DYNAMO"):
            pytest.fail(f"KVPROOF_REQUIRE_DYNAMO is set but {reason}")
        pytest.skip(reason)
    return factory

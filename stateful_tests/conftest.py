"""Shared pytest configuration: Hypothesis profiles, the slow marker, the Dynamo fixture.

Profiles (``HYPOTHESIS_PROFILE``): ``default`` and ``ci`` are derandomized, so every run
explores the same examples and a failure reproduces by rerunning the test; ``deep``
explores ten times more with fresh randomness (print_blob gives the replay decorator);
``debug`` is verbose. ``KVPROOF_PROFILE=deep`` also enables tests marked ``slow``.

Tests that need the real Dynamo package skip with the reason when it is absent; with
``KVPROOF_REQUIRE_DYNAMO=1`` (as ``.ci/run`` sets) they fail instead, so CI cannot pass
a skipped conformance check off as a pass.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Verbosity, settings

# The real slot tracker, started once per session for every test that needs it.
from kvproof.stateful_tests.sequences.fixtures import slot_tracker_oracle, slot_tracker_process  # noqa: F401

settings.register_profile("default", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=1000, derandomize=False, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("debug", derandomize=True, database=None, deadline=None, verbosity=Verbosity.verbose)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))

DEEP = os.environ.get("KVPROOF_PROFILE") == "deep"


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="run tests marked slow (long explorations)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow") or DEEP:
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow or KVPROOF_PROFILE=deep")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


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

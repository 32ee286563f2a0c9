"""Pytest fixtures of the active-sequence tests (registered once, in ``conftest.py``)."""

from __future__ import annotations

import pytest

from ..harness.optional import skip_or_fail


@pytest.fixture(scope="session")
def slot_tracker_oracle():
    """Skip visibly when ``python -m dynamo.slot_tracker`` (or pyzmq / msgpack) is missing; fail under KVPROOF_REQUIRE_DYNAMO=1."""
    from kvproof.stateful_tests.sequences.oracle import oracle_unavailable

    skip_or_fail(oracle_unavailable(), "KVPROOF_REQUIRE_DYNAMO", "the slot tracker oracle ")
    return True


@pytest.fixture(scope="module")
def slot_tracker_process(slot_tracker_oracle):
    """A running ``python -m dynamo.slot_tracker`` (with its replica feed), fresh for each test module.

    Module scope on purpose: scenarios assume an empty tracker, and the workers one module
    registers would otherwise still be there for the next.
    """
    from kvproof.stateful_tests.sequences.oracle import SlotTrackerProcess

    with SlotTrackerProcess() as process:
        yield process

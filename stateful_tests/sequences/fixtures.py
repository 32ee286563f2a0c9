"""Pytest fixtures of the active-sequence tests (registered once, in ``conftest.py``)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def slot_tracker_oracle():
    """Skip visibly when ``python -m dynamo.slot_tracker`` (or pyzmq / msgpack) is missing; fail under KVPROOF_REQUIRE_DYNAMO=1."""
    from kvproof.stateful_tests.sequences.oracle import oracle_unavailable

    reason = oracle_unavailable()
    if reason:
        if os.environ.get("KVPROOF_REQUIRE_DYNAMO"):
            pytest.fail(f"KVPROOF_REQUIRE_DYNAMO is set but the slot tracker oracle {reason}")
        pytest.skip(reason)
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

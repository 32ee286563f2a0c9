"""The trace's slot tracker calls on the real tracker (sequences/oracle.py: scenario_of_calls, replay_calls)."""

from __future__ import annotations

from itertools import islice

import pytest

from kvproof.stateful_tests.sequences.mutants import NoSpillover
from kvproof.stateful_tests.sequences.oracle import replay_calls, scenario_of_calls
from kvproof.stateful_tests.tree.router import RouterPlan, RouterSim, TrackerCall
from kvproof.stateful_tests.tree.traffic import SHIPPED_TRACE, mooncake_requests


def _calls(n: int) -> list[TrackerCall]:
    sim = RouterSim(RouterPlan(workers=3, capacity=200))
    steps = [*sim.steps(islice(mooncake_requests(SHIPPED_TRACE), n)), *sim.drain()]
    return [s for s in steps if isinstance(s, TrackerCall)]


def test_the_calls_become_a_compressed_scenario_with_a_read_after_each_write() -> None:
    calls = _calls(20)
    scenario = scenario_of_calls(calls, speedup=10.0)
    writes = [op for op in scenario.ops if op.kind != "loads"]
    assert [op.kind for op in writes] == [c.kind for c in calls] and len(scenario.ops) == 2 * len(calls)
    assert all(op.via == "replica" for op in writes if op.kind != "register")
    assert abs(sum(op.gap_ms for op in scenario.ops) - calls[-1].at / 10 / 1e6) <= 1
    add = next(op for op in writes if op.kind == "add")
    first = next(c for c in calls if c.kind == "add").request
    assert first is not None and first.prefill_load_hint is not None and first.prefill_load_hint.expected_prefill_duration
    assert add.duration == round(first.prefill_load_hint.expected_prefill_duration / 10)


@pytest.mark.dynamo
def test_the_real_tracker_agrees_with_the_reference_on_the_slice_and_catches_a_broken_model(slot_tracker_oracle) -> None:
    calls = _calls(60)
    result = replay_calls(calls, speedup=20.0)
    assert not result.mismatches and result.reads > len(calls) and result.modeled_adds == 60, result.mismatches[:1]
    broken = replay_calls(calls, speedup=20.0, model_factory=NoSpillover)
    assert broken.mismatches and "tokens" in broken.mismatches[0].detail

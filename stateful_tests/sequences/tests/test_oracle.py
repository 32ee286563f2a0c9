"""Conformance with the real slot tracker (python -m dynamo.slot_tracker, ai-dynamo-runtime 1.6.1): random
scenarios through its HTTP routes and its replica-sync feed, token loads compared within the receive-time
jitter, blocks, request counts and status codes exactly. Skips visibly without the package; CI runs it."""

import pytest

from kvproof.stateful_tests.sequences.oracle import TEMPLATES, conform_slot_tracker, generate_scenario

pytestmark = pytest.mark.dynamo


def test_the_reference_conforms(slot_tracker_process):
    report = conform_slot_tracker(10, 1, parallel=10, oracle=slot_tracker_process)
    for m in report.mismatches:
        print(m.report(1, 10))
    print(report.summary_line(), f"seconds={report.seconds:.1f} modeled_adds={report.modeled_adds}")
    assert report.scenarios == 10 and report.reads > 150 and report.modeled_adds > 10
    assert report.mismatches == []


def test_the_concurrent_implementation_conforms(slot_tracker_process):
    from kvproof.impl.slot_tracker import ConcurrentSlotTracker

    report = conform_slot_tracker(5, 2, parallel=5, oracle=slot_tracker_process, model_factory=ConcurrentSlotTracker)
    assert report.scenarios == 5
    assert report.mismatches == [], report.mismatches[0].report(2, 5)


def test_scenarios_are_deterministic_plans_and_cover_every_template():
    assert generate_scenario(7, 3) == generate_scenario(7, 3)
    kinds = {op.kind for i in range(10) for op in generate_scenario(1, i).ops}
    assert {"register", "add", "mark", "free", "loads", "potential"} <= kinds
    vias = {op.via for i in range(10) for op in generate_scenario(1, i).ops if op.kind == "add"}
    assert vias == {"http", "replica"}
    assert len(TEMPLATES) == 5

"""The slot trackers' memory benchmark (stateful_tests/sequences/memory.py): its workload, not its figures."""

from kvproof.stateful_tests.sequences.memory import NANOS_PER_MS, TRACKERS, build, workload


def test_the_workload_is_deterministic_and_every_request_stays_booked() -> None:
    dp, requests = workload(300, 1, 4)
    assert (dp, requests) == workload(300, 1, 4)
    for name, factory in TRACKERS.items():
        tracker = factory()
        build(tracker, dp, requests)
        tracker.check()
        loads = tracker.loads(301 * NANOS_PER_MS)
        assert sum(load.active_requests for load in loads.values()) == 300, name

"""The concurrent slot tracker's decision points (impl/slot_tracker.py), by name.

A schedule token is replayed, and a deadlock report read, by the names of the decisions the threads
passed: the topology and registry gates, the request index's lock, each slot's lock, each registry
view's membership lock, and the named yield points of each lifecycle call. The law: one thread
running every call of the tracker under the scheduler passes exactly these names, so a renamed or
lost point fails here before it silently changes what a saved schedule means.
"""

from __future__ import annotations

from kvproof.impl.slot_tracker import ConcurrentSlotTracker
from kvproof.spec.sequence_inputs import SequenceRequest, WorkerWithDpRank
from kvproof.stateful_tests.explore.directed import race

POINTS = {
    "sequences.topology.exclusive",
    "sequences.topology.shared",  # register / unregister; every lifecycle call
    "sequences.registry.exclusive",
    "sequences.registry.shared",  # the registry's keys; every publish and read
    "request_index.acquire",
    "slot(1, 0).acquire",
    "registry.membership.acquire",
    "sequences.add.slot_found",
    "sequences.add.slot_locked",
    "sequences.add.booked",
    "sequences.add.mutated",
    "sequences.mark.owner_found",
    "sequences.free.owner_found",
    "sequences.free.unbooked",
    "sequences.publish.stored",
    "sequences.publish.removed",
    "sequences.expiry.slot_done",
}


def every_call(tracker: ConcurrentSlotTracker) -> None:
    rank = WorkerWithDpRank(1, 0)
    tracker.register_worker(1, 0, 1, 0)
    tracker.add_request(SequenceRequest("a", rank, (1, 2), True, None, None), 1)
    tracker.add_request(SequenceRequest("b", rank, (1, 3), True, None, None), 2)
    tracker.mark_prefill_completed("a", 3)
    tracker.free("a", 4)
    tracker.force_expiry(10**12)  # past b's expiry
    tracker.loads(5)
    tracker.unregister_worker(1)


def test_every_decision_point_of_the_tracker_carries_its_stable_name():
    raced = race("no such point", ConcurrentSlotTracker, every_call, lambda tracker: None)
    assert raced.errors == {} and raced.result is not None and not raced.result.failed
    assert set(raced.passed("paused")) == POINTS

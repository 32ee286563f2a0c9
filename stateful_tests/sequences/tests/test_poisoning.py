"""impl/poison.py on the concurrent slot tracker: a write interrupted between its booking and its publish poisons the
tracker (bookings, slots and registry disagree), and every later call says so; a fault before anything changed and
every typed rejection leave it usable."""

import pytest

from kvproof.impl import slot_tracker as impl_tracker
from kvproof.impl.slot_tracker import ConcurrentSlotTracker
from kvproof.spec.errors import Poisoned
from kvproof.spec.primitives import WorkerWithDpRank
from kvproof.spec.sequence_errors import DuplicateRequest, WorkerNotFound
from kvproof.spec.sequence_inputs import PrefillLoadHint, SequenceRequest, millis
from kvproof.stateful_tests.sequences.mutants import NeverPoisonedTracker

A = WorkerWithDpRank(1, 0)


class TrackerBoom(Exception):
    pass


def tracker(cls=ConcurrentSlotTracker):
    t = cls(None)
    t.register_worker(1, 0, 2, 0)
    return t


def request(rid, worker=A):
    return SequenceRequest(rid, worker, (1, 2), True, None, PrefillLoadHint(100, millis(50)))


def _publish_faults(monkeypatch):
    monkeypatch.setattr(ConcurrentSlotTracker, "_publish", lambda *a: (_ for _ in ()).throw(TrackerBoom("publish")))


def test_a_fault_between_the_mutation_and_its_publish_poisons_the_tracker(monkeypatch):
    t = tracker()
    with monkeypatch.context() as mp:
        _publish_faults(mp)
        with pytest.raises(TrackerBoom):
            t.add_request(request("r"), millis(1))
    assert "registry has not converged" in str(t.poisoned)
    for call in (
        lambda: t.add_request(request("s"), millis(2)),
        lambda: t.free("r", millis(2)),
        lambda: t.mark_prefill_completed("r", millis(2)),
        lambda: t.force_expiry(millis(2)),
        lambda: t.loads(millis(2)),
        lambda: t.potential_loads((1, 2), 10, millis(2)),
        lambda: t.modeled_remaining_prefill_times(millis(2)),
        lambda: t.register_worker(2, 0, 1, 0),
        lambda: t.unregister_worker(1),
        t.snapshot,
        t.registry_snapshot,
    ):
        with pytest.raises(Poisoned, match="TrackerBoom interrupted add_request"):
            call()
    with pytest.raises(AssertionError):
        t.check()


def test_a_fault_before_anything_changed_leaves_the_tracker_usable(monkeypatch):
    t = tracker()
    with monkeypatch.context() as mp:
        mp.setattr(impl_tracker.slot_tracker, "check_slot", lambda *a: (_ for _ in ()).throw(TrackerBoom("early")))
        with pytest.raises(TrackerBoom):
            t.add_request(request("r"), millis(1))
    assert t.poisoned is None
    t.add_request(request("r"), millis(1))
    t.check()


def test_typed_rejections_never_poison():
    t = tracker()
    t.add_request(request("r"), millis(1))
    with pytest.raises(DuplicateRequest):
        t.add_request(request("r"), millis(2))
    with pytest.raises(WorkerNotFound):
        t.add_request(request("x", WorkerWithDpRank(9, 0)), millis(2))
    assert t.poisoned is None
    t.check()


def test_the_never_poisoned_control_goes_on_answering_after_a_torn_add(monkeypatch):
    t = tracker(NeverPoisonedTracker)
    with monkeypatch.context() as mp:
        _publish_faults(mp)
        with pytest.raises(TrackerBoom):
            t.add_request(request("r"), millis(1))
    assert t.poisoned is None and t.loads(millis(2))  # answers from a registry that never saw the add
    with pytest.raises(AssertionError, match="registry has not converged"):
        t.check()

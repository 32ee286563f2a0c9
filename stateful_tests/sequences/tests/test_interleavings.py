"""Forced interleavings of the concurrent slot tracker: add, mark and free racing each other, every run the same way.

Each test pauses one call at a named yield point of ``impl/slot_tracker.py`` (before it takes the
slot's lock, so nothing deadlocks), runs the conflicting call to completion, then lets the first
finish (``harness.interleave.race``). Afterwards ownership is exclusive, ``check()`` holds (the
registry equals the projection of the authoritative state), and the race was really taken (the
tracker's own race counters).
"""

from kvproof.impl._sync import yield_point
from kvproof.impl.slot_tracker import ConcurrentSlotTracker
from kvproof.spec.primitives import WorkerWithDpRank
from kvproof.spec.sequence_errors import DuplicateRequest, RequestNotFound
from kvproof.spec.sequence_inputs import PrefillLoadHint, SequenceRequest, millis
from kvproof.stateful_tests.harness.interleave import race

A, B = WorkerWithDpRank(1, 0), WorkerWithDpRank(1, 1)


def tracker(cls=ConcurrentSlotTracker):
    t = cls(None)
    t.register_worker(1, 0, 2, 0)
    return t


def request(rid, worker):
    return SequenceRequest(rid, worker, (1, 2), True, None, PrefillLoadHint(100, millis(50)))


def queued(t, worker):
    return {e.request_id for e in t.snapshot().sequences[worker].prefill.order}


def test_a_mark_racing_free_and_re_add_never_completes_the_new_booking():
    t = tracker()
    t.add_request(request("r", A), millis(1))

    def meanwhile():
        assert t.free("r", millis(2))
        t.add_request(request("r", B), millis(3))

    errors = race("sequences.mark.owner_found", lambda: t.mark_prefill_completed("r", millis(4)), meanwhile)
    assert [type(e) for e in errors] == [RequestNotFound]  # the mark found A, and A no longer books r
    assert t.snapshot().request_index["r"] == B and "r" in queued(t, B)
    assert t.statistics().raced_marks == 1
    t.check()


def test_a_free_racing_a_mark_frees_the_request_and_its_prefill():
    t = tracker()
    t.add_request(request("r", A), millis(1))
    results = []
    errors = race(
        "sequences.free.owner_found",
        lambda: results.append(t.free("r", millis(3))),
        lambda: t.mark_prefill_completed("r", millis(2)),
    )
    assert errors == [] and results == [True]
    assert "r" not in t.snapshot().request_index and "r" not in queued(t, A)
    t.check()


def test_two_frees_racing_free_once():
    t = tracker()
    t.add_request(request("r", A), millis(1))
    results = []
    errors = race(
        "sequences.free.owner_found",
        lambda: results.append(t.free("r", millis(3))),
        lambda: results.append(t.free("r", millis(2))),
    )
    assert errors == [] and sorted(results) == [False, True]
    assert t.statistics().raced_frees == 1
    t.check()


def test_two_adds_of_one_id_racing_book_it_once():
    t = tracker()
    errors = race(
        "sequences.add.slot_found",
        lambda: t.add_request(request("r", A), millis(2)),
        lambda: t.add_request(request("r", B), millis(1)),
    )
    assert [type(e) for e in errors] == [DuplicateRequest]
    assert t.snapshot().request_index["r"] == B and "r" not in t.snapshot().sequences[A].requests
    assert t.statistics().duplicate_rejections == 1
    t.check()


def test_a_free_before_the_add_is_booked_frees_nothing():
    """sequences.md §10 item 4: a free that overtakes its add finds nothing; the add then books the request."""
    t = tracker()
    results = []
    errors = race(
        "sequences.add.slot_found",
        lambda: t.add_request(request("r", A), millis(2)),
        lambda: results.append(t.free("r", millis(1))),
    )
    assert errors == [] and results == [False]
    assert t.snapshot().request_index["r"] == A
    t.check()


class FreeWithoutRecheck(ConcurrentSlotTracker):
    """Broken: a free that found the owner frees without re-checking the booking under the slot lock."""

    def free(self, request_id, now, worker=None):
        owner = self._lookup(request_id, None)
        if owner is None:
            return False
        slot = self._slots[owner]
        yield_point("sequences.free.owner_found")
        with slot.lock:
            self._index.remove_if(request_id, owner)
            removed = slot.seq.free(request_id, now)
            self._publish(owner, slot, [], removed or [])
            return True


def test_negative_control_the_racing_frees_of_a_broken_tracker_both_succeed():
    """The same interleaving catches a free that skips the re-check: both frees report success."""
    t = tracker(FreeWithoutRecheck)
    t.add_request(request("r", A), millis(1))
    results = []
    race(
        "sequences.free.owner_found",
        lambda: results.append(t.free("r", millis(3))),
        lambda: results.append(t.free("r", millis(2))),
    )
    assert results == [True, True]  # test_two_frees_racing_free_once requires [False, True]

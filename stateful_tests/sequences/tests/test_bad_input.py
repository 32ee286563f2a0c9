"""Bad input to a slot tracker (unknown ids, duplicate ids, unknown workers, negative or non-finite durations
and times, wrong types, out-of-range numbers): a typed error and an unchanged state, on every tracker."""

import pytest

from kvproof.spec.sequence_errors import SequenceError
from kvproof.stateful_tests.sequences.bad_input import BAD_INPUTS, check_tracker_bad_input
from kvproof.stateful_tests.sequences.model import TARGETS


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_rejections_are_typed_and_harmless(target):
    tried, problems = check_tracker_bad_input(TARGETS[target])
    assert tried == len(BAD_INPUTS) + 3  # and three bad expiries
    assert problems == []


def test_every_expected_error_is_a_named_sequence_error():
    assert all(case.error is None or issubclass(case.error, SequenceError) for case in BAD_INPUTS)


def test_http_statuses_of_the_errors_match_the_slot_tracker():
    from kvproof.spec import sequence_errors as e

    assert (e.WorkerNotFound.http_status, e.RequestNotFound.http_status, e.UnknownWorker.http_status) == (404, 404, 404)
    assert (e.DuplicateRequest.http_status, e.DuplicateWorker.http_status) == (409, 409)
    assert e.InvalidDpRange.http_status == 400
    assert (e.SequenceArgumentTypeError.http_status, e.InvalidSequenceArgument.http_status) == (422, 422)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_tracker_errors_name_the_request_and_the_worker(target):
    """Each typed error of a lifecycle call carries what it is about (sequences.md §8.3), on every tracker: the
    unknown slot of an add, the unbooked id of a mark, the request id of a fenced mark or free naming another worker."""
    from kvproof.spec.sequence_errors import RequestNotFound, WorkerNotFound, WrongWorker
    from kvproof.spec.sequence_inputs import SequenceRequest, WorkerWithDpRank

    tracker = TARGETS[target](None)
    tracker.register_worker(1, 0, 2, 0)
    tracker.add_request(SequenceRequest("a", WorkerWithDpRank(1, 0), (1, 2), True, None, None), 1)
    stranger = WorkerWithDpRank(9, 0)
    with pytest.raises(WorkerNotFound, match=r"^Worker \(9, 0\) not found$") as caught:
        tracker.add_request(SequenceRequest("z", stranger, (1,), False, None, None), 3)
    assert caught.value.worker == stranger
    with pytest.raises(RequestNotFound, match=r"^Request zzz not found$") as missing:
        tracker.mark_prefill_completed("zzz", 3)
    assert missing.value.request_id == "zzz"
    other = WorkerWithDpRank(1, 1)
    for call in (tracker.mark_prefill_completed, tracker.free):
        with pytest.raises(WrongWorker, match=r"^Request a is owned by \(1, 0\), not \(1, 1\)$") as fenced:
            call("a", 3, other)
        assert (fenced.value.request_id, fenced.value.named, fenced.value.owner) == ("a", other, WorkerWithDpRank(1, 0))
    tracker.check()

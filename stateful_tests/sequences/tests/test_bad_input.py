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

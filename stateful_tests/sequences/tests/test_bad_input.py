"""Bad input to a slot tracker (unknown ids, duplicate ids, unknown workers, negative or non-finite durations
and times, wrong types, out-of-range numbers): a typed error and an unchanged state, on every tracker."""

import pytest

from kvproof.spec.sequence_errors import (
    InvalidDpRange,
    InvalidDuration,
    InvalidInstant,
    InvalidSequenceArgument,
    SequenceArgumentTypeError,
    SequenceError,
)
from kvproof.spec.sequence_inputs import PrefillLoadHint, SequenceRequest
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


def _add(worker=(1, 0), blocks=(1,), rid="a", track=True, output=None, hint=None):
    return lambda t: t.add_request(SequenceRequest(rid, worker, blocks, track, output, hint), 1)


def _hint(tokens=10, duration=None):
    return PrefillLoadHint(tokens, duration)


_U64 = r"\[0, 18446744073709551615\]"
_U32 = r"\[0, 4294967295\]"
# (call on a tracker with worker 1 on ranks 0 and 1, error class, the whole message): sequences.md §1 types (u64 worker
# ids and hashes, u32 dp ranks and output tokens, usize tokens, Option<Duration>), §8.3 (422 for a wrong type or range)
REFUSALS = [
    (_add([1, 0]), SequenceArgumentTypeError, r"worker must be a \(worker_id, dp_rank\) pair, got \[1, 0\]"),
    (_add((1, 0, 0)), SequenceArgumentTypeError, r"worker must be a \(worker_id, dp_rank\) pair, got \(1, 0, 0\)"),
    (_add(5), SequenceArgumentTypeError, r"worker must be a \(worker_id, dp_rank\) pair, got 5"),
    (_add(("1", 0)), SequenceArgumentTypeError, r"worker_id must be an int, got str"),
    (_add((-1, 0)), InvalidSequenceArgument, rf"worker_id -1 is outside {_U64}"),
    (_add((2**64, 0)), InvalidSequenceArgument, rf"worker_id 18446744073709551616 is outside {_U64}"),
    (_add((1, 0.0)), SequenceArgumentTypeError, r"dp_rank must be an int, got float"),
    (_add((1, 2**32)), InvalidSequenceArgument, rf"dp_rank 4294967296 is outside {_U32}"),
    (_add(rid=5), SequenceArgumentTypeError, r"request_id must be a str, got int"),
    (_add(blocks="ab"), SequenceArgumentTypeError, r"token_sequence must be a sequence of ints, got str"),
    (_add(blocks=b"\x01"), SequenceArgumentTypeError, r"token_sequence must be a sequence of ints, got bytes"),
    (_add(blocks=7), SequenceArgumentTypeError, r"token_sequence must be a sequence of ints, got int"),
    (_add(blocks=(1, -1)), InvalidSequenceArgument, rf"sequence hash -1 is outside {_U64}"),
    (_add(blocks=(1, "2")), SequenceArgumentTypeError, r"sequence hash must be an int, got str"),
    (_add(track=1), SequenceArgumentTypeError, r"track_prefill_tokens must be a bool"),
    (_add(output=2**32), InvalidSequenceArgument, rf"expected_output_tokens 4294967296 is outside {_U32}"),
    (_add(output=1.0), SequenceArgumentTypeError, r"expected_output_tokens must be an int, got float"),
    (_add(hint=(10, None)), SequenceArgumentTypeError, r"prefill_load_hint must be a PrefillLoadHint, got tuple"),
    (_add(hint=_hint(-1)), InvalidSequenceArgument, rf"initial_effective_prefill_tokens -1 is outside {_U64}"),
    (_add(hint=_hint(duration=-1)), InvalidDuration, r"expected_prefill_duration must not be negative, got -1"),
    (
        _add(hint=_hint(duration="1s")),
        SequenceArgumentTypeError,
        r"expected_prefill_duration must be an int of nanoseconds, got str",
    ),
    (lambda t: t.add_request("a", 1), SequenceArgumentTypeError, r"expected a SequenceRequest, got str"),
    (lambda t: t.mark_prefill_completed(5, 1), SequenceArgumentTypeError, r"request_id must be a str, got int"),
    (lambda t: t.register_worker("2", 0, 1, 0), SequenceArgumentTypeError, r"worker_id must be an int, got str"),
    (lambda t: t.register_worker(-2, 0, 1, 0), InvalidSequenceArgument, rf"worker_id -2 is outside {_U64}"),
    (lambda t: t.register_worker(2, "0", 1, 0), SequenceArgumentTypeError, r"dp_start must be an int, got str"),
    (lambda t: t.register_worker(2, 2**32, 1, 0), InvalidSequenceArgument, rf"dp_start 4294967296 is outside {_U32}"),
    (lambda t: t.register_worker(2, 0, 1.0, 0), SequenceArgumentTypeError, r"dp_size must be an int, got float"),
    (lambda t: t.register_worker(2, 0, 2**32, 0), InvalidSequenceArgument, rf"dp_size 4294967296 is outside {_U32}"),
    (lambda t: t.register_worker(2, 0, 0, 0), InvalidDpRange, r"dp_size must be greater than 0"),
    (
        lambda t: t.register_worker(2, 0, 65537, 0),
        InvalidDpRange,
        r"dp_size 65537 is more than 65536 ranks for one worker \(kvproof's bound; H12\)",
    ),
    (lambda t: t.register_worker(2, 2**32 - 1, 1, 0), InvalidDpRange, r"dp range overflows u32: start=4294967295 size=1"),
    (lambda t: t.register_worker(2, 0, 1, -1), InvalidInstant, r"time must not be negative, got -1"),
    (lambda t: t.unregister_worker("1"), SequenceArgumentTypeError, r"worker_id must be an int, got str"),
    (lambda t: t.unregister_worker(-1), InvalidSequenceArgument, rf"worker_id -1 is outside {_U64}"),
    (lambda t: t.potential_loads((), 1.5, 1), SequenceArgumentTypeError, r"new_isl_tokens must be an int, got float"),
    (lambda t: t.potential_loads((), -1, 1), InvalidSequenceArgument, rf"new_isl_tokens -1 is outside {_U64}"),
]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_each_bad_argument_is_refused_naming_the_argument_and_the_value(target):
    """Every refused argument of a call names itself and what it was given, with its exact error class, on every
    tracker, and changes nothing; the largest ids of each domain pass the check and reach the lookup."""
    from kvproof.spec.sequence_errors import WorkerNotFound

    tracker = TARGETS[target](None)
    tracker.register_worker(1, 0, 2, 0)
    for call, error, message in REFUSALS:
        with pytest.raises(SequenceError, match=rf"^{message}$") as refused:
            call(tracker)
        assert type(refused.value) is error, message
    tracker.check()
    assert not tracker.snapshot().request_index and set(tracker.snapshot().sequences) == {(1, 0), (1, 1)}
    tracker.register_worker(
        2, 2**32 - 2, 1, 0
    )  # a range may end at u32::MAX: start 4294967294 size 1 is accepted (sequences.md §8.3)
    for worker in ((2**64 - 1, 0), (1, 2**32 - 1)):  # the largest worker id and dp rank are well formed, only unregistered
        with pytest.raises(WorkerNotFound, match=rf"^Worker \({worker[0]}, {worker[1]}\) not found$"):
            _add(worker)(tracker)
    assert tracker.potential_loads((), 2**64 - 1, 1)[(1, 0)].potential_prefill_tokens == 2**64 - 1


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_bad_expiry_is_refused_by_name(target):
    """The expiry of a new tracker is a positive duration (sequences.md §2 "Expiry": Dynamo panics on a zero one)."""
    for expiry, error, message in (
        (0, InvalidDuration, r"expiry must be greater than zero \(Dynamo panics on a zero expiry\)"),
        (-1, InvalidDuration, r"expiry must not be negative, got -1"),
        ("5s", SequenceArgumentTypeError, r"expiry must be an int of nanoseconds, got str"),
    ):
        with pytest.raises(error, match=rf"^{message}$"):
            TARGETS[target](expiry)
    assert TARGETS[target](1).expiry == 1


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_topology_errors_and_a_refused_add_name_what_they_refuse(target):
    """A second register, an unregister of an unknown id, a second add of a booked id and an add past u64 prefill
    tokens each carry what they refuse (sequences.md §1 ``register_worker`` / ``unregister_worker`` strict,
    "RequestIndex"; §8.3: 409 ``worker 1 already registered``, 409 ``Request r1 already exists (assigned to worker
    ...)``; docs/sequences-findings.md S1), on every tracker."""
    from kvproof.spec.sequence_errors import DuplicateRequest, DuplicateWorker, TokenLoadOverflow, UnknownWorker
    from kvproof.spec.sequence_inputs import WorkerWithDpRank

    tracker = TARGETS[target](None)
    tracker.register_worker(1, 0, 2, 0)
    with pytest.raises(DuplicateWorker, match=r"^worker 1 already registered$") as twice:
        tracker.register_worker(1, 5, 1, 0)
    assert twice.value.worker_id == 1
    with pytest.raises(UnknownWorker, match=r"^worker 9 not found$") as unknown:
        tracker.unregister_worker(9)
    assert unknown.value.worker_id == 9
    _add((1, 0), rid="r1", hint=_hint(2**64 - 1))(tracker)
    with pytest.raises(DuplicateRequest, match=r"^Request r1 already exists \(assigned to worker \(1, 0\)\)$") as dup:
        _add((1, 1), rid="r1")(tracker)
    assert (dup.value.request_id, dup.value.owner) == ("r1", WorkerWithDpRank(1, 0))
    with pytest.raises(TokenLoadOverflow, match=r"^prefill tokens of \(1, 0\) would pass u64$"):
        _add((1, 0), rid="r2", hint=_hint(1))(tracker)
    tracker.check()


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_an_int_subclass_is_read_by_its_value_and_kept_as_a_plain_int(target):
    """An IntEnum member or an int whose own __int__/__index__ lie is an id by its value, stored as a plain int (issue 31)."""
    from collections.abc import Mapping

    from kvproof.spec.sequence_inputs import SequenceRequest, WorkerWithDpRank
    from kvproof.stateful_tests.fuzz.grammar import LyingInt, Member

    tracker = TARGETS[target](None)
    tracker.register_worker(Member.THREE, LyingInt(0), LyingInt(2), 0)
    tracker.add_request(
        SequenceRequest("a", WorkerWithDpRank(Member.THREE, LyingInt(1)), (LyingInt(7),), True, None, None), LyingInt(1)
    )
    state = tracker.snapshot()
    kinds, values = set(), set()

    def walk(value):
        if isinstance(value, int):
            kinds.add(type(value))
            values.add(int.__index__(value))
        elif isinstance(value, (tuple, list, set, frozenset)):
            for item in value:
                walk(item)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif hasattr(value, "__dataclass_fields__"):
            for name in value.__dataclass_fields__:
                walk(getattr(value, name))

    walk(state)
    assert kinds <= {int, bool}, kinds  # no enum member, no lying int kept
    assert {3, 7} <= values, values  # worker 3 and the block hash 7, by value (never __int__'s 5 or 9)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_token_sequence_whose_own_iteration_raises_is_a_typed_error(target):
    from kvproof.spec.sequence_inputs import SequenceRequest, WorkerWithDpRank
    from kvproof.stateful_tests.fuzz.grammar import RaisingList

    tracker = TARGETS[target](None)
    tracker.register_worker(1, 0, 1, 0)
    before = tracker.snapshot()
    with pytest.raises(SequenceArgumentTypeError, match=r"token_sequence could not be read: .*RuntimeError"):
        tracker.add_request(SequenceRequest("a", WorkerWithDpRank(1, 0), RaisingList([1]), True, None, None), 1)
    assert tracker.snapshot() == before

"""Bad input for a slot tracker: every rejection is typed and leaves the state exactly as it was.

``BAD_INPUTS`` lists each malformed or impossible call with the error it must raise (and the
HTTP status the real slot tracker answers for the same condition, where it has one; the
table in docs/sequences.md is generated from the same list). ``check_tracker_bad_input(factory)``
builds a tracker with two workers and a few requests (some prefilling, modeled and not),
makes each call, and checks the error class and that ``snapshot()`` and
``registry_snapshot()`` did not change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy

from ...spec.primitives import WorkerWithDpRank
from ...spec.sequence_errors import (
    DuplicateRequest,
    DuplicateWorker,
    InvalidDpRange,
    InvalidDuration,
    InvalidInstant,
    InvalidSequenceArgument,
    RequestNotFound,
    SequenceArgumentTypeError,
    TokenLoadOverflow,
    UnknownWorker,
    WorkerNotFound,
    WrongWorker,
)
from ...spec.sequence_inputs import PrefillLoadHint, SequenceRequest, secs

W0, W1 = WorkerWithDpRank(1, 0), WorkerWithDpRank(1, 1)
NOW = secs(5)


def _req(
    rid: Any = "new", worker: Any = W0, blocks: Any = (1, 2), track: Any = True, output: Any = None, hint: Any = None
) -> SequenceRequest:
    return SequenceRequest(rid, worker, blocks, track, output, hint)


def _hint(tokens: Any = 10, duration: Any = None) -> PrefillLoadHint:
    return PrefillLoadHint(tokens, duration)


@dataclass(frozen=True)
class BadInput:
    what: str
    call: Callable[[Any], Any]
    error: type[Exception] | None  # None: a no-op that must succeed and change nothing
    http: str  # the slot tracker's answer for the same condition


BAD_INPUTS: list[BadInput] = [
    # --- unknown ids, duplicates, unknown workers (the slot tracker's 404 / 409)
    BadInput("mark an unknown request id", lambda t: t.mark_prefill_completed("nope", NOW), RequestNotFound, "404"),
    BadInput("free an unknown request id (a no-op)", lambda t: t.free("nope", NOW), None, "200"),
    BadInput("add a booked id on the same worker", lambda t: t.add_request(_req("r1"), NOW), DuplicateRequest, "409"),
    BadInput("add a booked id on another worker", lambda t: t.add_request(_req("r1", W1), NOW), DuplicateRequest, "409"),
    BadInput(
        "add on an unknown worker", lambda t: t.add_request(_req(worker=WorkerWithDpRank(9, 0)), NOW), WorkerNotFound, "404"
    ),
    BadInput(
        "add on an unknown dp rank", lambda t: t.add_request(_req(worker=WorkerWithDpRank(1, 7)), NOW), WorkerNotFound, "404"
    ),
    BadInput(
        "add a booked id on an unknown worker",
        lambda t: t.add_request(_req("r1", WorkerWithDpRank(9, 0)), NOW),
        WorkerNotFound,
        "404",
    ),
    BadInput("register a registered worker", lambda t: t.register_worker(1, 0, 1, NOW), DuplicateWorker, "409"),
    BadInput("unregister an unknown worker", lambda t: t.unregister_worker(42), UnknownWorker, "404"),
    BadInput("register dp_size 0", lambda t: t.register_worker(3, 0, 0, NOW), InvalidDpRange, "400"),
    BadInput("register a dp range past u32", lambda t: t.register_worker(3, 2**32 - 1, 1, NOW), InvalidDpRange, "400"),
    BadInput("free fenced to another worker", lambda t: t.free("r1", NOW, W1), WrongWorker, "(replica: dropped)"),
    BadInput(
        "mark fenced to another worker", lambda t: t.mark_prefill_completed("r1", NOW, W1), WrongWorker, "(replica: dropped)"
    ),
    BadInput(
        "prefill tokens past u64 on a busy worker",
        lambda t: t.add_request(_req(hint=_hint(2**64 - 1)), NOW),
        TokenLoadOverflow,
        "(1.6.1 wraps, panics: S1)",
    ),
    # --- durations and times
    BadInput(
        "negative duration",
        lambda t: t.add_request(_req(hint=_hint(10, -1)), NOW),
        InvalidDuration,
        "(replica: malformed, dropped)",
    ),
    BadInput(
        "NaN duration", lambda t: t.add_request(_req(hint=_hint(10, float("nan"))), NOW), InvalidDuration, "(replica: malformed)"
    ),
    BadInput(
        "infinite duration",
        lambda t: t.add_request(_req(hint=_hint(10, float("inf"))), NOW),
        InvalidDuration,
        "(replica: malformed)",
    ),
    BadInput(
        "negative float duration",
        lambda t: t.add_request(_req(hint=_hint(10, -0.5)), NOW),
        InvalidDuration,
        "(replica: malformed)",
    ),
    BadInput(
        "duration past Duration::MAX",
        lambda t: t.add_request(_req(hint=_hint(10, 2**64 * 10**9)), NOW),
        InvalidDuration,
        "(replica: malformed)",
    ),
    BadInput(
        "duration of the wrong type", lambda t: t.add_request(_req(hint=_hint(10, "1s")), NOW), SequenceArgumentTypeError, "422"
    ),
    BadInput("negative time", lambda t: t.add_request(_req(), -1), InvalidInstant, "n/a"),
    BadInput("NaN time", lambda t: t.free("r1", float("nan")), InvalidInstant, "n/a"),
    BadInput("bool as a time", lambda t: t.mark_prefill_completed("r1", True), SequenceArgumentTypeError, "n/a"),
    BadInput("read at an infinite time", lambda t: t.loads(float("inf")), InvalidInstant, "n/a"),
    BadInput("modeled read at a negative time", lambda t: t.modeled_remaining_prefill_times(-5), InvalidInstant, "n/a"),
    # --- wrong types and out-of-range numbers (the slot tracker's 422)
    BadInput("numeric request id", lambda t: t.add_request(_req(7), NOW), SequenceArgumentTypeError, "422"),
    BadInput("bytes request id on free", lambda t: t.free(b"r1", NOW), SequenceArgumentTypeError, "422"),
    BadInput("worker as a string", lambda t: t.add_request(_req(worker="1:0"), NOW), SequenceArgumentTypeError, "422"),
    BadInput("negative worker id", lambda t: t.add_request(_req(worker=(-1, 0)), NOW), InvalidSequenceArgument, "422"),
    BadInput("dp rank past u32", lambda t: t.add_request(_req(worker=(1, 2**32)), NOW), InvalidSequenceArgument, "422"),
    BadInput("float hash", lambda t: t.add_request(_req(blocks=(1.5,)), NOW), SequenceArgumentTypeError, "422"),
    BadInput(
        "negative hash", lambda t: t.add_request(_req(blocks=(-1,)), NOW), InvalidSequenceArgument, "(HTTP: i64, same bits)"
    ),
    BadInput("hash past u64", lambda t: t.add_request(_req(blocks=(2**64,)), NOW), InvalidSequenceArgument, "422"),
    BadInput("token sequence as a string", lambda t: t.add_request(_req(blocks="abc"), NOW), SequenceArgumentTypeError, "422"),
    BadInput("negative tokens", lambda t: t.add_request(_req(hint=_hint(-5)), NOW), InvalidSequenceArgument, "422"),
    BadInput("tokens as a string", lambda t: t.add_request(_req(hint=_hint("5")), NOW), SequenceArgumentTypeError, "422"),
    BadInput("expected output tokens past u32", lambda t: t.add_request(_req(output=2**32), NOW), InvalidSequenceArgument, "n/a"),
    BadInput("track_prefill_tokens not a bool", lambda t: t.add_request(_req(track=1), NOW), SequenceArgumentTypeError, "422"),
    BadInput("hint of the wrong type", lambda t: t.add_request(_req(hint=(10, None)), NOW), SequenceArgumentTypeError, "422"),
    BadInput("a dict instead of a request", lambda t: t.add_request({"request_id": "x"}, NOW), SequenceArgumentTypeError, "422"),
    BadInput(
        "potential loads with negative new tokens", lambda t: t.potential_loads((1,), -1, NOW), InvalidSequenceArgument, "422"
    ),
    BadInput("potential loads with a float hash", lambda t: t.potential_loads((1.0,), 0, NOW), SequenceArgumentTypeError, "422"),
    BadInput("register a negative worker id", lambda t: t.register_worker(-3, 0, 1, NOW), InvalidSequenceArgument, "422"),
    # --- hostile values (docs/hostile-input.md; issue 12): typed, never a Python error, never slow
    BadInput(
        "token sequence as bytes-like (H11)",
        lambda t: t.add_request(_req(blocks=bytearray(b"\x01\x02")), NOW),
        SequenceArgumentTypeError,
        "422",
    ),
    BadInput(
        "token sequence as a memoryview (H11)",
        lambda t: t.add_request(_req(blocks=memoryview(b"\x01")), NOW),
        SequenceArgumentTypeError,
        "422",
    ),
    BadInput(
        "potential loads with a bytes-like query (H11)",
        lambda t: t.potential_loads(bytearray(b"\x01"), 0, NOW),
        SequenceArgumentTypeError,
        "422",
    ),
    BadInput("a hash of 5,000 digits", lambda t: t.add_request(_req(blocks=(10**5000,)), NOW), InvalidSequenceArgument, "422"),
    BadInput("a time of 5,000 digits", lambda t: t.loads(10**5000), InvalidInstant, "n/a"),
    BadInput("a negative time of 5,000 digits", lambda t: t.force_expiry(-(10**5000)), InvalidInstant, "n/a"),
    BadInput("tokens of 5,000 digits", lambda t: t.add_request(_req(hint=_hint(10**5000)), NOW), InvalidSequenceArgument, "422"),
    BadInput(
        "a duration of 5,000 digits",
        lambda t: t.add_request(_req(hint=_hint(10, 10**5000)), NOW),
        InvalidDuration,
        "(replica: malformed)",
    ),
    BadInput(
        "register dp_size past 65,536 (H12)",
        lambda t: t.register_worker(3, 0, 2**20, NOW),
        InvalidDpRange,
        "(accepted: minutes of slots)",
    ),
    BadInput(
        "register a worker id of 5,000 digits", lambda t: t.register_worker(10**5000, 0, 1, NOW), InvalidSequenceArgument, "422"
    ),
    BadInput("a numpy worker id", lambda t: t.unregister_worker(numpy.int64(1)), SequenceArgumentTypeError, "n/a (JSON)"),
    BadInput("a worker of 5,000 digits on free", lambda t: t.free("r1", NOW, (10**5000, 0)), InvalidSequenceArgument, "422"),
]


def _populate(tracker: Any) -> None:
    tracker.register_worker(1, 0, 2, 0)
    tracker.register_worker(2, 0, 1, 0)
    tracker.add_request(_req("r1", W0, (1, 2, 3), hint=_hint(100, secs(10))), secs(1))
    tracker.add_request(_req("r2", W0, (1, 2, 4), hint=_hint(40, secs(4))), secs(2))
    tracker.add_request(_req("r3", WorkerWithDpRank(2, 0), (7,), hint=_hint(60)), secs(2))


def check_tracker_bad_input(factory: Callable[..., Any]) -> tuple[int, list[str]]:
    """Make every bad call on a populated tracker; return (calls made, problems)."""
    problems = []
    tracker = factory()
    _populate(tracker)
    for case in BAD_INPUTS:
        state, registry = tracker.snapshot(), tracker.registry_snapshot()
        try:
            case.call(tracker)
        except Exception as exc:
            if case.error is None or not isinstance(exc, case.error):
                problems.append(
                    f"{case.what}: raised {type(exc).__name__}: {exc}, expected {getattr(case.error, '__name__', 'no error')}"
                )
        else:
            if case.error is not None:
                problems.append(f"{case.what}: accepted, expected {case.error.__name__}")
        if tracker.snapshot() != state or tracker.registry_snapshot() != registry:
            problems.append(f"{case.what}: the state changed")
            tracker = factory()
            _populate(tracker)
    for expiry, why in ((0, "a zero expiry"), (float("nan"), "a NaN expiry"), (10**5000, "an expiry of 5,000 digits")):
        try:
            factory(expiry)
            problems.append(f"{why} was accepted")
        except InvalidDuration as exc:
            if "expiry" not in str(exc):
                problems.append(f"{why}: the error does not name the expiry: {exc}")
        except Exception as exc:
            problems.append(f"{why}: raised {type(exc).__name__}: {exc}, expected InvalidDuration")
    return len(BAD_INPUTS) + 3, problems

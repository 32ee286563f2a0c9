"""Time, units and the domain of every argument the active-sequence state accepts.

Time is always passed in explicitly. An **instant** is an ``int`` number of nanoseconds on
one monotonic clock (Dynamo: ``tokio::time::Instant``, passed as ``decay_now``); a
**duration** is an ``int`` number of nanoseconds, at least 0 (Dynamo: ``std::time::Duration``).
Floats are accepted as nanoseconds when finite and are truncated toward zero, as
``Duration::from_secs_f64`` truncates; NaN, infinities and negative values are rejected
with ``InvalidDuration`` / ``InvalidInstant``. ``secs`` and ``millis`` build values for
tests and examples::

    >>> secs(10) == 10_000_000_000 and millis(1.5) == 1_500_000
    True

Every ``check_*`` function returns the normalised value or raises a typed error from
``sequence_errors``; none has side effects, so a call rejected here changes nothing.

Source: docs/sources.md#sequences-1 (types: u64 worker ids and hashes, u32 dp ranks and output tokens, usize tokens,
``Option<Duration>``), docs/sources.md#sequences-3 "Time source", docs/sources.md#sequences-8-2 to
docs/sources.md#sequences-8-3 (HTTP 422 for wrong types and out-of-range numbers), docs/sources.md#sequences-8-4 (a
negative duration is malformed and dropped).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .primitives import U32_MAX, U64_MAX, WorkerWithDpRank, int_value, is_int, is_uint, read_items, show, show_int
from .sequence_errors import (
    InvalidDuration,
    InvalidInstant,
    InvalidSequenceArgument,
    SequenceArgumentTypeError,
)

NANOS_PER_MILLI = 1_000_000
NANOS_PER_SEC = 1_000_000_000
DURATION_MAX = U64_MAX * NANOS_PER_SEC + (NANOS_PER_SEC - 1)
"""``Duration::MAX`` in nanoseconds (u64 seconds plus 999 999 999 ns)."""
INSTANT_MAX = DURATION_MAX
"""The latest instant accepted: instants count nanoseconds from the clock's origin."""


def secs(value: float) -> int:
    """Return ``value`` seconds as nanoseconds (rounded to the nearest nanosecond)."""
    return round(value * NANOS_PER_SEC)


def millis(value: float) -> int:
    """Return ``value`` milliseconds as nanoseconds (rounded to the nearest nanosecond)."""
    return round(value * NANOS_PER_MILLI)


def floor_ms(duration: int) -> int:
    """Return a duration in whole milliseconds, truncated, capped at u64 (Rust ``as_millis``, saturated).

    Source: docs/sources.md#sequences-3 step 4 and "Formula" (each duration and the elapsed time are truncated).
    """
    return min(duration // NANOS_PER_MILLI, U64_MAX)


def secs_f64(duration: int) -> float:
    """Return a duration in seconds as a float, whole seconds plus fraction (Rust ``as_secs_f64``).

    Source: docs/sources.md#sequences-4 step 3 ("computed in f64 seconds").
    """
    whole, nanos = divmod(duration, NANOS_PER_SEC)
    return float(whole) + float(nanos) / float(NANOS_PER_SEC)


# ----------------------------------------------------------------------------- checks


def _nanos(value: object, what: str, error: type[InvalidSequenceArgument], upper: int) -> int:
    if not is_int(value, (int, float)):
        raise SequenceArgumentTypeError(f"{what} must be an int of nanoseconds, got {type(value).__name__}")
    if isinstance(value, float):
        # A float is a number of nanoseconds; it must be finite before it can be truncated.
        if not math.isfinite(value):
            raise error(f"{what} must be finite, got {value!r}")
        if value < 0:
            raise error(f"{what} must not be negative, got {value!r}")
        value = int(value)
    value = int_value(value)  # an int subclass by its value (an IntEnum member becomes a plain int)
    if value < 0:
        raise error(f"{what} must not be negative, got {show_int(value)}")
    if value > upper:
        raise error(f"{what} {show_int(value)} is past the largest representable value")
    return value


def check_instant(value: object) -> int:
    """Return ``value`` as an instant in nanoseconds, or raise ``InvalidInstant`` / a type error."""
    return _nanos(value, "time", InvalidInstant, INSTANT_MAX)


def check_duration(value: object, what: str = "expected_prefill_duration") -> int | None:
    """Return ``value`` as a duration in nanoseconds (``None`` means unmodeled), or raise ``InvalidDuration``.

    Source: docs/sources.md#sequences-1 ``expected_prefill_duration: Option<Duration>``; docs/sources.md#sequences-8-4
    ("a negative ``secs`` is malformed and the event is dropped").
    """
    if value is None:
        return None
    return _nanos(value, what, InvalidDuration, DURATION_MAX)


def check_arg_uint(value: object, what: str, upper: int = U64_MAX) -> int:
    """Return ``value`` if it is an int in ``[0, upper]`` (``is_uint``); otherwise ``SequenceArgumentTypeError`` / ``InvalidSequenceArgument``."""
    if not is_uint(value, upper):
        if not is_int(value):
            raise SequenceArgumentTypeError(f"{what} must be an int, got {type(value).__name__}")
        raise InvalidSequenceArgument(f"{what} {show_int(value)} is outside [0, {upper}]")
    return int_value(value)  # an int subclass by its value (an IntEnum member becomes a plain int)


def check_request_id(value: object) -> str:
    """Return ``value`` if it is a request id (any ``str``, the empty one included)."""
    if not isinstance(value, str):
        raise SequenceArgumentTypeError(f"request_id must be a str, got {type(value).__name__}")
    return value


def check_worker(value: object) -> WorkerWithDpRank:
    """Return ``value`` as a ``WorkerWithDpRank`` (u64 worker id, u32 dp rank)."""
    if not isinstance(value, tuple) or len(value) != 2:
        raise SequenceArgumentTypeError(f"worker must be a (worker_id, dp_rank) pair, got {show(value)}")
    return WorkerWithDpRank(check_arg_uint(value[0], "worker_id"), check_arg_uint(value[1], "dp_rank", U32_MAX))


def check_token_sequence(value: object) -> tuple[int, ...] | None:
    """Return the block hashes as a tuple of u64 (``None``: no block tracking)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, bytearray, memoryview)) or not isinstance(value, Sequence):
        # a byte string is not a list of block hashes: read byte by byte it would book garbage (H11)
        raise SequenceArgumentTypeError(f"token_sequence must be a sequence of ints, got {type(value).__name__}")
    return tuple(check_arg_uint(h, "sequence hash") for h in read_items(value, "token_sequence", SequenceArgumentTypeError))


# ----------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class PrefillLoadHint:
    """What the caller computed at admission: effective prefill tokens and an optional modeled duration.

    Source: docs/sources.md#sequences-1 ``PrefillLoadHint``.
    """

    initial_effective_prefill_tokens: int
    expected_prefill_duration: int | None = None


@dataclass(frozen=True, slots=True)
class SequenceRequest:
    """The AddRequest payload: who, on which worker, which blocks, and how much prefill to track.

    Source: docs/sources.md#sequences-1 ``SequenceRequest`` (``lora_name`` is not modeled).
    """

    request_id: str
    worker: WorkerWithDpRank
    token_sequence: tuple[int, ...] | None = None
    track_prefill_tokens: bool = True
    expected_output_tokens: int | None = None
    prefill_load_hint: PrefillLoadHint | None = None


def check_hint(value: object) -> PrefillLoadHint | None:
    """Return a normalised prefill load hint (tokens in usize, duration checked) or ``None``."""
    if value is None:
        return None
    if not isinstance(value, PrefillLoadHint):
        raise SequenceArgumentTypeError(f"prefill_load_hint must be a PrefillLoadHint, got {type(value).__name__}")
    return PrefillLoadHint(
        check_arg_uint(value.initial_effective_prefill_tokens, "initial_effective_prefill_tokens"),
        check_duration(value.expected_prefill_duration),
    )


def check_sequence_request(value: object) -> SequenceRequest:
    """Return a normalised ``SequenceRequest`` or raise the typed error of its first bad field."""
    if not isinstance(value, SequenceRequest):
        raise SequenceArgumentTypeError(f"expected a SequenceRequest, got {type(value).__name__}")
    if not isinstance(value.track_prefill_tokens, bool):
        raise SequenceArgumentTypeError("track_prefill_tokens must be a bool")
    output = value.expected_output_tokens
    return SequenceRequest(
        check_request_id(value.request_id),
        check_worker(value.worker),
        check_token_sequence(value.token_sequence),
        value.track_prefill_tokens,
        None if output is None else check_arg_uint(output, "expected_output_tokens", U32_MAX),
        check_hint(value.prefill_load_hint),
    )

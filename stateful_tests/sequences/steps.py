"""The active-sequence state's scenario steps (add, mark, free, expire, register, reads) and their replay.

Writes carry their expected outcome (``"ok"`` or the typed error's name); reads carry the
expected value. ``run_value_scenario`` replays a ``ValueScenario`` on a fresh tracker of any
target (spec model, reference, concurrent, or a negative control); the data lives in ``values``.
Times are seconds (``at``), converted to nanoseconds with ``secs``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...spec.primitives import WorkerWithDpRank
from ...spec.sequence_errors import MissingExpectedDuration
from ...spec.sequence_inputs import PrefillLoadHint, SequenceRequest, secs
from ...spec.sequences import DEFAULT_EXPIRY
from ..harness.scenario import OK, Scenario, mismatches

MISSING = MissingExpectedDuration()
W1 = WorkerWithDpRank(1, 0)
W2 = WorkerWithDpRank(2, 0)

# ----------------------------------------------------------------------------- steps


@dataclass(frozen=True)
class Add:
    rid: str
    tokens: int | None  # None: no prefill hint
    duration: float | None  # seconds; None: unmodeled
    at: float
    worker: tuple[int, int] = W1
    blocks: tuple[int, ...] | None = (7,)
    track: bool = True
    expect: str = OK

    def request(self) -> SequenceRequest:
        hint = (
            None if self.tokens is None else PrefillLoadHint(self.tokens, None if self.duration is None else secs(self.duration))
        )
        return SequenceRequest(self.rid, WorkerWithDpRank(*self.worker), self.blocks, self.track, None, hint)


@dataclass(frozen=True)
class Mark:
    rid: str
    at: float
    expect: str = OK


@dataclass(frozen=True)
class Free:
    rid: str
    at: float
    freed: bool | None = None  # whether something was freed (None: do not compare)
    expect: str = OK


@dataclass(frozen=True)
class Expire:
    at: float


@dataclass(frozen=True)
class Register:
    worker_id: int
    dp_size: int = 1
    dp_start: int = 0
    at: float = 0.0
    expect: str = OK


@dataclass(frozen=True)
class Unregister:
    worker_id: int
    expect: str = OK


@dataclass(frozen=True)
class Tokens:
    """Expect ``active_prefill_tokens`` of ``worker`` read at ``at``."""

    at: float
    value: int
    worker: tuple[int, int] = W1


@dataclass(frozen=True)
class Ms:
    """Expect the modeled remaining prefill time of ``worker`` (ms, or ``MISSING``) read at ``at``."""

    at: float
    value: Any
    worker: tuple[int, int] = W1


@dataclass(frozen=True)
class Blocks:
    """Expect ``active_decode_blocks`` and ``active_requests`` of ``worker``."""

    value: int
    requests: int | None = None
    worker: tuple[int, int] = W1


@dataclass(frozen=True)
class Potential:
    """Expect one ``/potential_loads`` row: (tokens, blocks, requests)."""

    query: tuple[int, ...]
    isl: int
    at: float
    value: tuple[int, int, int]
    worker: tuple[int, int] = W1


@dataclass(frozen=True)
class Anchor:
    """Expect the worker's effective anchor time (seconds; None when idle), from ``snapshot()``."""

    at: float | None
    worker: tuple[int, int] = W1


@dataclass(frozen=True)
class Owner:
    """Expect the RequestIndex to book ``rid`` on ``worker`` (None: unbooked), from ``snapshot()``."""

    rid: str
    worker: tuple[int, int] | None


Step = Any


@dataclass(frozen=True)
class ValueScenario(Scenario):
    """A ``Scenario`` with the workers registered at t=0 and the tracker's expiry."""

    workers: tuple[tuple[int, int, int], ...] = ((1, 0, 1),)  # (worker_id, dp_start, dp_size) registered at t=0
    expiry: int | None = DEFAULT_EXPIRY


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return OK, call()
    except Exception as exc:  # typed errors are the point; anything else is reported by name too
        return type(exc).__name__, None


def run_step(tracker: Any, step: Step) -> str | None:
    """Apply or check one step; return a description of the mismatch, or None."""
    got: object  # per step kind: an outcome, one load value, or a tuple of them; only compared and shown
    expected: object
    if isinstance(step, (Add, Mark, Free, Register, Unregister)):
        if isinstance(step, Add):
            got, value = _outcome(lambda: tracker.add_request(step.request(), secs(step.at)))
        elif isinstance(step, Mark):
            got, value = _outcome(lambda: tracker.mark_prefill_completed(step.rid, secs(step.at)))
        elif isinstance(step, Free):
            got, value = _outcome(lambda: tracker.free(step.rid, secs(step.at)))
            if got == OK and step.freed is not None and bool(value) != step.freed:
                return f"{step!r}: freed={value}, expected {step.freed}"
        elif isinstance(step, Register):
            got, value = _outcome(lambda: tracker.register_worker(step.worker_id, step.dp_start, step.dp_size, secs(step.at)))
        else:
            got, value = _outcome(lambda: tracker.unregister_worker(step.worker_id))
        return None if got == step.expect else f"{step!r}: got {got}, expected {step.expect}"
    if isinstance(step, Expire):
        tracker.force_expiry(secs(step.at))
        return None
    if isinstance(step, Tokens):
        got = tracker.loads(secs(step.at))[WorkerWithDpRank(*step.worker)].active_prefill_tokens
    elif isinstance(step, Ms):
        got = tracker.modeled_remaining_prefill_times(secs(step.at))[WorkerWithDpRank(*step.worker)]
    elif isinstance(step, Blocks):
        row = tracker.loads(0)[WorkerWithDpRank(*step.worker)]
        got = row.active_decode_blocks if step.requests is None else (row.active_decode_blocks, row.active_requests)
        expected = step.value if step.requests is None else (step.value, step.requests)
        return None if got == expected else f"{step!r}: got {got}"
    elif isinstance(step, Potential):
        row = tracker.potential_loads(step.query, step.isl, secs(step.at))[WorkerWithDpRank(*step.worker)]
        got = (row.potential_prefill_tokens, row.potential_decode_blocks, row.active_requests)
    elif isinstance(step, Anchor):
        since = tracker.snapshot().sequences[WorkerWithDpRank(*step.worker)].prefill.anchor_since
        expected = None if step.at is None else secs(step.at)
        return None if since == expected else f"{step!r}: anchor at {since} ns"
    elif isinstance(step, Owner):
        got = tracker.snapshot().request_index.get(step.rid)
        expected = None if step.worker is None else WorkerWithDpRank(*step.worker)
        return None if got == expected else f"{step!r}: booked on {got!r}"
    else:
        raise TypeError(f"unknown step {step!r}")
    return None if got == step.value else f"{step!r}: got {got!r}"


def run_value_scenario(factory: Callable[..., Any], scenario: ValueScenario) -> list[str]:
    """Replay ``scenario`` on a fresh tracker; return one line per mismatching step (empty: it passed)."""
    tracker = factory(scenario.expiry)
    for wid, start, size in scenario.workers:
        tracker.register_worker(wid, start, size, 0)

    def guarded(_: int, step: Step) -> str | None:
        try:
            return run_step(tracker, step)
        except Exception as exc:  # a crash of the tracker is a mismatch of this step
            return f"{step!r}: raised {type(exc).__name__}: {exc}"

    return mismatches(scenario.steps, guarded)

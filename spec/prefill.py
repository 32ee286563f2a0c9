"""One worker's prefill queue: FIFO order, the anchor, the credit rule, modeled remaining time.

Notation
--------
A **prefill** is ``(request_id, tokens, duration)``: the effective prefill tokens the caller
computed at admission, and an optional expected duration. It is **modeled** when the
duration is known (``None`` is the normal no-AIC/default state). Prefills queue in FIFO
admission ``order``.

The **anchor** is the front of the order, the oldest active prefill. ``anchor_since`` is
its *effective* time: elapsed time ``max(0, now - anchor_since)`` counts as progress
against the worker's whole modeled backlog. It is set in exactly three ways:

1. a prefill inserted on a worker with no active prefill is anchored at the insert's time;
2. when the anchor leaves (completed, freed, expired) the new front is anchored at the
   removal's time, not at its own admission time;
3. **credit**: when a *modeled non-anchor* prefill of duration ``d`` leaves at ``now``,
   ``anchor_since`` becomes ``min(anchor_since + d, now)``. Its completed work stops counting
   twice (once as its own duration leaving the backlog, once as elapsed progress), and the
   cap keeps the anchor from moving into the future. An unmodeled or zero-duration removal
   shifts nothing.

Worked example (prefill_tracker credit tests): A = (100 tokens, 10 s) and B = (40, 4 s), both
at t = 0. At t = 5 the backlog is 14 000 ms, 5 000 ms elapsed: 9 000 ms remain. B leaves at
t = 5: the backlog drops to 10 000 ms and the anchor moves to min(0 + 4, 5) = 4 s, so
9 000 ms remain (continuity). Had B left at t = 2, the anchor would move to min(4, 2) = 2 s:
10 000 ms remain at t = 2 and the value decays from there (the cap).

The reads take a ``PrefillLoadSnapshot``: the small frozen value the PromptRegistry stores
per worker and readers decay at read time. ``modeled_remaining_prefill_ms`` is here; the
active token load is in ``token_load``.

Source: docs/sources.md#sequences-2 "PrefillLoadTracker", "Add" step 6, "Prefill removal", "Snapshot";
docs/sources.md#sequences-3 (exact algorithm, credit, zero-duration prefills, errors);
docs/sources.md#dynamo-sequences-readme "Modeled remaining prefill time".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .arith import PY, Arith
from .primitives import U64_MAX
from .sequence_errors import MissingExpectedDuration
from .sequence_inputs import NANOS_PER_MILLI, PrefillLoadHint, floor_ms


@dataclass(frozen=True, slots=True)
class PrefillEntry:
    """One active prefill: its request, effective tokens (> 0) and expected duration (ns, or None)."""

    request_id: str
    tokens: int
    duration: int | None


@dataclass(frozen=True, slots=True)
class PrefillState:
    """A worker's active prefills in admission order, and the anchor's effective time.

    Invariant (``spec.sequence_invariants``): ``anchor_since is None`` exactly when ``order`` is empty.
    """

    order: tuple[PrefillEntry, ...] = ()
    anchor_since: int | None = None


EMPTY_PREFILL = PrefillState()


@dataclass(frozen=True, slots=True)
class AnchorSnapshot:
    """The anchor as a reader needs it: tokens, duration, effective time."""

    tokens: int
    duration: int | None
    since: int


@dataclass(frozen=True, slots=True)
class PrefillLoadSnapshot:
    """What the registry keeps of a worker's prefills: the token sum, the anchor, the modeled total.

    ``total_modeled_ms`` is ``None`` when any active prefill is unmodeled (the fast path), else
    the saturating sum of every active duration truncated to whole milliseconds.

    Source: docs/sources.md#sequences-2 "Snapshot" (``PrefillLoadSnapshot``; the idle default is ``Some(0)``).
    """

    tokens_sum: int = 0
    anchor: AnchorSnapshot | None = None
    total_modeled_ms: int | None = 0


# ----------------------------------------------------------------------------- predicates


def is_prefill_tracked(track_prefill_tokens: bool, hint: PrefillLoadHint | None) -> bool:
    """Check if an admitted request's prefill is tracked: the flag is set and the hint has tokens.

    A hint with zero tokens is dropped entirely, even with a duration: it adds neither
    tokens nor modeled time and never anchors.

    Source: docs/sources.md#sequences-1 "Prefill is tracked only if all three hold"; docs/sources.md#sequences-8-4
    experiments R9, R10.
    """
    return track_prefill_tokens and hint is not None and hint.initial_effective_prefill_tokens > 0


def anchor(state: PrefillState) -> PrefillEntry | None:
    """Return the anchor: the oldest active prefill (the front of the order), or None when idle."""
    return state.order[0] if state.order else None


def find_prefill(state: PrefillState, request_id: str) -> PrefillEntry | None:
    """Return the active prefill of ``request_id``, or None."""
    return next((e for e in state.order if e.request_id == request_id), None)


def elapsed_since(since: Any, now: Any, ops: Arith = PY) -> Any:
    """Return ``now - since`` in nanoseconds, or 0 when ``now`` is earlier (saturating).

    Source: docs/sources.md#sequences-3 step 4 (``saturating_duration_since``); docs/sources.md#sequences-10 item 3.
    """
    return ops.max(0, now - since)


# ----------------------------------------------------------------------------- handlers


def on_prefill_insert(state: PrefillState, entry: PrefillEntry, now: int) -> PrefillState:
    """Return ``state`` with ``entry`` queued last; it becomes the anchor at ``now`` only if none exists.

    Source: docs/sources.md#sequences-2 "Add" step 6 ("Only if there was no anchor does this request become the
    anchor, at decay_now").
    """
    since = now if state.anchor_since is None else state.anchor_since
    return PrefillState(state.order + (entry,), since)


def credited_anchor_since(anchor_since: Any, duration: Any, now: Any, ops: Arith = PY) -> Any:
    """Return the anchor's effective time after a modeled non-anchor of ``duration`` leaves at ``now``.

    The anchor moves forward by the removed duration, capped at the removal time.

    Source: docs/sources.md#sequences-2 "Prefill removal" step 4, docs/sources.md#sequences-3 "Credit for out-of-order
    completion"; docs/sources.md#dynamo-sequences-readme ("shifting the effective anchor forward by the removed
    request's modeled duration, capped at the removal time").
    """
    return ops.min(anchor_since + duration, now)


def on_prefill_remove(state: PrefillState, request_id: str, now: int) -> PrefillState:
    """Return ``state`` without ``request_id``'s prefill, re-anchored or credited; unchanged if absent.

    Removing the anchor re-anchors the new front at ``now``; removing a modeled non-anchor
    credits the anchor (``credited_anchor_since``); removing an unmodeled one changes only
    the order. Removing twice is a no-op.

    Source: docs/sources.md#sequences-2 "Prefill removal" steps 1-5.
    """
    removed = find_prefill(state, request_id)
    if removed is None:
        return state
    rest = tuple(e for e in state.order if e.request_id != request_id)
    if state.order[0].request_id == request_id:
        # The anchor left: the next prefill (if any) starts its clock at the removal time.
        return PrefillState(rest, now if rest else None)
    since = state.anchor_since
    assert since is not None, "a non-anchor prefill implies an anchor"
    if removed.duration is not None:
        since = credited_anchor_since(since, removed.duration, now)
    return PrefillState(rest, since)


# ----------------------------------------------------------------------------- snapshot and modeled time


def total_modeled_ms(state: PrefillState) -> int | None:
    """Return the worker's modeled backlog in whole ms, or None if any active prefill is unmodeled.

    Each duration is truncated to whole milliseconds *before* summing (1.5 ms + 1.5 ms is
    2 ms); the sum saturates at u64. An idle worker's backlog is 0.

    Source: docs/sources.md#sequences-2 "Snapshot", docs/sources.md#sequences-3 "Formula";
    docs/sources.md#sequences-10 item 1.
    """
    durations = [e.duration for e in state.order]
    if any(d is None for d in durations):
        return None
    return min(sum(floor_ms(d) for d in durations if d is not None), U64_MAX)


def prefill_load_snapshot(state: PrefillState) -> PrefillLoadSnapshot:
    """Return the frozen snapshot the registry stores for ``state``.

    Source: docs/sources.md#sequences-2 "Snapshot".
    """
    front = anchor(state)
    return PrefillLoadSnapshot(
        tokens_sum=sum(e.tokens for e in state.order),
        anchor=None if front is None else AnchorSnapshot(front.tokens, front.duration, state.anchor_since),  # type: ignore[arg-type]
        total_modeled_ms=total_modeled_ms(state),
    )


def modeled_remaining_prefill_ms(snapshot: PrefillLoadSnapshot, now: int) -> int:
    """Return the worker's modeled remaining prefill time at ``now``, in non-negative whole ms.

    ``max(0, total_modeled_ms - floor_ms(max(0, now - anchor_since)))``: elapsed time from
    the anchor is applied to the *aggregate* backlog (spillover), and only the final value
    clips at zero. Raises ``MissingExpectedDuration`` when any active prefill is unmodeled
    (without summing anything); an idle worker reads 0.

    Source: docs/sources.md#sequences-3 "Read" steps 1-5; docs/sources.md#dynamo-sequences-readme "Modeled remaining
    prefill time".
    """
    if snapshot.total_modeled_ms is None:
        raise MissingExpectedDuration()
    if snapshot.anchor is None:
        return snapshot.total_modeled_ms
    if snapshot.anchor.duration is None:
        raise MissingExpectedDuration()  # unreachable after the first check; kept as upstream does
    return remaining_ms(snapshot.total_modeled_ms, snapshot.anchor.since, now)


def remaining_ms(total_ms: Any, anchor_since: Any, now: Any, ops: Arith = PY) -> Any:
    """Return ``max(0, total_ms - floor_ms(max(0, now - anchor_since)))``: the kernel of the modeled-time read.

    Elapsed nanoseconds since the anchor's effective time are truncated to whole ms and taken
    off the *aggregate* backlog; only the result clips at zero. ``proofs/`` proves it never
    negative, never rising as time passes, continuous across a credit, and equal to draining
    the prefills one after another, for any number of them.

    Source: docs/sources.md#sequences-3 "Read" steps 4-5, "Formula".
    """
    elapsed_ms = ops.floordiv(elapsed_since(anchor_since, now, ops), NANOS_PER_MILLI)
    return ops.max(0, total_ms - elapsed_ms)

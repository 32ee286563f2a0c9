"""Laws of the active-sequence state, sampled by Hypothesis over random request histories.

Each ``HistoryLaw`` pairs a body, which drives a tracker built by ``make(expiry)`` through a history of
adds, completions, frees, expiry sweeps and clock advances on one or two workers and asserts one law
after every step, with the strategy its histories are drawn from. Each law states one rule of
``spec.prefill``, ``spec.token_load``, ``spec.sequences`` or ``spec.slot_tracker`` in terms of
reads, so the same law judges the spec, the reference, the implementation and the negative
controls: every law has a mutant that breaks it (``sequences.mutants.LAW_OF``).

Laws that name the same strategy object share its histories: ``run_laws`` draws each history once
and walks it with every such law on every tracker. Under one seed a strategy draws the same
histories whichever body it feeds, so every law meets on every tracker the very histories it would
meet run alone; drawing them was most of the run's time (17 laws on 3 trackers draw from 10 strategies).

The gate runs them all on the three trackers (``kvproof check``, layer ``laws``), and so does
``sequences/tests/test_laws.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from ...spec.primitives import U64_MAX, WorkerWithDpRank
from ...spec.sequence_errors import (
    DuplicateRequest,
    InvalidDuration,
    InvalidInstant,
    MissingExpectedDuration,
    RequestNotFound,
    SequenceArgumentTypeError,
    SequenceError,
    WorkerNotFound,
)
from ...spec.sequence_inputs import NANOS_PER_MILLI, PrefillLoadHint, SequenceRequest, floor_ms, millis, secs
from ...spec.sequence_invariants import write_model_violations
from ...spec.sequences import CHECK_EXPIRY_FREQUENCY, block_membership
from ...spec.slot_tracker import SlotTrackerState, project_prompt_registry, read_loads, read_modeled_remaining_prefill_times
from ..harness.seeding import law_settings, run_given
from .model import SpecSlotTracker

W = (WorkerWithDpRank(1, 0), WorkerWithDpRank(2, 0))
RIDS = ("a", "b", "c", "d")
MISSING = MissingExpectedDuration()
EXAMPLES = {"count": 0}


# ----------------------------------------------------------------------------- histories


def durations(modeled_only: bool, whole_ms: bool) -> st.SearchStrategy[int | None]:
    """Draw prefill durations: zero, whole ms, sometimes sub-ms parts, sometimes unmodeled."""
    whole = st.one_of(st.sampled_from([1, 250, 1000, 2000, 4000, 10_000]), st.integers(1, 5000)).map(millis)
    choices: list[st.SearchStrategy[int | None]] = [st.just(0), whole, whole]
    if not whole_ms:
        fraction = st.sampled_from([1, 400_000, 500_000, 600_000, 999_999])
        choices.append(st.tuples(st.integers(0, 3000), fraction).map(lambda p: millis(p[0]) + p[1]))
        choices.append(st.tuples(st.integers(0, 3000), fraction).map(lambda p: millis(p[0]) + p[1]))
    if not modeled_only:
        choices.append(st.none())
    return st.one_of(*choices)


def histories(modeled_only: bool = False, whole_ms: bool = True, workers: int = 1, max_ops: int = 24) -> st.SearchStrategy:
    """Draw a history: a list of ``("add"|"mark"|"free"|"wait"|"expire", ...)`` operations."""
    whole_waits = st.one_of(st.sampled_from([1, 100, 500, 1000, 2500]), st.integers(0, 3000)).map(millis)
    waits = whole_waits if whole_ms else st.one_of(whole_waits, st.integers(0, 3 * 10**9))
    add = st.tuples(
        st.just("add"),
        st.sampled_from(RIDS),
        st.integers(0, workers - 1),
        st.one_of(st.integers(1, 1000), st.just(0), st.integers(1, 5)),
        durations(modeled_only, whole_ms),
        st.lists(st.integers(1, 3), max_size=4).map(tuple),
        st.just(True) if modeled_only else st.sampled_from([True, True, True, False]),
    )
    by_kind = {
        "add": add,
        "mark": st.tuples(st.just("mark"), st.sampled_from(RIDS)),
        "free": st.tuples(st.just("free"), st.sampled_from(RIDS)),
        "wait": st.tuples(st.just("wait"), waits),
        "expire": st.tuples(st.just("expire")),
    }
    # Adds dominate so that queues of two to four prefills are common; waits let time pass.
    kinds = ["add"] * 6 + ["mark", "mark", "free", "free"] + ["wait"] * 4 + ["expire"]
    op = st.sampled_from(kinds).flatmap(by_kind.__getitem__)
    return st.lists(op, min_size=min(6, max_ops), max_size=max_ops)


def _whole_ms(*ms: int) -> st.SearchStrategy[int]:
    """One of these whole-millisecond times, in nanoseconds."""
    return st.sampled_from(ms).map(millis)


def _add(rid: str, tokens: st.SearchStrategy, duration: st.SearchStrategy, block: int) -> st.SearchStrategy:
    """An ``add`` of request ``rid`` on worker 0 with one prompt block, always tracked: the openings' step."""
    return st.tuples(st.just("add"), st.just(rid), st.just(0), tokens, duration, st.just((block,)), st.just(True))


def _opening(steps: st.SearchStrategy, rest: st.SearchStrategy) -> st.SearchStrategy:
    """A fixed-shape opening followed by a random history."""
    return st.tuples(steps.map(list), rest).map(lambda p: p[0] + p[1])


def credit_histories() -> st.SearchStrategy:
    """Draw a history that opens with the credit experiment's shape: a long anchor, a shorter prefill
    queued behind it, a wait, and the queued one completed or freed; random operations follow.

    Source: docs/sources.md#sequences-3 "Credit" (the capped and uncapped tests), docs/sources.md#sequences-8-4
    experiments R5, R6, R19.
    """
    return _opening(
        st.tuples(
            _add("a", st.integers(1, 1000), _whole_ms(4000, 6000, 10_000), 1),
            _add("b", st.integers(1, 1000), _whole_ms(500, 1000, 2000), 2),
            st.tuples(st.just("wait"), _whole_ms(100, 600, 1500, 2500)),
            st.tuples(st.sampled_from(["mark", "free"]), st.just("b")),
        ),
        histories(modeled_only=True, max_ops=12),
    )


def reanchor_histories() -> st.SearchStrategy:
    """Draw a history that opens with the re-anchor experiment's shape: two queued prefills, a wait, and the
    anchor completed or freed (so the second becomes the anchor at that time); random operations follow.

    Source: docs/sources.md#sequences-2 "Prefill removal" step 5; docs/sources.md#sequences-8-4 experiments R7, R18,
    R21.
    """
    return _opening(
        st.tuples(
            _add("a", st.integers(1, 1000), _whole_ms(1000, 4000, 10_000), 1),
            _add("b", st.integers(1, 1000), _whole_ms(500, 2000, 6000), 2),
            st.tuples(st.just("wait"), _whole_ms(100, 600, 1500, 2500)),
            st.tuples(st.sampled_from(["mark", "free"]), st.just("a")),
        ),
        histories(max_ops=12),
    )


def fraction_histories() -> st.SearchStrategy:
    """Draw a history that opens with two queued prefills whose sub-ms parts add up past a whole ms
    (1.5 ms + 1.5 ms, 1.6 + 1.6, 1.999999 + 1.999999), then random modeled operations with sub-ms times.

    The truncation law (each duration floored to whole ms, then summed) differs from its broken twin
    (the sum floored) only there; drawn at random it is rare enough that the fixed seed may miss it,
    as it did once Hypothesis stopped mixing in constants from the process's modules (``history_free``).

    Source: docs/sources.md#sequences-3 "Formula" (1.5 ms + 1.5 ms counts as 2 ms).
    """
    fraction = st.sampled_from([500_000, 600_000, 999_999])
    split = st.tuples(st.integers(0, 3000), fraction).map(lambda p: millis(p[0]) + p[1])
    return _opening(
        st.tuples(_add("a", st.integers(1, 1000), split, 1), _add("b", st.integers(1, 1000), split, 2)),
        histories(modeled_only=True, whole_ms=False, max_ops=12),
    )


def anchor_only_histories() -> st.SearchStrategy:
    """Draw a history that opens in anchor-only mode: a modeled anchor with a token count that does not
    divide evenly (3, 7, 333 tokens over 1, 3 or 7 s), an unmodeled prefill queued behind it, then random
    operations with sub-ms times.

    The rounding law (the anchor's share rounded up) and its broken twin (rounded down) part only in
    this mode and off the even points, and a modeled anchor ahead of an unmodeled prefill is where
    spillover into unmodeled load would show; the opening makes every seed reach both (without it,
    seeds 5, 26, 28 and 30 of the gate's control row missed one of the twins).

    Source: docs/sources.md#sequences-4 step 3 and "Rounding"; docs/sources.md#sequences-8-4 experiment R24b;
    docs/sources.md#dynamo-sequences-readme (unmodeled requests do not decay).
    """
    return _opening(
        st.tuples(
            _add("a", st.sampled_from([3, 7, 333]), _whole_ms(1000, 3000, 7000), 1), _add("b", st.integers(1, 1000), st.none(), 2)
        ),
        histories(whole_ms=False, max_ops=12),
    )


@dataclass
class View:
    """One applied operation: what it was, when, the state before it, and its outcome."""

    op: tuple
    now: int
    before: SlotTrackerState
    outcome: str
    tracker: Any


def apply(tracker: Any, op: tuple, now: int) -> str:
    """Apply one history operation at ``now``; return ``"ok"`` or the name of the error raised."""
    try:
        if op[0] == "add":
            _, rid, w, tokens, duration, blocks, track = op
            tracker.add_request(SequenceRequest(rid, W[w], blocks, track, None, PrefillLoadHint(tokens, duration)), now)
        elif op[0] == "mark":
            tracker.mark_prefill_completed(op[1], now)
        elif op[0] == "free":
            tracker.free(op[1], now)
        elif op[0] == "expire":
            tracker.force_expiry(now)
        return "ok"
    except SequenceError as exc:
        return type(exc).__name__


def walk(make: Callable[..., Any], history: list[tuple], expiry: int | None = None, workers: int = 1) -> Iterator[View]:
    """Replay ``history`` on a fresh tracker with ``workers`` single-rank workers; yield each applied step."""
    EXAMPLES["count"] += 1
    tracker = make(expiry)
    for w in W[:workers]:
        tracker.register_worker(w.worker_id, 0, 1, 0)
    now = 0
    for op in history:
        if op[0] == "wait":
            now += op[1]
            continue
        before = tracker.snapshot()
        outcome = apply(tracker, op, now)
        yield View(op, now, before, outcome, tracker)


def tokens_at(tracker: Any, t: int, w: int = 0) -> int:
    return tracker.loads(t)[W[w]].active_prefill_tokens


def ms_at(tracker: Any, t: int, w: int = 0) -> Any:
    return tracker.modeled_remaining_prefill_times(t)[W[w]]


def prefill_of(state: SlotTrackerState, w: int = 0):
    return state.sequences[W[w]].prefill


def _removed(v: View) -> Any:
    """Return the prefill entry the step removed (by mark or free), or None."""
    if v.op[0] not in ("mark", "free") or v.outcome != "ok":
        return None
    before = prefill_of(v.before)
    return next((e for e in before.order if e.request_id == v.op[1]), None)


@dataclass(frozen=True)
class HistoryLaw:
    """One law: its body, run on a tracker over each history drawn from ``histories``."""

    histories: st.SearchStrategy
    body: Callable[[Callable[..., Any], list[tuple]], None]

    @property
    def name(self) -> str:
        return "law" + self.body.__name__


# ----------------------------------------------------------------------------- modeled remaining time


def _modeled_time_is_whole_nonnegative_ms_or_missing(make, history) -> None:
    """The modeled read is a whole number of ms >= 0, or MissingExpectedDuration exactly when an unmodeled prefill is active.

    Source: docs/sources.md#dynamo-sequences-readme "Modeled remaining prefill time"; docs/sources.md#sequences-3
    "Read", "Errors".
    """
    for v in walk(make, history):
        unmodeled = any(e.duration is None for e in prefill_of(v.tracker.snapshot()).order)
        for dt in (0, millis(1), secs(5), secs(1000)):
            got = ms_at(v.tracker, v.now + dt)
            if unmodeled:
                assert got == MISSING, f"expected MissingExpectedDuration at +{dt} ns, got {got!r}"
            else:
                assert isinstance(got, int) and got >= 0, f"modeled time {got!r} at +{dt} ns"


def _backlog_is_the_sum_of_truncated_durations(make, history) -> None:
    """At the anchor's effective time the modeled read is the sum of every duration truncated to whole ms.

    Source: docs/sources.md#sequences-3 "Formula" (1.5 ms + 1.5 ms counts as 2 ms).
    """
    for v in walk(make, history):
        p = prefill_of(v.tracker.snapshot())
        if p.order:
            expected = min(sum(floor_ms(e.duration) for e in p.order), U64_MAX)
            assert ms_at(v.tracker, p.anchor_since) == expected, f"backlog at the anchor time != {expected}"


def _elapsed_time_is_truncated(make, history) -> None:
    """Elapsed time counts in whole ms, truncated: 1.9 ms elapsed takes 1 ms off the backlog.

    Source: docs/sources.md#sequences-3 step 4 (``floor_ms(now - anchored_since)``).
    """
    for v in walk(make, history):
        p = prefill_of(v.tracker.snapshot())
        if p.order:
            total = ms_at(v.tracker, p.anchor_since)
            for e in (400_000, 600_000, 1_500_000, 2_900_000, secs(1) + 999_999):
                assert ms_at(v.tracker, p.anchor_since + e) == max(0, total - e // NANOS_PER_MILLI), f"elapsed {e} ns"


def _decay_resumes_at_the_removal_time(make, history) -> None:
    """After a prefill leaves at t, the anchor is at or before t: the backlog decays 1 ms per ms from t on.

    This is the credit cap: a credit moves the anchor to ``min(anchor + d, t)``, never past t.

    Source: docs/sources.md#dynamo-sequences-readme ("capped at the removal time"); docs/sources.md#sequences-3
    "Credit", capped case.
    """
    for v in walk(make, history):
        if _removed(v) is None or not prefill_of(v.tracker.snapshot()).order:
            continue
        start = ms_at(v.tracker, v.now)
        for d in (1, 250, 1000):
            assert ms_at(v.tracker, v.now + millis(d)) == max(0, start - d), f"no decay {d} ms after a removal at {v.now}"


def _uncapped_credit_is_continuous(make, history) -> None:
    """Removing a modeled non-anchor whose duration has elapsed since the anchor leaves the read unchanged (continuity).

    Source: docs/sources.md#dynamo-sequences-readme (credit paragraph); docs/sources.md#sequences-3 "Uncapped case";
    Dynamo PR https://github.com/ai-dynamo/dynamo/pull/10604.
    """
    for v in walk(make, history):
        gone = _removed(v)
        before = prefill_of(v.before)
        if gone is None or gone.request_id == before.order[0].request_id or gone.duration is None:
            continue
        if any(e.duration is None for e in before.order) or before.anchor_since + gone.duration > v.now:
            continue
        assert ms_at(v.tracker, v.now) == _ms_of_state(v.before, v.now), "credit broke continuity"


def _ms_of_state(state: SlotTrackerState, now: int) -> Any:
    """Return the spec's modeled read of worker 1 in ``state`` at ``now``."""
    return read_modeled_remaining_prefill_times(project_prompt_registry(state), now)[W[0]]


def _removed_anchor_reanchors_at_the_removal_time(make, history) -> None:
    """When the anchor leaves at t, the next prefill becomes the anchor at t (not at its own admission time).

    Source: docs/sources.md#sequences-2 "Prefill removal" step 5; docs/sources.md#sequences-8-4 experiments R7, R18,
    R21.
    """
    for v in walk(make, history):
        gone = _removed(v)
        after = prefill_of(v.tracker.snapshot())
        if gone is not None and gone.request_id == prefill_of(v.before).order[0].request_id and after.order:
            assert after.anchor_since == v.now, f"re-anchored at {after.anchor_since}, removal at {v.now}"


# ----------------------------------------------------------------------------- token load


def _unmodeled_prefills_never_decay(make, history) -> None:
    """While any prefill is unmodeled only the anchor decays: the load never drops below the non-anchor tokens.

    Source: docs/sources.md#dynamo-sequences-readme ("token load falls back to anchor-only decay so unmodeled
    no-AIC/default requests do not decay"); docs/sources.md#sequences-8-4 experiments R3, R8, R15, R23.
    """
    for v in walk(make, history):
        p = prefill_of(v.tracker.snapshot())
        if not any(e.duration is None for e in p.order):
            continue
        total = sum(e.tokens for e in p.order)
        floor = total if p.order[0].duration is None else total - p.order[0].tokens
        for dt in (0, secs(1), secs(100)):
            assert tokens_at(v.tracker, v.now + dt) >= floor, f"unmodeled load decayed below {floor}"


def _all_modeled_load_spills_past_the_anchor(make, history) -> None:
    """With every prefill modeled, the anchor's rate runs on past its own tokens until the whole sum is done.

    Source: docs/sources.md#dynamo-sequences-readme ("aggregate spillover"); docs/sources.md#sequences-4 step 2;
    docs/sources.md#sequences-8-4 experiments R2, R16, R17.
    """
    for v in walk(make, history):
        p = prefill_of(v.tracker.snapshot())
        if not p.order or any(e.duration is None for e in p.order) or p.order[0].duration == 0:
            continue
        a, d = p.order[0].tokens, p.order[0].duration
        total = sum(e.tokens for e in p.order)
        done_at = p.anchor_since + math.ceil(d * total / a)
        assert tokens_at(v.tracker, done_at) == 0, f"load not spilled to 0 at {done_at}"


def _zero_duration_anchor_completes_only_itself(make, history) -> None:
    """A zero-duration anchor completes its own tokens at once and nothing of the prefills behind it.

    Source: docs/sources.md#dynamo-sequences-readme ("without inventing token spillover"); test
    active_tokens_zero_duration_anchor_only_completes_anchor; docs/sources.md#sequences-8-4 experiment R4.
    """
    for v in walk(make, history):
        p = prefill_of(v.tracker.snapshot())
        if not p.order or any(e.duration is None for e in p.order) or p.order[0].duration != 0:
            continue
        rest = sum(e.tokens for e in p.order[1:])
        for t in (p.anchor_since, v.now, v.now + secs(100)):
            assert tokens_at(v.tracker, t) == rest, f"zero-duration anchor: load != {rest}"


def _anchor_only_share_rounds_up(make, history) -> None:
    """In anchor-only mode the anchor's remaining share is rounded up: never below tokens * (1 - elapsed/D).

    Source: docs/sources.md#sequences-4 step 3 and "Rounding"; docs/sources.md#sequences-8-4 experiment R24b.
    """
    for v in walk(make, history):
        p = prefill_of(v.tracker.snapshot())
        if not p.order or not any(e.duration is None for e in p.order) or not p.order[0].duration:
            continue
        a, d = p.order[0].tokens, p.order[0].duration
        rest = sum(e.tokens for e in p.order) - a
        for f in (0.1, 0.37, 0.5, 0.9, 0.999):
            e = int(d * f)
            assert tokens_at(v.tracker, p.anchor_since + e) - rest >= a * (1 - e / d) - 1e-6, f"share rounded down at {f}"


def _zero_token_hints_are_not_tracked(make, history) -> None:
    """Admitting a request whose hint has zero tokens changes neither the token load nor the modeled time.

    Source: docs/sources.md#sequences-1 "Prefill is tracked only if all three hold"; docs/sources.md#sequences-8-4
    experiment R9.
    """
    for v in walk(make, history):
        if v.op[0] != "add" or v.op[3] != 0 or v.outcome != "ok":
            continue
        before = project_prompt_registry(v.before)
        for t in (v.now, v.now + secs(1)):
            assert tokens_at(v.tracker, t) == read_loads(before, t)[W[0]].active_prefill_tokens, (
                "zero-token hint changed the load"
            )
            assert ms_at(v.tracker, t) == _ms_of_state(v.before, t), "zero-token hint changed the modeled time"


# ----------------------------------------------------------------------------- requests and blocks


def _free_completes_the_prefill(make, history) -> None:
    """Freeing a request completes its prefill too: no prefill outlives its request.

    Source: docs/sources.md#dynamo-sequences-readme ("Free keeps its existing implicit prefill-completion cleanup");
    docs/sources.md#sequences-2 "Free".
    """
    for v in walk(make, history):
        state = v.tracker.snapshot()
        seq = state.sequences[W[0]]
        assert all(e.request_id in seq.requests for e in seq.prefill.order), "a prefill outlived its request"
        if v.op[0] == "free":
            assert all(e.request_id != v.op[1] for e in seq.prefill.order), "freed request still prefilling"


def _blocks_are_counted_by_lineage(make, history) -> None:
    """Active blocks count distinct prefix lineages of the active prompts, not distinct hashes.

    Source: docs/sources.md#sequences-2 "Blocks"; docs/sources.md#sequences-oracle (the blocks experiment) (prompts
    [5] and [1,2,3,5] hold 5 blocks).
    """
    for v in walk(make, history):
        expected = len(block_membership(v.tracker.snapshot().sequences[W[0]]))
        assert v.tracker.loads(v.now)[W[0]].active_decode_blocks == expected, f"blocks != {expected} lineage paths"


def _expiry_runs_at_most_once_per_check_interval(make, history) -> None:
    """Requests leave only by free, or by an expiry check at least 30 s after the previous check.

    Source: docs/sources.md#sequences-2 "Expiry" (``CHECK_EXPIRY_FREQUENCY``); docs/sources.md#sequences-oracle (the
    expiry experiment).
    """
    last_check = 0
    for v in walk(make, history, expiry=secs(2)):
        before = set(v.before.sequences[W[0]].requests)
        after = set(v.tracker.snapshot().sequences[W[0]].requests)
        gone = before - after - ({v.op[1]} if v.op[0] == "free" else set())
        checked = v.op[0] == "expire" or (v.op[0] == "add" and v.outcome == "ok")
        due = checked and v.now - last_check >= CHECK_EXPIRY_FREQUENCY
        if due:
            last_check = v.now
        assert due or not gone, f"{sorted(gone)} expired {v.now - last_check} ns after the last check"


def _ownership_is_exclusive(make, history) -> None:
    """Every request is booked once, on the worker that holds it; a second add of a booked id fails naming the owner.

    Source: docs/sources.md#dynamo-sequences-readme ("losing request ownership"); docs/sources.md#sequences-1
    "RequestIndex".
    """
    for v in walk(make, history, workers=2):
        state = v.tracker.snapshot()
        assert not write_model_violations(state), write_model_violations(state)
        if v.op[0] == "add" and v.op[1] in v.before.request_index:
            assert v.outcome == "DuplicateRequest", f"duplicate add of {v.op[1]!r} gave {v.outcome}"
            assert state.request_index[v.op[1]] == v.before.request_index[v.op[1]], "duplicate add moved the owner"


def _rejections_are_typed_and_change_nothing(make, history) -> None:
    """Unknown ids, duplicates, unknown workers and malformed arguments raise typed errors and change nothing.

    Source: docs/sources.md#sequences-8-2 to docs/sources.md#sequences-8-3 (404, 409, 422);
    docs/sources.md#kvproof-design-card (bad input leaves state unchanged).
    """
    for v in walk(make, history):
        t = v.tracker
        if v.op[0] == "mark" and v.op[1] not in v.before.request_index:
            assert v.outcome == "RequestNotFound", f"mark of unbooked {v.op[1]!r} gave {v.outcome}"
        state, registry = t.snapshot(), t.registry_snapshot()
        # The float duration, the int request id and the bytes id are deliberately ill-typed input.
        bad: list[tuple[Callable[[], Any], type[SequenceError]]] = [
            (lambda: t.mark_prefill_completed("never-added", v.now), RequestNotFound),
            (lambda: t.add_request(SequenceRequest("x", WorkerWithDpRank(9, 0)), v.now), WorkerNotFound),
            (lambda: t.add_request(SequenceRequest("y", W[0], None, True, None, PrefillLoadHint(5, -1)), v.now), InvalidDuration),
            (
                lambda: t.add_request(SequenceRequest("y", W[0], None, True, None, PrefillLoadHint(5, float("nan"))), v.now),  # type: ignore[arg-type]
                InvalidDuration,
            ),
            (lambda: t.add_request(SequenceRequest("y", W[0]), float("inf")), InvalidInstant),
            (lambda: t.add_request(SequenceRequest(7, W[0]), v.now), SequenceArgumentTypeError),  # type: ignore[arg-type]
            (lambda: t.free(b"a", v.now), SequenceArgumentTypeError),
        ]
        booked = next(iter(state.request_index), None)
        if booked is not None:
            bad.append((lambda: t.add_request(SequenceRequest(booked, W[0]), v.now), DuplicateRequest))
        for call, error in bad:
            try:
                call()
            except error:
                pass
            else:
                raise AssertionError(f"expected {error.__name__}")
            assert t.snapshot() == state and t.registry_snapshot() == registry, (
                f"a rejected call ({error.__name__}) changed the state"
            )


def _registry_equals_the_projection_after_every_call(make, history) -> None:
    """With one caller at a time, the PromptRegistry equals the projection of the write model after every call.

    Source: docs/sources.md#dynamo-sequences-readme "Eventual consistency contract" (local writes update
    ActiveSequences first; the registry is projected from it afterward).
    """
    for v in walk(make, history):
        assert v.tracker.registry_snapshot() == project_prompt_registry(v.tracker.snapshot()), (
            "registry lags after the call returned"
        )


# Each strategy is built once, and the laws that name it share its histories (``run_laws``).
ANY = histories()
MODELED = histories(modeled_only=True)
CREDIT = st.one_of(credit_histories(), MODELED)

LAWS: list[HistoryLaw] = [
    HistoryLaw(ANY, _modeled_time_is_whole_nonnegative_ms_or_missing),
    HistoryLaw(
        st.one_of(fraction_histories(), histories(modeled_only=True, whole_ms=False)), _backlog_is_the_sum_of_truncated_durations
    ),
    HistoryLaw(MODELED, _elapsed_time_is_truncated),
    HistoryLaw(CREDIT, _decay_resumes_at_the_removal_time),
    HistoryLaw(CREDIT, _uncapped_credit_is_continuous),
    HistoryLaw(st.one_of(reanchor_histories(), histories()), _removed_anchor_reanchors_at_the_removal_time),
    HistoryLaw(st.one_of(anchor_only_histories(), histories()), _unmodeled_prefills_never_decay),
    HistoryLaw(MODELED, _all_modeled_load_spills_past_the_anchor),
    HistoryLaw(MODELED, _zero_duration_anchor_completes_only_itself),
    HistoryLaw(st.one_of(anchor_only_histories(), histories(whole_ms=False)), _anchor_only_share_rounds_up),
    HistoryLaw(ANY, _zero_token_hints_are_not_tracked),
    HistoryLaw(ANY, _free_completes_the_prefill),
    HistoryLaw(ANY, _blocks_are_counted_by_lineage),
    HistoryLaw(histories(max_ops=40), _expiry_runs_at_most_once_per_check_interval),
    HistoryLaw(histories(workers=2), _ownership_is_exclusive),
    HistoryLaw(histories(max_ops=12), _rejections_are_typed_and_change_nothing),
    HistoryLaw(ANY, _registry_equals_the_projection_after_every_call),
]
LAWS_BY_NAME = {law.name: law for law in LAWS}


def sharing_histories(laws: Sequence[HistoryLaw]) -> list[list[HistoryLaw]]:
    """Group ``laws`` by the strategy object they draw from, in order of first appearance."""
    groups: dict[int, list[HistoryLaw]] = {}
    for law in laws:
        groups.setdefault(id(law.histories), []).append(law)
    return list(groups.values())


def law_test(
    laws: Sequence[HistoryLaw],
    makes: Sequence[Callable[..., Any]],
    failed: list[tuple[HistoryLaw, Callable[..., Any]]] | None = None,
) -> Callable[[], None]:
    """Return a fresh Hypothesis test that walks each history, drawn from the laws' one strategy, with every law on
    a tracker from each of ``makes``, in that order. A failure is noted with its law and tracker, and appended to
    ``failed`` when given."""
    assert all(law.histories is laws[0].histories for law in laws), "the laws draw from different strategies"

    @given(history=laws[0].histories)
    def laws_hold(history: list[tuple]) -> None:
        for make in makes:
            for law in laws:
                try:
                    law.body(make, history)
                except Exception as exc:
                    exc.add_note(f"{law.name} fails on {getattr(make, '__name__', make)}")
                    if failed is not None:
                        failed.append((law, make))
                    raise

    return laws_hold


def run_laws(
    laws: Sequence[HistoryLaw],
    examples: int,
    seed: int | None = None,
    makes: Sequence[Callable[..., Any]] = (SpecSlotTracker,),
    shrink: bool = True,
) -> int:
    """Run each law on each tracker of ``makes`` over ``examples`` histories; return how many (law, tracker, history)
    walks ran. Raises on the first counterexample, noted with its law and tracker (``law_test``).

    Laws that share a strategy share each history (``sharing_histories``), run until the first failure unshrunk.
    The law and tracker that failed are then run again alone, over the same histories up to the failing one, and
    shrunk there (``law_report``): each try costs one law on one tracker, not the whole group.
    ``shrink=False`` stops at the first counterexample (negative controls only need detection).
    """
    before = EXAMPLES["count"]
    report = law_report(examples, shrink)
    for group in sharing_histories(laws):
        failed: list[tuple[HistoryLaw, Callable[..., Any]]] = []
        try:
            run_given(law_test(group, makes, failed), law_settings(examples, shrink=False), seed)
        except Exception:
            if failed and Phase.shrink in report.phases:
                law, make = failed[-1]
                run_given(law_test([law], [make]), report, seed)
            raise  # the group's failure, should the law alone pass
    return EXAMPLES["count"] - before


def law_report(examples: int, shrink: bool) -> settings:
    """Return the settings a failing law is run again with, to shrink its counterexample and report it.

    One bug, not a group of them (``report_multiple_bugs=False``): the gate's row shows the exception's first
    line, which for a group says only how many. No explain phase: it only annotates the shrunk counterexample
    ("# or any other generated value"), and took 2 to 30 s of CPU a failure (253 s over the 18 law mutants of
    ``sequences.mutants`` at profile quick, 21 s without it).
    """
    base = law_settings(examples, shrink)
    return settings(base, report_multiple_bugs=False, phases=[phase for phase in base.phases if phase is not Phase.explain])

"""Z3 proofs of the modeled-prefill rules (spec.prefill, spec.token_load).

Times are integer nanoseconds, backlogs whole milliseconds, tokens integers, as in the spec.
The spillover theorem is proved twice: for a queue of ``QUEUE`` prefills against the
sequential drain model, and as an induction step (one more prefill on any backlog) that
extends it to any number of active prefills.
"""

from __future__ import annotations

import z3

from ..spec.prefill import credited_anchor_since, remaining_ms
from ..spec.sequence_inputs import NANOS_PER_MILLI
from ..spec.token_load import all_modeled_tokens
from .harness import Z3, Proof

QUEUE = 4
MS = NANOS_PER_MILLI


def remaining_never_negative(remaining=remaining_ms):
    total, since, now = z3.Ints("total_ms anchor_since now")
    return [total >= 0, since >= 0, now >= 0], remaining(total, since, now, Z3) >= 0


def remaining_never_rises_as_time_passes(remaining=remaining_ms):
    total, since, t1, t2 = z3.Ints("total_ms anchor_since t1 t2")
    hyps = [total >= 0, since >= 0, t1 >= 0, t2 >= t1]
    return hyps, remaining(total, since, t2, Z3) <= remaining(total, since, t1, Z3)


def credit_is_continuous_and_capped(credit=credited_anchor_since, remaining=remaining_ms):
    """Removing a modeled non-anchor of d ms at ``now``: the backlog drops by d and the anchor moves by d, capped at now."""
    total, d_ms, since, now = z3.Ints("total_ms removed_ms anchor_since now")
    d = d_ms * MS  # a duration of whole milliseconds, in nanoseconds
    new_since = credit(since, d, now, Z3)
    before = remaining(total, since, now, Z3)
    after = remaining(total - d_ms, new_since, now, Z3)
    uncapped = since + d <= now
    claim = z3.And(
        new_since <= now,  # capped at the removal time
        new_since >= since,  # the anchor only moves forward
        z3.Implies(uncapped, after == before),  # continuity: the completed work is not counted twice
        z3.Implies(z3.Not(uncapped), after == total - d_ms),  # capped: the rest of the backlog is due from now
    )
    return [d_ms >= 0, total >= d_ms, since >= 0, now >= since], claim


def spillover_equals_draining_in_order(remaining=remaining_ms):
    """With one anchor time, the aggregate read equals draining the queue one prefill after another."""
    durations = z3.Ints(" ".join(f"d{i}_ms" for i in range(QUEUE)))
    since, now = z3.Ints("anchor_since now")
    hyps = [d >= 0 for d in durations] + [since >= 0, now >= 0]
    elapsed_ms = z3.If(now - since > 0, now - since, 0) / MS
    drained, done = 0, 0
    for d in durations:  # each prefill is worked on only after every earlier one finished
        done = done + d
        left = done - elapsed_ms
        drained = drained + z3.If(left <= 0, 0, z3.If(left >= d, d, left))
    return hyps, remaining(sum(durations), since, now, Z3) == drained


def spillover_induction_step(remaining=remaining_ms):
    """One more prefill of d ms adds exactly its own sequentially drained remainder: the theorem holds for any queue length."""
    backlog, d, since, now = z3.Ints("backlog_ms d_ms anchor_since now")
    elapsed_ms = z3.If(now - since > 0, now - since, 0) / MS
    left = backlog + d - elapsed_ms
    own = z3.If(left <= 0, 0, z3.If(left >= d, d, left))
    hyps = [backlog >= 0, d >= 0, since >= 0, now >= 0]
    return hyps, remaining(backlog + d, since, now, Z3) == remaining(backlog, since, now, Z3) + own


def token_load_stays_within_tracked_tokens(tokens=all_modeled_tokens):
    total, anchor, duration, elapsed, t2 = z3.Ints("tokens_sum anchor_tokens duration_ns elapsed_ns later_ns")
    now_load = tokens(total, anchor, duration, elapsed, Z3)
    later = tokens(total, anchor, duration, t2, Z3)
    hyps = [anchor >= 0, total >= anchor, duration >= 0, elapsed >= 0, t2 >= elapsed, total <= 2**40]
    return hyps, z3.And(now_load >= 0, now_load <= total, later <= now_load)


def anchor_only_decay_stays_within_the_anchor(clamp=True):
    """Anchor-only mode: ceil(a * clamp(1 - e/D, 0, 1)) lies in [0, a] (over the reals; the clamp holds in floats too)."""
    a = z3.Int("anchor_tokens")
    e, D = z3.Reals("elapsed duration")
    raw = 1 - e / D
    fraction = z3.If(raw < 0, 0, z3.If(raw > 1, 1, raw)) if clamp else raw
    product = z3.ToReal(a) * fraction
    ceiling = -z3.ToInt(-product)
    return [a >= 0, e >= 0, D > 0], z3.And(ceiling >= 0, ceiling <= a)


def _no_cap(since, d, now, ops):
    return since + d  # the anchor may move past the removal time


def _remaining_unclipped(total, since, now, ops):
    return total - ops.floordiv(ops.max(0, now - since), MS)  # may go negative


def _remaining_per_request_clip(total, since, now, ops):
    elapsed = ops.floordiv(ops.max(0, now - since), MS)
    return ops.max(0, total - ops.min(elapsed, ops.floordiv(total, 2)))  # spills over only half the backlog


def _remaining_rises(total, since, now, ops):
    elapsed = ops.floordiv(ops.max(0, now - since), MS)
    return ops.max(0, total - elapsed) + ops.ite(elapsed > total, 1, 0)


def _tokens_unclipped(total, anchor, duration, elapsed, ops):
    return total - ops.ite(duration == 0, anchor, ops.floordiv(anchor * elapsed, ops.max(duration, 1)))


PROOFS = [
    Proof(
        "modeled_remaining_time_is_never_negative",
        "the modeled remaining prefill time is never negative",
        "spec.prefill.remaining_ms",
        "all integers: backlog >= 0 ms, times >= 0 ns",
        remaining_never_negative,
        {"remaining": _remaining_unclipped},
        "no clip at zero",
        family="sequences",
    ),
    Proof(
        "modeled_remaining_time_never_rises_between_events",
        "as time passes without an event, the modeled remaining time never increases",
        "spec.prefill.remaining_ms",
        "all integers: backlog >= 0, 0 <= t1 <= t2",
        remaining_never_rises_as_time_passes,
        {"remaining": _remaining_rises},
        "a read that rises past the backlog",
        family="sequences",
    ),
    Proof(
        "credit_is_continuous_uncapped_and_capped_at_the_removal_time",
        "a credit keeps the reading continuous when uncapped, never moves the anchor past the removal time or backwards, and when capped leaves the rest of the backlog due from now",
        "spec.prefill.credited_anchor_since, spec.prefill.remaining_ms",
        "all integers: 0 <= d <= backlog (whole ms), 0 <= anchor <= now (ns)",
        credit_is_continuous_and_capped,
        {"credit": _no_cap},
        "no cap at the removal time",
        family="sequences",
    ),
    Proof(
        "aggregate_spillover_equals_draining_in_order",
        "the aggregate read equals draining the active prefills one after another",
        "spec.prefill.remaining_ms",
        f"queues of {QUEUE} prefills, all integers: durations >= 0 ms, times >= 0 ns",
        spillover_equals_draining_in_order,
        {"remaining": _remaining_per_request_clip},
        "spills over only half the backlog",
        family="sequences",
    ),
    Proof(
        "spillover_induction_step",
        "adding one prefill adds exactly its own sequentially drained remainder, so the drain theorem holds for any number of active prefills",
        "spec.prefill.remaining_ms",
        "all integers: backlog >= 0, d >= 0 ms, times >= 0 ns (induction on the queue length)",
        spillover_induction_step,
        {"remaining": _remaining_unclipped},
        "no clip at zero",
        family="sequences",
    ),
    Proof(
        "token_load_stays_within_the_tracked_tokens",
        "the all-modeled active token load stays within [0, total tracked tokens] and never rises as time passes",
        "spec.token_load.all_modeled_tokens",
        "all integers: 0 <= anchor tokens <= sum <= 2^40, duration >= 0, 0 <= e1 <= e2 ns",
        token_load_stays_within_tracked_tokens,
        {"tokens": _tokens_unclipped},
        "no clip at zero",
        family="sequences",
    ),
    Proof(
        "anchor_only_decay_stays_within_the_anchor",
        "in anchor-only mode the anchor's remaining tokens, ceil(a * clamp(1 - e/D, 0, 1)), lie in [0, a]",
        "spec.token_load.anchor_remaining_tokens",
        "all integers a >= 0, reals e >= 0, D > 0 (the spec computes in f64; the clamp keeps the fraction in [0, 1] there too)",
        anchor_only_decay_stays_within_the_anchor,
        {"clamp": False},
        "no clamp of the fraction",
        family="sequences",
    ),
]

"""Active prefill token load: how many prefill tokens a worker still owes at a given time.

Two modes, chosen by whether every active prefill is modeled:

- **All-modeled (aggregate spillover).** Progress is the anchor's own rate ``a / D``
  applied for the whole elapsed time, *not* capped at the anchor's tokens, and subtracted
  from the sum of every active prefill's tokens::

      active = max(0, sum - floor(a * e / D))          (integer nanoseconds)

  Once the anchor's share is used up the elapsed time keeps eating into later prefills at
  the anchor's rate (the README's uniform tokens/sec assumption). A zero-duration anchor
  completes exactly its own tokens and spills nothing into later prefills.

- **Anchor-only (some prefill is unmodeled).** Only the anchor decays; nothing spills::

      active = (sum - a) + remaining(a)
      remaining(a) = a                          if the anchor is unmodeled
                   = 0                          if its duration is zero
                   = ceil(a * clamp(1 - e/D, 0, 1))   in f64 seconds otherwise

  so unmodeled no-AIC/default requests never decay.

Worked example (experiment R2 against R3): A = (1000 tokens, 2 s) then B = (1000, 10 s).
All modeled: at t = 3 the anchor has "completed" floor(1000 * 3 / 2) = 1500 tokens, so
2000 - 1500 = 500 remain. With B unmodeled instead, A alone decays to 0 by t = 2 and the
load stays at B's 1000.

The two views can disagree with the modeled-time read (``prefill.modeled_remaining_prefill_ms``):
with a zero-duration anchor the token view holds later prefills at full while the time view
decays their milliseconds; with unequal rates tokens spill at the anchor's rate while time is
subtracted one for one. They are separate functions on purpose.

Source: docs/sources.md#sequences-4 (exact algorithm, rounding, consequences confirmed on 1.6.1, divergence between
the two views); docs/sources.md#dynamo-sequences-readme "Modeled remaining prefill time" (token paragraph);
docs/sources.md#sequences-8-4 experiments R1-R24.
"""

from __future__ import annotations

import math
from typing import Any

from .arith import PY, Arith
from .prefill import PrefillLoadSnapshot, elapsed_since
from .primitives import U64_MAX
from .sequence_inputs import secs_f64


def completed_tokens(tokens: Any, duration: Any, elapsed: Any, ops: Arith = PY) -> Any:
    """Return the tokens an anchor of ``tokens`` over ``duration`` has completed after ``elapsed`` (all-modeled mode).

    ``floor(tokens * elapsed / duration)`` in integer nanoseconds, not capped at ``tokens``
    (spillover), saturating at u64; a zero duration completes exactly ``tokens``.

    Source: docs/sources.md#sequences-4 step 2.
    """
    # The division only runs with a positive duration (``ite`` evaluates both sides in proofs,
    # where a zero divisor is an unconstrained term the branch never selects).
    return ops.ite(duration == 0, tokens, ops.min(ops.floordiv(tokens * elapsed, ops.max(duration, 1)), U64_MAX))


def all_modeled_tokens(tokens_sum: Any, anchor_tokens: Any, anchor_duration: Any, elapsed: Any, ops: Arith = PY) -> Any:
    """Return the all-modeled active tokens: ``max(0, sum - completed_tokens(...))`` (aggregate spillover).

    ``proofs/`` proves it stays within ``[0, sum]`` and never rises as time passes.

    Source: docs/sources.md#sequences-4 step 2.
    """
    return ops.max(0, tokens_sum - completed_tokens(anchor_tokens, anchor_duration, elapsed, ops))


def anchor_remaining_tokens(tokens: int, duration: int | None, elapsed: int) -> int:
    """Return the anchor's own remaining tokens in anchor-only mode (no spillover, ceil in f64).

    Source: docs/sources.md#sequences-4 step 3; docs/sources.md#sequences-8-4 experiment R24b (3 tokens over 1 s read
    3, 2, 1 plus 10 unmodeled).
    """
    if duration is None:
        return tokens
    if duration == 0:
        return 0
    fraction = min(max(1.0 - secs_f64(elapsed) / secs_f64(duration), 0.0), 1.0)
    return math.ceil(float(tokens) * fraction)


def is_all_modeled(snapshot: PrefillLoadSnapshot) -> bool:
    """Check if every active prefill has a modeled duration (the snapshot's modeled total is known)."""
    return snapshot.total_modeled_ms is not None


def active_prefill_tokens(snapshot: PrefillLoadSnapshot, now: int) -> int:
    """Return the worker's active prefill tokens at ``now``: aggregate spillover if all modeled, else anchor-only decay.

    Source: docs/sources.md#sequences-4 steps 1-3; docs/sources.md#dynamo-sequences-readme ("The active-token load
    view uses the same aggregate spillover only when all active prefills have modeled durations ...").
    """
    front = snapshot.anchor
    if front is None:
        return 0
    elapsed = elapsed_since(front.since, now)
    if is_all_modeled(snapshot):
        assert front.duration is not None
        return all_modeled_tokens(snapshot.tokens_sum, front.tokens, front.duration, elapsed)
    return snapshot.tokens_sum - front.tokens + anchor_remaining_tokens(front.tokens, front.duration, elapsed)

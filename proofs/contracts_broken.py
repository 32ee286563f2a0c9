"""The negative controls of the CrossHair contracts: the same contracts over broken rules.

``crosshair check`` must refute every ``check_*`` here, and ``crosshair diffbehavior`` must
find a difference in every ``DIFF_PAIRS`` entry; a contract that cannot be refuted when the
rule is wrong would prove nothing when it is right.
"""

from __future__ import annotations

from ..spec.hit_length import hit_formula
from .contracts import (  # noqa: F401  (diffbehavior targets)
    diff_cover_prefix_on_a_state,
    diff_hit_search,
    diff_reference_remaining_ms,
    diff_reference_tokens,
    diff_whole_gpus,
)


def check_raised_cutoff(current: int, c: int, n: int) -> int:
    """Broken: the cutoff is set to c even when that lowers it.

    pre: 1 <= n
    pre: 0 <= current <= n
    pre: 0 <= c
    post: current <= __return__ <= n
    """
    return n if c >= n else c


def check_split_cutoffs(c: int, p: int, n: int) -> tuple[int, int]:
    """Broken: the suffix is credited one block too many.

    pre: 2 <= n
    pre: 0 < p < n
    pre: 0 <= c <= n
    post: (__return__[0] if __return__[0] < p else p + __return__[1]) == c
    """
    return min(c, p), (c - p + 1 if c >= p else 0)


def check_whole_gpus(numerator: int, denominator: int) -> int:
    """Broken: floor instead of ceiling.

    pre: 0 <= numerator
    pre: 1 <= denominator
    post: __return__ * denominator >= numerator
    """
    return numerator // denominator


def diff_hit_without_backoff(length: int, cached: int, has_swa: bool) -> tuple[int, int] | None:
    if length < 0 or cached < 0 or length > 4096 or cached > 4096:
        return None
    hit, _ = hit_formula(length, cached, True, 134, 128)
    return hit, hit


def diff_gpus_floor(numerator: int, denominator: int) -> int | None:
    if numerator < 0 or denominator < 1:
        return None
    return numerator // denominator


def diff_cutoff_can_drop(current: int, c: int, n: int) -> int | None:
    if not (1 <= n <= 5 and 0 <= current <= n and 0 <= c <= 8):
        return None
    return n if c >= n else c


def diff_remaining_unclipped(total_ms: int, since: int, now: int) -> int | None:
    if not (0 <= total_ms <= 10**9 and 0 <= since <= 10**15 and 0 <= now <= 10**15):
        return None
    return total_ms - max(0, now - since) // 1_000_000


def diff_tokens_capped_at_anchor(tokens_sum: int, anchor_tokens: int, duration_ms: int, elapsed_ms: int) -> int | None:
    if not (0 <= anchor_tokens <= tokens_sum <= 64 and 0 <= duration_ms <= 16 and 0 <= elapsed_ms <= 64):
        return None
    done = anchor_tokens if duration_ms == 0 else min(anchor_tokens * elapsed_ms // duration_ms, anchor_tokens)  # no spillover
    return tokens_sum - done


DIFF_PAIRS = [
    ("diff_hit_without_backoff", "diff_hit_search", "a hit rule without the SWA back-off vs the search"),
    ("diff_gpus_floor", "diff_whole_gpus", "floor vs the exact ceiling"),
    ("diff_cutoff_can_drop", "diff_cover_prefix_on_a_state", "a cutoff rule that can lower coverage vs cover_prefix"),
    ("diff_remaining_unclipped", "diff_reference_remaining_ms", "a remaining-time read without the clip vs the reference"),
    ("diff_tokens_capped_at_anchor", "diff_reference_tokens", "a token load without spillover vs the reference"),
]


def check_removal_cutoff(current: int, pos: int) -> int:
    """Broken: the removed block is kept.

    pre: 0 <= current
    pre: 0 <= pos
    post: 0 <= __return__ <= current
    """
    return pos + 1 if pos <= current else current


def check_extended_cutoff(c: int, storing: bool, n: int, tail: int) -> int:
    """Broken: other full ranks stay full after the extension.

    pre: 1 <= n
    pre: 1 <= tail
    pre: 0 <= c <= n
    post: __return__ == (n + tail if storing else c)
    """
    return n + tail if storing or c == n else c


def check_state_with_cutoffs(n: int, a: int, b: int) -> tuple[int, int]:
    """Broken: a cutoff equal to the edge length is kept as a cutoff instead of becoming full.

    pre: 1 <= n <= 6
    pre: 0 <= a <= n
    post: 0 < __return__[1] < n or __return__[1] == 0
    """
    return a, a if a > 0 else 0


def check_chain_score(n0: int, n1: int, m0: int, m1: int, c0: int, c1: int) -> int:
    """Broken: matched blocks are credited whatever the rank holds.

    pre: 1 <= m0 <= n0
    pre: 1 <= m1 <= n1
    pre: 0 <= c0 <= n0
    pre: 0 <= c1 <= n1
    post: __return__ <= (min(c0, m0) if c0 < m0 or m0 < n0 else m0 + min(c1, m1))
    """
    return m0 + (m1 if m0 == n0 else 0)


def check_hit_formula(length: int, cached: int, has_swa: bool) -> tuple[int, int]:
    """Broken: the reserve is 133.

    pre: 0 <= length
    pre: 0 <= cached
    post: 0 <= __return__[1] <= __return__[0] <= max(0, length - 134)
    """
    return hit_formula(length, cached, has_swa, 133, 128)


def check_pad(n: int, align: int) -> int:
    """Broken: rounds down.

    pre: 0 <= n
    pre: 1 <= align
    post: __return__ >= n
    """
    return n // align * align


def check_remaining_ms(total_ms: int, anchor_since: int, now: int) -> int:
    """Broken: no clip at zero.

    pre: 0 <= total_ms
    pre: 0 <= anchor_since
    pre: 0 <= now
    post: 0 <= __return__ <= total_ms
    """
    return total_ms - max(0, now - anchor_since) // 1_000_000


def check_credited_anchor_since(anchor_since: int, duration: int, now: int) -> int:
    """Broken: no cap at the removal time.

    pre: 0 <= anchor_since <= now
    pre: 0 <= duration
    post: anchor_since <= __return__ <= now
    """
    return anchor_since + duration


def check_all_modeled_tokens(tokens_sum: int, anchor_tokens: int, duration: int, elapsed: int) -> int:
    """Broken: no clip at zero.

    pre: 0 <= anchor_tokens <= tokens_sum
    pre: 0 <= duration
    pre: 0 <= elapsed
    post: 0 <= __return__ <= tokens_sum
    """
    return tokens_sum - (anchor_tokens if duration == 0 else anchor_tokens * elapsed // duration)

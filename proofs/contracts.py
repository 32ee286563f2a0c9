"""CrossHair contracts on the pure spec kernels (PEP 316 docstrings), and diffbehavior pairs.

``crosshair check`` searches symbolically for inputs that satisfy every ``pre:`` and break a
``post:``. Each ``check_*`` below wraps one spec kernel (CrossHair analyses top-level
functions) and states its contract; ``diff_*`` pairs give ``crosshair diffbehavior`` a spec
kernel and an independent statement of the same rule (guarded to the rule's domain, since
diffbehavior does not apply preconditions: tooling.md §5). ``proofs.crosshair_runner`` runs
them with per-condition timeouts; ``contracts_broken`` holds the same contracts over broken
rules, which CrossHair must refute (the negative control).

CrossHair never sees threaded code: only ``spec`` kernels are analysed here.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..reference.sequences import decayed_tokens as reference_decayed_tokens
from ..reference.sequences import remaining_modeled_ms as reference_remaining_modeled_ms
from ..spec.capacity import whole_gpus
from ..spec.coverage import EdgeState, cover_prefix, current_cutoff, raised_cutoff, removal_cutoff
from ..spec.hit_length import HitCase, hit_by_search, hit_formula
from ..spec.match import chain_score
from ..spec.prefill import AnchorSnapshot, PrefillLoadSnapshot, credited_anchor_since, modeled_remaining_prefill_ms, remaining_ms
from ..spec.primitives import Block, FrozenMap, FrozenSet, Rank
from ..spec.shape import extended_cutoff, prefix_cutoff, state_with_cutoffs, suffix_cutoff
from ..spec.state_layout import pad
from ..spec.token_load import active_prefill_tokens, all_modeled_tokens


def check_raised_cutoff(current: int, c: int, n: int) -> int:
    """Cover-prefix only raises a cutoff, reaches min(c, n), and stays inside the edge.

    pre: 1 <= n
    pre: 0 <= current <= n
    pre: 0 <= c
    post: current <= __return__ <= n
    post: __return__ >= min(c, n)
    """
    return raised_cutoff(current, c, n)


def check_removal_cutoff(current: int, pos: int) -> int:
    """Removal never raises a cutoff and repeating it changes nothing.

    pre: 0 <= current
    pre: 0 <= pos
    post: 0 <= __return__ <= current
    post: removal_cutoff(__return__, pos) == __return__
    """
    return removal_cutoff(current, pos)


def check_split_cutoffs(c: int, p: int, n: int) -> tuple[int, int]:
    """A split keeps the covered prefix of the concatenated edge; the suffix is held only below a full prefix.

    pre: 2 <= n
    pre: 0 < p < n
    pre: 0 <= c <= n
    post: (__return__[0] if __return__[0] < p else p + __return__[1]) == c
    post: __return__[1] == 0 or __return__[0] == p
    """
    return prefix_cutoff(c, p), suffix_cutoff(c, p)


def check_extended_cutoff(c: int, storing: bool, n: int, tail: int) -> int:
    """Extension makes the storer full and keeps every other rank's blocks.

    pre: 1 <= n
    pre: 1 <= tail
    pre: 0 <= c <= n
    post: __return__ == (n + tail if storing else c)
    """
    return extended_cutoff(c, storing, n, tail)


def check_state_with_cutoffs(n: int, a: int, b: int) -> EdgeState:
    """Every cutoff in [0, n] becomes a valid edge state: full at n, absent at 0, else strictly inside.

    pre: 1 <= n <= 6
    pre: 0 <= a <= n
    pre: 0 <= b <= n
    post: all(0 < k < n for k in __return__.worker_cutoffs.values())
    post: not (__return__.full_edge_workers & set(__return__.worker_cutoffs))
    post: current_cutoff(__return__, Rank(1)) == a and current_cutoff(__return__, Rank(2)) == b
    """
    edge = tuple(Block(i, 100 + i) for i in range(n))
    return state_with_cutoffs(edge, {Rank(1): a, Rank(2): b})


def check_chain_score(n0: int, n1: int, m0: int, m1: int, c0: int, c1: int) -> int:
    """A two-node match never credits more than the rank holds along the query.

    pre: 1 <= m0 <= n0
    pre: 1 <= m1 <= n1
    pre: 0 <= c0 <= n0
    pre: 0 <= c1 <= n1
    post: 0 <= __return__ <= m0 + m1
    post: __return__ <= (min(c0, m0) if c0 < m0 or m0 < n0 else m0 + min(c1, m1))
    """
    return chain_score([n0, n1], [m0, m1], [c0, c1])


def check_hit_formula(length: int, cached: int, has_swa: bool) -> tuple[int, int]:
    """The hit lengths are bounded, aligned, back off one block exactly without SWA, and vanish below 262.

    pre: 0 <= length
    pre: 0 <= cached
    post: 0 <= __return__[1] <= __return__[0] <= max(0, length - 134)
    post: __return__[0] % 128 == 0
    post: (__return__[0] - __return__[1] == 128) == (__return__[0] > 0 and not has_swa)
    post: length >= 262 or __return__[0] == 0
    """
    return hit_formula(length, cached, has_swa, 134, 128)


def check_whole_gpus(numerator: int, denominator: int) -> int:
    """The GPU count is the least whole number covering the exact demand.

    pre: 0 <= numerator
    pre: 1 <= denominator
    post: __return__ * denominator >= numerator
    post: (__return__ - 1) * denominator < numerator
    """
    return whole_gpus(numerator, denominator)


def check_pad(n: int, align: int) -> int:
    """Padding is the least multiple of the alignment that holds the segment.

    pre: 0 <= n
    pre: 1 <= align
    post: __return__ >= n and __return__ - n < align and __return__ % align == 0
    """
    return pad(n, align)


def check_remaining_ms(total_ms: int, anchor_since: int, now: int) -> int:
    """The modeled remaining time is never negative and never above the backlog.

    pre: 0 <= total_ms
    pre: 0 <= anchor_since
    pre: 0 <= now
    post: 0 <= __return__ <= total_ms
    """
    return remaining_ms(total_ms, anchor_since, now)


def check_credited_anchor_since(anchor_since: int, duration: int, now: int) -> int:
    """A credit moves the anchor forward by the removed duration, never past the removal time.

    pre: 0 <= anchor_since <= now
    pre: 0 <= duration
    post: anchor_since <= __return__ <= now
    post: __return__ <= anchor_since + duration
    """
    return credited_anchor_since(anchor_since, duration, now)


def check_all_modeled_tokens(tokens_sum: int, anchor_tokens: int, duration: int, elapsed: int) -> int:
    """The all-modeled token load stays within [0, total tracked tokens].

    pre: 0 <= anchor_tokens <= tokens_sum
    pre: 0 <= duration
    pre: 0 <= elapsed
    post: 0 <= __return__ <= tokens_sum
    """
    return all_modeled_tokens(tokens_sum, anchor_tokens, duration, elapsed)


CHECKED = {
    "check_raised_cutoff": "spec.coverage.raised_cutoff",
    "check_removal_cutoff": "spec.coverage.removal_cutoff",
    "check_split_cutoffs": "spec.shape.prefix_cutoff, spec.shape.suffix_cutoff",
    "check_extended_cutoff": "spec.shape.extended_cutoff",
    "check_state_with_cutoffs": "spec.shape.state_with_cutoffs",
    "check_chain_score": "spec.match.chain_score",
    "check_hit_formula": "spec.hit_length.hit_formula",
    "check_whole_gpus": "spec.capacity.whole_gpus",
    "check_pad": "spec.state_layout.pad",
    "check_remaining_ms": "spec.prefill.remaining_ms",
    "check_credited_anchor_since": "spec.prefill.credited_anchor_since",
    "check_all_modeled_tokens": "spec.token_load.all_modeled_tokens",
}
"""The spec kernel each contract checks (the table's "spec function" column)."""


# ----------------------------------------------------------------------------- diffbehavior pairs
# Each pair returns None outside the rule's domain, so that diffbehavior compares only inputs
# the rule is defined for.


def diff_hit_formula(length: int, cached: int, has_swa: bool) -> tuple[int, int] | None:
    if length < 0 or cached < 0 or length > 4096 or cached > 4096:
        return None
    return hit_formula(length, cached, has_swa, 134, 128)


def diff_hit_search(length: int, cached: int, has_swa: bool) -> tuple[int, int] | None:
    if length < 0 or cached < 0 or length > 4096 or cached > 4096:
        return None
    found = hit_by_search(HitCase(length, cached, has_swa))
    return found.block_hit, found.compute_hit


def diff_whole_gpus(numerator: int, denominator: int) -> int | None:
    if numerator < 0 or denominator < 1:
        return None
    return whole_gpus(numerator, denominator)


def diff_ceil_fraction(numerator: int, denominator: int) -> int | None:
    if numerator < 0 or denominator < 1:
        return None
    return math.ceil(Fraction(numerator, denominator))


def diff_raised_cutoff(current: int, c: int, n: int) -> int | None:
    if not (1 <= n <= 5 and 0 <= current <= n and 0 <= c <= 8):
        return None
    return raised_cutoff(current, c, n)


def diff_cover_prefix_on_a_state(current: int, c: int, n: int) -> int | None:
    """The same rule read off ``spec.coverage.cover_prefix`` on a real edge state."""
    if not (1 <= n <= 5 and 0 <= current <= n and 0 <= c <= 8):
        return None
    edge = tuple(Block(i, 100 + i) for i in range(n))
    full = FrozenSet({Rank(1)}) if current == n else FrozenSet()
    cut = FrozenMap({Rank(1): current}) if 0 < current < n else FrozenMap()
    return current_cutoff(cover_prefix(EdgeState(edge, full, cut), Rank(1), c), Rank(1))


def _prefill_snapshot(tokens_sum: int, anchor_tokens: int, duration: int, since: int, total_ms: int) -> PrefillLoadSnapshot:
    return PrefillLoadSnapshot(tokens_sum, AnchorSnapshot(anchor_tokens, duration, since), total_ms)


def _prefill_domain(total_ms: int, since: int, now: int) -> bool:
    return 0 <= total_ms <= 10**9 and 0 <= since <= 10**15 and 0 <= now <= 10**15


def diff_spec_remaining_ms(total_ms: int, since: int, now: int) -> int | None:
    if not _prefill_domain(total_ms, since, now):
        return None
    return modeled_remaining_prefill_ms(_prefill_snapshot(0, 1, 1, since, total_ms), now)


def diff_reference_remaining_ms(total_ms: int, since: int, now: int) -> int | None:
    """The reference tracker's own arithmetic for the same read."""
    if not _prefill_domain(total_ms, since, now):
        return None
    return reference_remaining_modeled_ms(_prefill_snapshot(0, 1, 1, since, total_ms), now)


def _token_domain(tokens_sum: int, anchor_tokens: int, duration_ms: int, elapsed_ms: int) -> bool:
    # Small whole-ms values: the region where spillover matters (elapsed past the anchor's duration)
    # is then within easy reach of the symbolic search.
    return 0 <= anchor_tokens <= tokens_sum <= 64 and 0 <= duration_ms <= 16 and 0 <= elapsed_ms <= 64


def diff_spec_tokens(tokens_sum: int, anchor_tokens: int, duration_ms: int, elapsed_ms: int) -> int | None:
    if not _token_domain(tokens_sum, anchor_tokens, duration_ms, elapsed_ms):
        return None
    snapshot = _prefill_snapshot(tokens_sum, anchor_tokens, duration_ms * 1_000_000, 0, 0)
    return active_prefill_tokens(snapshot, elapsed_ms * 1_000_000)


def diff_reference_tokens(tokens_sum: int, anchor_tokens: int, duration_ms: int, elapsed_ms: int) -> int | None:
    if not _token_domain(tokens_sum, anchor_tokens, duration_ms, elapsed_ms):
        return None
    snapshot = _prefill_snapshot(tokens_sum, anchor_tokens, duration_ms * 1_000_000, 0, 0)
    return reference_decayed_tokens(snapshot, elapsed_ms * 1_000_000)


DIFF_PAIRS = [
    ("diff_hit_formula", "diff_hit_search", "spec.hit_length.hit_formula vs the aligned-candidate search"),
    ("diff_whole_gpus", "diff_ceil_fraction", "spec.capacity.whole_gpus vs math.ceil of the exact fraction"),
    ("diff_raised_cutoff", "diff_cover_prefix_on_a_state", "spec.coverage.raised_cutoff vs cover_prefix on an edge state"),
    (
        "diff_spec_remaining_ms",
        "diff_reference_remaining_ms",
        "spec.prefill.modeled_remaining_prefill_ms vs the reference tracker's read",
    ),
    (
        "diff_spec_tokens",
        "diff_reference_tokens",
        "spec.token_load.active_prefill_tokens vs the reference tracker's read (all modeled)",
    ),
]

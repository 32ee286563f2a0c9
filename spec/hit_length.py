"""A hit has two lengths: the reusable block-KV prefix and where computation resumes.

For a prompt of ``L`` tokens with block KV available for a contiguous prefix of ``C``
tokens, the Q&A policy (lab 24, Listing 11.9) is::

    cap         = max(0, L - RESERVE)                      # keep RESERVE positions to compute
    block_hit   = min(cap, C) // BLOCK * BLOCK             # L1: reusable block KV, aligned
    compute_hit = block_hit          if SWA is present     # H: computation restarts here
                  max(0, block_hit - BLOCK) otherwise      #    back off one block to rebuild SWA

with ``RESERVE = 134`` (the documented hit reserve, equal to the default SWA ring) and
``BLOCK = 128``. Worked example, L = 902: the cap is 768; with SWA prefill starts at 768 and
computes 134 new positions; without it prefill starts at 640 and the interval [640, 768)
rebuilds encoder SWA while its block KV is reused, not rewritten.

The numbers 128 (window / block), 134 (ring and reserve) and 140 (suggested keep) are
different quantities; only the first two enter this rule.

Laws (lab 24's "Checks: 69666 cases; bounds, alignment, backoff, monotonicity"), each a
named predicate below: the formula equals an independent search over aligned candidates;
both lengths are non-negative, aligned, and within the cap; ``compute_hit <= block_hit``;
a back-off happens only when the hit is positive and SWA is absent, and then by exactly one
block; both lengths are monotone in L with C and SWA held fixed. No prompt shorter than
RESERVE + BLOCK = 262 has a positive block hit.

Source: docs/sources.md#deepinfer-11-4 (formula, table, Listing 11.9 (docs/sources.md#deepinfer-listings));
docs/sources.md#state-roundtrip-1 "Hit arithmetic", docs/sources.md#state-roundtrip-4 "Lab 24",
docs/sources.md#state-roundtrip-6 A12 (the 69,666-case domain is inferred: L in [0, 2048], C in {0, 128, ..., 2048},
SWA in {F, T}; 2049 * 17 * 2 = 69666).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .arith import PY, Arith
from .deepinfer_errors import InvalidQuantityType
from .quantities import as_count

RESERVE = 134
"""Positions the policy always leaves to compute (the documented hit reserve; equals the default ring)."""

BLOCK = 128
"""Block-KV alignment in tokens (also the SWA window)."""

LAB24_MAX_LENGTH = 2048
"""Largest prompt length of the inferred lab 24 domain."""


@dataclass(frozen=True, slots=True)
class HitLengths:
    """The two lengths of one hit: reusable block KV (L1) and the computation restart (H)."""

    block_hit: int
    compute_hit: int

    @property
    def rebuilt(self) -> int:
        """Return how many reused-block positions are recomputed only to rebuild SWA."""
        return self.block_hit - self.compute_hit


@dataclass(frozen=True, slots=True)
class HitCase:
    """One input of the hit rule: prompt length, cached block-KV extent, SWA availability."""

    length: int
    cached: int
    has_swa: bool


def hit_lengths(length: int, cached: int, has_swa: bool, *, reserve: int = RESERVE, block: int = BLOCK) -> HitLengths:
    """Return the block hit and compute hit of a prompt of ``length`` tokens with ``cached`` tokens of block KV.

    Negative lengths raise ``InvalidQuantity`` (the lab's ``assert``); non-integers raise
    ``InvalidQuantityType``. ``reserve`` and ``block`` default to the Q&A's 134 and 128.

    Source: Listing 11.9 (docs/sources.md#deepinfer-listings) (lab 24 lines 14-19); docs/sources.md#deepinfer-11-4
    formula for L1 and H.
    """
    length = as_count("length", length)
    cached = as_count("cached", cached)
    reserve = as_count("reserve", reserve)
    block = as_count("block", block, minimum=1)
    if not isinstance(has_swa, bool):
        raise InvalidQuantityType(f"has_swa must be a bool, not {type(has_swa).__name__} {has_swa!r}")
    return HitLengths(*hit_formula(length, cached, has_swa, reserve, block))


def hit_formula(length: Any, cached: Any, has_swa: Any, reserve: Any, block: Any, ops: Arith = PY) -> tuple[Any, Any]:
    """Return ``(block_hit, compute_hit)`` by the Q&A formula: the kernel of ``hit_lengths``.

    The caller has checked ``length, cached, reserve >= 0`` and ``block >= 1``. ``proofs/``
    proves the lab 24 laws of this very function for all integers (docs/sources.md#tooling-6).

    Source: Listing 11.9 (docs/sources.md#deepinfer-listings); docs/sources.md#deepinfer-11-4 formula for L1 and H.
    """
    cap = ops.max(0, length - reserve)
    block_hit = ops.floordiv(ops.min(cap, cached), block) * block
    compute_hit = ops.ite(has_swa, block_hit, ops.max(0, block_hit - block))
    return block_hit, compute_hit


def aligned_candidates(length: int, cached: int, *, reserve: int = RESERVE, block: int = BLOCK) -> list[int]:
    """Return every hit the policy may choose: multiples of ``block`` that leave ``reserve`` positions
    to compute and lie within the cached prefix, in increasing order (0 is always one).

    Source: docs/sources.md#deepinfer-11-4 "The checks enumerate aligned candidates independently and compare the
    result".
    """
    found = [0]
    k = block
    while k + reserve <= length and k <= cached:
        found.append(k)
        k += block
    return found


def hit_by_search(case: HitCase, *, reserve: int = RESERVE, block: int = BLOCK) -> HitLengths:
    """Return the hit lengths found by searching the aligned candidates: the largest is the block hit;
    without SWA, computation restarts at the candidate below it (0 if there is none).

    This is the independent statement the formula is checked against.
    """
    candidates = aligned_candidates(case.length, case.cached, reserve=reserve, block=block)
    best = candidates[-1]
    if case.has_swa:
        return HitLengths(best, best)
    return HitLengths(best, candidates[-2] if len(candidates) > 1 else 0)


def lab24_domain(max_length: int = LAB24_MAX_LENGTH, block: int = BLOCK) -> Iterator[HitCase]:
    """Yield the inferred lab 24 domain: L in [0, max_length], C a multiple of ``block`` up to max_length, SWA both ways.

    With the defaults this is 2049 * 17 * 2 = 69,666 cases, the count lab 24 prints.

    Source: docs/sources.md#state-roundtrip-4 "The 69666 count is inferred"; docs/sources.md#state-roundtrip-6 A12.
    """
    for length in range(max_length + 1):
        for cached in range(0, max_length + 1, block):
            for has_swa in (False, True):
                yield HitCase(length, cached, has_swa)


def hit_law_violations(
    case: HitCase, *, reserve: int = RESERVE, block: int = BLOCK, rule: Callable[..., HitLengths] | None = None
) -> list[str]:
    """Return the names of the lab 24 laws that ``case`` breaks (empty when every law holds).

    Laws: ``search`` (formula equals the aligned-candidate search), ``bounds`` (0 <= H <= L1 <=
    min(C, max(0, L - reserve))), ``alignment`` (both multiples of ``block``), ``backoff`` (H < L1
    only when L1 > 0 and SWA is absent, and then L1 - H == block), ``monotone`` (neither length
    decreases from L - 1 to L), ``short`` (L < reserve + block implies no hit).

    ``rule`` replaces ``hit_lengths`` (same signature) to check another implementation of the rule.

    Source: docs/sources.md#deepinfer-11-4 "They also verify nonnegative lengths, the cap, alignment, and a one-block
    backoff only when there is a positive hit and SWA is absent ... Monotonicity holds".
    """
    rule = rule or hit_lengths
    got = rule(case.length, case.cached, case.has_swa, reserve=reserve, block=block)
    bad = []
    if got != hit_by_search(case, reserve=reserve, block=block):
        bad.append("search")
    cap = max(0, case.length - reserve)
    if not (0 <= got.compute_hit <= got.block_hit <= min(case.cached, cap)):
        bad.append("bounds")
    if got.block_hit % block or got.compute_hit % block:
        bad.append("alignment")
    backed_off = got.compute_hit < got.block_hit
    if backed_off and not (got.block_hit > 0 and not case.has_swa and got.rebuilt == block):
        bad.append("backoff")
    if not backed_off and got.block_hit > 0 and not case.has_swa and got.block_hit >= block:
        bad.append("backoff")
    if case.length > 0:
        before = rule(case.length - 1, case.cached, case.has_swa, reserve=reserve, block=block)
        if before.block_hit > got.block_hit or before.compute_hit > got.compute_hit:
            bad.append("monotone")
    if case.length < reserve + block and got.block_hit > 0:
        bad.append("short")
    return bad


LAB24_LENGTHS = (128, 261, 262, 390, 902, 1024)
"""The prompt lengths of lab 24's table (full block-prefix availability: C = L)."""


def lab24_check(
    max_length: int = LAB24_MAX_LENGTH, rule: Callable[..., HitLengths] | None = None
) -> tuple[int, dict[str, int], int]:
    """Return how many cases of the lab 24 domain were checked, how many broke each law, and how many broke
    at least one (for ``rule``, ``hit_lengths`` by default)."""
    counts: dict[str, int] = {}
    total = failing = 0
    for case in lab24_domain(max_length):
        total += 1
        broken = hit_law_violations(case, rule=rule)
        failing += bool(broken)
        for law in broken:
            counts[law] = counts.get(law, 0) + 1
    return total, counts, failing


def lab24_report() -> list[str]:
    """Return lab 24's printed output: the table at full availability and the exhaustive-check line.

    The last line reads as the book's only when every law holds on every case; otherwise it
    names the broken laws and their counts.

    Source: docs/sources.md#deepinfer-11-4 "python3 lab 24" OUTPUT.
    """
    lines = [
        "Assigned full block-prefix availability; columns count tokens",
        "L     block hit L1   compute hit: SWA present / missing",
    ]
    for length in LAB24_LENGTHS:
        present = hit_lengths(length, length, True)
        missing = hit_lengths(length, length, False)
        lines.append(f"{length:<6}{present.block_hit:<4}{present.compute_hit:>15} / {missing.compute_hit}")
    total, broken, _ = lab24_check()
    if broken:
        lines.append(f"Checks: {total} cases; FAILED " + ", ".join(f"{k}={v}" for k, v in sorted(broken.items())))
    else:
        lines.append(f"Checks: {total} cases; bounds, alignment, backoff, monotonicity")
    return lines

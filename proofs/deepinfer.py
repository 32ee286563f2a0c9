"""Z3 proofs of the DeepInfer chapter's arithmetic: hit lengths, GPU rounding, state sizes.

The hit-length laws are lab 24's, proved for every integer prompt length and cached extent
(lab 24 checks 69,666 cases; these hold for all of them and beyond), with the book's
reserve 134 and block 128 and, separately, for any reserve and any positive block.
"""

from __future__ import annotations

import z3

from ..spec.capacity import whole_gpus
from ..spec.hit_length import BLOCK, RESERVE, hit_formula
from ..spec.state_layout import pad, region_sizes
from .harness import Z3, Proof

SEGMENTS = 4


def _hit(formula, length, cached, swa, reserve, block):
    return formula(length, cached, swa, reserve, block, Z3)


def hit_length_laws(formula=hit_formula, reserve=RESERVE, block=BLOCK):
    L, C = z3.Ints("L C")
    swa = z3.Bool("swa")
    hit, compute = _hit(formula, L, C, swa, reserve, block)
    cap = z3.If(L - reserve > 0, L - reserve, 0)
    claim = z3.And(
        hit >= 0,
        compute >= 0,
        compute <= hit,
        hit <= cap,
        hit <= C,  # bounds
        hit % block == 0,
        compute % block == 0,  # alignment
        # a one-block back-off exactly when the hit is positive and SWA is missing
        (hit - compute == block) == z3.And(hit > 0, z3.Not(swa)),
        z3.Implies(z3.Or(swa, hit == 0), compute == hit),
        z3.Implies(reserve + block > L, hit == 0),  # no positive hit below 262 tokens
        hit > z3.If(cap <= C, cap, C) - block,  # the largest aligned candidate
    )
    return [L >= 0, C >= 0], claim


def hit_length_monotone_in_length(formula=hit_formula, reserve=RESERVE, block=BLOCK):
    L1, L2, C = z3.Ints("L1 L2 C")
    swa = z3.Bool("swa")
    h1, c1 = _hit(formula, L1, C, swa, reserve, block)
    h2, c2 = _hit(formula, L2, C, swa, reserve, block)
    return [L1 >= 0, L2 >= L1, C >= 0], z3.And(h1 <= h2, c1 <= c2)


def hit_length_laws_any_block(formula=hit_formula):
    L, C, reserve, block = z3.Ints("L C reserve block")
    swa = z3.Bool("swa")
    hit, compute = _hit(formula, L, C, swa, reserve, block)
    cap = z3.If(L - reserve > 0, L - reserve, 0)
    claim = z3.And(
        hit >= 0,
        compute >= 0,
        compute <= hit,
        hit <= cap,
        hit <= C,
        hit % block == 0,
        compute % block == 0,
        (hit - compute == block) == z3.And(hit > 0, z3.Not(swa)),
        z3.Implies(reserve + block > L, hit == 0),
    )
    return [L >= 0, C >= 0, reserve >= 0, block >= 1, block <= 4096], claim


def gpus_are_the_least_sufficient_count(gpus=whole_gpus):
    num, den = z3.Ints("demand_num demand_den")
    g = gpus(num, den, Z3)
    claim = z3.And(g * den >= num, (g - 1) * den < num, g >= 0)
    return [num >= 0, den >= 1], claim


def gpus_are_monotone(gpus=whole_gpus):
    a, b, den = z3.Ints("demand_a demand_b demand_den")
    return [a >= 0, b >= a, den >= 1], gpus(a, den, Z3) <= gpus(b, den, Z3)


def padding_rounds_up_to_alignment(pad_=pad):
    n, align = z3.Ints("n align")
    p = pad_(n, align, Z3)
    return [n >= 0, align >= 1], z3.And(p >= n, p - n < align, p % align == 0)


def stored_fits_in_handoff(sizes=region_sizes):
    t = z3.Ints(" ".join(f"bytes{i}" for i in range(SEGMENTS)))
    d = z3.Bools(" ".join(f"dropped{i}" for i in range(SEGMENTS)))
    stored, handoff = sizes(t, d, Z3)
    nothing_dropped = z3.And(*[z3.Implies(gone, n == 0) for n, gone in zip(t, d)])
    claim = z3.And(stored <= handoff, stored >= 0, (stored == handoff) == nothing_dropped)
    return [n >= 0 for n in t], claim


def _hit_without_backoff(length, cached, has_swa, reserve, block, ops):
    hit, _ = hit_formula(length, cached, True, reserve, block, ops)
    return hit, hit  # forgets to rebuild SWA


def _hit_unaligned(length, cached, has_swa, reserve, block, ops):
    cap = ops.max(0, length - reserve)
    hit = ops.min(cap, cached)
    return hit, ops.ite(has_swa, hit, ops.max(0, hit - block))


def _hit_uncapped_monotone_break(length, cached, has_swa, reserve, block, ops):
    hit, compute = hit_formula(length, cached, has_swa, reserve, block, ops)
    return ops.ite(length % 1000 == 999, 0, hit), compute  # drops the hit at some lengths


def _gpus_off_by_one(num, den, ops):
    return ops.floordiv(num, den) + 1  # "always round up" overshoots on exact demands


def _pad_truncates(n, align, ops):
    return ops.floordiv(n, align) * align


def _sizes_keep_dropped(tensor_nbytes, dropped, ops):
    stored = handoff = 0
    for n, _gone in zip(tensor_nbytes, dropped):  # the broken rule ignores whether the segment is dropped
        stored, handoff = stored + n, handoff + n
    return stored, handoff


PROOFS = [
    Proof(
        "hit_length_laws",
        "both hit lengths are non-negative, aligned, capped at L - 134 and C; one-block back-off exactly when the hit is positive and SWA is missing; no positive hit below 262; the hit is the largest aligned candidate",
        "spec.hit_length.hit_formula",
        "all integers L >= 0, C >= 0, SWA either; reserve 134, block 128",
        hit_length_laws,
        {"formula": _hit_without_backoff},
        "no back-off without SWA",
        family="deepinfer",
    ),
    Proof(
        "hit_length_monotone_in_prompt_length",
        "with the cache fixed, neither hit length decreases as the prompt grows",
        "spec.hit_length.hit_formula",
        "all integers 0 <= L1 <= L2, C >= 0; reserve 134, block 128",
        hit_length_monotone_in_length,
        {"formula": _hit_uncapped_monotone_break},
        "drops the hit at some lengths",
        family="deepinfer",
    ),
    Proof(
        "hit_length_laws_for_any_block",
        "the bounds, alignment, back-off and short-prompt laws hold for any reserve and any block size",
        "spec.hit_length.hit_formula",
        "all integers L, C, reserve >= 0, 1 <= block <= 4096",
        hit_length_laws_any_block,
        {"formula": _hit_unaligned},
        "unaligned hit",
        family="deepinfer",
    ),
    Proof(
        "gpu_count_is_the_least_sufficient",
        "the GPU count covers the exact demand and one fewer would not (exact rational rounding up)",
        "spec.capacity.whole_gpus",
        "all integers: demand numerator >= 0, denominator >= 1",
        gpus_are_the_least_sufficient_count,
        {"gpus": _gpus_off_by_one},
        "floor + 1 (overshoots exact demands)",
        family="deepinfer",
    ),
    Proof(
        "gpu_count_is_monotone_in_demand",
        "more demand never needs fewer GPUs",
        "spec.capacity.whole_gpus",
        "all integers: 0 <= a <= b, denominator >= 1",
        gpus_are_monotone,
        {"gpus": lambda num, den, ops: ops.ite(num % 2 == 0, ops.floordiv(num, den), 0)},
        "zero for odd numerators",
        family="deepinfer",
    ),
    Proof(
        "padding_rounds_up_to_the_alignment",
        "a padded segment is the least multiple of the alignment that holds it",
        "spec.state_layout.pad",
        "all integers: n >= 0, align >= 1",
        padding_rounds_up_to_alignment,
        {"pad_": _pad_truncates},
        "rounds down",
        family="deepinfer",
    ),
    Proof(
        "stored_size_fits_in_the_handoff",
        "the stored size never exceeds the handoff size, and equals it exactly when no dropped segment holds a byte",
        "spec.state_layout.region_sizes",
        f"{SEGMENTS} segments, all integers: bytes_i >= 0, each dropped or not",
        stored_fits_in_handoff,
        {"sizes": _sizes_keep_dropped},
        "stores the dropped segments too",
        family="deepinfer",
    ),
]

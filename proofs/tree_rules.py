"""Z3 proofs of the radix tree's node rules (spec.coverage, spec.shape, spec.match).

Each rule is a kernel over one rank's cutoff ``c`` on an edge of ``n`` blocks (``c == n``:
full, ``c == 0``: absent). The proofs hold for all integers in the stated bounds; the chain
proof holds for chains of up to ``CHAIN`` nodes with symbolic lengths.
"""

from __future__ import annotations

import z3

from ..spec.coverage import raised_cutoff, removal_cutoff
from ..spec.match import chain_score
from ..spec.shape import extended_cutoff, prefix_cutoff, suffix_cutoff
from .harness import Z3, Proof

CHAIN = 4


def _edge(*names: str):
    return z3.Ints(" ".join(names))


def split_preserves_coverage(prefix=prefix_cutoff, suffix=suffix_cutoff):
    n, p, c = _edge("n", "p", "c")
    pre, suf = prefix(c, p, Z3), suffix(c, p, Z3)
    covered = z3.If(pre < p, pre, p + suf)
    claim = z3.And(
        covered == c,  # the covered prefix of the concatenated edge is unchanged
        z3.Implies(suf > 0, pre == p),  # no coverage below a gap
        pre >= 0,
        pre <= p,
        suf >= 0,
        suf <= n - p,  # both halves stay inside their edges
    )
    return [n >= 2, p > 0, p < n, c >= 0, c <= n], claim


def cover_prefix_only_raises(raise_=raised_cutoff):
    n, cur, c = _edge("n", "cur", "c")
    new = raise_(cur, c, n, Z3)
    claim = z3.And(new >= cur, new >= z3.If(c < n, c, n), new <= n)
    return [n >= 1, cur >= 0, cur <= n, c >= 0], claim


def removal_never_raises_and_is_idempotent(remove=removal_cutoff):
    n, cur, pos = _edge("n", "cur", "pos")
    once = remove(cur, pos, Z3)
    claim = z3.And(once <= cur, once >= 0, remove(once, pos, Z3) == once, z3.Implies(pos < cur, once == pos))
    return [n >= 1, cur >= 0, cur <= n, pos >= 0, pos < n], claim


def extension_keeps_other_ranks(extend=extended_cutoff):
    n, t, c = _edge("n", "t", "c")
    other, storing = extend(c, False, n, t, Z3), extend(c, True, n, t, Z3)
    claim = z3.And(other == c, storing == n + t, other >= 0, other <= n + t)
    return [n >= 1, t >= 1, c >= 0, c <= n], claim


def score_never_exceeds_coverage(score=chain_score):
    lengths = z3.Ints(" ".join(f"n{i}" for i in range(CHAIN)))
    matched = z3.Ints(" ".join(f"m{i}" for i in range(CHAIN)))
    cuts = z3.Ints(" ".join(f"c{i}" for i in range(CHAIN)))
    hyps = []
    for n, m, c in zip(lengths, matched, cuts):
        hyps += [n >= 1, m >= 1, m <= n, c >= 0, c <= n]
    got = score(lengths, matched, cuts, Z3)
    # What the rank holds along the query: each node's matched blocks while it holds all of them.
    held, alive = 0, z3.BoolVal(True)
    for n, m, c in zip(lengths, matched, cuts):
        held = held + z3.If(alive, z3.If(c >= m, m, c), 0)
        alive = z3.And(alive, c >= m, m == n)
    query = sum(matched)
    return hyps, z3.And(got <= held, got <= query, got >= 0)


def _broken_suffix(c, p, ops):
    return ops.ite(c >= p, c - p + 1, 0)  # carries one block too many


def _broken_raise(cur, c, n, ops):
    return ops.ite(c >= n, n, c)  # forgets that coverage only rises


def _broken_remove(cur, pos, ops):
    return ops.ite(pos <= cur, pos + 1, cur)  # keeps the removed block


def _broken_extend(c, storing, n, tail, ops):
    return ops.ite(storing, n + tail, ops.ite(c == n, n + tail, c))  # other full ranks stay full


def _broken_score(lengths, matched, cutoffs, ops):
    score, alive = 0, True
    for n, m, _c in zip(lengths, matched, cutoffs):
        score = score + ops.ite(alive, m, 0)  # credits the matched length whatever the rank holds
        alive = ops.all(alive, m == n)
    return score


PROOFS = [
    Proof(
        "split_preserves_every_ranks_coverage",
        "a split at p keeps every rank's covered prefix of the concatenated edge; the suffix is held only below a full prefix",
        "spec.shape.prefix_cutoff, spec.shape.suffix_cutoff",
        "all integers: n >= 2, 0 < p < n, 0 <= c <= n",
        split_preserves_coverage,
        {"suffix": _broken_suffix},
        "suffix cutoff c - p + 1",
    ),
    Proof(
        "cover_prefix_never_lowers_coverage",
        "cover-prefix never lowers a rank's cutoff, reaches min(c, n), and stays inside the edge",
        "spec.coverage.raised_cutoff",
        "all integers: n >= 1, 0 <= cur <= n, c >= 0",
        cover_prefix_only_raises,
        {"raise_": _broken_raise},
        "cutoff set to c even when lower",
    ),
    Proof(
        "removal_never_raises_and_is_idempotent",
        "removal never raises coverage, cuts exactly at a covered position, and repeating it changes nothing",
        "spec.coverage.removal_cutoff",
        "all integers: n >= 1, 0 <= cur <= n, 0 <= pos < n",
        removal_never_raises_and_is_idempotent,
        {"remove": _broken_remove},
        "keeps the removed block (pos + 1)",
    ),
    Proof(
        "extension_keeps_every_other_ranks_coverage",
        "leaf extension makes the storing rank full and leaves every other rank exactly the blocks it held",
        "spec.shape.extended_cutoff",
        "all integers: n >= 1, tail >= 1, 0 <= c <= n",
        extension_keeps_other_ranks,
        {"extend": _broken_extend},
        "other full ranks stay full",
    ),
    Proof(
        "find_matches_never_exceeds_coverage_along_the_query",
        "a rank's score never exceeds the blocks it holds along the query, nor the query's length",
        "spec.match.chain_score",
        f"chains of {CHAIN} nodes, all integers: n_i >= 1, 1 <= m_i <= n_i, 0 <= c_i <= n_i",
        score_never_exceeds_coverage,
        {"score": _broken_score},
        "credits matched blocks whatever the rank holds",
    ),
]

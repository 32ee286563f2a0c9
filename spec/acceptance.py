"""Lab 25: a decode frontier from assigned records, and the two meanings of acceptance.

**Rates.** For a record with R requests per DP rank and SPS decode steps per second, with
tokens-per-step factor τ and context-parallel size CP, the plotted rates are (Listing 11.10)::

    user rate x = SPS · τ            (tokens/s/user)
    GPU rate  y = SPS · R · τ / CP   (tokens/s/GPU)

**Frontier.** Both axes prefer larger values. A point is non-dominated when no other point is
at least as good on both axes and strictly better on one. Lab 25's five records (τ = 3.25,
CP = 1) have the non-dominated request counts [8, 16, 32, 64]; 48 is dominated by 32 (and 64).
Scaling every point by one positive factor never changes the frontier; point-specific factors
can (``frontier_with_taus``).

**Acceptance.** With nextn draft positions and acceptance a, there are two readings:

* *mean accepted fraction* (the plot script's): τ = 1 + nextn · a; a = 0.75 gives 3.25;
* *conditional acceptance* (chapter 8's accepted-prefix rule): each draft position is accepted
  with probability a given that all earlier ones were; the accepted drafts are the leading
  accepted run, so E = a + a² + … + a^nextn and τ = 1 + E; a = 0.75, nextn = 3 gives 2.734375.
  ``tau_conditional`` computes it by exact enumeration of all 2^nextn independent Bernoulli
  patterns (the lab's method), never by the closed form, which the tests compare it with.

One main-model token is counted per step, with no early EOS. The ratio 2.734375 / 3.25 is
175/208, a common shrink of 33/208 ≈ 15.8654% on both axes.

**Published point.** The image reads ≈ 246 tokens/s/user at R = 64; under τ = 3.25 that is
SPS ≈ 246 / 3.25 = 75.69 steps/s and y ≈ 75.69 · 64 · 3.25 = 15,744 tokens/s/GPU at CP = 1 (τ
cancels: 246 · 64 = 15,744 exactly; rounding SPS to 75.69 first gives 15,743.52, also 15,744).

Source: docs/sources.md#deepinfer-11-6-1 (records, frontier), docs/sources.md#deepinfer-11-6-2 (Listing 11.10
(docs/sources.md#deepinfer-listings), the two readings, OUTPUT), docs/sources.md#deepinfer-11-6-3 (published point);
docs/sources.md#state-roundtrip-4 "Lab 25".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import product

from .deepinfer_errors import InvalidQuantity
from .quantities import as_count, as_rational, in_range


@dataclass(frozen=True, slots=True)
class Record:
    """One decode operating point: requests per DP rank and decode steps per second."""

    requests: int
    steps_per_second: Fraction


@dataclass(frozen=True, slots=True)
class Point:
    """One plotted point: its label (requests), user rate (x) and per-GPU rate (y)."""

    requests: int
    user_rate: Fraction
    gpu_rate: Fraction


def user_rate(steps_per_second, tau) -> Fraction:
    """Return x = SPS · τ, tokens per second per user.

    Source: Listing 11.10 (docs/sources.md#deepinfer-listings) line 66.
    """
    return as_rational("steps_per_second", steps_per_second) * as_rational("tau", tau)


def gpu_rate(steps_per_second, requests: int, tau, cp: int = 1) -> Fraction:
    """Return y = SPS · R · τ / CP, tokens per second per GPU.

    Source: Listing 11.10 (docs/sources.md#deepinfer-listings) line 67.
    """
    cp = as_count("cp", cp, minimum=1)
    return user_rate(steps_per_second, tau) * as_count("requests", requests) / cp


def plot_point(record: Record, tau, cp: int = 1) -> Point:
    """Return the plotted point of ``record`` under factor ``tau`` and context parallelism ``cp``."""
    return Point(
        record.requests,
        user_rate(record.steps_per_second, tau),
        gpu_rate(record.steps_per_second, record.requests, tau, cp),
    )


def dominates(a: Point, b: Point) -> bool:
    """Check if ``a`` is at least as good as ``b`` on both axes and strictly better on one.

    Source: docs/sources.md#deepinfer-11-6 "the points for which no other tested point is at least as good on both
    axes and strictly better on one".
    """
    return a.user_rate >= b.user_rate and a.gpu_rate >= b.gpu_rate and (a.user_rate > b.user_rate or a.gpu_rate > b.gpu_rate)


def non_dominated(points: Sequence[Point]) -> list[int]:
    """Return the request labels of the points no other point dominates, in input order."""
    return [p.requests for p in points if not any(dominates(q, p) for q in points if q is not p)]


def frontier_with_taus(records: Sequence[Record], taus: Sequence, cp: int = 1) -> list[int]:
    """Return the non-dominated request counts when each record has its own τ.

    Source: docs/sources.md#deepinfer-11-6-2 "If acceptance changes with workload or configuration, point-specific
    factors can change the frontier itself"; docs/sources.md#deepinfer-11-7 experiment 5.
    """
    if len(taus) != len(records):
        raise InvalidQuantity(f"{len(taus)} factors for {len(records)} records")
    return non_dominated([plot_point(r, t, cp) for r, t in zip(records, taus, strict=True)])


def _acceptance(nextn: int, a) -> tuple[int, Fraction]:
    nextn = as_count("nextn", nextn)
    return nextn, in_range("acceptance", as_rational("acceptance", a), 0, 1)


def tau_mean_fraction(nextn: int, a) -> Fraction:
    """Return τ = 1 + nextn · a, reading a as the mean number of accepted drafts over nextn.

    Source: docs/sources.md#deepinfer-11-6-2; line 61 of the book's plotting script, as the book describes it.
    """
    nextn, a = _acceptance(nextn, a)
    return 1 + nextn * a


def accepted_prefix(pattern: Sequence[bool]) -> int:
    """Return how many drafts count: the length of the leading run of accepted positions.

    Source: docs/sources.md#deepinfer-11-6-2 "The second and third positions count only when all preceding draft
    tokens were accepted" (chapter 8's accepted-prefix rule).
    """
    count = 0
    for accepted in pattern:
        if not accepted:
            break
        count += 1
    return count


def tau_conditional(nextn: int, a) -> Fraction:
    """Return τ = 1 + E[accepted prefix] by exact enumeration of every accept/reject pattern.

    Each of the nextn draft positions is an independent Bernoulli(a) draw (which realises
    equal conditional probabilities); a pattern with k accepts has probability
    a^k (1 − a)^(nextn − k); its useful drafts are its accepted prefix.

    Source: docs/sources.md#deepinfer-11-6-2 "Lab 25 uses rational arithmetic to enumerate all eight acceptance
    patterns".
    """
    nextn, a = _acceptance(nextn, a)
    expected = Fraction(0)
    for pattern in product((False, True), repeat=nextn):
        k = sum(pattern)
        expected += a**k * (1 - a) ** (nextn - k) * accepted_prefix(pattern)
    return 1 + expected


def common_shrink(nextn: int, a) -> Fraction:
    """Return 1 − τ_conditional / τ_mean: how much the conditional reading shrinks both axes."""
    return 1 - tau_conditional(nextn, a) / tau_mean_fraction(nextn, a)


LAB25_RECORDS: tuple[Record, ...] = tuple(Record(r, Fraction(s)) for r, s in ((8, 100), (16, 90), (32, 60), (48, 35), (64, 40)))
"""Lab 25's assigned records: requests per DP rank and steps per second."""

LAB25_TAU = Fraction(13, 4)
LAB25_NEXTN = 3
LAB25_ACCEPTANCE = Fraction(3, 4)
PUBLISHED_USER_RATE = 246  # tokens/s/user read from the image at R = 64 (approximate)
PUBLISHED_REQUESTS = 64


def lab25_report() -> list[str]:
    """Return lab 25's printed output: the record table, the frontier, the two τ, the shrink,
    the recovered step rate and throughput, and the checks line.

    The checks line reads "passed" only when the enumerated prefix expectation equals the
    closed form a + a² + a³ and the frontier under the common factor 175/208 equals the frontier
    under 3.25; otherwise it says which check failed.

    Source: docs/sources.md#deepinfer-11-6-1 and docs/sources.md#deepinfer-11-6-2 OUTPUT blocks.
    """
    points = [plot_point(r, LAB25_TAU) for r in LAB25_RECORDS]
    lines = ["Synthetic records: requests, steps/s, user tokens/s, tokens/s/GPU"]
    for record, point in zip(LAB25_RECORDS, points, strict=True):
        lines.append(
            f"{record.requests:>2} {int(record.steps_per_second):>3} {float(point.user_rate):.2f} {float(point.gpu_rate):.2f}"
        )
    frontier = non_dominated(points)
    lines.append(f"Non-dominated request counts: {frontier}")
    mean = tau_mean_fraction(LAB25_NEXTN, LAB25_ACCEPTANCE)
    conditional = tau_conditional(LAB25_NEXTN, LAB25_ACCEPTANCE)
    a = LAB25_ACCEPTANCE
    lines.append(f"Mean accepted fraction {float(a):.2f}: tau={float(mean):.6f}")
    lines.append(f"Conditional acceptance {float(a):.2f}: tau={float(conditional):.6f}")
    lines.append(f"Common axis shrink: {float(common_shrink(LAB25_NEXTN, a) * 100):.4f}%")
    sps = Fraction(PUBLISHED_USER_RATE) / LAB25_TAU
    lines.append(f"Published point, approximate: {PUBLISHED_USER_RATE} / {float(LAB25_TAU):.2f} = {float(sps):.2f} steps/s")
    throughput = gpu_rate(sps, PUBLISHED_REQUESTS, LAB25_TAU, cp=1)
    lines.append(f"Implied throughput at R={PUBLISHED_REQUESTS}, CP=1: {round(throughput)} tokens/s/GPU")
    prefix_ok = conditional - 1 == sum(a**k for k in range(1, LAB25_NEXTN + 1))
    scaled = non_dominated([plot_point(r, conditional) for r in LAB25_RECORDS])
    if prefix_ok and scaled == frontier:
        lines.append("Checks: exact prefix expectation and common-scale frontier passed")
    else:
        lines.append(f"Checks: FAILED prefix={prefix_ok} common-scale frontier={scaled} vs {frontier}")
    return lines

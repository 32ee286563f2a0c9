"""spec.acceptance: lab 25's records, frontier, the two tau readings by exact enumeration, the published point.

Besides the lab's numbers: CP divides the per-GPU rate only; a point tied on one axis and better on
the other dominates; the checks line of the report fails, saying which check, when either check
fails; every argument out of its domain is refused by a typed error naming it.
"""

import re
from fractions import Fraction

import pytest

from kvproof.spec import acceptance
from kvproof.spec.acceptance import (
    LAB25_NEXTN,
    LAB25_RECORDS,
    LAB25_TAU,
    Point,
    Record,
    accepted_prefix,
    common_shrink,
    dominates,
    frontier_with_taus,
    gpu_rate,
    lab25_report,
    non_dominated,
    plot_point,
    tau_conditional,
    tau_mean_fraction,
    user_rate,
)
from kvproof.spec.deepinfer_errors import InvalidQuantity, InvalidQuantityType
from kvproof.stateful_tests.deepinfer.golden import BOOK_LAB25

BOOK_RECORDS = [  # requests, steps/s, user tokens/s, tokens/s/GPU (as printed)
    (8, 100, Fraction("325.00"), Fraction("2600.00")),
    (16, 90, Fraction("292.50"), Fraction("4680.00")),
    (32, 60, Fraction("195.00"), Fraction("6240.00")),
    (48, 35, Fraction("113.75"), Fraction("5460.00")),
    (64, 40, Fraction("130.00"), Fraction("8320.00")),
]


@pytest.mark.parametrize("requests, sps, user, gpu", BOOK_RECORDS)
def test_lab25_record(requests, sps, user, gpu):
    point = plot_point(Record(requests, Fraction(sps)), Fraction(13, 4))
    assert (point.user_rate, point.gpu_rate) == (user, gpu)


def test_frontier_drops_48_only():
    points = [plot_point(r, LAB25_TAU) for r in LAB25_RECORDS]
    assert non_dominated(points) == [8, 16, 32, 64]
    p32, p48 = points[2], points[3]
    assert dominates(p32, p48) and not dominates(p48, p32)


def test_tau_readings():
    assert tau_mean_fraction(3, Fraction(3, 4)) == Fraction(13, 4) == Fraction("3.25")
    assert tau_conditional(3, Fraction(3, 4)) == Fraction("2.734375") == Fraction(175, 64)
    assert Fraction(175, 64) - 1 == Fraction("0.75") + Fraction("0.5625") + Fraction("0.421875")


@pytest.mark.parametrize("nextn", [0, 1, 2, 3, 5, 7])
@pytest.mark.parametrize("a", [Fraction(0), Fraction(1, 3), Fraction(3, 4), Fraction(9, 10), Fraction(1)])
def test_enumeration_equals_the_accepted_prefix_closed_form(nextn, a):
    assert tau_conditional(nextn, a) == 1 + sum(a**k for k in range(1, nextn + 1))
    assert tau_conditional(nextn, a) <= tau_mean_fraction(nextn, a)


def test_accepted_prefix_counts_only_the_leading_run():
    assert [accepted_prefix(p) for p in ((True, True, False), (False, True, True), (True, False, True), (True,) * 3)] == [
        2,
        0,
        1,
        3,
    ]


def test_shrink_and_published_point():
    assert 1 - common_shrink(3, Fraction(3, 4)) == Fraction(175, 208)
    assert common_shrink(3, Fraction(3, 4)) == Fraction(33, 208)
    assert f"{float(common_shrink(3, Fraction(3, 4)) * 100):.4f}%" == "15.8654%"
    sps = Fraction(246) / Fraction(13, 4)
    assert f"{float(sps):.2f}" == "75.69"
    assert gpu_rate(sps, 64, Fraction(13, 4)) == 15744 == 246 * 64  # tau cancels
    assert round(gpu_rate(Fraction("75.69"), 64, Fraction(13, 4))) == 15744  # rounding first: 15743.52


def test_a_common_factor_never_changes_the_frontier():
    base = non_dominated([plot_point(r, LAB25_TAU) for r in LAB25_RECORDS])
    for tau in (Fraction(175, 64), Fraction(1), Fraction(4)):
        assert non_dominated([plot_point(r, tau) for r in LAB25_RECORDS]) == base


def test_one_point_specific_factor_can_change_the_frontier():
    """Exercise 11.7.5: acceptance at 48 requests alone raised to tau = 4 puts 48 on the frontier."""
    taus = [LAB25_TAU] * 5
    taus[3] = Fraction(4)
    assert frontier_with_taus(LAB25_RECORDS, taus) == [8, 16, 32, 48, 64]


def test_report_reproduces_the_printed_lines_exactly():
    assert lab25_report() == BOOK_LAB25.splitlines()


def test_dominance_needs_strict_improvement():
    a = Point(1, Fraction(1), Fraction(1))
    assert not dominates(a, Point(2, Fraction(1), Fraction(1)))
    assert non_dominated([a, Point(2, Fraction(1), Fraction(1))]) == [1, 2]


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: tau_conditional(3, Fraction(5, 4)), InvalidQuantity),
        (lambda: tau_mean_fraction(-1, 0.5), InvalidQuantity),
        (lambda: tau_conditional(3, float("nan")), InvalidQuantity),
        (lambda: gpu_rate(10, 8, 3.25, cp=0), InvalidQuantity),
        (lambda: user_rate(True, 3.25), InvalidQuantityType),
        (lambda: frontier_with_taus(LAB25_RECORDS, [LAB25_TAU]), InvalidQuantity),
    ],
)
def test_bad_input_is_a_typed_error(call, error):
    with pytest.raises(error):
        call()


def exactly(message):
    return "^" + re.escape(message) + "$"


def test_context_parallelism_divides_the_gpu_rate_not_the_user_rate():
    """Listing 11.10: y = SPS · R · τ / CP. Record (64, 40) at τ = 3.25: x = 130 whatever CP; y = 8320 / CP."""
    record = LAB25_RECORDS[4]
    for cp in (1, 2, 4):
        assert gpu_rate(40, 64, LAB25_TAU, cp=cp) == Fraction(8320, cp)
        assert plot_point(record, LAB25_TAU, cp) == Point(64, Fraction(130), Fraction(8320, cp))


@pytest.mark.parametrize(
    "a, b, a_dominates_b",
    [
        ((2, 1), (1, 1), True),  # better user rate, equal GPU rate
        ((1, 2), (1, 1), True),  # equal user rate, better GPU rate
        ((2, 2), (1, 1), True),  # better on both
        ((1, 1), (1, 1), False),  # equal: not strictly better on either
        ((2, 1), (1, 2), False),  # better on one, worse on the other
        ((1, 1), (2, 1), False),
        ((1, 1), (1, 2), False),
    ],
)
def test_dominance_is_at_least_as_good_on_both_axes_and_strictly_better_on_one(a, b, a_dominates_b):
    """§11.6: "no other tested point is at least as good on both axes and strictly better on one"."""
    pa, pb = Point(1, *map(Fraction, a)), Point(2, *map(Fraction, b))
    assert dominates(pa, pb) is a_dominates_b
    assert (2 in non_dominated([pa, pb])) is not a_dominates_b


def test_a_point_tied_on_one_axis_and_worse_on_the_other_is_off_the_frontier():
    points = [Point(8, Fraction(10), Fraction(5)), Point(16, Fraction(10), Fraction(6)), Point(32, Fraction(9), Fraction(6))]
    assert non_dominated(points) == [16]


def test_the_checks_line_fails_saying_which_check_when_either_check_fails(monkeypatch):
    """The report's last line reads "passed" only when both the prefix expectation and the common-scale frontier check
    hold. Fault injection: the plot script's mean reading in place of the enumeration breaks the prefix check only; a
    point-specific factor at 48 requests (exercise 11.7.5) breaks the frontier check only."""
    base = [8, 16, 32, 64]
    assert lab25_report()[-1] == "Checks: exact prefix expectation and common-scale frontier passed"

    with monkeypatch.context() as m:
        m.setattr(acceptance, "tau_conditional", tau_mean_fraction)
        assert lab25_report()[-1] == f"Checks: FAILED prefix=False common-scale frontier={base} vs {base}"

    real_plot_point = acceptance.plot_point

    def four_at_48_when_conditional(record, tau, cp=1):
        conditional = tau != LAB25_TAU and record.requests == 48
        return real_plot_point(record, Fraction(4) if conditional else tau, cp)

    monkeypatch.setattr(acceptance, "plot_point", four_at_48_when_conditional)
    assert lab25_report()[-1] == f"Checks: FAILED prefix=True common-scale frontier={[8, 16, 32, 48, 64]} vs {base}"


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: user_rate(True, 3.25), InvalidQuantityType, "steps_per_second must be a number, not bool"),
        (lambda: user_rate(40, True), InvalidQuantityType, "tau must be a number, not bool"),
        (lambda: user_rate(40, float("nan")), InvalidQuantity, "tau must be finite, got nan"),
        (lambda: gpu_rate(True, 64, 3.25), InvalidQuantityType, "steps_per_second must be a number, not bool"),
        (lambda: gpu_rate(40, 64, True), InvalidQuantityType, "tau must be a number, not bool"),
        (lambda: gpu_rate(40, -1, 3.25), InvalidQuantity, "requests must be >= 0, got -1"),
        (lambda: gpu_rate(40, 64.0, 3.25), InvalidQuantityType, "requests must be an integer, not float 64.0"),  # type: ignore[arg-type]
        (lambda: gpu_rate(40, 64, 3.25, cp=0), InvalidQuantity, "cp must be >= 1, got 0"),
        (lambda: gpu_rate(40, 64, 3.25, cp=True), InvalidQuantityType, "cp must be an integer, not bool True"),
        (lambda: plot_point(LAB25_RECORDS[0], 3.25, cp=0), InvalidQuantity, "cp must be >= 1, got 0"),
        (lambda: frontier_with_taus(LAB25_RECORDS, [LAB25_TAU]), InvalidQuantity, "1 factors for 5 records"),
        (lambda: frontier_with_taus(LAB25_RECORDS, [LAB25_TAU] * 6), InvalidQuantity, "6 factors for 5 records"),
        (lambda: frontier_with_taus(LAB25_RECORDS, [LAB25_TAU] * 5, cp=0), InvalidQuantity, "cp must be >= 1, got 0"),
        (lambda: tau_mean_fraction(-1, 0.75), InvalidQuantity, "nextn must be >= 0, got -1"),
        (lambda: tau_conditional(-1, 0.75), InvalidQuantity, "nextn must be >= 0, got -1"),
        (lambda: tau_conditional(3.0, 0.75), InvalidQuantityType, "nextn must be an integer, not float 3.0"),  # type: ignore[arg-type]
        (lambda: tau_mean_fraction(3, Fraction(-1, 4)), InvalidQuantity, "acceptance must be in [0, 1], got -1/4"),
        (lambda: tau_conditional(3, -0.25), InvalidQuantity, "acceptance must be in [0, 1], got -1/4"),
        (lambda: tau_conditional(3, Fraction(5, 4)), InvalidQuantity, "acceptance must be <= 1, got 5/4"),
        (lambda: tau_mean_fraction(3, True), InvalidQuantityType, "acceptance must be a number, not bool"),
        (lambda: common_shrink(-1, 0.75), InvalidQuantity, "nextn must be >= 0, got -1"),
        (lambda: common_shrink(LAB25_NEXTN, 2), InvalidQuantity, "acceptance must be <= 1, got 2"),
    ],
)
def test_every_argument_out_of_its_range_is_refused_naming_it(call, error, message):
    with pytest.raises(error, match=exactly(message)):
        call()


def test_every_boundary_value_the_rule_allows_is_accepted():
    """No requests give no GPU throughput; CP = 1 is the least; nextn = 0 or a = 0 leave only the main token (τ = 1);
    a = 1 accepts every draft (τ = 1 + nextn under both readings)."""
    assert gpu_rate(40, 0, LAB25_TAU) == 0 and gpu_rate(40, 64, LAB25_TAU, cp=1) == 8320
    assert tau_mean_fraction(0, Fraction(3, 4)) == tau_conditional(0, Fraction(3, 4)) == 1
    assert tau_mean_fraction(3, 0) == tau_conditional(3, 0) == 1
    assert tau_mean_fraction(3, 1) == tau_conditional(3, 1) == 4
    assert frontier_with_taus([], []) == []

"""spec.acceptance: lab 25's records, frontier, the two tau readings by exact enumeration, the published point."""

from fractions import Fraction

import pytest

from kvproof.spec.acceptance import (
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
    assert [
        accepted_prefix(p) for p in ((True, True, False), (False, True, True), (True, False, True), (True,) * 3)
    ] == [2, 0, 1, 3]


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

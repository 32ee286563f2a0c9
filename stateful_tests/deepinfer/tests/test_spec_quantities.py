"""The domain checks of the DeepInfer rules' numbers (spec/quantities.py).

The laws: a count is an integer (any ``numbers.Integral``, numpy's included, returned as ``int``) at
or above its minimum, never a bool, float or string; a rational is exact (a float is the decimal it
prints as, a string is read by ``Fraction``), never a bool, NaN, infinity or another type; a range
is closed unless its low end is open, with no upper end shown as ``inf``. Every refusal is typed
(``InvalidQuantityType`` for the wrong kind of value, ``InvalidQuantity`` for a value out of its
domain) and its message names the argument, what was expected, and what was given.

Source: docs/sources.md#deepinfer-11-2-1; docs/sources.md#state-roundtrip-4 (exact ``Fraction`` arithmetic, u = 4/5).
"""

from fractions import Fraction

import numpy as np
import pytest

from kvproof.spec.deepinfer_errors import InvalidQuantity, InvalidQuantityType
from kvproof.spec.quantities import as_count, as_rational, in_range


def test_a_count_is_any_integral_at_or_above_its_minimum_returned_as_an_int():
    assert as_count("n", 0) == 0 and as_count("n", 3, minimum=3) == 3
    counted = as_count("n", np.int64(7))
    assert counted == 7 and type(counted) is int


@pytest.mark.parametrize(
    ("value", "minimum", "error", "message"),
    [
        (True, 0, InvalidQuantityType, r"^n must be an integer, not bool True$"),
        (2.0, 0, InvalidQuantityType, r"^n must be an integer, not float 2\.0$"),
        ("2", 0, InvalidQuantityType, r"^n must be an integer, not str '2'$"),
        (-1, 0, InvalidQuantity, r"^n must be >= 0, got -1$"),
        (2, 3, InvalidQuantity, r"^n must be >= 3, got 2$"),
    ],
)
def test_a_count_of_the_wrong_kind_or_below_its_minimum_is_refused_naming_it(value, minimum, error, message):
    with pytest.raises(error, match=message):
        as_count("n", value, minimum=minimum)


def test_a_rational_is_exact_a_float_the_decimal_it_prints_as():
    assert as_rational("u", 3) == 3 and as_rational("u", Fraction(1, 3)) == Fraction(1, 3)
    assert as_rational("u", 0.8) == Fraction(4, 5) and as_rational("u", "7/8") == Fraction(7, 8)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (False, InvalidQuantityType, r"^u must be a number, not bool$"),
        (float("nan"), InvalidQuantity, r"^u must be finite, got nan$"),
        (float("-inf"), InvalidQuantity, r"^u must be finite, got -inf$"),
        ("abc", InvalidQuantity, r"^u: 'abc' is not an exact rational \(Invalid literal for Fraction: 'abc'\)$"),
        ("1/0", InvalidQuantity, r"^u: '1/0' is not an exact rational \(Fraction\(1, 0\)\)$"),
        (None, InvalidQuantityType, r"^u must be an int, Fraction, float or str, not NoneType$"),
        (b"1", InvalidQuantityType, r"^u must be an int, Fraction, float or str, not bytes$"),
    ],
)
def test_a_rational_of_the_wrong_kind_or_not_exact_is_refused_naming_it(value, error, message):
    with pytest.raises(error, match=message):
        as_rational("u", value)


def test_a_range_takes_its_closed_ends_and_refuses_an_open_one():
    assert in_range("u", Fraction(0), 0, 1) == 0 and in_range("u", Fraction(1), 0, 1) == 1
    assert in_range("u", Fraction(10**9), 0, None) == 10**9
    with pytest.raises(InvalidQuantity, match=r"^u must be in \(0, 1\], got 0$"):
        in_range("u", Fraction(0), 0, 1, low_open=True)


@pytest.mark.parametrize(
    ("value", "low", "high", "low_open", "message"),
    [
        (Fraction(-1, 2), 0, 1, False, r"^u must be in \[0, 1\], got -1/2$"),
        (Fraction(-1), 0, None, False, r"^u must be in \[0, inf\], got -1$"),
        (Fraction(0), 0, None, True, r"^u must be in \(0, inf\], got 0$"),
        (Fraction(3, 2), 0, 1, False, r"^u must be <= 1, got 3/2$"),
        (Fraction(5), None, 4, False, r"^u must be <= 4, got 5$"),
    ],
)
def test_a_value_outside_its_range_is_refused_naming_the_range(value, low, high, low_open, message):
    with pytest.raises(InvalidQuantity, match=message):
        in_range("u", value, low, high, low_open=low_open)

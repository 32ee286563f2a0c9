"""Domain checks for the numbers the DeepInfer rules take: counts and exact rationals.

The chapter's arithmetic is exact (token counts, block sizes, rates such as u = 0.8), so the
rules take integers and ``fractions.Fraction``. A float is accepted only as the decimal it
prints as (``0.8`` means 4/5, not the binary double nearest 0.8), so a user who writes
``u=0.8`` gets the book's arithmetic; NaN and infinities are rejected.

Source: docs/sources.md#deepinfer-11-2-1 (the capacity model), docs/sources.md#state-roundtrip-4 ("exact ``Fraction``
arithmetic (u = 4/5)").
"""

from __future__ import annotations

import math
import numbers
import operator
from fractions import Fraction

from .deepinfer_errors import InvalidQuantity, InvalidQuantityType
from .primitives import is_int


def as_count(name: str, value: object, minimum: int = 0) -> int:
    """Return ``value`` as an int >= ``minimum``; reject bools, floats and strings by type."""
    if not is_int(value, numbers.Integral):
        raise InvalidQuantityType(f"{name} must be an integer, not {type(value).__name__} {value!r}")
    value = operator.index(value)
    if value < minimum:
        raise InvalidQuantity(f"{name} must be >= {minimum}, got {value}")
    return value


def as_rational(name: str, value: object) -> Fraction:
    """Return ``value`` as an exact Fraction: ints and Fractions as they are, a float as the decimal
    it prints as, a string by ``Fraction(str)``; reject bools, NaN and infinities."""
    if isinstance(value, bool):
        raise InvalidQuantityType(f"{name} must be a number, not bool")
    if isinstance(value, numbers.Rational):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidQuantity(f"{name} must be finite, got {value!r}")
        return Fraction(repr(value))
    if isinstance(value, str):
        try:
            result = Fraction(value)
        except (ValueError, ZeroDivisionError) as exc:
            raise InvalidQuantity(f"{name}: {value!r} is not an exact rational ({exc})") from None
        return result
    raise InvalidQuantityType(f"{name} must be an int, Fraction, float or str, not {type(value).__name__}")


def in_range(
    name: str, value: Fraction, low: Fraction | int | None, high: Fraction | int | None, low_open: bool = False
) -> Fraction:
    """Return ``value`` if it lies in [low, high] (or (low, high] when ``low_open``); else raise."""
    if low is not None and (value < low or (low_open and value == low)):
        bracket = "(" if low_open else "["
        raise InvalidQuantity(f"{name} must be in {bracket}{low}, {high if high is not None else 'inf'}], got {value}")
    if high is not None and value > high:
        raise InvalidQuantity(f"{name} must be <= {high}, got {value}")
    return value

"""spec.capacity: lab 23's capacity lines in exact arithmetic, and what h means.

Besides the lab's numbers: every argument out of its domain is refused by a typed error naming
it, and every boundary value the rule allows is accepted (0 for λ, L, O and h, 1 for h and u, any
positive rate); a request that hits its whole prompt, or a single token, counts; the report shows
any reused fraction as its exact percentage.
"""

import math
import re
from fractions import Fraction

import pytest

from kvproof.spec import capacity
from kvproof.spec.capacity import (
    LAB23_WORKLOAD,
    decode_demand,
    decode_gpus,
    lab23_capacity_report,
    prefill_demand,
    prefill_gpus,
    request_hit_rate,
    reused_token_fraction,
    workload,
)
from kvproof.spec.deepinfer_errors import InvalidQuantity, InvalidQuantityType
from kvproof.stateful_tests.deepinfer.golden import BOOK_LAB23_CAPACITY


@pytest.mark.parametrize("h, p, d, p_exact", [(0, 3, 3, Fraction(5, 2)), (Fraction(3, 4), 1, 3, Fraction(5, 8))])
def test_lab23_capacity(h, p, d, p_exact):
    w = workload(reuse_fraction=h, **LAB23_WORKLOAD)
    assert (prefill_gpus(w), decode_gpus(w)) == (p, d)
    assert prefill_demand(w) == p_exact and decode_demand(w) == Fraction(5, 2)


def test_report_reproduces_the_printed_lines_exactly():
    assert lab23_capacity_report() == BOOK_LAB23_CAPACITY.splitlines()


def test_output_work_is_256_tokens_per_second_whatever_the_reuse():
    for h in (0, Fraction(3, 4), 1):
        w = workload(reuse_fraction=h, **LAB23_WORKLOAD)
        assert w.arrival_rate * w.output_length == 256 and decode_gpus(w) == 3


def test_a_float_written_by_the_user_means_its_decimal():
    assert workload(4, 1024, 64, 0.75, 2048, 128, 0.8).utilisation == Fraction(4, 5)


def test_exact_integer_demand_is_not_rounded_up():
    """1000 tokens/s at 30% uncached over 0.6 * 100: exactly 5 GPUs. Binary floats say 5.000000000000001 -> 6."""
    w = workload(1, 1000, 1, 0.7, 100, 1, 0.6)
    assert prefill_demand(w) == 5 and prefill_gpus(w) == 5
    assert math.ceil(1 * 1000 * (1 - 0.7) / (0.6 * 100)) == 6  # what float arithmetic would have printed


def test_h_is_token_reuse_not_request_hit_rate():
    """§11.2.1: one hundred requests each hitting ten tokens of a thousand: 100% of requests, 1% of tokens."""
    requests = [(1000, 10)] * 100
    assert request_hit_rate(requests) == 1
    assert reused_token_fraction(requests) == Fraction(1, 100)


def test_same_request_hit_rate_different_token_demand():
    """Exercise 11.7.4: equal request hit rates, different uncached-token demand."""
    a, b = [(1000, 900), (1000, 0)], [(1000, 10), (1000, 0)]
    assert request_hit_rate(a) == request_hit_rate(b) == Fraction(1, 2)
    assert reused_token_fraction(a) != reused_token_fraction(b)


@pytest.mark.parametrize(
    "field, value, error",
    [
        ("reuse_fraction", Fraction(3, 2), InvalidQuantity),
        ("reuse_fraction", -0.1, InvalidQuantity),
        ("utilisation", 0, InvalidQuantity),
        ("utilisation", 1.5, InvalidQuantity),
        ("prefill_rate", 0, InvalidQuantity),
        ("arrival_rate", float("nan"), InvalidQuantity),
        ("arrival_rate", float("inf"), InvalidQuantity),
        ("input_length", True, InvalidQuantityType),
        ("input_length", [1024], InvalidQuantityType),
        ("decode_rate", "abc", InvalidQuantity),
    ],
)
def test_bad_input_is_a_typed_error(field, value, error):
    args = dict(LAB23_WORKLOAD, reuse_fraction=0)
    args[field] = value
    with pytest.raises(error):
        workload(**args)


def test_bad_request_lists_are_typed_errors():
    with pytest.raises(InvalidQuantity):
        reused_token_fraction([(10, 11)])
    with pytest.raises(InvalidQuantity):
        reused_token_fraction([])
    with pytest.raises(InvalidQuantity):
        request_hit_rate([])


def exactly(message):
    return "^" + re.escape(message) + "$"


BOOK_ARGS = dict(LAB23_WORKLOAD, reuse_fraction=0)
RATIONAL_ARGS = tuple(BOOK_ARGS)

REFUSALS = [  # field, value, error, exact message: λ, L, O in [0, inf]; h in [0, 1]; vP, vD in (0, inf]; u in (0, 1]
    ("arrival_rate", -1, InvalidQuantity, "arrival_rate must be in [0, inf], got -1"),
    ("input_length", Fraction(-1, 2), InvalidQuantity, "input_length must be in [0, inf], got -1/2"),
    ("output_length", -64, InvalidQuantity, "output_length must be in [0, inf], got -64"),
    ("reuse_fraction", -0.1, InvalidQuantity, "reuse_fraction must be in [0, 1], got -1/10"),
    ("reuse_fraction", Fraction(3, 2), InvalidQuantity, "reuse_fraction must be <= 1, got 3/2"),
    ("prefill_rate", 0, InvalidQuantity, "prefill_rate must be in (0, inf], got 0"),
    ("prefill_rate", -2048, InvalidQuantity, "prefill_rate must be in (0, inf], got -2048"),
    ("decode_rate", 0, InvalidQuantity, "decode_rate must be in (0, inf], got 0"),
    ("decode_rate", -128, InvalidQuantity, "decode_rate must be in (0, inf], got -128"),
    ("utilisation", 0, InvalidQuantity, "utilisation must be in (0, 1], got 0"),
    ("utilisation", -0.8, InvalidQuantity, "utilisation must be in (0, 1], got -4/5"),
    ("utilisation", 1.5, InvalidQuantity, "utilisation must be <= 1, got 3/2"),
] + [(field, True, InvalidQuantityType, f"{field} must be a number, not bool") for field in RATIONAL_ARGS]


@pytest.mark.parametrize("field, value, error, message", REFUSALS, ids=[f"{f}={v!r}" for f, v, _, _ in REFUSALS])
def test_every_argument_out_of_its_range_is_refused_naming_it(field, value, error, message):
    with pytest.raises(error, match=exactly(message)):
        workload(**dict(BOOK_ARGS, **{field: value}))


@pytest.mark.parametrize(
    "field, value",
    [
        ("arrival_rate", 0),
        ("arrival_rate", Fraction(1, 2)),
        ("input_length", 0),
        ("input_length", Fraction(1, 2)),
        ("output_length", 0),
        ("output_length", Fraction(1, 2)),
        ("reuse_fraction", 0),
        ("reuse_fraction", 1),
        ("prefill_rate", Fraction(1, 2)),
        ("decode_rate", Fraction(1, 2)),
        ("utilisation", 1),
        ("utilisation", Fraction(1, 1000)),
    ],
)
def test_every_boundary_value_the_rule_allows_is_accepted(field, value):
    """Closed bounds admit 0 (no traffic, empty prompts or answers, no reuse) and 1 (all reused, full utilisation);
    the open bounds of the rates and u admit every positive value, however small."""
    w = workload(**dict(BOOK_ARGS, **{field: value}))
    assert getattr(w, field) == value
    assert prefill_gpus(w) >= 0 and decode_gpus(w) >= 0


def test_zero_traffic_needs_no_gpu():
    """λ = 0 makes both demands 0: ceil(0) = 0 GPU equivalents, not one."""
    w = workload(**dict(BOOK_ARGS, arrival_rate=0))
    assert (prefill_demand(w), decode_demand(w), prefill_gpus(w), decode_gpus(w)) == (0, 0, 0, 0)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: reused_token_fraction([(-1, 0)]), InvalidQuantity, "prompt_tokens must be >= 0, got -1"),
        (lambda: reused_token_fraction([(10, -1)]), InvalidQuantity, "hit_tokens must be >= 0, got -1"),
        (lambda: reused_token_fraction([(1.0, 0)]), InvalidQuantityType, "prompt_tokens must be an integer, not float 1.0"),  # type: ignore[list-item]
        (lambda: reused_token_fraction([(10, True)]), InvalidQuantityType, "hit_tokens must be an integer, not bool True"),
        (lambda: reused_token_fraction([(10, 11)]), InvalidQuantity, "hit 11 exceeds prompt 10"),
        (lambda: reused_token_fraction([]), InvalidQuantity, "no input tokens: the reused fraction is undefined"),
        (lambda: reused_token_fraction([(0, 0)]), InvalidQuantity, "no input tokens: the reused fraction is undefined"),
        (lambda: request_hit_rate([(-1, 0)]), InvalidQuantity, "prompt_tokens must be >= 0, got -1"),
        (lambda: request_hit_rate([(10, -1)]), InvalidQuantity, "hit_tokens must be >= 0, got -1"),
        (lambda: request_hit_rate([(1.0, 0)]), InvalidQuantityType, "prompt_tokens must be an integer, not float 1.0"),  # type: ignore[list-item]
        (lambda: request_hit_rate([(10, True)]), InvalidQuantityType, "hit_tokens must be an integer, not bool True"),
        (lambda: request_hit_rate([]), InvalidQuantity, "no requests: the hit rate is undefined"),
    ],
)
def test_every_bad_request_list_is_refused_saying_why(call, error, message):
    with pytest.raises(error, match=exactly(message)):
        call()


def test_a_hit_may_cover_the_whole_prompt_and_one_token_is_a_hit():
    """h counts hit tokens up to the whole prompt (h = 1); a request with any hit, even one token, is a hit."""
    assert reused_token_fraction([(10, 10)]) == 1
    assert reused_token_fraction([(0, 0), (10, 0)]) == 0  # an empty prompt adds nothing to either count
    assert request_hit_rate([(10, 1), (10, 0)]) == Fraction(1, 2)
    assert request_hit_rate([(0, 0)]) == 0


def test_the_report_shows_each_reused_fraction_as_its_exact_percentage(monkeypatch):
    """The lab's header and line format for fractions it does not print: 1/8 reads 12.5% (P = ceil(2.1875) = 3),
    1 reads 100% (nothing to prefill: P = 0); integral percentages print without a decimal point."""
    monkeypatch.setattr(capacity, "LAB23_REUSE", (Fraction(1, 8), Fraction(1), Fraction(3, 4)))
    assert lab23_capacity_report() == [
        BOOK_LAB23_CAPACITY.splitlines()[0],
        "reused input fraction 12.5%: P=3, D=3",
        "reused input fraction 100%: P=0, D=3",
        "reused input fraction 75%: P=1, D=3",
    ]

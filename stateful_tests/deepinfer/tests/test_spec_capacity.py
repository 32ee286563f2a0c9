"""spec.capacity: lab 23's capacity lines in exact arithmetic, and what h means."""

import math
from fractions import Fraction

import pytest

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

"""spec.hit_length: lab 24's table, its 69,666-case exhaustive check, and the laws' negative controls."""

import pytest

from kvproof.spec.deepinfer_errors import InvalidQuantity, InvalidQuantityType
from kvproof.spec.hit_length import (
    BLOCK,
    RESERVE,
    HitCase,
    HitLengths,
    aligned_candidates,
    hit_by_search,
    hit_law_violations,
    hit_lengths,
    lab24_check,
    lab24_domain,
)
from kvproof.stateful_tests.deepinfer.mutants import HIT_MUTANTS

# Lab 24 as printed: L, block hit L1, compute hit with SWA present / missing (full availability, C = L).
BOOK_TABLE = [
    (128, 0, 0, 0),
    (261, 0, 0, 0),
    (262, 128, 128, 0),
    (390, 256, 256, 128),
    (902, 768, 768, 640),
    (1024, 768, 768, 640),
]


@pytest.mark.parametrize("length, block_hit, present, missing", BOOK_TABLE)
def test_lab24_table_row(length, block_hit, present, missing):
    assert hit_lengths(length, length, True) == HitLengths(block_hit, present)
    assert hit_lengths(length, length, False) == HitLengths(block_hit, missing)


def test_full_availability_is_any_extent_past_the_cap():
    for length, _block_hit, present, missing in BOOK_TABLE:
        for cached in (max(0, length - RESERVE), length, 10_000):
            assert hit_lengths(length, cached, True).compute_hit == present
            assert hit_lengths(length, cached, False).compute_hit == missing


def test_the_domain_has_69666_cases_and_every_law_holds_on_each():
    total, broken, failing = lab24_check()
    assert total == 69_666 == 2049 * 17 * 2
    assert broken == {} and failing == 0


def test_worked_example_902():
    """§11.4: cap 768; with SWA 134 new positions from 768; without, [640, 768) rebuilds SWA only."""
    with_swa, without = hit_lengths(902, 902, True), hit_lengths(902, 902, False)
    assert 902 - RESERVE == 768 == with_swa.block_hit == with_swa.compute_hit
    assert 902 - with_swa.compute_hit == 134
    assert (without.compute_hit, without.block_hit, without.rebuilt) == (640, 768, 128)


def test_no_prompt_shorter_than_262_has_a_hit():
    assert RESERVE + BLOCK == 262
    assert all(hit_lengths(n, 10_000, s).block_hit == 0 for n in range(262) for s in (False, True))
    assert hit_lengths(262, 10_000, True).block_hit == 128


def test_search_enumerates_aligned_candidates_independently():
    assert aligned_candidates(902, 902) == [0, 128, 256, 384, 512, 640, 768]
    assert hit_by_search(HitCase(902, 500, False)) == HitLengths(384, 256)
    assert hit_by_search(HitCase(902, 500, True)) == hit_lengths(902, 500, True)


def test_domain_is_exactly_the_inferred_one():
    cases = list(lab24_domain())
    assert cases[0] == HitCase(0, 0, False) and cases[-1] == HitCase(2048, 2048, True)
    assert {c.cached for c in cases} == set(range(0, 2049, 128))


@pytest.mark.parametrize("rule", HIT_MUTANTS, ids=lambda f: f.__name__)
def test_every_broken_hit_rule_breaks_a_lab24_law(rule):
    total, broken, failing = lab24_check(rule=rule)
    assert total == 69_666 and broken and failing, f"{rule.__name__} passes every lab 24 law"


def test_the_laws_name_what_breaks():
    from kvproof.stateful_tests.deepinfer.mutants import hit_always_backoff, hit_unaligned

    assert "backoff" in hit_law_violations(HitCase(902, 902, True), rule=hit_always_backoff)
    assert "alignment" in hit_law_violations(HitCase(902, 700, True), rule=hit_unaligned)


@pytest.mark.parametrize(
    "args, error",
    [
        ((-1, 0, True), InvalidQuantity),
        ((10, -5, True), InvalidQuantity),
        ((10.0, 0, True), InvalidQuantityType),
        ((True, 0, True), InvalidQuantityType),
        ((10, "3", True), InvalidQuantityType),
        ((10, 3, 1), InvalidQuantityType),
    ],
)
def test_bad_input_is_a_typed_error(args, error):
    with pytest.raises(error):
        hit_lengths(*args)

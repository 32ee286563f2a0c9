"""spec.hit_length: lab 24's table, its 69,666-case exhaustive check, and the laws' negative controls.

Besides the lab's numbers: the report prints the book's lines exactly, and when a law breaks its last line
says which laws and how often; with block 1 the block hit is exactly min(max(0, L - reserve), C); the
aligned-candidate search and the lab 24 laws honour the reserve and block they are given, not only 134 and
128; each law is named exactly when it breaks and no other is; the check counts cases and law breaks
exactly; the domain's cached extents never pass the largest length; every argument out of its domain is
refused by a typed error naming it, and the least values the rule allows are accepted.
"""

import re

import pytest

from kvproof.spec import hit_length
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
    lab24_report,
)
from kvproof.stateful_tests.deepinfer.golden import BOOK_LAB24
from kvproof.stateful_tests.deepinfer.mutants import (
    HIT_MUTANTS,
    hit_always_backoff,
    hit_ignores_cached,
    hit_no_backoff,
    hit_reserve_133,
    hit_unaligned,
)

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


def exactly(message):
    return "^" + re.escape(message) + "$"


@pytest.mark.parametrize(
    "args, kwargs, error, message",
    [
        ((-1, 0, True), {}, InvalidQuantity, "length must be >= 0, got -1"),
        ((10.0, 0, True), {}, InvalidQuantityType, "length must be an integer, not float 10.0"),
        ((10, -5, True), {}, InvalidQuantity, "cached must be >= 0, got -5"),
        ((10, "3", True), {}, InvalidQuantityType, "cached must be an integer, not str '3'"),
        ((10, 3, True), {"reserve": -1}, InvalidQuantity, "reserve must be >= 0, got -1"),
        ((10, 3, True), {"reserve": 1.5}, InvalidQuantityType, "reserve must be an integer, not float 1.5"),
        ((10, 3, True), {"block": 0}, InvalidQuantity, "block must be >= 1, got 0"),
        ((10, 3, True), {"block": True}, InvalidQuantityType, "block must be an integer, not bool True"),
        ((10, 3, 1), {}, InvalidQuantityType, "has_swa must be a bool, not int 1"),
        ((10, 3, None), {}, InvalidQuantityType, "has_swa must be a bool, not NoneType None"),
    ],
)
def test_every_argument_out_of_its_range_is_refused_naming_it(args, kwargs, error, message):
    with pytest.raises(error, match=exactly(message)):
        hit_lengths(*args, **kwargs)


def test_every_boundary_value_the_rule_allows_is_accepted():
    """An empty prompt, an empty cache, no reserve and blocks of one token are all in the domain. Hand: L = 5, C = 3,
    reserve 0, block 1: cap = 5, block hit = min(5, 3) = 3, and without SWA computation restarts one token back, at 2."""
    assert hit_lengths(0, 0, False, reserve=0, block=1) == HitLengths(0, 0)
    assert hit_lengths(5, 3, True, reserve=0, block=1) == HitLengths(3, 3)
    assert hit_lengths(5, 3, False, reserve=0, block=1) == HitLengths(3, 2)


@pytest.mark.parametrize(
    "length, cached, reserve, block_hit",
    [
        (4, 10, 5, 0),  # L < reserve: cap = max(0, -1) = 0
        (5, 10, 5, 0),  # L = reserve: cap = 0, nothing is left to reuse
        (6, 10, 5, 1),  # cap = 1
        (9, 2, 5, 2),  # cap = 4, the cached extent 2 binds
        (0, 10, 0, 0),  # no prompt, no hit
        (7, 10, 0, 7),  # no reserve: the whole prompt
    ],
)
def test_with_block_one_the_block_hit_is_the_cap_bounded_by_the_cache(length, cached, reserve, block_hit):
    """§11.4 with BLOCK = 1 (no rounding): L1 = min(max(0, L - reserve), C); H = L1 with SWA, max(0, L1 - 1) without.
    The cap is clamped at 0, never at 1: a prompt no longer than the reserve reuses nothing."""
    assert hit_lengths(length, cached, True, reserve=reserve, block=1) == HitLengths(block_hit, block_hit)
    assert hit_lengths(length, cached, False, reserve=reserve, block=1) == HitLengths(block_hit, max(0, block_hit - 1))


def test_search_honours_the_reserve_and_block_it_is_given():
    """L = 10, C = 10, reserve 3, block 2: the candidates are the even k with k + 3 <= 10, i.e. 0, 2, 4, 6; the
    formula agrees: cap 7, 7 // 2 * 2 = 6. With one candidate above 0 (L = 5), the search backs off to 0."""
    assert aligned_candidates(10, 10, reserve=3, block=2) == [0, 2, 4, 6]
    assert hit_by_search(HitCase(10, 10, True), reserve=3, block=2) == HitLengths(6, 6)
    assert hit_by_search(HitCase(10, 10, False), reserve=3, block=2) == HitLengths(6, 4)
    assert hit_lengths(10, 10, False, reserve=3, block=2) == HitLengths(6, 4)
    assert hit_by_search(HitCase(5, 10, False), reserve=3, block=2) == HitLengths(2, 0)


@pytest.mark.parametrize("reserve, block, max_length", [(2, 1, 12), (3, 2, 16), (200, 256, 600)])
def test_every_law_holds_for_any_reserve_and_block(reserve, block, max_length):
    """The laws are stated for every reserve >= 0 and block >= 1 (``proofs/`` proves them for all integers), not
    only 134 and 128: on the whole small domain (L <= max_length, C a multiple of block, SWA both ways) no law
    breaks. Reserve 200 with block 256 is the case where the book's 134 and 128 would give a different hit."""
    broken = {
        case: bad for case in lab24_domain(max_length, block) if (bad := hit_law_violations(case, reserve=reserve, block=block))
    }
    assert broken == {}


def reserve_one_short(length, cached, has_swa, *, reserve=RESERVE, block=BLOCK):
    """Hit rule broken: the cap leaves one position fewer than the reserve (hit_reserve_133 for any reserve)."""
    return hit_reserve_133(length, cached, has_swa, reserve=reserve, block=block)


def backoff_one_short(length, cached, has_swa, *, reserve=RESERVE, block=BLOCK):
    """Hit rule broken: without SWA computation backs off one position less than a block."""
    h = hit_lengths(length, cached, True, reserve=reserve, block=block)
    return HitLengths(h.block_hit, h.block_hit if has_swa else max(0, h.block_hit - (block - 1)))


def backoff_unclamped(length, cached, has_swa, *, reserve=RESERVE, block=BLOCK):
    """Hit rule broken: the back-off is not clamped at 0, so a zero hit restarts computation a block before 0."""
    h = hit_lengths(length, cached, True, reserve=reserve, block=block)
    return HitLengths(h.block_hit, h.block_hit if has_swa else h.block_hit - block)


def cap_as_distance(length, cached, has_swa, *, reserve=RESERVE, block=BLOCK):
    """Hit rule broken: the cap is |L - reserve| instead of max(0, L - reserve), so it shrinks as L grows to reserve."""
    return hit_lengths(abs(length - reserve), cached, has_swa, reserve=0, block=block)


@pytest.mark.parametrize(
    "rule, case, reserve, block, laws",
    [
        # correct rule: (768, 640) at the worked example, nothing breaks
        (hit_lengths, HitCase(902, 902, False), RESERVE, BLOCK, []),
        # (128, 128) where the search gives (128, 0): no back-off with a 128 hit and SWA missing
        (hit_no_backoff, HitCase(262, 262, False), RESERVE, BLOCK, ["search", "backoff"]),
        # block 1: (1, 1) where the search gives (1, 0): a hit of one block (= 1) must back off too
        (hit_no_backoff, HitCase(1, 1, False), 0, 1, ["search", "backoff"]),
        # (768, 640) with SWA present where the search gives (768, 768)
        (hit_always_backoff, HitCase(902, 902, True), RESERVE, BLOCK, ["search", "backoff"]),
        # 261 - 133 = 128: a hit of 128 past the cap 127, on a prompt shorter than 262
        (reserve_one_short, HitCase(261, 261, True), RESERVE, BLOCK, ["search", "bounds", "short"]),
        # reserve 2, block 1, L = 2: cap 0 but the rule gives (1, 1); 2 < 2 + 1 is short
        (reserve_one_short, HitCase(2, 5, True), 2, 1, ["search", "bounds", "short"]),
        # (768, 768) past the cached 500; the search gives (384, 384)
        (hit_ignores_cached, HitCase(902, 500, True), RESERVE, BLOCK, ["search", "bounds"]),
        # (700, 700): min(768, 700) not rounded down to 640
        (hit_unaligned, HitCase(902, 700, True), RESERVE, BLOCK, ["search", "alignment"]),
        # (768, 641): the block hit is aligned, the compute hit 641 = 5 * 128 + 1 is not, and 768 - 641 = 127 != 128
        (backoff_one_short, HitCase(902, 902, False), RESERVE, BLOCK, ["search", "alignment", "backoff"]),
        # (0, -128): a back-off with no hit, below 0
        (backoff_unclamped, HitCase(100, 100, False), RESERVE, BLOCK, ["search", "bounds", "backoff"]),
        # reserve 1, block 1: L = 0 gives cap |0 - 1| = 1, hit (1, 0); L = 1 gives (0, 0), right but smaller
        (cap_as_distance, HitCase(1, 5, False), 1, 1, ["monotone"]),
    ],
)
def test_each_broken_law_is_named_and_no_other(rule, case, reserve, block, laws):
    """``hit_law_violations`` lists, in its order (search, bounds, alignment, backoff, monotone, short), exactly the
    laws the rule's answer breaks; the hand computation of each case is in its comment."""
    assert hit_law_violations(case, reserve=reserve, block=block, rule=rule) == laws


def test_the_check_counts_cases_and_law_breaks_exactly():
    """L <= 262, C in {0, 128, 256}, SWA both ways: 263 * 3 * 2 = 1578 cases. Never backing off breaks only at
    L = 262 with C = 128 or 256 and SWA missing: (128, 128) instead of (128, 0), two cases each breaking two laws."""
    assert lab24_check(262) == (1578, {}, 0)
    assert lab24_check(262, rule=hit_no_backoff) == (1578, {"search": 2, "backoff": 2}, 2)


def test_the_domain_never_passes_the_largest_length():
    """Cached extents are the multiples of the block up to max_length inclusive: with block 1 and max_length 1 the
    domain is L, C in {0, 1}, SWA both ways (8 cases); with max_length 127 < 128 the only extent is 0."""
    assert list(lab24_domain(1, 1)) == [HitCase(n, c, s) for n in (0, 1) for c in (0, 1) for s in (False, True)]
    assert {c.cached for c in lab24_domain(127)} == {0} and len(list(lab24_domain(127))) == 128 * 2


def test_report_reproduces_the_printed_lines_exactly():
    """§11.4 OUTPUT: the two header lines, the six rows of the table at C = L, and the checks line."""
    assert lab24_report() == BOOK_LAB24.splitlines()


def test_the_checks_line_fails_naming_each_broken_law_with_its_count(monkeypatch):
    """The last line reads as the book's only when every law holds. Fault injection: the rule that never backs off
    in place of ``hit_lengths`` (the table then shows the SWA-present hit in the missing column too), checked on
    L <= 262 to stay fast: the two cases at L = 262 (C = 128, 256, SWA missing) each break search and backoff,
    listed in name order."""
    real_check = hit_length.lab24_check
    monkeypatch.setattr(hit_length, "hit_lengths", hit_no_backoff)
    monkeypatch.setattr(hit_length, "lab24_check", lambda: real_check(262))
    book = BOOK_LAB24.splitlines()
    assert lab24_report() == [
        *book[:2],
        "128   0                 0 / 0",
        "261   0                 0 / 0",
        "262   128             128 / 128",
        "390   256             256 / 256",
        "902   768             768 / 768",
        "1024  768             768 / 768",
        "Checks: 1578 cases; FAILED backoff=2, search=2",
    ]

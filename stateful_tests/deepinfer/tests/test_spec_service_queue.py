"""spec.service_queue: lab 23's five printed lines, the inferred decode rule, the chapter's claims.

Besides the lab's numbers: the trace records each request's decode worker (the one free earliest,
ties to the lower index, or the prefill rank under "same-rank"); every worker is free from time 0,
so without matching cost prefill starts at 0, and a request with nothing to prefill, match or
transfer starts decoding at 0.
"""

from dataclasses import replace

import pytest

from kvproof.spec.deepinfer_errors import InvalidQuantity, InvalidQuantityType
from kvproof.spec.service_queue import LAB23_CASES, ServiceConfig, last_completion, simulate
from kvproof.stateful_tests.deepinfer.golden import BOOK_LAB23_SERVICE

BOOK = {  # case: (P ends, D ends), as printed
    "local affinity": ([3, 5, 7, 9], [8, 10, 12, 14]),
    "shared cache": ([3, 3, 5, 5], [8, 8, 12, 12]),
    "shared, no hits": ([9, 9, 17, 17], [14, 14, 22, 22]),
    "shared, slower handoff": ([3, 3, 5, 5], [10, 10, 14, 14]),
    "affinity, slower handoff": ([3, 5, 7, 9], [10, 12, 14, 16]),
}


@pytest.mark.parametrize("name, config", LAB23_CASES, ids=[n for n, _ in LAB23_CASES])
def test_lab23_case(name, config):
    trace = simulate(config)
    assert (list(trace.prefill_end), list(trace.decode_end)) == BOOK[name]


def test_report_reproduces_the_printed_lines_exactly():
    from kvproof.spec.service_queue import lab23_report

    assert lab23_report() == BOOK_LAB23_SERVICE.splitlines()


def test_decode_rule_is_forced_same_rank_decode_does_not_reproduce_the_book():
    """Negative control of the inference: decode on the prefill rank's worker gives [8, 12, 16, 20]."""
    from kvproof.spec.service_queue import lab23_report

    affinity = simulate(ServiceConfig(shared=False, decode_policy="same-rank"))
    assert list(affinity.decode_end) == [8, 12, 16, 20]
    assert lab23_report("same-rank") != BOOK_LAB23_SERVICE.splitlines()


def test_chapter_claims():
    """Sharing saves two units at both handoff costs (14 vs 12, 16 vs 14); the shared cache with the slow
    handoff is no earlier than affinity with the fast one; no hits moves the last completion 12 -> 22."""
    by = dict(LAB23_CASES)
    assert (last_completion(by["local affinity"]), last_completion(by["shared cache"])) == (14, 12)
    assert (last_completion(by["affinity, slower handoff"]), last_completion(by["shared, slower handoff"])) == (16, 14)
    assert last_completion(by["shared, slower handoff"]) >= last_completion(by["local affinity"])
    assert last_completion(by["shared, no hits"]) == 22
    # the last answer arrives two units earlier, not four: prefill saved four, decode absorbed two
    assert max(simulate(by["local affinity"]).prefill_end) - max(simulate(by["shared cache"]).prefill_end) == 4


def test_prefill_follows_listing_11_3():
    trace = simulate(ServiceConfig(shared=True))
    assert trace.prefill_rank == (0, 1, 0, 1) and trace.prefill_start == (1, 1, 3, 3)
    assert simulate(ServiceConfig(shared=False)).prefill_rank == (0, 0, 0, 0)


def test_one_decode_worker_absorbs_the_prefill_saving():
    """Exercise 11.7.1: with one decode worker, local and shared finish together."""
    one = dict(decode_workers=1)
    assert last_completion(ServiceConfig(shared=False, **one)) == last_completion(ServiceConfig(shared=True, **one)) == 20


@pytest.mark.parametrize(
    "change, error",
    [
        (dict(hit=2000), InvalidQuantity),
        (dict(requests=-1), InvalidQuantity),
        (dict(prefill_rate=0), InvalidQuantity),
        (dict(transfer=1.5), InvalidQuantityType),
        (dict(decode_policy="random"), InvalidQuantity),
        (dict(shared="yes"), InvalidQuantity),
    ],
)
def test_bad_configuration_is_a_typed_error(change, error):
    with pytest.raises(error):
        simulate(replace(ServiceConfig(), **change))


COUNTS = ("requests", "prompt", "hit", "match_units", "transfer")
POSITIVE = ("prefill_rate", "prefill_workers", "decode_workers", "decode_units")


def test_every_field_at_its_boundary_is_in_the_domain():
    """Counts may be 0, rates and pools 1; a hit equal to the prompt; same-rank decode with exactly one worker per prefill."""
    ServiceConfig(**dict.fromkeys(COUNTS, 0), **dict.fromkeys(POSITIVE, 1)).check()
    ServiceConfig(prompt=512, hit=512).check()
    ServiceConfig(prefill_workers=2, decode_workers=2, decode_policy="same-rank").check()


@pytest.mark.parametrize("name", COUNTS + POSITIVE)
def test_a_field_below_its_domain_is_refused_by_name(name):
    minimum = 1 if name in POSITIVE else 0
    with pytest.raises(InvalidQuantity, match=rf"^{name} must be >= {minimum}, got {minimum - 1}$"):
        replace(ServiceConfig(), **{name: minimum - 1}).check()
    with pytest.raises(InvalidQuantityType, match=rf"^{name} must be an integer"):
        replace(ServiceConfig(), **{name: 1.0}).check()


def test_each_cross_field_rule_says_which_it_is():
    with pytest.raises(InvalidQuantity, match=r"^hit 513 exceeds prompt 512$"):
        ServiceConfig(prompt=512, hit=513).check()
    with pytest.raises(InvalidQuantity, match=r"^shared must be a bool, got 1$"):
        ServiceConfig(shared=1).check()
    with pytest.raises(InvalidQuantity, match=r"^unknown decode policy 'random'$"):
        ServiceConfig(decode_policy="random").check()
    with pytest.raises(InvalidQuantity, match=r"^same-rank decode needs a decode worker per prefill worker$"):
        ServiceConfig(prefill_workers=3, decode_workers=2, decode_policy="same-rank").check()


@pytest.mark.parametrize(
    "config, decode_rank, decode_end",
    [
        # arrivals 4, 6, 8, 10: w0 (tie, lower index), w1 (free 0 < 8), w0 (8 < 10), w1 (10 < 12)
        (ServiceConfig(shared=False), (0, 1, 0, 1), (8, 10, 12, 14)),
        # arrivals 4, 4, 6, 6: the pair at 6 finds both workers free at 8 and takes them in index order
        (ServiceConfig(shared=True), (0, 1, 0, 1), (8, 8, 12, 12)),
        # a third worker: the request arriving at 8 takes w2 (free since 0), the one at 10 takes w0 (free at 8)
        (ServiceConfig(shared=False, decode_workers=3), (0, 1, 2, 0), (8, 10, 12, 14)),
        (ServiceConfig(shared=False, decode_workers=1), (0, 0, 0, 0), (8, 12, 16, 20)),
        # same-rank: local affinity prefills everything on rank 0, so rank 0 decodes everything
        (ServiceConfig(shared=False, decode_policy="same-rank"), (0, 0, 0, 0), (8, 12, 16, 20)),
        (ServiceConfig(shared=True, decode_policy="same-rank"), (0, 1, 0, 1), (8, 8, 12, 12)),
    ],
)
def test_the_trace_records_each_requests_decode_worker(config, decode_rank, decode_end):
    """state_roundtrip.md §4: FIFO by (arrival, id) to the decode worker free earliest, ties to the lower index."""
    trace = simulate(config)
    assert (trace.decode_rank, trace.decode_end) == (decode_rank, decode_end)


def test_without_matching_cost_prefill_starts_at_time_zero():
    """Listing 11.3: start = max(match, free) and every prefill worker is free from 0; match = 0 starts the first pair at 0."""
    trace = simulate(ServiceConfig(shared=True, match_units=0))
    assert (trace.prefill_start, trace.prefill_end) == ((0, 0, 2, 2), (2, 2, 4, 4))
    assert simulate(ServiceConfig(shared=False, match_units=0)).prefill_start == (0, 2, 4, 6)


def test_a_request_with_nothing_to_prefill_match_or_transfer_decodes_from_time_zero():
    """Every decode worker is free from 0: full hits, no matching and an instant handoff reach decode at 0 and end
    decode_units later; the next pair waits for the workers."""
    trace = simulate(ServiceConfig(hit=1024, match_units=0, transfer=0))
    assert trace.prefill_end == (0, 0, 0, 0)
    assert (trace.decode_rank, trace.decode_end) == ((0, 1, 0, 1), (4, 4, 8, 8))

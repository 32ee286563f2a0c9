"""Trace conformance (stateful_tests/tree/trace_check.py): every tree and tracker on the shipped Mooncake slice,
and the broken twins each check must catch on it."""

from __future__ import annotations

from itertools import islice

import pytest

from kvproof.stateful_tests.harness.targets import load_target
from kvproof.stateful_tests.sequences import mutants as tracker_mutants
from kvproof.stateful_tests.sequences.model import TARGETS as TRACKERS
from kvproof.stateful_tests.tree.mutants import IgnoresRemovalBatches, WalkStopsAtDepth
from kvproof.stateful_tests.tree.router import RouterPlan
from kvproof.stateful_tests.tree.trace_check import TraceReport, check_trace, overcredit
from kvproof.stateful_tests.tree.traffic import SHIPPED_TRACE, Request, mooncake_requests

SMALL = RouterPlan(workers=2, capacity=100)


def _requests(n: int) -> list[Request]:
    return list(islice(mooncake_requests(SHIPPED_TRACE), n))


def _trees(*names: str) -> dict:
    return {name: load_target(name).factory for name in names}


def _run(n: int, trees: dict, trackers: dict | None = None, plan: RouterPlan = SMALL, oracle: str | None = None) -> TraceReport:
    return check_trace(_requests(n), plan, trees, trackers or {}, oracle)


@pytest.mark.parametrize("policy", ["truth", "tree", "round-robin"])
def test_every_kvproof_tree_agrees_on_the_slice_and_never_over_credits(policy) -> None:
    report = _run(
        250,
        _trees("reference", "impl", "impl-lanes", "impl-pool"),
        plan=RouterPlan(workers=2, dp_ranks=2, capacity=120, policy=policy, decode_batch=2),
    )
    assert report.ok, [t.to_json() for t in report.trees]
    assert report.oracle == "reference" and all(t.queries == 2 * 250 for t in report.trees)
    assert report.stats.events["removed"] > 0 and report.summary_line().endswith("mismatches=0 overcredits=0")


@pytest.mark.dynamo
def test_dynamo_is_the_oracle_when_compared_and_agrees_on_the_slice() -> None:
    dynamo = load_target("dynamo")
    if not dynamo.available:
        pytest.skip(dynamo.reason)
    report = _run(250, _trees("reference", "impl", "dynamo"))
    assert report.oracle == "dynamo" and report.ok, [t.to_json() for t in report.trees]


def test_the_three_slot_trackers_agree_read_by_read_on_the_slice() -> None:
    report = _run(200, {}, dict(TRACKERS))
    assert report.ok and [t.name for t in report.trackers] == ["spec", "reference", "impl"]
    assert all(t.calls == 2 + 3 * 200 and t.reads > 2 * t.calls for t in report.trackers)


def test_a_tree_that_ignores_removal_batches_over_credits_and_mismatches() -> None:
    """The over-credit check's control: even alone (its own oracle) it is caught by the ground truth."""
    both = _run(300, _trees("reference") | {"broken": IgnoresRemovalBatches})
    broken = both.trees[1]
    assert broken.overcredits > 0 and broken.mismatches > 0 and not both.ok and both.trees[0].ok
    alone = _run(300, {"broken": IgnoresRemovalBatches})
    assert alone.mismatches == 0 and alone.overcredits > 0 and "over-credits" in alone.trees[0].first


def test_a_tree_that_under_credits_long_prefixes_is_a_mismatch_but_no_over_credit() -> None:
    """The comparison's control: WalkStopsAtDepth never credits more than is held, only less than the oracle."""
    report = _run(1000, _trees("reference") | {"broken": WalkStopsAtDepth}, plan=RouterPlan(workers=2, capacity=1000))
    broken = report.trees[1]
    assert broken.mismatches > 0 and broken.overcredits == 0 and "find_matches" in broken.first


@pytest.mark.parametrize("mutant", ["ReanchorKeepsOldTime", "SumThenTruncate", "NoSpillover", "ElapsedRoundedToNearest"])
def test_a_broken_slot_tracker_is_a_mismatch_on_the_slice(mutant) -> None:
    report = _run(200, {}, {"reference": TRACKERS["reference"], "broken": getattr(tracker_mutants, mutant)})
    assert report.trackers[0].ok and report.trackers[1].mismatches > 0 and not report.ok


def test_overcredit_names_each_rank_scored_above_its_holding() -> None:
    assert overcredit({(1, 0): 3, (2, 0): 1}, {(1, 0): 2, (2, 0): 1}) == "(1, 0) scored 3 but holds 2"
    assert overcredit({(1, 0): 2}, {(1, 0): 2}) == ""

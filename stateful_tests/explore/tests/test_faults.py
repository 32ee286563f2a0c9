"""Faults mid-operation: the injector raises at every decision point of every thread once, and the verdict tells a
fault-safe structure (clean) from one a fault leaves torn (broken)."""

from kvproof.stateful_tests.explore import campaign, linearizability
from kvproof.stateful_tests.explore.faults import FAULT, explore_faults
from kvproof.stateful_tests.explore.history import Call
from kvproof.stateful_tests.explore.specs import TreeSpec
from kvproof.stateful_tests.explore.tests.test_scenarios import CoarseTree
from kvproof.stateful_tests.explore.tree_scenarios import stored


def test_a_structure_that_changes_nothing_before_its_lock_is_clean_under_every_fault():
    # the reference behind one lock: a fault can only land at the lock's acquire, before anything changed
    report = explore_faults("fanout-vs-split", campaign.Subject("CoarseTree", lanes=CoarseTree))
    assert report.pairs == 4 and report.clean == report.pairs and not report.broken  # one acquire per call, four calls


def test_a_fault_inside_a_shape_change_of_the_concurrent_tree_is_seen_as_broken():
    # issue 12 measures this: a fault between begin_shape_change and end leaves the version odd (check() fails)
    report = explore_faults("fanout-vs-split", "impl")
    assert report.clean and any("check failed" in problem for *_, problem in report.broken)


def test_a_faulted_write_is_linearized_whole_or_not_at_all():
    applied = [Call("a", 0, 1, "event", (1, stored(None, 1)), FAULT), Call("a", 2, 3, "event", (1, stored(1, 2)), ("ok", None))]
    assert linearizability.check(TreeSpec(), applied).ok  # the store below 1 shows the faulted store applied
    skipped = [Call("a", 0, 1, "event", (1, stored(None, 1)), FAULT),
               Call("a", 2, 3, "event", (1, stored(1, 2)), ("error", "ParentBlockNotFound"))]
    assert linearizability.check(TreeSpec(), skipped).ok  # ... or not applied at all
    half = [Call("a", 0, 1, "event", (1, stored(None, 1, 2)), FAULT),
            Call("r", 2, 3, "find_matches", ((1, 2),), ("ok", (((WorkerRank(1)), 1),)), True)]
    assert not linearizability.check(TreeSpec(), half).ok  # half a store (one block of two) is neither


def WorkerRank(worker):
    from kvproof.spec.primitives import WorkerWithDpRank

    return WorkerWithDpRank(worker, 0)

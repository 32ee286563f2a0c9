"""Faults mid-operation: the injector raises at every decision point of every thread once, and the verdict tells a
fault-safe structure (clean), a legal part of the call (torn-but-consistent) and a structure that refuses every later
call (poisoned) from one a fault leaves torn and answering (broken)."""

from kvproof.stateful_tests.explore import campaign, linearizability
from kvproof.stateful_tests.explore.faults import FAULT, POISONED, explore_faults, fault_sweep, judge
from kvproof.stateful_tests.explore.history import Call
from kvproof.stateful_tests.explore.specs import TreeSpec
from kvproof.stateful_tests.explore.tests.test_scenarios import CoarseTree
from kvproof.stateful_tests.explore.tree_scenarios import stored
from kvproof.stateful_tests.tree.impl_mutants import NeverPoisoned


def test_a_structure_that_changes_nothing_before_its_lock_is_clean_under_every_fault():
    # the reference behind one lock: a fault can only land at the lock's acquire, before anything changed
    report = explore_faults("fanout-vs-split", campaign.Subject("CoarseTree", lanes=CoarseTree))
    assert report.pairs == 4 and report.clean == report.pairs and not report.broken  # one acquire per call, four calls


def test_a_fault_inside_a_shape_change_of_the_concurrent_tree_poisons_it():
    # a fault between begin_shape_change and end leaves the version odd: check() fails, so the tree poisons itself
    report = explore_faults("fanout-vs-split", "impl")
    assert report.clean and report.poisoned and not report.broken


def test_a_tree_that_never_poisons_itself_is_broken_by_the_same_faults():
    report = explore_faults("fanout-vs-split", campaign.subject_for("NeverPoisoned", NeverPoisoned))
    assert not report.poisoned and any("check failed" in problem for *_, problem in report.broken)


def test_every_fault_pair_of_the_concurrent_structures_is_clean_torn_or_poisoned():
    reports = fault_sweep(campaign.subject_for("impl"), ("lanes", "pool", "tracker"))
    assert sum(r.pairs for r in reports) > 200 and not [b for r in reports for b in r.broken]
    assert all(sum(r.count(o) for o in ("clean", "torn", "poisoned")) == r.pairs for r in reports)
    assert sum(r.torn for r in reports) and sum(r.poisoned for r in reports)  # both outcomes are reached


def test_a_poisoned_structure_that_answers_a_later_call_is_broken():
    class JudgedProgram:  # what judge reads of a run
        subject = type("S", (), {"poisoned": "poisoned by a test"})()
        budget = 1000
        calls = [  # noqa: RUF012
            Call("a", 0, 1, "event", (1, stored(None, 1)), FAULT),
            Call("b", 2, 3, "find_matches", ((1,),), POISONED, True),
        ]

    assert judge(JudgedProgram(), ["invariant: torn"], None)[0] == "poisoned"
    JudgedProgram.calls = [*JudgedProgram.calls, Call("b", 4, 5, "find_matches", ((1,),), ("ok", ()), True)]
    outcome, problem = judge(JudgedProgram(), ["invariant: torn"], None)
    assert outcome == "broken" and "after the fault returned ('ok', ())" in problem


def test_a_faulted_write_is_linearized_whole_or_not_at_all():
    applied = [Call("a", 0, 1, "event", (1, stored(None, 1)), FAULT), Call("a", 2, 3, "event", (1, stored(1, 2)), ("ok", None))]
    assert linearizability.check(TreeSpec(), applied).ok  # the store below 1 shows the faulted store applied
    skipped = [
        Call("a", 0, 1, "event", (1, stored(None, 1)), FAULT),
        Call("a", 2, 3, "event", (1, stored(1, 2)), ("error", "ParentBlockNotFound")),
    ]
    assert linearizability.check(TreeSpec(), skipped).ok  # ... or not applied at all
    half = [
        Call("a", 0, 1, "event", (1, stored(None, 1, 2)), FAULT),
        Call("r", 2, 3, "find_matches", ((1, 2),), ("ok", (((WorkerRank(1)), 1),)), True),
    ]
    assert not linearizability.check(TreeSpec(), half).ok  # half a store (one block of two) is neither
    assert linearizability.check(TreeSpec(torn=True), half).ok  # ... but it is a legal part: torn but consistent
    more = [*half[:1], Call("r", 2, 3, "find_matches", ((1, 3),), ("ok", (((WorkerRank(1)), 2),)), True)]
    assert not linearizability.check(TreeSpec(torn=True), more).ok  # a part is a prefix of the chain, nothing else


def WorkerRank(worker):
    from kvproof.spec.primitives import WorkerWithDpRank

    return WorkerWithDpRank(worker, 0)

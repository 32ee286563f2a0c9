"""The linearizability checker: linearizable histories pass, and each way a history can break the law is caught
(negative controls written by hand, one per law: an impossible write outcome, a read above the bound, an inexact
quiescent read, a registry read that misses a completed write), with the failing part minimized."""

from kvproof.spec.primitives import WorkerWithDpRank
from kvproof.stateful_tests.explore import linearizability
from kvproof.stateful_tests.explore.history import Call
from kvproof.stateful_tests.explore.specs import TrackerSpec, TreeSpec
from kvproof.stateful_tests.explore.tracker_scenarios import NOW, REGISTER, add, free
from kvproof.stateful_tests.explore.tree_scenarios import stored

OK = ("ok", None)
R1, R2 = WorkerWithDpRank(1, 0), WorkerWithDpRank(2, 0)


def write(thread, at, until, worker, event, result=OK):
    return Call(thread, at, until, "event", (worker, event), result)


def find(thread, at, until, query, scores):
    return Call(thread, at, until, "find_matches", (tuple(query),), ("ok", tuple(sorted(scores.items()))), True)


def verdict(calls, spec=None):
    return linearizability.check(spec or TreeSpec(), calls)


def test_overlapping_writes_with_a_read_in_between_are_linearizable():
    calls = [
        write("a", 0, 5, 1, stored(None, 1, 2)),
        write("b", 1, 6, 2, stored(None, 1, 3)),
        find("r", 2, 3, [1, 2], {R1: 2}),
        find("r", 7, 8, [1, 2], {R1: 2, R2: 1}),
    ]
    assert verdict(calls).ok


def test_an_outcome_the_spec_cannot_give_is_not_linearizable():
    # a store under a parent the rank never held, reported accepted
    calls = [write("a", 0, 1, 1, stored(None, 1)), write("a", 2, 3, 1, stored(9, 2))]
    report = verdict(calls)
    assert report.verdict is linearizability.LinearizabilityVerdict.NOT_LINEARIZABLE
    assert [c.call for c in report.part] == [0, 2]  # writes are only cut from the end: the history up to the store


def test_a_read_above_what_the_rank_ever_held_during_it_is_caught():
    calls = [write("a", 0, 1, 1, stored(None, 1, 2)), write("a", 2, 9, 1, stored(2, 3)), find("r", 3, 4, [1, 2, 3, 4], {R1: 4})]
    report = verdict(calls)
    assert not report.ok and report.part[-1].read


def test_a_read_during_a_write_may_undercount_but_a_quiescent_read_must_be_exact():
    racing = [write("a", 0, 1, 1, stored(None, 1, 2)), write("b", 2, 9, 2, stored(None, 1, 5)), find("r", 3, 4, [1, 2], {R1: 1})]
    assert verdict(racing).ok  # best effort while a shape change runs
    quiet = [write("a", 0, 1, 1, stored(None, 1, 2)), find("r", 3, 4, [1, 2], {R1: 1})]
    assert not verdict(quiet).ok  # nothing was changing: the read must be exact


def tracker_call(thread, at, until, step, result=OK):
    return Call(thread, at, until, step.op, step.args, result, step.read)


def loads_call(thread, at, until, rows):
    return Call(thread, at, until, "loads", (NOW,), ("ok", tuple(sorted(rows.items()))), True)


def test_a_registry_read_may_miss_a_write_in_flight_but_not_a_completed_one():
    spec = TrackerSpec()
    tracker = spec.fresh()
    tracker.register_worker(*REGISTER.args)
    empty = dict(tracker.loads(NOW).items())
    setup = [tracker_call("s", 0, 1, REGISTER)]
    in_flight = [*setup, tracker_call("a", 2, 9, add("r", R1.__class__(1, 0))), loads_call("r", 3, 4, empty)]
    assert linearizability.check(spec, in_flight).ok
    completed = [*setup, tracker_call("a", 2, 3, add("r", R1.__class__(1, 0))), loads_call("r", 4, 5, empty)]
    assert not linearizability.check(spec, completed).ok
    freed = [*setup, tracker_call("a", 2, 3, add("r", R1.__class__(1, 0))), tracker_call("a", 4, 5, free("r"), ("ok", False))]
    assert not linearizability.check(spec, freed).ok  # the free of a booked request must free it


def test_the_search_budget_gives_unknown_never_a_pass():
    calls = [write(f"t{i}", i, 100 + i, 1, stored(None, 1, i + 2)) for i in range(6)]  # one worker: one part
    calls.append(find("r", 50, 51, [1, 2], {R1: 99}))  # impossible: every order must be tried
    report = linearizability.check(TreeSpec(), calls, budget=5)
    assert report.verdict is linearizability.LinearizabilityVerdict.UNKNOWN


def test_a_credit_to_a_worker_that_never_wrote_is_caught():
    calls = [write("a", 0, 1, 1, stored(None, 1)), find("r", 2, 3, [1], {R1: 1, WorkerWithDpRank(9, 0): 1})]
    assert not verdict(calls).ok  # the residual part: nothing may credit worker 9


def test_the_final_snapshot_must_be_exact():
    snap = Call("final", 4, 5, "snapshot", (), ("ok", ()), True)  # claims worker 1 holds nothing
    assert not verdict([write("a", 0, 1, 1, stored(None, 1)), snap]).ok


def test_minimisation_never_drops_the_write_that_was_wrong():
    # the root store reported an error although the store below it, overlapping it, was accepted: the root store
    # is the wrong one, and it must stay in the witness
    below = Call("b", 3, 8, "event", (1, stored(1, 2)), OK)
    root = Call("a", 5, 6, "event", (1, stored(None, 1)), ("error", "KvCacheEventError"))
    report = verdict([below, root])
    assert not report.ok and root in report.part


def test_a_definite_failure_in_one_part_wins_over_an_undecided_other():
    crowded = [write(f"t{i}", i, 100 + i, 1, stored(None, 1, i + 2)) for i in range(6)]
    crowded.append(find("r", 50, 51, [1, 2], {R1: 99}))
    wrong = write("z", 200, 201, 2, stored(9, 2))  # worker 2 stores under a parent it never held, accepted
    report = linearizability.check(TreeSpec(), [*crowded, wrong], budget=5)
    assert report.verdict is linearizability.LinearizabilityVerdict.NOT_LINEARIZABLE and report.part == [wrong]


def test_a_torn_potential_load_may_pair_two_moments_but_not_invent_one():
    from kvproof.spec.sequence_inputs import millis
    from kvproof.stateful_tests.explore.tracker_scenarios import POTENTIAL

    spec = TrackerSpec()
    slot = R1.__class__(1, 0)
    setup = [tracker_call("s", 0, 1, REGISTER), tracker_call("s", 2, 3, add("q", slot, (1, 2, 3), 300))]
    tracker = spec.fresh()
    for c in setup:
        spec.write(tracker, c)
    before = tracker.potential_loads(*POTENTIAL.args)
    spec.write(tracker, tracker_call("a", 0, 0, add("r", slot, (1, 4), 100)))
    after = tracker.potential_loads(*POTENTIAL.args)

    def read(rows):
        return Call("r", 5, 8, "potential_loads", POTENTIAL.args, ("ok", tuple(sorted(rows.items()))), True)

    racing = tracker_call("a", 4, 9, add("r", slot, (1, 4), 100))
    assert linearizability.check(spec, [*setup, racing, read(before)]).ok
    assert linearizability.check(spec, [*setup, racing, read(after)]).ok
    invented = dict(after.items())
    invented[slot] = invented[slot].__class__(1, 1, 1)
    assert not linearizability.check(spec, [*setup, racing, read(invented)]).ok
    assert millis(10) == POTENTIAL.args[2]

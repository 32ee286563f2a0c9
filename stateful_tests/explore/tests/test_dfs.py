"""The exhaustive strategy counts exactly the schedules of small programs, as hand-computed (loom's and shuttle's self-test)."""

import math

import pytest

from kvproof.stateful_tests.explore.dfs import DFS
from kvproof.stateful_tests.explore.scheduler import Outcome, Scheduler
from kvproof.stateful_tests.explore.toys import LockOrder, LostUpdate, YieldPoints


def explore_all(program, bound):
    strategy, results, traces = DFS(bound), [], set()
    while not strategy.exhausted():
        results.append(Scheduler(strategy).run(program))
        traces.add(tuple(getattr(program, "trace", ())))
    return results, traces


def interleavings(threads, points):
    """n threads of k+1 steps each: ((k+1)n)! / ((k+1)!)^n interleavings."""
    steps = points + 1
    return math.factorial(steps * threads) // math.factorial(steps) ** threads


# (threads, yield points, preemption bound, schedules), each derived by hand:
# - unbounded: every interleaving of the threads' steps;
# - bound 0: only switches when a thread finishes, so one schedule per order of the threads: n!;
# - two threads, bound 1: the two orders, plus "X runs j of its k+1 steps (1 <= j <= k), Y runs to the end,
#   X finishes" for either X: 2 + 2k;
# - three threads of one yield point, bound 1: 3! with none, plus for each preempted thread P the orders
#   of {P1, P2, A, B} with P1 before P2 and not right before it: 3 * (12 - 6) = 18; 24 in all.
COUNTS = [
    (2, 1, None, interleavings(2, 1)),  # 6
    (2, 2, None, interleavings(2, 2)),  # 20
    (3, 1, None, interleavings(3, 1)),  # 90
    (2, 3, None, interleavings(2, 3)),  # 70
    (2, 1, 0, 2),
    (2, 2, 0, 2),
    (3, 1, 0, 6),
    (3, 2, 0, 6),
    (2, 1, 1, 4),
    (2, 2, 1, 6),
    (2, 3, 1, 8),
    (3, 1, 1, 24),
]


@pytest.mark.parametrize(("threads", "points", "bound", "expected"), COUNTS)
def test_dfs_counts_the_hand_computed_schedules(threads, points, bound, expected):
    results, traces = explore_all(YieldPoints(threads, points), bound)
    assert len(results) == expected
    assert len(traces) == expected  # each schedule once: every one gives a different step order


def test_every_interleaving_of_a_lost_update_is_found_and_the_lock_fixes_it():
    # two threads read, yield, write: 6 schedules, 4 of them read both values before either write
    results, _ = explore_all(LostUpdate(2), None)
    assert (len(results), sum(r.failed for r in results)) == (6, 4)
    assert all("lost update" in r.problems[0] for r in results if r.failed)
    locked, _ = explore_all(LostUpdate(2, locked=True), None)
    assert locked and not any(r.failed for r in locked)


def test_a_lock_order_inversion_deadlocks_and_the_report_says_where_each_thread_waits():
    results, _ = explore_all(LockOrder(), None)
    deadlocks = [r for r in results if r.outcome is Outcome.DEADLOCK]
    assert deadlocks and len(deadlocks) < len(results)
    problem = deadlocks[0].problems[0]
    assert (
        problem.startswith("deadlock in program")
        and "forward waiting at toy." in problem
        and "backward waiting at toy." in problem
    )

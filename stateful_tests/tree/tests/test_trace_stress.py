"""The trace under real threads (stateful_tests/tree/trace_stress.py): writers by worker, readers checked, parity at the end."""

from __future__ import annotations

from itertools import islice

from kvproof.impl.radix_tree import ConcurrentRadixTree
from kvproof.spec.match import OverlapScores
from kvproof.stateful_tests.tree.impl_mutants import RejectsStoresUnderSomeParents
from kvproof.stateful_tests.tree.router import RouterPlan
from kvproof.stateful_tests.tree.streams import EventOp
from kvproof.stateful_tests.tree.trace_stress import run_trace_stress, split_by_writer
from kvproof.stateful_tests.tree.traffic import SHIPPED_TRACE, mooncake_requests

PLAN = RouterPlan(workers=4, dp_ranks=2, capacity=150)


def _requests(n: int = 300):
    return islice(mooncake_requests(SHIPPED_TRACE), n)


def test_the_concurrent_tree_replays_the_trace_on_four_writers_without_overcount_or_parity_break() -> None:
    report = run_trace_stress(_requests(), PLAN, writers=4, readers=2)
    assert report.ok, report.problems
    assert report.ops > 500 and report.reads > 0 and "overcounts=0 parity_breaks=0" in report.summary_line()


def test_each_writer_gets_its_workers_events_in_order() -> None:
    from kvproof.spec.events import Cleared, KvCacheEvent

    ops = [EventOp(w, KvCacheEvent(i, Cleared(), 0)) for i, w in enumerate([1, 2, 3, 1, 5, 2])]
    lanes = split_by_writer(ops, 2)
    assert [[(o.worker_id, o.event.event_id) for o in lane] for lane in lanes] == [
        [(1, 0), (3, 2), (1, 3), (5, 4)],
        [(2, 1), (2, 5)],
    ]


def test_a_tree_that_refuses_stores_breaks_parity() -> None:
    report = run_trace_stress(_requests(), PLAN, writers=4, readers=1, tree_factory=RejectsStoresUnderSomeParents)
    assert report.parity_breaks == 1 and "events refused" in report.problems[0]


class _Overcredits(ConcurrentRadixTree):
    """Every rank it scores gets one block more than it holds (the read check's control)."""

    def find_matches(self, sequence, early_exit=False) -> OverlapScores:
        found = super().find_matches(sequence, early_exit)
        return OverlapScores({r: n + 1 for r, n in found.scores.items()})


def test_a_read_above_what_was_held_during_it_is_an_overcount() -> None:
    report = run_trace_stress(_requests(), PLAN, writers=2, readers=2, tree_factory=_Overcredits)
    assert report.overcounts > 0 and not report.ok and any("held at most" in p for p in report.problems)

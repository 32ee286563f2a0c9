"""explore/removal_race.py: a removal racing the worker's own queued events leaves nothing a later removal misses."""

import time

from kvproof.impl.indexer import ThreadPoolIndexer
from kvproof.impl.radix_tree import ConcurrentRadixTree
from kvproof.stateful_tests.explore.removal_race import BUSY_WORKERS, VICTIM, race_removals, takes_submissions
from kvproof.stateful_tests.tree.impl_mutants import ForgetsRouteWithEventsInFlight

SLOW_S = 0.03


class SlowFirstStores(ConcurrentRadixTree):
    """A tree whose lanes sleep (the interpreter lock released) on each busy worker's first store, so that the
    victim's removal and its racing store certainly queue behind it: the race every round, not by chance."""

    def __init__(self, lanes: int) -> None:
        super().__init__(lanes)
        self.seen: set[int] = set()

    def apply_on(self, lane, worker_id, event):
        if worker_id <= BUSY_WORKERS and worker_id not in self.seen:
            self.seen.add(worker_id)
            time.sleep(SLOW_S)
        super().apply_on(lane, worker_id, event)


def slow(pool_class):
    return lambda: pool_class(threads=4, tree=SlowFirstStores(lanes=4))


def test_the_pool_keeps_a_removed_worker_removed_after_the_race():
    report = race_removals(slow(ThreadPoolIndexer), "impl-pool", 3, 1)
    assert report.ok and report.rounds == 3, [report.report(v) for v in report.failures]


def test_the_pool_that_forgets_a_route_with_events_in_flight_is_caught_every_round_with_a_replay_command():
    """The negative control: the pool before issue 31 (``ForgetsRouteWithEventsInFlight``)."""
    report = race_removals(slow(ForgetsRouteWithEventsInFlight), "twin", 3, 1)
    assert len(report.failures) == 3
    text = report.report(report.failures[0])
    assert f"worker {VICTIM} was removed" in text and "the late chain" in text
    assert "kvproof conform tree --concurrent --target twin --seed 1" in text


def test_only_trees_that_queue_events_take_part():
    with ThreadPoolIndexer(threads=1) as pool:
        assert takes_submissions(pool)
    assert not takes_submissions(ConcurrentRadixTree())

    class Unfenced:  # the standalone indexer's door: no acknowledgement per event, so not a pool's submit
        def send_unfenced(self, worker_id, payload): ...

        def settle(self): ...

    assert takes_submissions(Unfenced())

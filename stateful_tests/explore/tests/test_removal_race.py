"""explore/removal_race.py: a removal racing the worker's own queued events leaves nothing a later removal misses."""

import threading

from kvproof.impl.indexer import ThreadPoolIndexer
from kvproof.impl.radix_tree import ConcurrentRadixTree
from kvproof.stateful_tests.explore.removal_race import BUSY_WORKERS, VICTIM, race_removals, takes_submissions
from kvproof.stateful_tests.tree.impl_mutants import ForgetsRouteWithEventsInFlight

WAIT_S = 5.0
"""The longest a gate below waits (a safety: in a round that runs as the module docstring says, each opens at once)."""


class HeldFirstStores(ConcurrentRadixTree):
    """A tree whose lanes hold each busy worker's first store until the victim's racing store is queued (``release``):
    the victim's removal and that store then certainly wait behind the busy work, the race every round."""

    def __init__(self, lanes: int) -> None:
        super().__init__(lanes)
        self.seen: set[int] = set()
        self.release = threading.Event()

    def apply_on(self, lane, worker_id, event):
        if worker_id <= BUSY_WORKERS and worker_id not in self.seen:
            self.seen.add(worker_id)
            self.release.wait(WAIT_S)
        super().apply_on(lane, worker_id, event)


def pinned(pool_class):
    """``pool_class`` with the round's order pinned, whatever the machine's load: the victim's racing store (its second
    submission) is queued only once its removal is, and then opens the lanes (before, a 30 ms sleep on the lanes and
    the round's 2 ms pause made the race likely, and under load a round could queue the store before the removal)."""

    class Pinned(pool_class):
        def __init__(self, threads, tree):
            super().__init__(threads=threads, tree=tree)
            self.removal_queued = threading.Event()
            self.removing = False
            self.victim_submits = 0

        def remove_worker(self, worker_id):
            self.removing = worker_id == VICTIM and not self.removal_queued.is_set()
            super().remove_worker(worker_id)

        def _enqueue(self, lane_index, work):
            ack = super()._enqueue(lane_index, work)
            if self.removing:
                self.removing = False
                self.removal_queued.set()
            return ack

        def submit(self, worker_id, event):
            if worker_id == VICTIM:
                self.victim_submits += 1
            racing = worker_id == VICTIM and self.victim_submits == 2
            if racing:
                assert self.removal_queued.wait(WAIT_S), "the victim's removal was never queued"
            ack = super().submit(worker_id, event)
            if racing:
                self.tree.release.set()
            return ack

    return lambda: Pinned(threads=4, tree=HeldFirstStores(lanes=4))


def test_the_pool_keeps_a_removed_worker_removed_after_the_race():
    report = race_removals(pinned(ThreadPoolIndexer), "impl-pool", 3, 1)
    assert report.ok and report.rounds == 3, [report.report(v) for v in report.failures]


def test_the_pool_that_forgets_a_route_with_events_in_flight_is_caught_every_round_with_a_replay_command():
    """The negative control: the pool before issue 31 (``ForgetsRouteWithEventsInFlight``)."""
    report = race_removals(pinned(ForgetsRouteWithEventsInFlight), "twin", 3, 1)
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

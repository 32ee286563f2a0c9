"""The thread-pool indexer: sticky routing, visibility, errors on the caller, flush."""

import pytest

from kvproof.impl.indexer import ThreadPoolIndexer
from kvproof.spec.errors import BlockNotFound, MalformedEvent, ParentBlockNotFound
from kvproof.spec.events import KvCacheEvent, Removed, Stored
from kvproof.spec.primitives import Block


def stored(parent, *locals_):
    return KvCacheEvent(0, Stored(parent, tuple(Block(x, 100 * x) for x in locals_)))


@pytest.fixture
def pool():
    with ThreadPoolIndexer(threads=4) as p:
        yield p


def test_each_worker_is_sticky_to_one_lane(pool):
    lanes = {w: pool.lane_of(w) for w in range(12)}
    assert {w: pool.lane_of(w) for w in range(12)} == lanes
    assert set(lanes.values()) == {0, 1, 2, 3}


def test_apply_event_is_visible_on_return_and_reraises_typed_errors(pool):
    pool.apply_event(1, stored(None, 1, 2))
    assert pool.find_matches([1, 2]).scores == {(1, 0): 2}
    with pytest.raises(ParentBlockNotFound):
        pool.apply_event(1, stored(999, 3))
    with pytest.raises(BlockNotFound):
        pool.apply_event(1, KvCacheEvent(0, Removed((999,))))


def test_a_malformed_payload_is_rejected_on_the_caller_before_queueing(pool):
    with pytest.raises(MalformedEvent):
        pool.submit(1, b"garbage")
    pool.flush()
    assert pool.find_matches([1]).scores == {}


def test_flush_waits_for_every_queued_event(pool):
    acks = []
    for w in range(1, 9):
        acks.append(pool.submit(w, stored(None, 1, 2, 3)))
        acks.append(pool.submit(w, stored(300, 4 + w)))
    pool.flush()
    assert all(ack._done.is_set() for ack in acks)
    assert len(pool.find_matches([1, 2, 3]).scores) == 8
    pool.check()


def test_remove_worker_and_clear_all_blocks_run_on_the_workers_lane(pool):
    pool.apply_event(1, stored(None, 1, 2))
    pool.apply_event(1, KvCacheEvent(0, Stored(None, (Block(1, 100),)), 1))
    pool.clear_all_blocks(1)
    assert pool.find_matches([1, 2]).scores == {}
    pool.apply_event(1, stored(None, 1))
    pool.remove_worker(1)
    assert pool.find_matches([1]).scores == {}


def test_the_default_pool_runs_four_named_event_threads_and_close_ends_them():
    import threading

    before = {t.name for t in threading.enumerate()}
    with ThreadPoolIndexer() as pool:
        named = sorted(t.name for t in threading.enumerate() if t.name.startswith("kvproof-event-") and t.name not in before)
        assert named == [f"kvproof-event-{i}" for i in range(4)] and len(pool.tree.lanes) == 4
    assert not [t for t in threading.enumerate() if t.name in named]


def test_a_pool_needs_one_lane_per_event_thread():
    from kvproof.impl.radix_tree import ConcurrentRadixTree

    with pytest.raises(AssertionError, match=r"^the tree needs one lane per event thread"):
        ThreadPoolIndexer(threads=3, tree=ConcurrentRadixTree(lanes=2))


def test_close_stops_every_event_thread_cleanly(monkeypatch):
    """The stop token ends each loop without an error escaping on an event thread."""
    import threading

    escaped = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_value))
    pool = ThreadPoolIndexer(threads=2)
    pool.apply_event(1, stored(None, 1))
    pool.close()
    assert escaped == [] and not any(t.is_alive() for t in pool._threads)


def test_a_removed_worker_is_routed_afresh_and_leaves_no_route_behind(pool):
    assert [pool.lane_of(w) for w in (1, 2)] == [0, 1]
    pool.remove_worker(1)
    assert pool.lane_of(1) == 2  # a new worker: the next lane round robin, not its old one
    for w in range(100, 140):
        pool.apply_event(w, stored(None, 1))
        pool.remove_worker(w)
    assert set(pool._routes) == {1, 2}
    assert not pool._removed_last and not pool._pending  # nothing of the removed workers is kept


def test_an_event_queued_behind_a_removal_keeps_the_workers_route(pool):
    """Issue 31's rule: the route goes only when the worker's last task on its lane was its removal. Here an event
    waits behind the removal on a held lane, so after both ran the worker holds that event's block on its lane, keeps
    its route, and a later removal reaches it."""
    import threading

    lane = pool.lane_of(5)
    hold = threading.Event()
    pool._enqueue(lane, lambda _: hold.wait(5))  # the lane is busy: what follows queues behind
    pool.submit(5, stored(None, 1))
    removal = pool._for_worker(5, lambda l: pool.tree.lane(l.index).remove_worker(5), removal=True)
    late = pool.submit(5, stored(None, 2))
    hold.set()
    removal.wait()
    late.wait()
    pool.flush()
    assert pool.find_matches([2]).scores == {(5, 0): 1} and pool.lane_of(5) == lane  # the late event holds, routed home
    assert 5 not in pool._removed_last
    pool.remove_worker(5)
    assert pool.find_matches([2]).scores == {} and 5 not in pool._routes and not pool._removed_last
    pool.check()


def test_find_matches_passes_early_exit_through_and_defaults_to_the_full_walk(pool):
    """One rank under a branch: the full walk goes on into the child [2 4]; early exit stops after [1], where
    only one rank is left (crtc.md §5 "early_exit granularity")."""
    pool.apply_event(3, stored(None, 1, 3))
    pool.apply_event(3, stored(None, 1, 2, 4))
    assert pool.tree.find_matches([1, 2, 4], False).scores == {(3, 0): 3}
    assert pool.tree.find_matches([1, 2, 4], True).scores == {(3, 0): 1}
    assert pool.find_matches([1, 2, 4]).scores == {(3, 0): 3}
    assert pool.find_matches([1, 2, 4], True).scores == pool.find_matches([1, 2, 4], early_exit=True).scores == {(3, 0): 1}


class Pool:
    """A program on a two-thread pool under the scheduler: ``bodies`` and ``prepare`` take the program; the
    pool is closed at the end, and ``judge`` lists what went wrong."""

    def __init__(self, *bodies, prepare=lambda p: None, judge=lambda p: []):
        self.bodies, self.prepare, self.judge = bodies, prepare, judge

    def setup(self):
        self.pool, self.seen = ThreadPoolIndexer(threads=2), []
        self.prepare(self)

    def threads(self):
        return [(f"t{i}", lambda body=body: body(self)) for i, body in enumerate(self.bodies)]

    def finish(self):
        self.pool.close()
        return self.judge(self)


def explore(program):
    from kvproof.stateful_tests.explore.dfs import DFS
    from kvproof.stateful_tests.explore.scheduler import Scheduler

    strategy, results = DFS(2), []
    while not strategy.exhausted():
        results.append(Scheduler(strategy).run(program))
    assert len(results) > 1 and not any(r.failed for r in results), [r.problems for r in results if r.failed][:1]


def test_a_worker_seen_first_by_two_threads_at_once_gets_one_lane_in_every_schedule():
    def first_sight(p):
        p.seen.append(p.pool.lane_of(7))

    explore(Pool(first_sight, first_sight, judge=lambda p: [] if len(set(p.seen)) == 1 else [f"lanes {p.seen}"]))


def test_two_threads_removing_one_worker_at_once_both_succeed_in_every_schedule():
    def removes(p):
        p.pool.remove_worker(7)

    explore(
        Pool(
            removes,
            removes,
            prepare=lambda p: p.pool.apply_event(7, stored(None, 1)),
            judge=lambda p: [] if not p.pool.find_matches([1]).scores else ["worker 7 still holds block 1"],
        )
    )


def test_routing_is_a_named_decision_under_the_scheduler():
    from kvproof.stateful_tests.explore.random_walk import RandomWalk
    from kvproof.stateful_tests.explore.scheduler import Scheduler

    class RecordingScheduler(Scheduler):
        def yield_point(self, name):
            self.seen.add(name)
            super().yield_point(name)

    scheduler = RecordingScheduler(RandomWalk(1))
    scheduler.seen = set()
    result = scheduler.run(Pool(lambda p: p.pool.apply_event(3, stored(None, 1))))
    assert not result.failed and "indexer.routing.acquire" in scheduler.seen

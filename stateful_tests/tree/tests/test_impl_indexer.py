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

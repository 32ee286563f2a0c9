"""A lane's lookups and their lazy repair (impl/lane.py), seen entry by entry.

The laws (seed 004 "Lookup Repair"; crtc.md §2, §6): ``find_moved`` follows the split links
breadth first, wherever the suffix went; a repair toward the tail (a store) redirects, for every
rank on the lane, the entries from the hash up to the rank's cutoff on the resolved node, and a
repair toward the head (a removal) the entries from the head up to, not including, the hash; only
entries that still name the stale node are written, so a deleted or re-pointed entry is never
restored (Dynamo PR #11891); a repair that finds nothing counts a failure and writes nothing; each
repair passes its two named yield points.

The scene: on lane 0, worker 1 holds [1 2 3 4 5], worker 3 the prefix [1 2 3 4] and worker 4 the
prefix [1 2 3]; lane 1's worker 2 then stores [1 2 9], which splits the edge at 2. Lane 1 redirected
its own entries; lane 0's entries for 3, 4 and 5 still name the cut node ``a`` while the blocks
now live on its suffix ``b`` = [3 4 5] (worker 1 full, worker 3 up to 2 blocks, worker 4 up to 1).
"""

from __future__ import annotations

import pytest

from kvproof.impl import _sync
from kvproof.impl.lane import LANE_COUNTERS, Direction, Lane, find_moved
from kvproof.impl.radix_tree import ConcurrentRadixTree
from kvproof.spec.events import KvCacheEvent, Stored
from kvproof.spec.primitives import Block

W1, W3, W4 = (1, 0), (3, 0), (4, 0)


def stored(parent, *locals_):
    """A store of blocks whose external hash is 100 * local, below ``parent``."""
    return KvCacheEvent(0, Stored(parent, tuple(Block(x, 100 * x) for x in locals_)))


@pytest.fixture
def scene():
    tree = ConcurrentRadixTree(lanes=2)
    tree.lane(0).apply_event(1, stored(None, 1, 2, 3, 4, 5))
    tree.lane(0).apply_event(3, stored(None, 1, 2, 3, 4))
    tree.lane(0).apply_event(4, stored(None, 1, 2, 3))
    a = tree.root.children[1]
    tree.lane(1).apply_event(2, stored(None, 1, 2, 9))
    (b,) = a.splits
    lane = tree.lanes[0]
    assert [x.local for x in b.view.state.edge] == [3, 4, 5]
    assert all(lane.lookups[rank][h] is a for rank, hs in ((W1, (300, 400, 500)), (W3, (300, 400)), (W4, (300,))) for h in hs)
    return tree, lane, a, b


def names(lookup, a, b):
    """The lookup as hash -> 'a' / 'b' / another node's id, for readable comparisons."""
    return {h: "a" if node is a else "b" if node is b else f"node{node.id}" for h, node in sorted(lookup.items())}


def test_find_moved_follows_the_split_links_breadth_first(scene):
    tree, _, a, b = scene
    tree.lane(1).apply_event(5, stored(None, 1, 2, 3, 7))  # lane 1 splits b after 3: [3] and [4 5]
    (c,) = b.splits
    assert find_moved(a, 300) is b and find_moved(a, 500) is c and find_moved(b, 400) is c
    assert find_moved(a, 900) is None and find_moved(c, 400) is None  # never on the stale node; a node is not its own suffix


def test_a_repair_toward_the_tail_redirects_from_the_hash_to_each_ranks_cutoff(scene):
    _, lane, a, b = scene
    assert lane.repair(a, 400, Direction.TOWARD_TAIL) is b
    assert names(lane.lookups[W1], a, b) == {100: "a", 200: "a", 300: "a", 400: "b", 500: "b"}
    assert names(lane.lookups[W3], a, b) == {100: "a", 200: "a", 300: "a", 400: "b"}
    assert names(lane.lookups[W4], a, b) == {100: "a", 200: "a", 300: "a"}  # its cutoff on b is 1: nothing from 4 on


def test_a_repair_toward_the_head_redirects_from_the_head_up_to_the_hash(scene):
    _, lane, a, b = scene
    lane.lookups[W4][400] = a  # an entry past worker 4's cutoff on b: never written by a repair
    assert lane.repair(a, 500, Direction.TOWARD_HEAD) is b
    assert names(lane.lookups[W1], a, b) == {100: "a", 200: "a", 300: "b", 400: "b", 500: "a"}  # 5 is the removal's own
    assert names(lane.lookups[W3], a, b) == {100: "a", 200: "a", 300: "b", 400: "b"}
    assert names(lane.lookups[W4], a, b) == {100: "a", 200: "a", 300: "b", 400: "a"}


def test_a_repair_writes_only_entries_that_still_name_the_stale_node(scene):
    """An entry deleted (a scrub) or re-pointed by the lane meanwhile is left as it is (#11891)."""
    tree, lane, a, b = scene
    del lane.lookups[W1][500]
    lane.lookups[W1][400] = tree.root
    assert lane.repair(a, 300, Direction.TOWARD_TAIL) is b
    assert names(lane.lookups[W1], a, b) == {100: "a", 200: "a", 300: "b", 400: f"node{tree.root.id}"}


def test_each_repair_is_counted_and_a_failed_one_writes_nothing(scene):
    _, lane, a, _ = scene
    before = {rank: dict(lookup) for rank, lookup in lane.lookups.items()}
    assert lane.repair(a, 900, Direction.TOWARD_TAIL) is None and lane.repair(a, 901, Direction.TOWARD_HEAD) is None
    assert (lane.stats["repairs"], lane.stats["repair_failures"]) == (0, 2)
    assert lane.lookups == before
    lane.repair(a, 300, Direction.TOWARD_TAIL)
    lane.repair(a, 500, Direction.TOWARD_HEAD)
    assert (lane.stats["repairs"], lane.stats["repair_failures"]) == (2, 2)


def test_a_repair_passes_its_named_yield_points(scene):
    _, lane, a, _ = scene
    seen = []

    class LanePointRecord:
        def yield_point(self, name):
            seen.append(name)

    _sync.install(LanePointRecord())
    try:
        lane.repair(a, 300, Direction.TOWARD_TAIL)
        lane.repair(a, 900, Direction.TOWARD_TAIL)
    finally:
        _sync.install(None)
    assert seen == ["repair.before_scan", "repair.after_redirect", "repair.before_scan"]


def test_resolve_answers_from_the_entry_and_repairs_only_a_stale_one(scene):
    _, lane, a, b = scene
    assert lane.resolve(W1, 200, Direction.TOWARD_TAIL) is a  # a live entry: no repair
    assert lane.resolve(W1, 800, Direction.TOWARD_TAIL) is None and lane.resolve((9, 0), 200, Direction.TOWARD_TAIL) is None
    assert lane.stats["repairs"] == 0
    assert lane.resolve(W1, 400, Direction.TOWARD_TAIL) is b  # stale: repaired, toward the tail
    assert lane.stats["repairs"] == 1
    assert names(lane.lookups[W1], a, b) == {100: "a", 200: "a", 300: "a", 400: "b", 500: "b"}


def test_a_lane_counts_every_counter_from_zero_from_the_start():
    """Every key exists before the first event, so a reader summing the lanes never sees a lane's dict grow."""
    assert dict(Lane(0).stats) == dict.fromkeys(LANE_COUNTERS, 0) and "repairs" in LANE_COUNTERS


def test_the_worker_index_forgets_a_rank_with_its_lookup():
    """``Lane.forget`` drops the rank from the worker index as well; a worker with no rank left leaves no entry."""
    from kvproof.spec.primitives import Rank

    a, b, c = Rank(1, 0), Rank(1, 1), Rank(3, 0)
    lane = Lane(0)
    for rank in (a, b, c):
        lane.lookup_for(rank)
    assert lane.worker_ranks(1) == [a, b] and lane.worker_ranks(3) == [c]
    lane.forget(a)
    assert lane.worker_ranks(1) == [b] and lane.ranks_of == {1: {b: None}, 3: {c: None}}
    lane.forget(b)
    assert lane.ranks_of == {3: {c: None}} and a not in lane.lookups and b not in lane.lookups
    lane.forget(Rank(9, 9))  # a rank it never had: nothing changes
    assert lane.ranks_of == {3: {c: None}}

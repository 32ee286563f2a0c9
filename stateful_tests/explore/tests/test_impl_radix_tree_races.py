"""The concurrent tree's race-only store paths (impl/radix_tree.py), each driven by one directed schedule.

A store plans under a node's shared gate, then commits under a gate taken later; another lane may
change the node's shape in between. Each case here stops the storing lane (``paused``, lane 0) at the
decision named in the case, runs the other lane's store (``meanwhile``, lane 1) to the end, then lets
the first go on (``explore.directed.race``). The laws, for every case:

- the stale plan is noticed and retried once: lane 0's counters move by exactly the case's figures
  (``stale_plan_retries`` 1 and the rule that finally committed), from a base of 10 each, so a counter
  set instead of added to, or added to twice, is seen;
- the store passes the decision points its path is named by (``store.before_first_child``, ...);
- the race ends as the reference tree ends when ``meanwhile``'s store comes first (snapshot and
  shape), and the tree checks, its lane entries included: the storing worker's entries for the
  parent and the stored blocks name nodes that hold them (a repair toward the tail redirected the
  entries it came through).

Without the version check (``impl_mutants.NoVersionCheck``, the negative control) every case breaks
a law: a stale plan commits, no retry is counted, or a block hangs below a tail its worker never held.

Source: docs/sources.md#dynamo-crtc-readme ("Store Paths": plan, validate, commit or retry); docs/concurrency.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from kvproof.impl.lane import LANE_COUNTERS
from kvproof.impl.node import ConcurrentNode
from kvproof.impl.radix_tree import ConcurrentRadixTree
from kvproof.reference import RadixTree
from kvproof.spec.coverage import new_edge
from kvproof.spec.events import KvCacheEvent, Stored
from kvproof.spec.primitives import Block, WorkerWithDpRank
from kvproof.stateful_tests.explore.directed import Raced, race
from kvproof.stateful_tests.tree.impl_mutants import NoVersionCheck

BASE = 10
"""Every lane-0 counter starts the race at this value."""


def stored(parent: int | None, *locals_: int) -> KvCacheEvent:
    """A store of Dynamo-test blocks (block hash = 100 * local) below ``parent``."""
    return KvCacheEvent(0, Stored(parent, tuple(Block(x, 100 * x) for x in locals_)))


Call = tuple[int, int, KvCacheEvent]  # (lane, worker, event)


@dataclass(frozen=True)
class RaceCase:
    name: str
    point: str | Callable[[ConcurrentRadixTree], str]
    prepare: tuple[Call, ...]
    paused: Call
    meanwhile: Call
    counters: dict[str, int]  # lane 0's counters after the race, less BASE (only those that moved)
    passes: tuple[str, ...] = ()
    occurrence: int = 1
    query: tuple[int, ...] = field(default=(1, 2, 3, 4))


def leaf_gate(tree: ConcurrentRadixTree) -> str:
    """The exclusive gate of the root's child [1 ...]: where an extension of that leaf commits."""
    return f"node{tree.root.children[1].id}.shape_gate.exclusive"


A_AND_B_HOLD_123 = ((0, 1, stored(None, 1, 2, 3)), (1, 2, stored(None, 1, 2, 3)))

CASES = (
    RaceCase(
        "fanout under a leaf split meanwhile",  # the fanout's version check; the repair toward the tail
        "store.after_child_plan",
        A_AND_B_HOLD_123,
        (0, 1, stored(300, 4)),
        (1, 2, stored(200, 9)),
        {"stale_plan_retries": 1, "repairs": 1, "leaf_extensions": 1, "demotions": 1},
        passes=("repair.before_scan", "repair.after_redirect"),
    ),
    RaceCase(
        "first child under a leaf extended meanwhile",  # the first child's version check; then a split
        "store.after_child_plan",
        A_AND_B_HOLD_123,
        (0, 1, stored(300, 4)),
        (1, 2, stored(300, 7)),
        {"stale_plan_retries": 1, "splits": 1, "fanout_inserts": 1},
        passes=("store.before_first_child",),
    ),
    RaceCase(
        "extension of a leaf extended before its gate",  # the extension's version check, at the gate itself
        leaf_gate,
        A_AND_B_HOLD_123,
        (0, 1, stored(300, 4)),
        (1, 2, stored(300, 7)),
        {"stale_plan_retries": 1, "splits": 1, "fanout_inserts": 1},
    ),
    RaceCase(
        "descent through a parent split meanwhile",  # the descent's _still_below; the child moved with the suffix
        "store.after_child_plan",
        ((0, 1, stored(None, 1, 2, 3, 4)), (1, 2, stored(None, 1, 2, 5))),
        (0, 1, stored(200, 3, 4, 6)),
        (1, 2, stored(100, 7)),
        {"stale_plan_retries": 1, "repairs": 1, "leaf_extensions": 1},
        passes=("store.after_descend_plan",),
        query=(1, 2, 3, 4, 6),
    ),
    RaceCase(
        "split-and-attach into a child extended meanwhile",  # the split-and-attach's version check
        "store.after_descend_plan",
        ((0, 1, stored(None, 1, 2, 3, 4)), (1, 2, stored(None, 1, 2, 5)), (1, 2, stored(200, 3, 4))),
        (0, 3, stored(None, 1, 2, 3, 9)),
        (1, 2, stored(400, 6)),
        {"stale_plan_retries": 1, "splits": 1},
        occurrence=2,
        query=(1, 2, 3, 9),
    ),
    RaceCase(
        "the same child added by two lanes under an internal node",  # fanout finds the key taken: it descends
        "store.after_child_plan",
        ((0, 1, stored(None, 1, 2)), (1, 2, stored(None, 1, 2)), (1, 2, stored(None, 1, 9))),
        (0, 1, stored(100, 7)),
        (1, 2, stored(100, 7)),
        {},
        passes=("store.after_descend_plan",),
        query=(1, 7),
    ),
)


def run(case: RaceCase, tree_class: type[ConcurrentRadixTree] = ConcurrentRadixTree) -> Raced:
    def make() -> ConcurrentRadixTree:
        tree = tree_class(lanes=2)
        for lane, worker, event in case.prepare:
            tree.lane(lane).apply_event(worker, event)
        for name in LANE_COUNTERS:
            tree.lanes[0].stats[name] = BASE
        return tree

    def call(lane: int, worker: int, event: KvCacheEvent) -> Callable[[ConcurrentRadixTree], None]:
        return lambda tree: tree.lane(lane).apply_event(worker, event)

    return race(case.point, make, call(*case.paused), call(*case.meanwhile), case.occurrence)


def problems(case: RaceCase, raced: Raced) -> list[str]:
    """Every law of the module docstring that the race broke, named."""
    tree: ConcurrentRadixTree = raced.subject
    out = []
    if not raced.reached:
        out.append(f"the paused store never reached {case.point!r}")
    if raced.errors or raced.result is None or raced.result.failed:
        out.append(f"raised {raced.errors} / {raced.result and raced.result.problems}")
    moved = {name: value - BASE for name, value in tree.lanes[0].stats.items() if value != BASE}
    if moved != case.counters:
        out.append(f"lane 0 counted {moved}, not {case.counters}")
    missing = [p for p in case.passes if p not in raced.passed("paused")]
    if missing:
        out.append(f"the store never passed {missing}")
    reference = RadixTree()
    for _, worker, event in (*case.prepare, case.meanwhile, case.paused):
        reference.apply_event(worker, event)
    if (tree.snapshot(), tree.shape()) != (reference.snapshot(), reference.shape()):
        out.append(f"ends as {tree.shape()}, the reference as {reference.shape()}")
    if tree.find_matches(case.query).scores != reference.find_matches(case.query).scores:
        out.append(f"scores {tree.find_matches(case.query).scores}, the reference {reference.find_matches(case.query).scores}")
    try:
        tree.check()
    except AssertionError as exc:
        out.append(f"check: {exc}")
    _, worker, event = case.paused
    assert isinstance(event.data, Stored)
    used = {event.data.parent_hash, *(block.ext for block in event.data.blocks)}
    lookup = tree.lanes[0].lookups[WorkerWithDpRank(worker, 0)]
    stale = sorted(h for h in used if h in lookup and h not in lookup[h].view.index)
    if stale:
        out.append(f"entries {stale} of worker {worker} name a node without their block")
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_stale_plan_is_retried_once_and_the_race_ends_as_the_reference(case):
    assert problems(case, run(case)) == []


@pytest.mark.parametrize("case", [c for c in CASES if c.counters], ids=lambda c: c.name)
def test_negative_control_without_the_version_check_each_race_breaks_a_law(case):
    assert problems(case, run(case, NoVersionCheck)) != []


def test_negative_control_without_the_version_check_a_first_child_hangs_below_a_tail_its_worker_never_held():
    case = CASES[1]
    tree: ConcurrentRadixTree = run(case, NoVersionCheck).subject
    assert tree.lanes[0].stats["first_child_inserts"] == BASE + 1
    assert tree.find_matches([1, 2, 3, 4]).scores[(1, 0)] == 3  # block 4 went below [1 2 3 7]


# ---------------------------------------------------------------- _insert_child, answer by answer


def fresh_below(parent: ConcurrentNode, *locals_: int) -> ConcurrentNode:
    return ConcurrentNode(new_edge(tuple(Block(x, 100 * x) for x in locals_), WorkerWithDpRank(1, 0)), parent)


def test_insert_child_under_an_internal_node_answers_inserted_existing_or_stale():
    """Prefill fanout (the root is internal): the key free, taken, or the parent's version moved since the plan."""
    tree = ConcurrentRadixTree()
    lane, root = tree.lanes[0], tree.root
    child = fresh_below(root, 5)
    assert tree._insert_child(lane, root, 5, child, root.version) == "inserted"
    assert root.children[5] is child and lane.stats["fanout_inserts"] == 1
    assert tree._insert_child(lane, root, 5, fresh_below(root, 5), root.version) == "existing"
    assert root.children[5] is child
    assert tree._insert_child(lane, root, 6, fresh_below(root, 6), root.version + 2) == "stale"
    assert 6 not in root.children
    assert (lane.stats["fanout_inserts"], lane.stats["stale_plan_retries"], lane.stats["first_child_inserts"]) == (1, 1, 0)


def test_insert_child_under_a_leaf_answers_stale_or_inserts_the_first_child_and_makes_the_leaf_internal():
    """The first child of a node that never had one takes the exclusive gate, moves the version and sets the sticky flag."""
    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2))
    lane, leaf = tree.lanes[0], tree.root.children[1]
    version, before = leaf.version, dict(lane.stats)
    assert tree._insert_child(lane, leaf, 7, fresh_below(leaf, 7), version + 2) == "stale"
    assert (leaf.children, leaf.internal) == ({}, False)
    child = fresh_below(leaf, 7)
    assert tree._insert_child(lane, leaf, 7, child, version) == "inserted"
    assert leaf.children == {7: child} and leaf.internal is True and leaf.version == version + 2
    assert {name: n - before[name] for name, n in lane.stats.items() if n != before[name]} == {
        "stale_plan_retries": 1,
        "first_child_inserts": 1,
    }
    assert tree.sticky_internal_nodes() == 0 and tree.statistics().nodes == 2  # the leaf and its child (the root uncounted)


def test_a_tree_has_one_lane_unless_asked_for_more():
    assert len(ConcurrentRadixTree().lanes) == 1
    assert len(ConcurrentRadixTree(lanes=0).lanes) == 1
    assert [lane.index for lane in ConcurrentRadixTree(lanes=3).lanes] == [0, 1, 2]

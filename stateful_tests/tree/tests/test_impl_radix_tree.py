"""The concurrent tree: equal to the reference when run sequentially, and its intended paths taken."""

import pytest
from hypothesis import Phase

from kvproof.impl import _sync
from kvproof.impl.indexer import ThreadPoolIndexer
from kvproof.impl.radix_tree import ConcurrentRadixTree
from kvproof.reference import RadixTree
from kvproof.spec.events import KvCacheEvent, Removed, Stored
from kvproof.spec.primitives import Block
from kvproof.stateful_tests.harness.interleave import race
from kvproof.stateful_tests.harness.seeding import machine_settings, run_machine
from kvproof.stateful_tests.tree.impl_mutants import ExtendsInternalNode, NoVersionCheck, RepairRestoresEntries
from kvproof.stateful_tests.tree.machine import contract_machine_for
from kvproof.stateful_tests.tree.steps import checked_after_every_event, run_scenario
from kvproof.stateful_tests.tree.twin import TwinMismatch, impl_vs_reference
from kvproof.stateful_tests.tree.vectors import SCENARIOS


def stored(parent, *locals_):
    """A store of Dynamo-test blocks (block hash = 100 * local) below ``parent``."""
    return KvCacheEvent(0, Stored(parent, tuple(Block(x, 100 * x) for x in locals_)))


def removed(*hashes):
    return KvCacheEvent(0, Removed(tuple(hashes)))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_impl_reproduces_observed_behaviour(scenario):
    assert run_scenario(checked_after_every_event(ConcurrentRadixTree, scenario), scenario) == []


def test_impl_equals_the_reference_step_by_step_with_three_lanes():
    """Outcomes, scores (both modes), snapshot, dump and shape after every step; lazy repair at work."""
    machine = contract_machine_for(impl_vs_reference(3))
    run_machine(machine, machine_settings(150, 40))
    assert len(machine.runs) >= 150


def _fanout_keeps_the_exclusive_gate_free(tree_class) -> None:
    with ThreadPoolIndexer(threads=4, tree=tree_class(lanes=4)) as pool:
        pool.apply_event(1, stored(None, 1, 2, 3, 4))
        pool.apply_event(2, stored(None, 1, 2, 3, 5))  # splits: [1 2 3] is now internal
        parent = pool.tree.root.children[1]
        before, fanout_before = parent.gate.statistics(), pool.statistics().fanout_inserts
        acks = [pool.submit(10 + i, stored(None, 1, 2, 3, 10 + i)) for i in range(16)]
        for ack in acks:
            ack.wait()
        pool.flush()
        after = parent.gate.statistics()
        assert after.exclusive == before.exclusive
        assert after.shared > before.shared
        assert pool.statistics().fanout_inserts - fanout_before == 16
        assert len(parent.children) == 18


def _decode_extends_in_place(tree_class) -> None:
    tree = tree_class()
    tree.apply_event(1, stored(None, 1, 2, 3))
    for x in (4, 5, 6):
        tree.apply_event(1, stored(100 * (x - 1), x))
    stats = tree.statistics()
    assert stats.leaf_extensions == 3 and stats.nodes == 1
    assert tree.find_matches([1, 2, 3, 4, 5, 6]).scores == {(1, 0): 6}


class _FanoutUnderTheExclusiveGate(ConcurrentRadixTree):
    """Every child insert takes the parent's exclusive gate (no prefill fanout)."""

    def _insert_child(self, lane, parent, key, fresh, version):
        with parent.gate.exclusive():
            if key in parent.children:
                return "existing"
            parent.begin_shape_change()
            parent.children[key] = fresh
            parent.internal = True
            parent.end_shape_change()
            return "inserted"


class _NeverExtends(ConcurrentRadixTree):
    """Decode always adds a child instead of extending the leaf."""

    def _may_extend(self, node, rank) -> bool:
        return False


def test_prefill_fanout_under_an_internal_parent_never_takes_the_exclusive_gate():
    _fanout_keeps_the_exclusive_gate_free(ConcurrentRadixTree)


def test_decode_extension_appends_in_place():
    _decode_extends_in_place(ConcurrentRadixTree)


def test_negative_controls_for_the_intended_paths():
    with pytest.raises(AssertionError):
        _fanout_keeps_the_exclusive_gate_free(_FanoutUnderTheExclusiveGate)
    with pytest.raises(AssertionError):
        _decode_extends_in_place(_NeverExtends)


def _extend_while_planning(tree_class):
    """Lane 0 plans to reuse-and-extend the leaf [1 2 3]; lane 1 extends it first; lane 0 commits."""
    tree = tree_class(lanes=2)
    tree.lane(0).apply_event(1, stored(None, 1, 2, 3))
    tree.lane(1).apply_event(3, stored(None, 1, 2, 3))
    tree.lane(0).apply_event(2, stored(None, 1, 2))  # (2, 0) holds [1 2]: a cutoff
    errors = race(
        "store.after_plan",
        paused=lambda: tree.lane(0).apply_event(2, stored(200, 3, 8)),  # plan: reuse [3], extend with [8]
        meanwhile=lambda: tree.lane(1).apply_event(3, stored(300, 4)),  # (3, 0) extends the leaf to [1 2 3 4]
    )
    assert errors == []
    return tree


def test_a_stale_plan_is_detected_and_retried():
    tree = _extend_while_planning(ConcurrentRadixTree)
    assert tree.statistics().stale_plan_retries >= 1
    tree.check()
    reference = RadixTree()
    order = [(1, stored(None, 1, 2, 3)), (3, stored(None, 1, 2, 3)), (2, stored(None, 1, 2)),
             (3, stored(300, 4)), (2, stored(200, 3, 8))]
    for worker, event in order:
        reference.apply_event(worker, event)
    assert tree.snapshot() == reference.snapshot() and tree.shape() == reference.shape()
    assert tree.find_matches([1, 2, 3, 4]).scores == {(1, 0): 3, (2, 0): 3, (3, 0): 4}


def test_negative_control_without_the_version_check_the_stale_plan_overcounts():
    tree = _extend_while_planning(NoVersionCheck)
    # (2, 0) never stored block 4, yet the stale extension made it a full holder of [1 2 3 4 8].
    assert tree.find_matches([1, 2, 3, 4]).scores.get((2, 0)) == 4


def test_lazy_repair_after_another_lanes_split():
    tree = ConcurrentRadixTree(lanes=2)
    tree.lane(0).apply_event(1, stored(None, 1, 2, 3, 4))
    tree.lane(1).apply_event(2, stored(None, 1, 2, 5))  # splits [1 2 3 4] at 2; lane 0's entries go stale
    tree.lane(0).apply_event(1, stored(400, 6))  # the parent moved to the suffix: repaired toward the tail
    tree.lane(0).apply_event(1, removed(600, 400))  # ... and toward the head on removal
    assert tree.statistics().repairs >= 1
    tree.check()
    assert tree.find_matches([1, 2, 3, 4, 6]).scores == {(1, 0): 3, (2, 0): 2}


@pytest.mark.parametrize("mutant", [RepairRestoresEntries, ExtendsInternalNode], ids=lambda m: m.__name__)
def test_negative_control_the_lockstep_twin_catches(mutant):
    machine = contract_machine_for(impl_vs_reference(3, impl_class=mutant))
    quick = machine_settings(150, 40)
    quick = quick.__class__(quick, phases=[Phase.explicit, Phase.generate])  # detection only: no shrinking
    with pytest.raises((AssertionError, TwinMismatch)):
        run_machine(machine, quick)


def test_yield_points_are_named_and_reached():
    names = set()

    class Record:
        def yield_point(self, name):
            names.add(name)

    _sync.install(Record())
    try:
        tree = ConcurrentRadixTree(lanes=2)
        tree.lane(0).apply_event(1, stored(None, 1, 2, 3))
        tree.lane(1).apply_event(2, stored(None, 1, 2, 5))
        tree.lane(0).apply_event(1, stored(300, 4))
        tree.lane(0).apply_event(1, removed(200))
        tree.find_matches([1, 2, 3, 4])
    finally:
        _sync.install(None)
    assert {"store.after_plan", "store.after_child_plan", "remove.before_gate", "read.after_version", "read.after_child"} <= names

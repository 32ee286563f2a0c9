"""The concurrent tree: equal to the reference when run sequentially, and its intended paths taken."""

import pytest
from hypothesis import Phase

from kvproof.impl import _sync
from kvproof.impl.indexer import ThreadPoolIndexer
from kvproof.impl.node import ConcurrentNodeView
from kvproof.impl.radix_tree import ConcurrentRadixTree
from kvproof.reference import RadixTree
from kvproof.spec.errors import BlockNotFound, ParentBlockNotFound
from kvproof.spec.events import Cleared, KvCacheEvent, Removed, Stored
from kvproof.spec.primitives import Block
from kvproof.stateful_tests.harness.interleave import race
from kvproof.stateful_tests.harness.seeding import machine_settings, run_machine
from kvproof.stateful_tests.tree.impl_mutants import ConcurrentExtendsInternalNode, NoVersionCheck, RepairRestoresEntries
from kvproof.stateful_tests.tree.machine import contract_machine_for
from kvproof.stateful_tests.tree.twin import Twin, TwinMismatch, impl_vs_reference
from kvproof.stateful_tests.tree.vectors import replayed as replay_vector


def stored(parent, *locals_):
    """A store of Dynamo-test blocks (block hash = 100 * local) below ``parent``."""
    return KvCacheEvent(0, Stored(parent, tuple(Block(x, 100 * x) for x in locals_)))


def removed(*hashes):
    return KvCacheEvent(0, Removed(tuple(hashes)))


@pytest.mark.slow  # the gate's "equals reference (3 lanes, lockstep)" row runs this machine at this budget; CI's deep job and mutation run it
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


BASE = 10
"""Lane 0's stale-plan count before a race: a retry adds one to it (a count set, or added twice, is seen)."""


def _extend_while_planning(tree_class):
    """Lane 0 plans to reuse-and-extend the leaf [1 2 3]; lane 1 extends it first; lane 0 commits."""
    tree = tree_class(lanes=2)
    tree.lane(0).apply_event(1, stored(None, 1, 2, 3))
    tree.lane(1).apply_event(3, stored(None, 1, 2, 3))
    tree.lane(0).apply_event(2, stored(None, 1, 2))  # (2, 0) holds [1 2]: a cutoff
    tree.lanes[0].stats["stale_plan_retries"] = BASE
    errors = race(
        "store.after_plan",
        paused=lambda: tree.lane(0).apply_event(2, stored(200, 3, 8)),  # plan: reuse [3], extend with [8]
        meanwhile=lambda: tree.lane(1).apply_event(3, stored(300, 4)),  # (3, 0) extends the leaf to [1 2 3 4]
    )
    assert errors == []
    return tree


def test_a_stale_plan_is_detected_and_retried():
    tree = _extend_while_planning(ConcurrentRadixTree)
    assert tree.lanes[0].stats["stale_plan_retries"] == BASE + 1  # retried exactly once, added to what the lane had counted
    tree.check()
    reference = RadixTree()
    order = [
        (1, stored(None, 1, 2, 3)),
        (3, stored(None, 1, 2, 3)),
        (2, stored(None, 1, 2)),
        (3, stored(300, 4)),
        (2, stored(200, 3, 8)),
    ]
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


@pytest.mark.parametrize("mutant", [RepairRestoresEntries, ConcurrentExtendsInternalNode], ids=lambda m: m.__name__)
def test_negative_control_the_lockstep_twin_catches(mutant):
    machine = contract_machine_for(impl_vs_reference(3, impl_class=mutant))
    quick = machine_settings(150, 40)
    quick = quick.__class__(quick, phases=[Phase.explicit, Phase.generate])  # detection only: no shrinking
    with pytest.raises((AssertionError, TwinMismatch)):
        run_machine(machine, quick)


def test_yield_points_are_named_and_reached():
    names = set()

    class TreePointRecord:
        def yield_point(self, name):
            names.add(name)

    _sync.install(TreePointRecord())
    try:
        tree = ConcurrentRadixTree(lanes=2)
        tree.lane(0).apply_event(1, stored(None, 1, 2, 3))
        tree.lane(1).apply_event(2, stored(None, 1, 2, 5))
        tree.lane(0).apply_event(1, stored(300, 4))
        tree.lane(0).apply_event(1, removed(200))
        tree.find_matches([1, 2, 3, 4])
        tree.lane(1).remove_worker(2)
        tree.lane(0).apply_event(3, stored(None, 1, 2, 3, 7))  # descends through [1 2] into [3 ...]
    finally:
        _sync.install(None)
    assert {
        "store.after_plan",
        "store.after_child_plan",
        "remove.before_gate",
        "read.after_version",
        "read.after_child",
        "repair.before_scan",
        "repair.after_redirect",
        "drop.before_gate",
        "store.after_descend_plan",
    } <= names


class _CountsSplitsTwice(ConcurrentRadixTree):
    def _split_locked(self, lane, node, p):
        super()._split_locked(lane, node, p)
        lane.stats["splits"] += 1


class _DumpsInOtherOrder(RadixTree):
    def dump_tree_as_events(self):
        return super().dump_tree_as_events()[::-1]


def test_the_twin_holds_the_dumps_to_the_same_entries_in_any_order_and_answers_the_primarys_lines():
    """Dump order is not part of the contract: the same entries in another order are the same dump, and the twin
    answers the primary's lines; a dump that lost an entry is named (the control)."""
    primary, reordered, short = RadixTree(), _DumpsInOtherOrder(), RadixTree()
    for tree in (primary, reordered, short):
        tree.apply_event(1, stored(None, 1, 2, 3))
        tree.apply_event(2, stored(None, 1, 5))
    short.remove_worker(2)
    lines = primary.dump_tree_as_events()
    assert len(lines) >= 2 and reordered.dump_tree_as_events() != lines
    assert Twin(primary, reordered).dump_tree_as_events() == lines
    assert Twin(reordered, primary).dump_tree_as_events() == lines[::-1]
    with pytest.raises(TwinMismatch, match="dumps differ"):
        Twin(primary, short).dump_tree_as_events()


def test_the_twin_holds_the_shape_rule_counters_to_the_reference():
    """The negative control of the counter law in ``Twin.check``: a tree that splits right but counts wrong is named."""
    twin = impl_vs_reference(1, impl_class=_CountsSplitsTwice)()
    twin.apply_event(1, stored(None, 1, 2, 3))
    twin.apply_event(2, stored(None, 1, 5))
    with pytest.raises(TwinMismatch, match=r"shape-rule counters differ, as \(primary, shadow\): \{'splits': \(2, 1\)\}"):
        twin.check()
    sound = impl_vs_reference(1)()
    sound.apply_event(1, stored(None, 1, 2, 3))
    sound.apply_event(2, stored(None, 1, 5))
    sound.check()


def test_a_parent_past_the_rank_s_cutoff_is_refused_with_its_own_message_and_its_entry_goes():
    """As the reference (docs/dynamo-findings.md F9): the first refusal names the rank that no longer holds the
    parent and drops the entry, so the retry is refused as an unknown parent. The rank is still credited with
    block 200 (its first position) but no entry finds it any more: the loss F9 describes, which this tree's
    check() names (the reference's check has no such rule)."""
    tree = replay_vector(ConcurrentRadixTree(), "F9b_parent_repeated_on_an_edge_resolves_past_the_rank_s_cutoff", 2)
    again = KvCacheEvent(0, Stored(200, (Block(1, 100),)))
    with pytest.raises(ParentBlockNotFound, match=r"^Failed to apply event: parent block 200 is no longer held by \(2, 0\)$"):
        tree.apply_event(2, again)
    with pytest.raises(ParentBlockNotFound, match=r"^Failed to apply event: Failed to find parent block 200 for \(2, 0\)$"):
        tree.apply_event(2, again)
    with pytest.raises(AssertionError, match=r"check failed:\n  \(2, 0\)\[200\] is credited but has no lane entry$"):
        tree.check()


def test_a_store_repairs_its_parent_toward_the_tail_once_for_the_blocks_after_it():
    """Lane 0's entries went stale in lane 1's split; the store below 4 redirects 4 and 5, so the store below 5
    needs no second repair."""
    tree = ConcurrentRadixTree(lanes=2)
    tree.lane(0).apply_event(1, stored(None, 1, 2, 3, 4, 5))
    tree.lane(1).apply_event(2, stored(None, 1, 2, 9))
    tree.lane(0).apply_event(1, stored(400, 6))
    assert tree.statistics().repairs == 1
    tree.lane(0).apply_event(1, stored(500, 7))
    assert tree.statistics().repairs == 1
    tree.check()


def test_a_read_takes_no_gate_and_a_reuse_takes_only_shared_ones():
    """Gate acquisitions between two ``statistics()`` calls, less what ``statistics()`` itself takes (a shared
    hold per node it walks, measured by calling it twice with nothing between)."""
    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2, 3))

    def gates_taken_by(call):
        first, second = tree.statistics(), tree.statistics()
        own = (second.gate_shared - first.gate_shared, second.gate_exclusive - first.gate_exclusive)
        call()
        third = tree.statistics()
        return third.gate_shared - second.gate_shared - own[0], third.gate_exclusive - second.gate_exclusive - own[1]

    assert gates_taken_by(lambda: tree.find_matches([1, 2, 3])) == (0, 0)
    shared, exclusive = gates_taken_by(lambda: tree.apply_event(1, stored(100, 2)))  # a store the edge already holds
    assert shared >= 1 and exclusive == 0 and tree.statistics().reuses == 1


def test_a_drop_takes_the_exclusive_gate_of_each_node_it_held_once():
    """Every one of worker 1's five entries names the same node: the sweep drops the rank there once (one exclusive
    hold), then releases the dead leaf (the root's gate and the leaf's, parent first): two holds on the leaf, one on
    the root, however many entries name it."""
    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2, 3, 4, 5))
    node, before = tree.root.children[1], tree.root.gate.statistics().exclusive
    held = node.gate.statistics().exclusive
    tree.remove_worker(1)
    assert node.gate.statistics().exclusive == held + 2 and tree.root.gate.statistics().exclusive == before + 1
    assert tree.statistics().nodes == 0 and tree.statistics().released_dead_nodes == 1


@pytest.mark.parametrize(
    "how", ["remove_worker", "remove_worker_dp_rank", "lane remove_worker", "pool remove_worker", "cleared event"]
)
def test_a_removed_worker_leaves_no_lookup_behind(how):
    """Fresh worker ids must not grow the lanes' tables: a removal forgets the rank (a clear keeps it, emptied)."""
    pool = ThreadPoolIndexer(threads=2) if how.startswith("pool") else None
    tree = pool.tree if pool else ConcurrentRadixTree(lanes=2)
    for worker in range(1, 21):
        if pool:
            pool.apply_event(worker, stored(None, 1, worker + 1))
            pool.remove_worker(worker)
            continue
        tree.lane(worker % 2).apply_event(worker, stored(None, 1, worker + 1))
        if how == "remove_worker":
            tree.remove_worker(worker)
        elif how == "remove_worker_dp_rank":
            tree.remove_worker_dp_rank(worker, 0)
        elif how == "cleared event":
            tree.lane(worker % 2).apply_event(worker, KvCacheEvent(0, Cleared()))
        else:
            tree.lane(worker % 2).remove_worker(worker)
    if pool:
        pool.close()
    assert [lane.lookups for lane in tree.lanes] == [{}, {}] and tree.statistics().nodes == 0
    tree.apply_event(30, stored(None, 1))
    tree.clear_all_blocks(30)
    assert tree.lanes[0].lookups == {(30, 0): {}}
    tree.check()


def test_an_interrupted_read_poisons_the_tree_naming_the_call(monkeypatch):
    import kvproof.impl.radix_tree as module

    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2))
    monkeypatch.setattr(module, "find_matches_walk", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        tree.find_matches([1, 2])
    assert str(tree.poisoned).startswith("KeyboardInterrupt interrupted find_matches ()")


@pytest.mark.parametrize(
    ("call", "named"),
    [("remove_worker", "remove_worker"), ("remove_worker_dp_rank", "remove_worker"), ("clear_all_blocks", "clear_all_blocks")],
)
def test_an_interrupted_drop_poisons_the_tree_naming_the_call(monkeypatch, call, named):
    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2))
    monkeypatch.setattr(ConcurrentRadixTree, "_drop_ranks", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        getattr(tree, call)(*((1, 0) if call == "remove_worker_dp_rank" else (1,)))
    assert str(tree.poisoned).startswith(f"KeyboardInterrupt interrupted {named} ()")


def test_a_removal_that_leaves_the_node_held_tries_no_release():
    """Only a leaf left holder-less is worth the parent's gate: worker 2 still holds the edge, so worker 1's
    removal takes the node's exclusive gate once and the root's not at all."""
    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2, 3))
    tree.apply_event(2, stored(None, 1, 2, 3))
    node = tree.root.children[1]
    root_before, node_before = tree.root.gate.statistics().exclusive, node.gate.statistics().exclusive
    tree.apply_event(1, removed(300))
    assert (tree.root.gate.statistics().exclusive, node.gate.statistics().exclusive) == (root_before, node_before + 1)
    assert tree.find_matches([1, 2, 3]).scores == {(1, 0): 2, (2, 0): 3}


def test_rejections_name_the_block_and_the_rank():
    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2))
    with pytest.raises(BlockNotFound, match=r"^Failed to apply event: Failed to find block 777 for \(1, 0\)$"):
        tree.apply_event(1, removed(200, 777))
    with pytest.raises(ParentBlockNotFound, match=r"^Failed to apply event: Failed to find parent block 999 for \(1, 0\)$"):
        tree.apply_event(1, stored(999, 3))
    assert tree.find_matches([1, 2]).scores == {(1, 0): 1}  # the batch's held hash went first (crtc.md §12 item 4)


def test_the_twin_compares_cutoff_and_sticky_node_counts():
    class CountsNoCutoffs(ConcurrentRadixTree):
        def cutoff_nodes(self):
            return 0

    twin = impl_vs_reference(1, impl_class=CountsNoCutoffs)()
    twin.apply_event(1, stored(None, 1, 2, 3))
    twin.apply_event(2, stored(None, 1, 2))  # a cutoff on [1 2 3]
    with pytest.raises(TwinMismatch, match=r"'cutoff_nodes': \(0, 1\)"):
        twin.check()


def test_check_names_each_broken_invariant_one_line_each():
    """The message a failed check() prints: the node and the predicate, a held gate, an entry that names no holder
    (neither the node nor any suffix split off it has the block), a credited block no entry finds; at most 20 lines."""
    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2))
    tree.apply_event(2, stored(None, 5))
    first, second = tree.root.children[1], tree.root.children[5]
    first.view = ConcurrentNodeView(first.view.state, {})  # an edge index that lost its entries
    second.gate.acquire_shared()
    tree.lanes[0].lookups[(1, 0)][777] = first
    del tree.lanes[0].lookups[(2, 0)]
    with pytest.raises(AssertionError) as caught:
        tree.check()
    assert str(caught.value) == (
        "ConcurrentRadixTree.check failed:\n"
        f"  {first!r}: is_edge_index_consistent\n"
        f"  {second!r}: shape gate still held\n"
        f"  lane 0 entry (1, 0)[100] -> {first!r} names no holder\n"
        f"  lane 0 entry (1, 0)[200] -> {first!r} names no holder\n"
        f"  lane 0 entry (1, 0)[777] -> {first!r} names no holder\n"
        "  (2, 0)[500] is credited but has no lane entry"
    )
    second.gate.release_shared()
    for h in range(1000, 1030):
        tree.lanes[0].lookups[(1, 0)][h] = first
    with pytest.raises(AssertionError) as caught:
        tree.check()
    assert len(str(caught.value).splitlines()) == 1 + 20


def test_the_splitting_lane_redirects_every_one_of_its_ranks_at_once():
    """A split on lane 0 moves [2 3] to a suffix: every lane-0 rank's entries for 2 and 3 name the suffix at once,
    whatever the order of the holders, while lane 1's ranks are left to lazy repair."""
    tree = ConcurrentRadixTree(lanes=2)
    for worker in range(1, 9):
        tree.lane(worker % 2).apply_event(worker, stored(None, 1, 2, 3))
    cut = tree.root.children[1]
    tree.lane(0).apply_event(20, stored(None, 1, 5))  # splits [1 2 3] at 1
    (suffix,) = cut.splits
    own = {
        rank: {h: lookup[h] is suffix for h in (200, 300)} for rank, lookup in tree.lanes[0].lookups.items() if rank != (20, 0)
    }
    other = {rank: {h: lookup[h] is suffix for h in (200, 300)} for rank, lookup in tree.lanes[1].lookups.items()}
    assert own == {(w, 0): {200: True, 300: True} for w in (2, 4, 6, 8)}
    assert other == {(w, 0): {200: False, 300: False} for w in (1, 3, 5, 7)}
    tree.check()


def test_a_removal_run_over_stale_entries_is_repaired_once():
    """Lane 1's split left lane 0's entries for 3, 4 and 5 naming the cut node: a head-first batch (3 then 4) repairs
    at 3 and takes 4 in the same run, since its entry names a node the repair came through (one repair, one cut)."""
    tree = ConcurrentRadixTree(lanes=2)
    tree.lane(0).apply_event(1, stored(None, 1, 2, 3, 4, 5))
    tree.lane(1).apply_event(2, stored(None, 1, 2, 9))
    tree.lane(0).apply_event(1, removed(300, 400))
    stats = tree.statistics()
    assert (stats.repairs, stats.cutoffs_set) == (1, 0)  # the cut at 3 leaves w1 none of [3 4 5]: no partial cutoff
    assert tree.find_matches([1, 2, 3, 4, 5]).scores == {(1, 0): 2, (2, 0): 2}
    tree.check()

"""The sequential reference: every observed Dynamo behaviour, check() after every step, the API laws."""


import pytest

from kvproof.reference import RadixTree
from kvproof.spec.errors import InvalidArgument, InvalidArgumentType, KvProofError, MalformedEvent
from kvproof.stateful_tests.tree.api_laws import check_dump_rebuild, check_tree_bad_input
from kvproof.stateful_tests.tree.mutants import AcceptsGarbage, BadInputLeavesATrace, DumpDropsLastEvent
from kvproof.stateful_tests.tree.steps import checked_after_every_event, run_scenario, run_step
from kvproof.stateful_tests.tree.streams import generate
from kvproof.stateful_tests.tree.vectors import SCENARIOS


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_reference_reproduces_observed_behaviour(scenario):
    assert run_scenario(checked_after_every_event(RadixTree, scenario), scenario) == []


def test_statistics_count_the_shape_rules():
    tree = RadixTree()
    for step in SCENARIOS[[s.name for s in SCENARIOS].index("E18_extension_demotion_and_split")].steps:
        run_step(tree, step, 0)
    stats = tree.statistics()
    assert stats.leaf_extensions >= 1 and stats.demotions >= 1 and stats.splits >= 1 and stats.reuses >= 1


def test_debug_dump_draws_each_edge_its_holders_cutoffs_and_internal_mark_in_child_order():
    """The picture failure messages print (E18: an extension, a demotion, a split), exactly, and the empty tree's."""
    tree = RadixTree()
    assert tree.debug_dump() == "tree:\n  (empty)"
    for step in SCENARIOS[[s.name for s in SCENARIOS].index("E18_extension_demotion_and_split")].steps:
        run_step(tree, step, 0)
    assert tree.debug_dump() == ("tree:\n"
                                 "  [1 2 3] full=[(1, 0), (2, 0)] internal\n"
                                 "    [4 6] full=[(1, 0)] cut={(2, 0): 1}\n"
                                 "    [5] full=[(2, 0)]")


@pytest.mark.parametrize("index", range(30))
def test_dump_rebuilds_an_equal_tree(index):
    assert check_dump_rebuild(RadixTree, generate(11, index)) == []


def test_bad_input_gets_a_typed_error_and_changes_nothing():
    tried, problems = check_tree_bad_input(RadixTree, require_typed=True)
    assert tried >= 20 and problems == []


def test_error_types_are_drop_in_for_the_bindings():
    tree = RadixTree()
    with pytest.raises(ValueError):
        tree.apply_event(1, b"garbage")
    with pytest.raises(OverflowError):
        tree.apply_event(-1, b'{"event_id": 1, "data": "cleared"}')
    with pytest.raises(TypeError):
        tree.find_matches(["a"])
    with pytest.raises(RuntimeError):
        tree.apply_event(1, b'{"event_id": 1, "data": {"removed": {"block_hashes": [5]}}}')
    for exc in (MalformedEvent, InvalidArgument, InvalidArgumentType):
        assert issubclass(exc, KvProofError)


def test_check_catches_a_corrupted_tree():
    """Negative control for check(): a cutoff outside the edge is reported."""
    from kvproof.spec.coverage import EdgeState
    from kvproof.spec.primitives import FrozenMap, Rank

    tree = RadixTree()
    tree.apply_event(1, b'{"event_id": 1, "data": {"stored": {"blocks": [{"block_hash": 100, "tokens_hash": 1}, {"block_hash": 200, "tokens_hash": 2}]}}}')
    node = tree.root.children[1]
    node.state = EdgeState(node.state.edge, node.state.full_edge_workers, FrozenMap({Rank(2): 2}))
    with pytest.raises(AssertionError, match="is_cutoffs_strictly_inside"):
        tree.check()


def test_negative_control_the_dump_law_catches_a_lossy_dump():
    assert any(check_dump_rebuild(DumpDropsLastEvent, generate(11, i)) for i in range(10))


@pytest.mark.dynamo
def test_negative_control_the_dump_law_catches_dynamos_unreplayable_dump(dynamo_tree):
    """docs/dynamo-findings.md F2: the package's own dump breaks the law."""
    assert any(check_dump_rebuild(dynamo_tree, generate(5, i)) for i in range(20))


def test_negative_control_the_bad_input_law_catches_acceptance_and_side_effects():
    _, accepted = check_tree_bad_input(AcceptsGarbage, require_typed=True)
    _, traced = check_tree_bad_input(BadInputLeavesATrace, require_typed=True)
    assert any("accepted" in p for p in accepted)
    assert any("changed the tree" in p for p in traced)


def _long_edge_tree(tree_class, n=3000):
    from kvproof.spec.events import KvCacheEvent, Stored
    from kvproof.spec.primitives import Block

    tree = tree_class()
    tree.apply_event(1, KvCacheEvent(0, Stored(None, tuple(Block(i, 1000 + i) for i in range(n)))))
    tree.apply_event(2, KvCacheEvent(0, Stored(None, tuple(Block(i, 1000 + i) for i in range(n // 2)))))
    return tree


@pytest.mark.parametrize("tree_class", ["reference", "impl"])
def test_check_is_linear_on_a_long_edge_it_never_scans_an_edge_per_lookup_entry(tree_class, monkeypatch):
    # A lookup entry's position comes from the node's edge index (one dict lookup), so check() costs O(blocks),
    # not O(blocks x edge length): 4,500 entries on a 3,000-block edge took 0.58 s with a scan per entry.
    from kvproof.impl.radix_tree import ConcurrentRadixTree
    from kvproof.spec import invariants

    tree = _long_edge_tree(RadixTree if tree_class == "reference" else ConcurrentRadixTree)

    def no_scan(edge, ext):
        raise AssertionError("check() scanned an edge for one lookup entry")
    monkeypatch.setattr(invariants, "edge_position", no_scan)
    tree.check()


def test_check_still_catches_an_entry_for_a_block_the_rank_does_not_cover():
    """Negative control of the indexed lookup check: an entry past the rank's cutoff is reported."""
    tree = _long_edge_tree(RadixTree, 10)
    node = tree.root.children[0]
    tree._lookups[next(r for r in tree._lookups if r.worker_id == 2)][1009] = node  # rank 2 holds blocks 0..4 only
    with pytest.raises(AssertionError, match="is_lookup_entry_on_holder"):
        tree.check()

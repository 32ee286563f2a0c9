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


def e18_tree():
    """The reference after E18's steps: an extension, a demotion and a split."""
    tree = RadixTree()
    for step in SCENARIOS[[s.name for s in SCENARIOS].index("E18_extension_demotion_and_split")].steps:
        run_step(tree, step, 0)
    return tree


def test_statistics_count_the_shape_rules():
    """E18, counted by hand: worker 1's [1 2 3] is a child insert and worker 2's the same edge a reuse; worker 1's
    4 below 3 extends the leaf and demotes worker 2 (a cutoff at 3); worker 2's 5 below 3 splits before 4 and
    inserts a child; worker 1's 6 below 4 extends that leaf and demotes worker 2 again. Worker 2's own 4 below 3
    raises its cutoff inside the edge: none of the counters."""
    tree = e18_tree()
    stats = tree.statistics()
    assert (stats.child_inserts, stats.reuses, stats.leaf_extensions, stats.demotions, stats.splits) == (2, 1, 2, 2, 1)
    assert (stats.sticky_refusals, stats.cutoffs_set, stats.children_cleared, stats.released_dead_nodes,
            stats.rejected, stats.nodes) == (0, 0, 0, 0, 0, 3)
    twice = RadixTree()  # [1 2 3 4], then 5 below 2 (a split before 3) and 6 below 1 (a split before 2)
    twice.apply_event(1, b'{"event_id": 1, "data": {"stored": {"blocks": [{"block_hash": 10, "tokens_hash": 1}, {"block_hash": 20, "tokens_hash": 2}, {"block_hash": 30, "tokens_hash": 3}, {"block_hash": 40, "tokens_hash": 4}]}}}')
    twice.apply_event(1, b'{"event_id": 2, "data": {"stored": {"parent_hash": 20, "blocks": [{"block_hash": 50, "tokens_hash": 5}]}}}')
    twice.apply_event(1, b'{"event_id": 3, "data": {"stored": {"parent_hash": 10, "blocks": [{"block_hash": 60, "tokens_hash": 6}]}}}')
    twice.check()
    assert (twice.statistics().splits, twice.statistics().child_inserts, twice.statistics().nodes) == (2, 3, 5)


def test_check_failure_names_each_broken_invariant_and_draws_the_tree():
    """The message a failed check() prints, exactly: one line per problem (where, which predicate), then the tree."""
    tree = e18_tree()
    tree.root.children[1].edge_index = {}
    tree.root.children[1].children[5].edge_index = {}
    with pytest.raises(AssertionError) as caught:
        tree.check(lookups=False)
    assert str(caught.value) == ("RadixTree.check failed:\n"
                                 "  node (1,): is_edge_index_consistent\n"
                                 "  node (1, 5): is_edge_index_consistent\n"
                                 "tree:\n"
                                 "  [1 2 3] full=[(1, 0), (2, 0)] internal\n"
                                 "    [4 6] full=[(1, 0)] cut={(2, 0): 1}\n"
                                 "    [5] full=[(2, 0)]")


def test_check_catches_a_parent_link_that_is_not_the_holding_node():
    """Negative control for check()'s parent-link invariant: a split's suffix whose parent was left unset."""
    tree = e18_tree()
    tree.root.children[1].children[4].parent = None
    with pytest.raises(AssertionError, match=r"node \(1, 4\): is_parent_link_consistent"):
        tree.check(lookups=False)


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


def shape_counts(tree):
    """The reads ``statistics().nodes``, ``cutoff_nodes`` and ``sticky_internal_nodes`` count, counted from the spec's shape."""
    shape = tree.shape()
    paths = [path for path, *_ in shape]
    parents = {path[:-1] for path in paths}
    cut = sum(1 for _, _, _, cutoffs, _ in shape if cutoffs)
    sticky = sum(1 for path, _, _, _, internal in shape if internal and path not in parents)
    return len(shape), cut, sticky


def test_node_cutoff_and_sticky_counts_are_the_shapes():
    """Law: the tree's own counts of reachable nodes, cutoff nodes and childless internal nodes are the ones its
    shape (spec.dump.tree_shape) shows, at every step of 12 generated streams."""
    from kvproof.stateful_tests.tree.streams import apply_op

    reached = [0, 0, 0]
    for index in range(12):
        tree = RadixTree()
        for op in generate(11, index).ops:
            apply_op(tree, op)
            counts = shape_counts(tree)
            assert (tree.statistics().nodes, tree.cutoff_nodes(), tree.sticky_internal_nodes()) == counts, (index, op)
            reached = [r + (c > 1 if i == 0 else c > 0) for i, (r, c) in enumerate(zip(reached, counts))]
    assert min(reached) > 20, f"the streams must reach branching, cutoffs and sticky nodes, or the law is idle: {reached}"


def test_removing_a_rank_forgets_it_and_clearing_a_worker_keeps_its_ranks():
    """Law (Dynamo's remove_worker / remove_worker_dp_rank forget the rank; clear_all_blocks keeps every rank
    registered with nothing held): ``known_ranks`` says which ranks the tree keeps a lookup for."""
    from kvproof.spec.primitives import Rank

    tree = RadixTree()
    for dp in (0, 1):
        tree.apply_event(7, f'{{"event_id": {dp}, "dp_rank": {dp}, "data": {{"stored": {{"blocks": [{{"block_hash": {10 + dp}, "tokens_hash": 1}}]}}}}}}'.encode())
    tree.apply_event(8, b'{"event_id": 3, "data": {"stored": {"blocks": [{"block_hash": 20, "tokens_hash": 2}]}}}')
    assert tree.known_ranks() == {Rank(7, 0), Rank(7, 1), Rank(8, 0)}
    tree.remove_worker_dp_rank(7, 1)
    assert tree.known_ranks() == {Rank(7, 0), Rank(8, 0)}
    tree.clear_all_blocks(8)
    assert tree.known_ranks() == {Rank(7, 0), Rank(8, 0)} and Rank(8, 0) not in tree.snapshot()
    tree.remove_worker(7)
    assert tree.known_ranks() == {Rank(8, 0)} and tree.snapshot() == {}
    tree.check()


STORE_TWO = b'{"event_id": 1, "data": {"stored": {"blocks": [{"block_hash": 100, "tokens_hash": 1}, {"block_hash": 200, "tokens_hash": 2}]}}}'
STORE_BELOW = b'{"event_id": 2, "data": {"stored": {"parent_hash": 200, "blocks": [{"block_hash": 300, "tokens_hash": 3}, {"block_hash": 400, "tokens_hash": 4}]}}}'
STORE_BESIDE = b'{"event_id": 3, "data": {"stored": {"parent_hash": 200, "blocks": [{"block_hash": 500, "tokens_hash": 5}]}}}'


def test_check_catches_an_edge_index_that_disagrees_with_the_edge():
    """Negative control for check(): a node's edge index (hash -> position) that lost its entries is reported."""
    tree = RadixTree()
    tree.apply_event(1, STORE_TWO)
    tree.check()
    tree.root.children[1].edge_index = {}
    with pytest.raises(AssertionError, match="is_edge_index_consistent"):
        tree.check(lookups=False)


def test_check_catches_a_holderless_node_that_kept_its_children():
    """Negative control for check(): in the compressed tree a node nobody holds has no children."""
    from kvproof.spec.coverage import EdgeState
    from kvproof.spec.primitives import FrozenMap

    tree = RadixTree()
    tree.apply_event(1, STORE_TWO)
    tree.apply_event(1, STORE_BELOW)
    tree.apply_event(1, STORE_BESIDE)
    node = tree.root.children[1]
    assert len(node.children) == 2
    node.state = EdgeState(node.state.edge, frozenset(), FrozenMap({}))
    with pytest.raises(AssertionError, match="is_holderless_childless"):
        tree.check(lookups=False)


def test_the_per_block_tree_is_excused_only_holderless_childless_nodes():
    """Under variant per-block-nodes, check() lets a node nobody holds keep its children, and nothing else:
    every other invariant of that very node is still checked (here: its edge index, corrupted)."""
    from kvproof.spec.rules import with_variants

    tree = RadixTree(with_variants(frozenset({"per-block-nodes"})))
    tree.apply_event(1, STORE_TWO)
    tree.apply_event(1, STORE_BELOW)
    tree.apply_event(1, b'{"event_id": 3, "data": {"removed": {"block_hashes": [200]}}}')
    tree.check()
    holderless = [n for _, n in tree._reachable_nodes() if not n.state.full_edge_workers and n.children]
    assert holderless, "the stream must leave a holder-less node with children"
    holderless[0].edge_index = {}
    with pytest.raises(AssertionError, match="is_edge_index_consistent"):
        tree.check(lookups=False)

"""The sequential reference: every observed Dynamo behaviour, check() after every step, the API laws."""

import copy

import pytest

from kvproof.reference import RadixTree
from kvproof.spec.errors import (
    BlockNotFound,
    InvalidArgument,
    InvalidArgumentType,
    KvProofError,
    MalformedEvent,
    ParentBlockNotFound,
)
from kvproof.stateful_tests.harness.paths import chain
from kvproof.stateful_tests.harness.targets import canonical_dump
from kvproof.stateful_tests.tree.api_laws import check_dump_rebuild, check_tree_bad_input
from kvproof.stateful_tests.tree.mutants import AcceptsGarbage, BadInputLeavesATrace, DumpDropsLastEvent
from kvproof.stateful_tests.tree.steps import Remove, Store, run_step
from kvproof.stateful_tests.tree.streams import apply_op, generate
from kvproof.stateful_tests.tree.vectors import replayed as replay_vector


def replayed(vector, steps=None):
    """The reference after the first ``steps`` steps of the named vector (all of them by default), each as recorded."""
    return replay_vector(RadixTree(), vector, steps)


def e18_tree():
    """The reference after E18's steps: an extension, a demotion and a split."""
    return replayed("E18_extension_demotion_and_split")


def test_statistics_count_the_shape_rules():
    """E18, counted by hand: worker 1's [1 2 3] is a child insert and worker 2's the same edge a reuse; worker 1's
    4 below 3 extends the leaf and demotes worker 2 (a cutoff at 3); worker 2's 5 below 3 splits before 4 and
    inserts a child; worker 1's 6 below 4 extends that leaf and demotes worker 2 again. Worker 2's own 4 below 3
    raises its cutoff inside the edge: none of the counters."""
    tree = e18_tree()
    stats = tree.statistics()
    assert (stats.child_inserts, stats.reuses, stats.leaf_extensions, stats.demotions, stats.splits) == (2, 1, 2, 2, 1)
    assert (
        stats.sticky_refusals,
        stats.cutoffs_set,
        stats.children_cleared,
        stats.released_dead_nodes,
        stats.rejected,
        stats.nodes,
    ) == (0, 0, 0, 0, 0, 3)
    twice = RadixTree()  # [1 2 3 4], then 5 below 2 (a split before 3) and 6 below 1 (a split before 2)
    twice.apply_event(
        1,
        b'{"event_id": 1, "data": {"stored": {"blocks": [{"block_hash": 10, "tokens_hash": 1}, {"block_hash": 20, "tokens_hash": 2}, {"block_hash": 30, "tokens_hash": 3}, {"block_hash": 40, "tokens_hash": 4}]}}}',
    )
    twice.apply_event(
        1, b'{"event_id": 2, "data": {"stored": {"parent_hash": 20, "blocks": [{"block_hash": 50, "tokens_hash": 5}]}}}'
    )
    twice.apply_event(
        1, b'{"event_id": 3, "data": {"stored": {"parent_hash": 10, "blocks": [{"block_hash": 60, "tokens_hash": 6}]}}}'
    )
    twice.check()
    assert (twice.statistics().splits, twice.statistics().child_inserts, twice.statistics().nodes) == (2, 3, 5)
    passed = replayed("E5c_divergent_continuation_under_kept_prefix", 3)  # [2 3 4] below [1] held by nobody; worker 2's
    # [1 2 3 4] releases it and builds anew
    assert (passed.statistics().released_dead_nodes, passed.statistics().child_inserts) == (0, 2)
    passed.apply_event(
        2,
        b'{"event_id": 9, "data": {"stored": {"blocks": [{"block_hash": 100, "tokens_hash": 1}, {"block_hash": 200, "tokens_hash": 2}, {"block_hash": 300, "tokens_hash": 3}, {"block_hash": 400, "tokens_hash": 4}]}}}',
    )
    passed.check()
    assert (passed.statistics().released_dead_nodes, passed.statistics().child_inserts, passed.statistics().nodes) == (1, 3, 3)


def counter(tree, *fields):
    """A function that applies steps to ``tree`` (each as recorded), checks it, and returns the named statistics."""

    def counted(*steps):
        for step in steps:
            assert run_step(tree, step, 0) is None, step
        tree.check()
        stats = tree.statistics()
        return tuple(getattr(stats, field) for field in fields)

    return counted


def test_statistics_count_cutoffs_cleared_children_and_released_nodes():
    """Counted by hand. Worker 1's [1 2 3 4] loses [400 300], listed tail-first: one run on one node, one cut at
    3, one cutoff set; then [200]: a second. Twice, on fresh locals: worker 2 stores [a b c] and d below b (a split
    after b), worker 3 stores [a b] (a reuse); worker 2's removal of a leaves worker 3 full there; worker 3's leaves
    nobody full, so [a b]'s children are cleared (one) and [a b], now held by nobody and childless, is released
    (one). A removal the rank cannot apply names the rank."""
    tree = RadixTree()
    counted = counter(tree, "cutoffs_set", "children_cleared", "released_dead_nodes", "nodes")

    assert counted(Store(1, chain(1, 2, 3, 4)), Remove(1, [400, 300])) == (1, 0, 0, 1)
    assert counted(Remove(1, [200])) == (2, 0, 0, 1)
    for n, local in enumerate((7, 17), start=1):
        a, b, c, d = (100 * local + 10 * k for k in range(4))
        assert counted(
            Store(2, [(a, local), (b, local + 1), (c, local + 2)]),
            Store(2, [(d, local + 3)], parent=b),
            Store(3, [(a, local), (b, local + 1)]),
            Remove(2, [a]),
        ) == (2, n - 1, n - 1, 4)
        assert counted(Remove(3, [a])) == (2, n, n, 1)
    with pytest.raises(BlockNotFound, match=r"block 999 for \(3, 2\)"):
        tree.apply_event(3, b'{"event_id": 99, "data": {"removed": {"block_hashes": [999]}}, "dp_rank": 2}')


def test_statistics_count_reuses_sticky_refusals_released_passes_and_rejections():
    """Counted by hand. Worker 1 re-stores [3] below 2 and [2 3] below 1 of its [1 2 3 4]: two reuses. Twice, on
    fresh locals: worker 1 stores [1 2 3] and 4 below 1 (a split after 1, which turns [1] internal), then evicts
    [2 3] and [4], which releases both and leaves [1] internal and childless; worker 2's [1 5] cannot extend the
    sticky node, so 5 is a child (one refusal). Twice, E5c's split leaves a node nobody holds, and worker 2's store
    passing it releases it and builds anew. Two rejected events, each error naming the block and the rank."""
    fields = ("reuses", "sticky_refusals", "released_dead_nodes", "rejected")
    tree = RadixTree()
    counted = counter(tree, *fields)

    assert counted(Store(1, chain(1, 2, 3, 4)), Store(1, [(300, 3)], parent=200)) == (1, 0, 0, 0)
    assert counted(Store(1, [(200, 2), (300, 3)], parent=100)) == (2, 0, 0, 0)
    tree = RadixTree()
    counted = counter(tree, *fields)
    for n, k in enumerate((0, 10), start=1):
        h = {local: 100 * (local + k) for local in range(1, 6)}
        assert counted(
            Store(1, [(h[1], 1 + k), (h[2], 2 + k), (h[3], 3 + k)]),
            Store(1, [(h[4], 4 + k)], parent=h[1]),
            Remove(1, [h[2], h[3], h[4]]),
        ) == (0, n - 1, 2 * n, 0)
        assert counted(Store(2, [(h[1], 1 + k), (h[5], 5 + k)])) == (0, n, 2 * n, 0)
    tree = RadixTree()
    counted = counter(tree, *fields)
    for n, k in enumerate((0, 10), start=1):  # E5c's steps, then worker 2's [1 2 3 4]
        h = {local: 100 * (local + k) for local in range(1, 5)}
        assert counted(
            Store(1, [(h[i], i + k) for i in range(1, 5)]),
            Remove(1, [h[2]]),
            Store(1, [(250 + k, 5 + k)], parent=h[1]),
            Store(2, [(h[i], i + k) for i in range(1, 5)]),
        ) == (0, 0, n, 0)
    with pytest.raises(ParentBlockNotFound, match=r"parent block 999 for \(4, 0\)"):
        tree.apply_event(
            4, b'{"event_id": 90, "data": {"stored": {"parent_hash": 999, "blocks": [{"block_hash": 1, "tokens_hash": 1}]}}}'
        )
    with pytest.raises(BlockNotFound, match=r"block 999 for \(4, 0\)"):
        tree.apply_event(4, b'{"event_id": 91, "data": {"removed": {"block_hashes": [999]}}}')
    assert tree.statistics().rejected == 2


def test_a_parent_past_the_rank_s_cutoff_is_named_as_no_longer_held():
    """A store whose parent entry resolves past the rank's cutoff (docs/dynamo-findings.md F9) is refused with its
    own message, and the entry goes (lazy lookup repair): the retry is refused as an unknown parent."""
    tree = replayed("F9b_parent_repeated_on_an_edge_resolves_past_the_rank_s_cutoff", 2)
    stored = b'{"event_id": 3, "data": {"stored": {"parent_hash": 200, "blocks": [{"block_hash": 100, "tokens_hash": 1}]}}}'
    with pytest.raises(ParentBlockNotFound, match=r"^Failed to apply event: parent block 200 is no longer held by \(2, 0\)$"):
        tree.apply_event(2, stored)
    with pytest.raises(ParentBlockNotFound, match=r"^Failed to apply event: Failed to find parent block 200 for \(2, 0\)$"):
        tree.apply_event(2, stored)
    tree.check()


def test_check_failure_names_each_broken_invariant_and_draws_the_tree():
    """The message a failed check() prints, exactly: one line per problem (where, which predicate), then the tree."""
    tree = e18_tree()
    tree.root.children[1].edge_index = {}
    tree.root.children[1].children[5].edge_index = {}
    with pytest.raises(AssertionError) as caught:
        tree.check(lookups=False)
    assert str(caught.value) == (
        "RadixTree.check failed:\n"
        "  node (1,): is_edge_index_consistent\n"
        "  node (1, 5): is_edge_index_consistent\n"
        "tree:\n"
        "  [1 2 3] full=[(1, 0), (2, 0)] internal\n"
        "    [4 6] full=[(1, 0)] cut={(2, 0): 1}\n"
        "    [5] full=[(2, 0)]"
    )


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
    tree = e18_tree()
    assert tree.debug_dump() == (
        "tree:\n  [1 2 3] full=[(1, 0), (2, 0)] internal\n    [4 6] full=[(1, 0)] cut={(2, 0): 1}\n    [5] full=[(2, 0)]"
    )


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
    tree.apply_event(
        1,
        b'{"event_id": 1, "data": {"stored": {"blocks": [{"block_hash": 100, "tokens_hash": 1}, {"block_hash": 200, "tokens_hash": 2}]}}}',
    )
    node = tree.root.children[1]
    node.state = EdgeState(node.state.edge, node.state.full_edge_workers, FrozenMap({Rank(2): 2}))
    with pytest.raises(AssertionError, match="is_cutoffs_strictly_inside"):
        tree.check()


def test_negative_control_the_dump_law_catches_a_lossy_dump():
    assert any(check_dump_rebuild(DumpDropsLastEvent, generate(11, i)) for i in range(10))


def test_the_dump_law_says_which_rank_the_original_scores_higher_than_its_dump_rebuilds():
    """A walk that credits more than the dump holds (F10's kind) and a dump that loses an event both show as the
    original scoring a rank higher; the message names the rank and both causes, and claims neither."""
    from kvproof.stateful_tests.tree.mutants import WalkSkipsEqualSizedIntersection

    problems = check_dump_rebuild(WalkSkipsEqualSizedIntersection, generate(11, 2))
    assert problems and "the original scores (1, 1) higher than its own dump rebuilds" in problems[0]
    lossy = [p for i in range(10) for p in check_dump_rebuild(DumpDropsLastEvent, generate(11, i))]
    assert lossy and not any("over-credit" in p for p in lossy)


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


def streams_with_deltas(count=12):
    """Each operation of ``count`` generated streams, with its stream's index and the reachable nodes and
    counters just before and after it."""
    from kvproof.stateful_tests.tree.streams import apply_op

    for index in range(count):
        tree = RadixTree()
        for op in generate(11, index).ops:
            nodes, before = {id(node): node for _, node in tree._reachable_nodes()}, tree.statistics()
            apply_op(tree, op)
            yield index, op, (nodes, before), ({id(node): node for _, node in tree._reachable_nodes()}, tree.statistics())


def test_an_eviction_or_a_drop_releases_every_node_it_leaves_nobody_holding():
    """Law (the release rule, Dynamo 1.6.0, docs/dynamo-findings.md F1): a removal, a ``cleared`` event,
    ``remove_worker``, ``clear_all_blocks`` or ``remove_worker_dp_rank`` leaves no reachable node nobody holds
    that was not one before it. Only a store's demotion leaves a dead node (E5c), for a later store to release."""
    from kvproof.spec.coverage import holders
    from kvproof.spec.events import Stored
    from kvproof.stateful_tests.tree.streams import EventOp

    released = 0
    for _, op, (nodes, _), (after, _) in streams_with_deltas():
        if isinstance(op, EventOp) and isinstance(op.event.data, Stored):
            continue
        dead_before = {key for key, node in nodes.items() if not holders(node.state)}
        new_dead = [node for key, node in after.items() if not holders(node.state) and key not in dead_before]
        assert not new_dead, (op, new_dead)
        released += any(key not in after for key in nodes)
    assert released > 20, f"the streams must evict and drop nodes for the law to bite: {released}"


def test_the_counters_account_for_every_node_an_event_adds_or_releases():
    """Law: until a stream's first cleared children, each operation changes the reachable nodes by its splits
    plus its child inserts minus its released dead nodes. (A cleared subtree leaves without a count of its own,
    and the lookup entries into it live on: a later store below such a node builds out of sight, as in Dynamo,
    and its counters count that work too.)"""
    seen, cleared = [0, 0, 0], set()
    for index, op, (_, s0), (_, s1) in streams_with_deltas():
        if index in cleared or s1.children_cleared != s0.children_cleared:
            cleared.add(index)
            continue
        grown, released = (
            s1.splits - s0.splits + s1.child_inserts - s0.child_inserts,
            s1.released_dead_nodes - s0.released_dead_nodes,
        )
        assert s1.nodes - s0.nodes == grown - released, (index, op, s0, s1)
        seen = [seen[0] + (s1.splits > s0.splits), seen[1] + (s1.child_inserts > s0.child_inserts), seen[2] + (released > 0)]
    assert min(seen) > 20, f"splits, inserts and releases must each happen, or the law is idle: {seen}"


def test_removing_a_rank_forgets_it_and_clearing_a_worker_keeps_its_ranks():
    """Law (Dynamo's remove_worker / remove_worker_dp_rank forget the rank, and so does a ``cleared`` event, which is
    remove_worker_dp_rank for the rank that sent it; clear_all_blocks keeps every rank registered with nothing held):
    ``known_ranks`` says which ranks the tree keeps a lookup for."""
    from kvproof.spec.primitives import Rank

    tree = RadixTree()
    for dp in (0, 1):
        tree.apply_event(
            7,
            f'{{"event_id": {dp}, "dp_rank": {dp}, "data": {{"stored": {{"blocks": [{{"block_hash": {10 + dp}, "tokens_hash": 1}}]}}}}}}'.encode(),
        )
    tree.apply_event(8, b'{"event_id": 3, "data": {"stored": {"blocks": [{"block_hash": 20, "tokens_hash": 2}]}}}')
    assert tree.known_ranks() == {Rank(7, 0), Rank(7, 1), Rank(8, 0)}
    tree.remove_worker_dp_rank(7, 1)
    assert tree.known_ranks() == {Rank(7, 0), Rank(8, 0)}
    tree.clear_all_blocks(8)
    assert tree.known_ranks() == {Rank(7, 0), Rank(8, 0)} and Rank(8, 0) not in tree.snapshot()
    tree.remove_worker(7)
    assert tree.known_ranks() == {Rank(8, 0)} and tree.snapshot() == {}
    tree.apply_event(8, b'{"event_id": 4, "data": "cleared"}')  # remove_worker_dp_rank for its rank (crtc.md §12 item 6)
    assert tree.known_ranks() == set()
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
    from kvproof.spec.rules import Variant, with_variants

    tree = RadixTree(with_variants(frozenset({Variant.PER_BLOCK_NODES})))
    tree.apply_event(1, STORE_TWO)
    tree.apply_event(1, STORE_BELOW)
    tree.apply_event(1, b'{"event_id": 3, "data": {"removed": {"block_hashes": [200]}}}')
    tree.check()
    holderless = [n for _, n in tree._reachable_nodes() if not n.state.full_edge_workers and n.children]
    assert holderless, "the stream must leave a holder-less node with children"
    holderless[0].edge_index = {}
    with pytest.raises(AssertionError, match="is_edge_index_consistent"):
        tree.check(lookups=False)


@pytest.mark.parametrize("rules", ["dynamo-1.6-concurrent", "dynamo-1.3-concurrent"])
def test_removal_skips_unknown_hashes_of_a_rank_it_has_seen_under_the_variant(rules):
    """Variant ``removal-skips-unknown`` (the concurrent tree): a batch of a known rank removes what it holds and skips
    the rest without an error; a rank the tree has never seen still gets ``BlockNotFound``; without the variant the
    batch fails on the first hash not held (after removing the held ones)."""
    from kvproof.spec.events import KvCacheEvent, Removed, Stored, encode_event
    from kvproof.spec.primitives import Block
    from kvproof.spec.rules import rule_set_named

    def ev(data):
        return encode_event(KvCacheEvent(1, data, 0))

    outcomes = {}
    for name in (rules, "dynamo-1.6"):
        tree = RadixTree(rule_set_named(name))
        tree.apply_event(1, ev(Stored(None, (Block(1, 100), Block(2, 200)))))
        try:
            tree.apply_event(1, ev(Removed((999, 200))))
            outcomes[name] = "ok"
        except BlockNotFound:
            outcomes[name] = "BlockNotFound"
        assert dict(tree.find_matches([1, 2]).scores) == {(1, 0): 1}  # the held hash went either way
        with pytest.raises(BlockNotFound):
            tree.apply_event(7, ev(Removed((999,))))  # a rank never seen: refused under every rule set
        tree.check()
    assert outcomes == {rules: "ok", "dynamo-1.6": "BlockNotFound"}


def _state(tree):
    return (tree.snapshot(), canonical_dump(tree), tree.statistics())


def _copy_problems(copier, index):
    """After stream ``index``'s first half, ``copier(tree)`` takes the second half and the tree does not: the ones of
    the two that are not in the state a fresh tree reaches by replaying its own events (snapshot, dump, statistics),
    or fail ``check()``."""
    ops = generate(5, index).ops
    half = len(ops) // 2
    original = RadixTree()
    for op in ops[:half]:
        apply_op(original, op)
    twin = copier(original)
    for op in ops[half:]:
        apply_op(twin, op)
    problems = []
    for name, tree, upto in (("original", original, half), ("copy", twin, len(ops))):
        replay = RadixTree()
        for op in ops[:upto]:
            apply_op(replay, op)
        try:
            tree.check()
        except AssertionError as exc:
            problems.append(f"{name}: check(): {exc}")
        if _state(tree) != _state(replay):
            problems.append(f"{name}: not its own replay")
    return problems


@pytest.mark.parametrize("index", range(12))
def test_a_copy_shares_nothing_mutable_each_answers_as_its_own_replay(index):
    """``RadixTree.copy`` (the explorer's state copy): copy and original each equal their own replay, lookups
    included (``_copy_problems``)."""
    assert _copy_problems(RadixTree.copy, index) == []


def test_control_a_shallow_copy_shares_the_nodes_and_is_caught():
    """The negative control: ``copy.copy`` shares every node, so the original takes the copy's events."""
    assert "original: not its own replay" in _copy_problems(copy.copy, 0)

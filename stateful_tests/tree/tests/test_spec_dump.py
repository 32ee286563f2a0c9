"""spec.dump: the dump of a tree as router events, the snapshot a query can credit, the shape; on hand-built trees.

The laws (crtc.md §7 "Dump (newest)", spec/dump.py's docstring), each with its exact output:

- a chain of nodes with no cutoffs, one live child each and one full set is one ``stored`` event, unless the
  caller asks for one event per node (``merge=False``, the per-block tree's dump); a child nobody holds is not
  live, so the chain merges past it (E5c);
- the chain is cut where the only live child's full set differs, at a node with cutoffs, and above a child
  with cutoffs;
- each full rank gets the merged edge and each cutoff rank ``edge[:cutoff]``, ranks in order, full ranks first;
  ``parent_hash`` is the last block of the parent chain (None under the root);
- a rank is written below a parent only if it holds every node above in full: neither a rank full on the child
  nor one with a cutoff there is written below a parent it no longer holds (F2's reproduction, Dynamo test
  ``dump_skips_ranks_that_do_not_cover_the_parent``), and the snapshot credits neither;
- each line is a ``RouterEvent`` numbered from 0 in dump order, with its rank's worker id and dp rank;
- replayed in order into an empty tree the dump is accepted event by event and rebuilds the same snapshot;
- the shape lists every reachable node (path of first locals, edge, full set, cutoffs, sticky flag), holders
  below a lost parent included.
"""

import pytest

from kvproof.reference import RadixTree
from kvproof.spec.dump import credited_index, dump_chains, dump_router_events, tree_shape
from kvproof.spec.events import KvCacheEvent, Stored, decode_router_event
from kvproof.spec.primitives import Block, Rank
from kvproof.spec.rules import DEFAULT_RULES, Variant, with_variants
from kvproof.stateful_tests.harness.paths import chain
from kvproof.stateful_tests.tree.steps import Remove, Store, run_step

W1, W2 = Rank(1), Rank(2)


def blocks(*locals_):
    """The blocks of ``chain``: block hash ``100 * local``."""
    return tuple(Block(x, 100 * x) for x in locals_)


def build(*steps, rules=DEFAULT_RULES):
    """The reference under ``rules`` after ``steps``, each accepted, checked."""
    tree = RadixTree(rules)
    for event_id, step in enumerate(steps):
        assert run_step(tree, step, event_id) is None, step
    tree.check()
    return tree


def dump(tree, merge=True):
    return dump_chains(tree.root, tree.state_of, tree.children_of, merge)


def lines(tree):
    """The tree's dump lines, decoded to ``(worker_id, event)``."""
    return [decode_router_event(line) for line in tree.dump_tree_as_events()]


STICKY_CHAIN = (Store(1, chain(1, 2, 3, 4)), Store(1, [(500, 5)], parent=200), Remove(1, [500]))
"""W1's [1 2 3 4], then [5] below 2 (a split that turns [1 2] internal), then 5 evicted: [1 2] -> [3 4], both
held in full by W1 alone."""

DIVERGED = (Store(1, chain(1, 2, 3, 4)), Store(2, chain(1, 2, 5)), Remove(2, [500]))
"""W1's [1 2 3 4] and W2's [1 2 5] split at 2; W2 evicts 5: [1 2] full {W1, W2} -> [3 4] full {W1}."""

CUTOFF_CHILD = (Store(1, chain(1, 2, 3, 4)), Store(2, chain(1, 2, 5)), Remove(1, [400]))
"""As DIVERGED, but W1 evicts 400: [1 2] full {W1, W2} -> {[3 4] cutoff {W1: 1}, [5] full {W2}}."""

LOST_PARENT = (Store(2, [(50, 5), (20, 2)]), Store(1, [(50, 5)]), Store(1, [(40, 4)], parent=50), Remove(2, [50]))
"""F2's reproduction: W2's [50 20], W1's [50], W1's 40 below 50 (a split), W2 evicts 50: W2 still holds [20] in
full, below [5] which only W1 holds."""

DP_RANKS = (Store(3, chain(1, 2), dp=1), Store(4, chain(1, 2, 3)), Store(3, chain(1, 2, 3)))
"""(3, 1)'s [1 2], then (4, 0)'s and (3, 0)'s [1 2 3]: one node, full {(3, 0), (4, 0)}, cutoff {(3, 1): 2}."""


def test_a_chain_with_one_full_set_and_no_cutoffs_is_one_event():
    """crtc.md §7 "Dump (newest)": [1 2] (internal since the split) and [3 4] are one store, as the dump of E35
    (crtc.md §13) merges [1 2] with [3 4]; called without ``merge``, the functions merge."""
    tree = build(*STICKY_CHAIN)
    assert [(path, internal) for path, *_, internal in tree.shape()] == [((1, 3), False), ((1,), True)]
    whole = [(W1, Stored(None, blocks(1, 2, 3, 4)))]
    assert dump_chains(tree.root, tree.state_of, tree.children_of) == whole
    assert dump(tree, merge=True) == whole
    assert lines(tree) == [(1, KvCacheEvent(0, Stored(None, blocks(1, 2, 3, 4)), 0))]
    assert [decode_router_event(line) for line in dump_router_events(tree.root, tree.state_of, tree.children_of)] == lines(tree)


def test_without_merging_every_node_is_its_own_event():
    """``merge=False`` (variant per-block-nodes, spec/rules.py): one event per node, and the per-block tree's own
    dump is one event per block."""
    tree = build(*STICKY_CHAIN)
    assert dump(tree, merge=False) == [(W1, Stored(None, blocks(1, 2))), (W1, Stored(200, blocks(3, 4)))]
    assert [decode_router_event(line) for line in dump_router_events(tree.root, tree.state_of, tree.children_of, False)] == [
        (1, KvCacheEvent(0, Stored(None, blocks(1, 2)), 0)),
        (1, KvCacheEvent(1, Stored(200, blocks(3, 4)), 0)),
    ]
    per_block = build(*STICKY_CHAIN, rules=with_variants(frozenset({Variant.PER_BLOCK_NODES})))
    assert lines(per_block) == [(1, KvCacheEvent(i, Stored(100 * i or None, blocks(i + 1)), 0)) for i in range(4)]


def test_a_child_nobody_holds_is_not_live_and_the_chain_merges_past_it():
    """E5c (crtc.md §13): after W1 removes 200 and stores 250 below 100, the dump is W1's [100 250]; the
    holder-less [2 3 4] is skipped and the chain merged."""
    tree = build(Store(1, chain(1, 2, 3, 4)), Remove(1, [200]), Store(1, [(250, 5)], parent=100))
    assert [(path, full) for path, _, full, *_ in tree.shape()] == [((1, 2), set()), ((1, 5), {W1}), ((1,), {W1})]
    assert dump(tree) == [(W1, Stored(None, (Block(1, 100), Block(5, 250))))]


def test_the_chain_is_cut_where_the_full_set_changes():
    """Each full rank of [1 2] gets [1 2]; only W1 continues, below 200: ranks in order, parent the last block."""
    tree = build(*DIVERGED)
    assert dump(tree) == [(W1, Stored(None, blocks(1, 2))), (W2, Stored(None, blocks(1, 2))), (W1, Stored(200, blocks(3, 4)))]
    assert tree.snapshot() == {W1: frozenset({100, 200, 300, 400}), W2: frozenset({100, 200})}


def test_the_chain_is_cut_at_a_node_with_cutoffs():
    """W2's [1] is a cutoff on [1 2]: [1 2] is written alone (W1 in full, then W2's prefix), [3 4] below it."""
    tree = build(*STICKY_CHAIN[:2], Store(2, chain(1)), Remove(1, [500]))
    assert dump(tree) == [(W1, Stored(None, blocks(1, 2))), (W2, Stored(None, blocks(1))), (W1, Stored(200, blocks(3, 4)))]


def test_the_chain_is_cut_above_a_child_with_cutoffs_and_a_cutoff_rank_needs_the_parent():
    """[1 2] full {W1} -> [3 4] full {W1}, cutoff {W2: 1}; W2 lost [1 2] (removed 100): the child's cutoff ends
    the chain, and W2's [3] is not written below a parent W2 no longer holds, nor credited."""
    tree = build(*STICKY_CHAIN[:2], Store(2, chain(1, 2, 3)), Remove(2, [100]), Remove(1, [500]))
    assert [(path, cutoffs) for path, _, _, cutoffs, _ in tree.shape()] == [((1, 3), {W2: 1}), ((1,), {})]
    assert dump(tree) == [(W1, Stored(None, blocks(1, 2))), (W1, Stored(200, blocks(3, 4)))]
    assert tree.snapshot() == {W1: frozenset({100, 200, 300, 400})}


def test_a_cutoff_rank_is_written_its_prefix_below_a_parent_it_holds():
    """W1's 400 evicted: W1 keeps a cutoff of 1 on [3 4], written [3] below 200; W2's [5] below 200."""
    tree = build(*CUTOFF_CHILD)
    assert dump(tree) == [
        (W1, Stored(None, blocks(1, 2))),
        (W2, Stored(None, blocks(1, 2))),
        (W1, Stored(200, blocks(3))),
        (W2, Stored(200, blocks(5))),
    ]
    assert tree.snapshot() == {W1: frozenset({100, 200, 300}), W2: frozenset({100, 200, 500})}


def test_a_rank_below_a_parent_it_no_longer_holds_is_neither_dumped_nor_credited():
    """docs/dynamo-findings.md F2: the package dumps W2's [20] below 50, which replay refuses; the reference (the
    newest CRTC dump, Dynamo test ``dump_skips_ranks_that_do_not_cover_the_parent``) writes W1's events only."""
    tree = build(*LOST_PARENT)
    assert dump(tree) == [(W1, Stored(None, (Block(5, 50),))), (W1, Stored(50, (Block(4, 40),)))]
    assert tree.snapshot() == {W1: frozenset({50, 40})}
    assert credited_index(tree.root, tree.state_of, tree.children_of) == tree.snapshot()


def test_the_shape_shows_every_reachable_node_holders_below_a_lost_parent_included():
    """``tree_shape``: ``(path of first locals, edge, full, cutoffs, internal)`` sorted by repr; W2 still holds [20]."""
    tree = build(*LOST_PARENT)
    assert tree.shape() == [
        ((5, 2), (Block(2, 20),), {W2}, {}, False),
        ((5, 4), (Block(4, 40),), {W1}, {}, False),
        ((5,), (Block(5, 50),), {W1}, {}, True),
    ]
    assert tree_shape(tree.root, tree.state_of, tree.children_of, tree.internal_of) == tree.shape()


def test_each_line_carries_its_rank_and_its_place_as_event_id():
    """DP_RANKS: full ranks first, in order, then (3, 1)'s prefix with its dp rank."""
    tree = build(*DP_RANKS)
    assert lines(tree) == [
        (3, KvCacheEvent(0, Stored(None, blocks(1, 2, 3)), 0)),
        (4, KvCacheEvent(1, Stored(None, blocks(1, 2, 3)), 0)),
        (3, KvCacheEvent(2, Stored(None, blocks(1, 2)), 1)),
    ]


@pytest.mark.parametrize(
    "steps",
    [STICKY_CHAIN, DIVERGED, CUTOFF_CHILD, LOST_PARENT, DP_RANKS],
    ids=["sticky-chain", "diverged", "cutoff-child", "lost-parent", "dp-ranks"],
)
def test_the_dump_replayed_into_an_empty_tree_rebuilds_the_snapshot(steps):
    """spec/dump.py: applied in order to an empty tree the dump is accepted event by event and rebuilds the same
    index."""
    tree = build(*steps)
    rebuilt = RadixTree()
    for line in tree.dump_tree_as_events():
        rebuilt.apply_event(*decode_router_event(line))
    rebuilt.check()
    assert rebuilt.snapshot() == tree.snapshot()

"""The tree's structural invariants (spec/invariants.py), predicate by predicate, on hand-built nodes.

The laws: a lookup entry is sound when the node's edge holds the hash (its last position, if
repeated) and the rank covers that position, read through the edge index when one is given and
by a scan otherwise, with the same answer; a child hangs under the first local hash of a non-empty
edge; ``node_violations`` names exactly the invariants a node breaks (each once, a misplaced child
with its key, an edge index only when one is given); ``root_violations`` names a root with an edge,
a full holder or a cutoff, and each misplaced child.

Source: docs/sources.md#crtc-2 (edge_index, covers_pos), docs/sources.md#crtc-8 (the invariants);
docs/sources.md#dynamo-crtc-readme "Node State".
"""

import pytest

from kvproof.spec.coverage import EdgeState
from kvproof.spec.invariants import (
    edge_index_of,
    is_child_keyed_by_first_local,
    is_lookup_entry_on_holder,
    node_violations,
    root_violations,
)
from kvproof.spec.primitives import Block, FrozenMap, FrozenSet, WorkerWithDpRank

A, B = WorkerWithDpRank(1, 0), WorkerWithDpRank(2, 0)


def edge(*locals_: int) -> tuple[Block, ...]:
    return tuple(Block(x, 100 * x) for x in locals_)


def state(blocks: tuple[Block, ...], full=(), cut=None) -> EdgeState:
    return EdgeState(blocks, FrozenSet(full), FrozenMap(cut or {}))


HELD = state(edge(1, 2, 3), full=[A], cut={B: 2})  # A holds [1 2 3], B holds [1 2]


@pytest.mark.parametrize(
    ("rank", "ext", "sound"),
    [
        (A, 300, True),
        (A, 100, True),
        (B, 200, True),
        (B, 300, False),  # past B's cutoff
        (A, 900, False),  # not on the edge
        (WorkerWithDpRank(9, 0), 100, False),  # a rank that holds nothing here
    ],
)
def test_a_lookup_entry_is_sound_where_the_edge_holds_the_hash_and_the_rank_covers_it(rank, ext, sound):
    assert is_lookup_entry_on_holder(HELD, rank, ext) is sound  # by a scan
    assert is_lookup_entry_on_holder(HELD, rank, ext, edge_index_of(HELD.edge)) is sound  # by the index


def test_a_repeated_hash_is_read_at_its_last_position_by_the_scan_and_by_the_index():
    repeated = state((Block(1, 100), Block(2, 200), Block(3, 100)), cut={B: 2})  # hash 100 at 0 and 2
    assert not is_lookup_entry_on_holder(repeated, B, 100)  # position 2, past B's cutoff
    assert not is_lookup_entry_on_holder(repeated, B, 100, edge_index_of(repeated.edge))
    assert is_lookup_entry_on_holder(repeated, B, 100, {100: 0})  # an index is trusted as given: position 0


def test_a_child_hangs_under_the_first_local_of_a_non_empty_edge():
    assert is_child_keyed_by_first_local(4, state(edge(4, 5), full=[A]))
    assert not is_child_keyed_by_first_local(5, state(edge(4, 5), full=[A]))
    assert not is_child_keyed_by_first_local(4, state(()))


def test_a_sound_node_breaks_nothing():
    assert node_violations(HELD, True, {4: state(edge(4), full=[A])}, edge_index_of(HELD.edge)) == []
    assert node_violations(HELD, False, {}) == []


@pytest.mark.parametrize(
    ("node", "internal", "children", "index", "broken"),
    [
        (state((), full=[A]), False, {}, None, ["is_edge_nonempty"]),
        (state(edge(1, 2), cut={A: 2}), False, {}, None, ["is_cutoffs_strictly_inside"]),
        (state(edge(1, 2), cut={A: 0}), False, {}, None, ["is_cutoffs_strictly_inside"]),  # a cutoff of 0 holds nothing
        (state(edge(1, 2), full=[A], cut={A: 1}), False, {}, None, ["is_full_disjoint_from_cutoffs"]),
        (HELD, False, {4: state(edge(4), full=[A])}, None, ["is_internal_if_it_has_children"]),
        (state(edge(1, 2), cut={B: 1}), True, {4: state(edge(4), full=[A])}, None, ["is_holderless_childless"]),
        (
            HELD,
            True,
            {5: state(edge(4), full=[A]), 6: state((), full=[A])},
            None,
            ["is_child_keyed_by_first_local[5]", "is_child_keyed_by_first_local[6]"],
        ),
        (HELD, False, {}, {100: 0, 200: 1}, ["is_edge_index_consistent"]),  # the index lacks 300
    ],
)
def test_node_violations_name_exactly_the_invariants_a_node_breaks(node, internal, children, index, broken):
    assert node_violations(node, internal, children, index) == broken


def test_the_edge_index_is_checked_only_when_given():
    assert node_violations(HELD, False, {}, None) == []
    assert node_violations(HELD, False, {}, {}) == ["is_edge_index_consistent"]


@pytest.mark.parametrize(
    ("root", "children", "broken"),
    [
        (state(()), {1: state(edge(1), full=[A])}, []),
        (state(edge(1)), {}, ["is_root_edge_empty"]),
        (state((), full=[A]), {}, ["is_root_edge_empty"]),
        (state((), cut={A: 1}), {}, ["is_root_edge_empty"]),
        (state(()), {2: state(edge(1), full=[A])}, ["is_child_keyed_by_first_local[2]"]),
    ],
)
def test_root_violations_name_a_root_with_an_edge_or_a_holder_and_each_misplaced_child(root, children, broken):
    assert root_violations(root, children) == broken

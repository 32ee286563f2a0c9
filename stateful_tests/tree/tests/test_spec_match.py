"""Named tests of spec.match: the walk's scores on hand-built trees, its per-rank kernel, the early-exit
law, and the refusals of the query and ``early_exit`` arguments.

The laws (spec/match.py's docstrings; crtc.md §5 "find_matches semantics" and "early_exit granularity";
docs/hostile-input.md "Python arguments"), each with its exact output:

- an empty query, or one whose first block no child of the root starts with, scores nobody;
- on the first node each full rank is active and each cutoff rank scores ``min(cutoff, m)``, ``m`` the
  matched length; a rank credited nothing (a zero cutoff) is not in the result (crtc.md §5 "if that is > 0");
- on every later node ``active`` is intersected with the full set even when the sizes are equal; a rank that
  drops out scores the depth so far plus ``min(its cutoff here or 0, m)``; a rank not active is ignored, full
  or cut here; the walk stops when ``active`` empties, on a partial edge match or at a missing child, and the
  ranks still active score the depth;
- without ``early_exit`` (the default) the walk goes on to the end; with it, it stops at the first node
  boundary where one rank is left and credits that rank the whole node it stands on (E9);
- ``chain_score`` is the per-rank statement of the walk: credited each matched length while full, then
  ``min(cutoff, matched)`` once; a node matched only in part ends the chain; it is one text over plain ints
  and over Z3 terms (``spec.arith``);
- ``early_exit_agrees``: the same ranks, the same scores but for at most one survivor, which scores at least
  1 and no more than in the full walk;
- ``check_query`` takes a list, a tuple, a range, a one-dimensional numpy array, numpy integer items, every
  u64 (0 and ``2**64 - 1`` included), and returns plain ints; it refuses every other container (a set, a
  dict, a generator, text and bytes-like values (H10), None, a scalar, a 2-D array) as
  ``InvalidArgumentType`` naming the type, an item that is not an integer (a float, a bool (H9), a string,
  None) as ``InvalidArgumentType`` naming its index and type, and an integer out of the u64 range as
  ``InvalidArgument`` naming its index and value (a huge one by its digit count);
- ``check_early_exit`` takes a bool or a ``numpy.bool_`` and returns a bool; anything else is an
  ``InvalidArgumentType`` naming the type.
"""

import numpy
import pytest

from kvproof.reference import RadixTree
from kvproof.spec.coverage import EdgeState
from kvproof.spec.errors import InvalidArgument, InvalidArgumentType
from kvproof.spec.match import chain_score, check_early_exit, check_query, early_exit_agrees, find_matches_walk
from kvproof.spec.primitives import U64_MAX, Block, FrozenMap, Rank
from kvproof.stateful_tests.harness.paths import chain
from kvproof.stateful_tests.tree.steps import Remove, Store, run_step

A, B, C, D = Rank(1), Rank(2), Rank(3), Rank(4, 1)


class HandNode:
    """A hand-built node: an edge of ``chain(*locals_)``'s blocks, its holders (any coverage), its children."""

    def __init__(self, locals_, full=(), cutoffs=None, children=()):
        edge = tuple(Block(local, ext) for ext, local in chain(*locals_))
        self.state = EdgeState(edge, frozenset(full), FrozenMap(cutoffs or {}))
        self.children = {c.state.edge[0].local: c for c in children}

    def edge_state(self):
        return self.state

    def child(self, local):
        return self.children.get(local)


class Root(HandNode):
    """The root: children only (the walk never asks it for an edge)."""

    def __init__(self, *children):
        self.children = {c.state.edge[0].local: c for c in children}


def walk(root, query, *early_exit):
    return find_matches_walk(root, query, *early_exit)


# ----------------------------------------------------------------------------- the walk


def test_an_empty_or_unknown_query_scores_nobody():
    """crtc.md §5 step 1; a query whose first block starts no child of the root reaches no node."""
    root = Root(HandNode([1, 2], full=[A]))
    assert walk(root, []) == {}
    assert walk(root, [2, 1]) == {}


def test_on_the_first_node_full_ranks_are_active_and_cutoff_ranks_score_min_cutoff_matched():
    """crtc.md §5 "First node": [1 2 3] full {A}, cutoffs {B: 1, C: 2}."""
    root = Root(HandNode([1, 2, 3], full=[A], cutoffs={B: 1, C: 2}))
    assert walk(root, [1, 2, 3]) == {A: 3, B: 1, C: 2}
    assert walk(root, [1, 2]) == {A: 2, B: 1, C: 2}  # m = 2: C's cutoff 2 is all matched
    assert walk(root, [1, 9, 3]) == {A: 1, B: 1, C: 1}  # m = 1: each credited at most the match
    assert walk(root, [1, 2, 3, 4]) == {A: 3, B: 1, C: 2}  # no child keyed 4: the walk ends


def test_a_rank_credited_nothing_is_not_in_the_result():
    """crtc.md §5: a cutoff rank scores ``min(cutoff, m)`` "if that is > 0"; only ranks scoring at least 1 appear."""
    root = Root(HandNode([1, 2], full=[A], cutoffs={B: 0}))
    assert walk(root, [1, 2]) == {A: 2}


def test_later_nodes_always_intersect_and_drop_outs_score_depth_plus_their_cutoff():
    """crtc.md §5 "Later nodes", Dynamo test ``equal_sized_coverage_after_head_first_eviction_scores_exactly``:
    active {A, B} meets full {A, C} (equal sizes); B drops out with 2 + min(2, m); C and D were never active."""
    tail = HandNode([3, 4, 5], full=[A, C], cutoffs={B: 2, D: 1})
    root = Root(HandNode([1, 2], full=[A, B], children=[tail]))
    assert walk(root, [1, 2, 3, 4, 5]) == {A: 5, B: 4}
    assert walk(root, [1, 2, 3]) == {A: 3, B: 3}  # m = 1 on the tail: B gets 2 + min(2, 1); the walk stops
    assert walk(root, [1, 2, 3, 9, 5]) == {A: 3, B: 3}  # a partial edge match stops the walk too
    assert walk(root, [1, 2, 7]) == {A: 2, B: 2}  # no child keyed 7: the active ranks score the depth


def test_a_rank_that_drops_out_without_a_cutoff_scores_the_depth_and_an_empty_active_set_stops_the_walk():
    """crtc.md §5: a dropped rank gets ``depth + min(0, m)``; once ``active`` is empty nothing below is read."""
    below = HandNode([5], full=[A, B])
    root = Root(HandNode([1, 2], full=[A, B], children=[HandNode([3, 4], full=[C], cutoffs={A: 1}, children=[below])]))
    assert walk(root, [1, 2, 3, 4, 5]) == {A: 3, B: 2}


def test_without_early_exit_the_walk_goes_to_the_end_and_with_it_the_survivor_gets_the_whole_node():
    """crtc.md §5 "early_exit granularity", E9: the tree [1 2] -> {[3 4], [5]} after w2 removed 100."""
    root = Root(HandNode([1, 2], full=[A], children=[HandNode([3, 4], full=[A]), HandNode([5], full=[B])]))
    assert walk(root, [1, 2, 3, 4]) == {A: 4}  # the default is the full walk
    assert walk(root, [1, 2, 3, 4], False) == {A: 4}
    assert walk(root, [1, 2, 3, 4], True) == {A: 2}
    tree = RadixTree()  # the same tree, built by E9's events
    for event_id, step in enumerate((Store(1, chain(1, 2, 3, 4)), Store(2, chain(1, 2, 5)), Remove(2, [100]))):
        assert run_step(tree, step, event_id) is None, step
    assert (walk(tree.root, [1, 2, 3, 4]), walk(tree.root, [1, 2, 3, 4], True)) == ({A: 4}, {A: 2})


def test_early_exit_stops_only_once_a_single_rank_is_active():
    """Two active ranks walk on with ``early_exit``; the walk stops where one is left, with every drop-out scored."""
    leaf = HandNode([5, 6], full=[A])
    middle = HandNode([3, 4], full=[A], cutoffs={B: 1}, children=[leaf])
    root = Root(HandNode([1, 2], full=[A, B], children=[middle]))
    assert walk(root, [1, 2, 3, 4, 5, 6], True) == {A: 4, B: 3}
    assert walk(root, [1, 2, 3, 4, 5, 6], False) == {A: 6, B: 3}


# ----------------------------------------------------------------------------- chain_score


@pytest.mark.parametrize(
    "lengths, matched, cutoffs, score",
    [
        ([2, 3], [2, 3], [2, 3], 5),  # full on every node: each matched length
        ([2, 3], [2, 3], [2, 1], 3),  # full, then cut at 1: 2 + min(1, 3)
        ([2, 3], [2, 2], [2, 3], 4),  # full on a node matched in part: its matched length
        ([3, 2], [3, 2], [2, 2], 2),  # cut on the first node: min(2, 3), and nothing after
        ([3, 2], [2, 2], [3, 2], 2),  # a node matched only in part ends the chain: the next adds nothing
        ([3, 2, 2], [3, 1, 2], [3, 2, 2], 4),  # the same one node further down
        ([2], [2], [0], 0),
    ],
)
def test_chain_score_credits_matched_lengths_while_full_then_the_cutoff_once(lengths, matched, cutoffs, score):
    """spec.match.chain_score's docstring: the walk reaches node ``i + 1`` only if node ``i`` matched whole."""
    assert chain_score(lengths, matched, cutoffs) == score


def test_chain_score_is_one_text_over_plain_ints_and_z3_terms():
    """spec.arith: the kernel takes ``ops``; over Z3 terms (as proofs/ runs it) it evaluates to the plain score."""
    z3 = pytest.importorskip("z3")
    from kvproof.proofs.harness import Z3

    for lengths, matched, cutoffs in (([2, 3], [2, 3], [2, 1]), ([3, 2], [2, 2], [3, 2]), ([2, 3], [2, 3], [2, 3])):
        term = chain_score(*([z3.IntVal(x) for x in xs] for xs in (lengths, matched, cutoffs)), Z3)
        assert z3.simplify(term).as_long() == chain_score(lengths, matched, cutoffs)


# ----------------------------------------------------------------------------- early_exit_agrees


@pytest.mark.parametrize(
    "full, early, agrees",
    [
        ({A: 4, B: 2}, {A: 4, B: 2}, True),
        ({A: 4, B: 2}, {A: 2, B: 2}, True),  # the one survivor, credited a whole node less (E9)
        ({A: 4}, {A: 1}, True),
        ({A: 4, B: 2}, {A: 4}, False),  # a rank missing
        ({A: 4}, {A: 4, B: 1}, False),  # a rank added
        ({A: 4}, {A: 5}, False),  # the survivor scoring more than the full walk
        ({A: 4}, {A: 0}, False),  # or less than 1
        ({A: 4, B: 4}, {A: 2, B: 2}, False),  # two ranks differing
    ],
)
def test_early_exit_agrees_allows_one_survivor_to_score_less(full, early, agrees):
    """crtc.md §5 "early_exit granularity"; E9, E41."""
    assert early_exit_agrees(full, early) is agrees


# ----------------------------------------------------------------------------- check_query


@pytest.mark.parametrize(
    "sequence, expected",
    [
        ([], []),
        ((), []),
        (range(0), []),
        ([0, U64_MAX], [0, U64_MAX]),
        ((0, 7, U64_MAX), [0, 7, U64_MAX]),
        (range(3), [0, 1, 2]),
        (range(U64_MAX, U64_MAX + 1), [U64_MAX]),
        (numpy.array([0, 5, U64_MAX], dtype=numpy.uint64), [0, 5, U64_MAX]),
        (numpy.array([], dtype=numpy.int64), []),
        ([numpy.uint64(U64_MAX), numpy.int64(0), 3], [U64_MAX, 0, 3]),
        ((numpy.int64(1), numpy.uint64(0)), [1, 0]),
    ],
)
def test_check_query_takes_every_sequence_of_u64s_and_returns_plain_ints(sequence, expected):
    """docs/hostile-input.md "Python arguments": lists, tuples, ranges, numpy arrays and numpy integer items."""
    got = check_query(sequence)
    assert got == expected
    assert type(got) is list and all(type(x) is int for x in got)


@pytest.mark.parametrize(
    "sequence, name",
    [
        ({1, 2}, "set"),
        (frozenset({1}), "frozenset"),
        ({1: 2}, "dict"),
        ((x for x in [1, 2]), "generator"),
        (None, "NoneType"),
        ("12", "str"),
        (b"\x07\x08", "bytes"),  # H10: the binding reads one hash per byte
        (bytearray(b"\x07"), "bytearray"),
        (memoryview(b"\x07"), "memoryview"),
        (7, "int"),
        (numpy.uint64(7), "uint64"),
        (numpy.zeros((2, 2), dtype=numpy.uint64), "ndarray"),
        (type("ArrayLike", (), {"__array__": lambda self: numpy.zeros(2)})(), "ArrayLike"),  # array-like, no ndim
    ],
)
def test_check_query_refuses_every_other_container_naming_its_type(sequence, name):
    """docs/hostile-input.md "Python arguments" and H10; ``is_query_container``."""
    with pytest.raises(InvalidArgumentType, match=rf"^sequence must be a sequence of ints, got {name}$"):
        check_query(sequence)


@pytest.mark.parametrize(
    "sequence, index, name",
    [
        ([1, 2.0], 1, "float"),
        ((1.0,), 0, "float"),
        ([True], 0, "bool"),  # H9: the binding reads True as 1
        ((1, 2, False), 2, "bool"),
        ([1, numpy.bool_(True)], 1, "bool_?"),
        ([1, "2"], 1, "str"),
        ([None], 0, "NoneType"),
        ([1, "2", 2.0], 1, "str"),  # the first item that is not an integer
        (numpy.array([1.5]), 0, "float64"),
    ],
)
def test_check_query_refuses_an_item_that_is_not_an_integer_naming_its_index_and_type(sequence, index, name):
    """docs/hostile-input.md "Python arguments", H9; ``integer_of``."""
    with pytest.raises(InvalidArgumentType, match=rf"^sequence\[{index}\] must be an int, got {name}$"):
        check_query(sequence)


@pytest.mark.parametrize(
    "sequence, index, shown",
    [
        ([-1], 0, "-1"),
        ([5, -1], 1, "-1"),
        ((0, 2**64), 1, "18446744073709551616"),
        ([10**5000], 0, "<an integer of about 5001 digits>"),
        ([-(10**5000)], 0, "-<an integer of about 5001 digits>"),
        (range(-1, 1), 0, "-1"),
        (numpy.array([3, -2], dtype=numpy.int64), 1, "-2"),
        ([numpy.int64(-1)], 0, "-1"),
        ([2**64, "x"], 0, "18446744073709551616"),  # items are checked in order: the first bad one is named
    ],
)
def test_check_query_refuses_an_integer_out_of_the_u64_range_naming_its_index_and_value(sequence, index, shown):
    """docs/hostile-input.md "Python arguments" (``InvalidArgument``, an ``OverflowError``); a huge value by its digit count."""
    with pytest.raises(InvalidArgument, match=rf"^sequence\[{index}\] = {shown} is not a u64$"):
        check_query(sequence)


# ----------------------------------------------------------------------------- check_early_exit


@pytest.mark.parametrize(
    "value, expected", [(True, True), (False, False), (numpy.bool_(True), True), (numpy.bool_(False), False)]
)
def test_check_early_exit_takes_a_bool_or_a_numpy_bool(value, expected):
    """docs/hostile-input.md "Python arguments": ``numpy.bool_(True)`` is accepted, as the binding does."""
    assert check_early_exit(value) is expected


@pytest.mark.parametrize(
    "value, name",
    [(1, "int"), (0, "int"), ("yes", "str"), (None, "NoneType"), ([], "list"), (1.0, "float"), (numpy.int64(1), "int64")],
)
def test_check_early_exit_refuses_anything_else_naming_its_type(value, name):
    """docs/hostile-input.md "Python arguments": ``early_exit`` 1, 0, "yes", None, [] are a ``TypeError``."""
    with pytest.raises(InvalidArgumentType, match=rf"^early_exit must be a bool, got {name}$"):
        check_early_exit(value)


def test_a_query_whose_own_code_raises_is_a_typed_error_naming_it():
    """An argument's own ``__iter__`` or attribute lookup that raises never escapes untyped (docs/hostile-input.md H13)."""
    from kvproof.spec.errors import InvalidArgumentType
    from kvproof.spec.match import check_query, is_query_container

    class UnreadableQuery(list):
        def __iter__(self):
            raise RuntimeError("no")

    class Sly:
        def __getattr__(self, name):
            raise RuntimeError(name)

    with pytest.raises(InvalidArgumentType, match=r"^sequence could not be read: its own iteration raised RuntimeError"):
        check_query(UnreadableQuery([1]))
    assert not is_query_container(Sly())
    with pytest.raises(InvalidArgumentType, match="sequence must be a sequence of ints, got Sly"):
        check_query(Sly())
    assert check_query(range(3)) == [0, 1, 2]  # a Sequence that is no list or tuple: the item path, read once

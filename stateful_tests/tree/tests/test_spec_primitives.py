"""The spec's primitives (spec/primitives.py): the message-safe ``show`` and ``show_int``, and ``FrozenMap``.

The laws: an int of at most 256 bits is shown as its digits, a larger one as its sign and its digit
count (``int(bits * log10 2) + 1``, never ``str`` of it, which Python refuses past 4,300 digits),
wherever it sits in a value; any other value is shown by a short ``repr``, and a value whose ``repr``
raises by its type's name. A ``FrozenMap`` equals every mapping with the same items, hashes as
equal maps do (and unequal ones apart), and its copies-with-changes leave it as it was. ``integer_of`` takes an
``int`` or an ``__index__`` integer, never a bool (numpy's under either of its names) and never a float.
"""

import pytest

from kvproof.spec.primitives import (
    EMPTY_SET,
    SMALL,
    FrozenMap,
    FrozenSet,
    int_value,
    integer_of,
    is_numpy_bool,
    read_items,
    show,
    show_exception,
    show_int,
)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, "0"),
        (-7, "-7"),
        (2**256 - 1, str(2**256 - 1)),  # 256 bits: still its digits
        (-(2**256 - 1), str(-(2**256 - 1))),
        (2**256, "<an integer of about 78 digits>"),  # 257 bits: int(257 * 0.30103) + 1 = 78, and 2**256 has 78 digits
        (-(2**300), "-<an integer of about 91 digits>"),  # 301 bits: int(90.61) + 1
        (10**5000, "<an integer of about 5001 digits>"),
    ],
    ids=lambda v: f"{'-' if v < 0 else ''}{abs(v).bit_length()}bits" if isinstance(v, int) else "shown",
)
def test_an_int_is_shown_as_its_digits_up_to_256_bits_and_past_them_as_its_sign_and_digit_count(value, shown):
    assert show_int(value) == shown
    assert show(value) == shown
    assert show([value]) == f"[{shown}]"  # inside a container too


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def hostile_list() -> object:
    """An object reprlib takes for a list (it dispatches on the type's name) whose length raises."""

    class list:  # the name is the point
        def __len__(self) -> int:
            raise RuntimeError("no length")

    return list()


def test_show_cuts_long_and_deep_values_short_and_names_the_type_of_one_it_cannot_print():
    assert show([1, 2]) == "[1, 2]" and show({"a": (1, 2)}) == "{'a': (1, 2)}"
    assert show([[[[[1]]]]]) == "[[[[...]]]]"
    assert show("x" * 100) == "'" + "x" * 27 + "..." + "x" * 28 + "'"  # 60 characters at most
    assert show(Unprintable()).startswith("<Unprintable instance at 0x")  # reprlib's own fallback
    assert show(hostile_list()) == "<list>"  # and show's, for what reprlib itself cannot print


def test_a_frozen_map_equals_every_mapping_with_its_items_and_hashes_as_equal_maps_do():
    a, b = FrozenMap({1: "x", 2: "y"}), FrozenMap({2: "y", 1: "x"})
    assert a == b and hash(a) == hash(b) and a == {1: "x", 2: "y"}
    assert a != FrozenMap({1: "x"}) and a != {1: "x", 2: "z"} and a != [(1, "x"), (2, "y")]
    assert len({a, b, FrozenMap({1: "x"})}) == 2


def test_a_frozen_maps_changes_are_copies():
    a = FrozenMap({1: "x"})
    assert a.set(2, "y") == {1: "x", 2: "y"} and a.delete(1) == {} and a.delete(9) is a
    assert a == {1: "x"} and repr(a) == "FrozenMap({1: 'x'})"


def test_frozen_maps_with_different_items_hash_apart():
    """Equal maps hash alike; unequal ones spread (a constant hash keeps that contract but turns every set or dict
    of spec states into a list): 100 maps of different items take at least 90 hashes."""
    assert len({hash(FrozenMap({i: "x", -i: "y"})) for i in range(100)}) >= 90


def _numpy_named(name: str, **methods) -> object:
    """A scalar type that says it is numpy's ``name`` (numpy 1 called its boolean ``numpy.bool_``; numpy 2 ``numpy.bool``)."""
    return type(name, (), {"__module__": "numpy", **methods})()


@pytest.mark.parametrize("name", ["bool", "bool_"])
def test_a_numpy_boolean_under_either_name_is_a_bool_and_never_an_integer_even_with_an_index(name):
    """numpy 1's ``bool_`` declared ``__index__``; it is still no integer for the API (docs/hostile-input.md H9)."""
    flag = _numpy_named(name, __index__=lambda self: 1)
    assert is_numpy_bool(flag) and integer_of(flag) is None
    assert not is_numpy_bool(_numpy_named("int64", __index__=lambda self: 1))
    assert integer_of(_numpy_named("int64", __index__=lambda self: 1)) == 1


def test_a_float_is_never_an_integer_even_one_that_declares_an_index():
    class IndexFloat(float):
        def __index__(self) -> int:
            return 7

    assert integer_of(IndexFloat(7.0)) is None and integer_of(7.0) is None and integer_of("7") is None


# ----------------------------------------------------------------------------- persistent past SMALL (issue 31)

SIZES = [0, 1, SMALL - 1, SMALL, SMALL + 1, 3 * SMALL]


def is_trie(container) -> bool:
    return type(container._items) is not dict


@pytest.mark.parametrize("n", SIZES)
def test_a_frozen_map_of_any_size_reads_equals_and_hashes_by_its_items(n):
    items = {i: str(i) for i in range(n)}
    m = FrozenMap(items)
    assert is_trie(m) == (n > SMALL)  # a dict up to SMALL entries, a trie past it
    assert m == items and dict(m) == items and len(m) == n and sorted(m) == sorted(items)
    assert all(i in m and m[i] == str(i) and m.get(i) == str(i) for i in range(n))
    assert -1 not in m and m.get(-1) is None and m.get(-1, "d") == "d"
    assert (
        sorted(m.items()) == sorted(items.items())
        and sorted(m.keys()) == sorted(items)
        and sorted(m.values()) == sorted(items.values())
    )
    assert hash(m) == hash(FrozenMap(dict(reversed(list(items.items())))))
    assert m != {**items, -1: "x"} and m != {i: "other" for i in items} | ({} if n else {0: "z"})
    assert m.__eq__([(1, "1")]) is NotImplemented
    assert repr(m) == f"FrozenMap({items!r})" or eval(repr(m)[len("FrozenMap(") : -1]) == items


@pytest.mark.parametrize("n", SIZES)
def test_a_frozen_maps_set_and_delete_are_copies_on_either_side_of_small(n):
    items = {i: i for i in range(n)}
    m = FrozenMap(items)
    grown = m.set(-1, -1)
    assert grown == {**items, -1: -1} and m == items and len(grown) == n + 1
    assert is_trie(grown) == (n + 1 > SMALL)  # a dict grows into a trie at the entry past SMALL
    assert m.set(0, "new") == ({**items, 0: "new"} if n else {0: "new"}) and m == items  # rebinding copies too
    if n:
        shrunk = m.delete(0)
        assert shrunk == {i: i for i in range(1, n)} and m == items and 0 not in shrunk and len(shrunk) == n - 1
    assert m.delete(-5) is m  # nothing to delete: the same map
    assert grown.delete(-1) == m and hash(grown.delete(-1)) == hash(m)  # a trie and a dict of the same items are equal


def test_frozen_maps_compare_equal_across_their_two_backings():
    small = FrozenMap({i: i for i in range(SMALL)})
    trie = small.set(SMALL, SMALL).delete(SMALL)  # the same items, kept in a trie
    assert is_trie(trie) and not is_trie(small)
    assert small == trie and trie == small and hash(small) == hash(trie)
    assert small != trie.set(0, "x") and trie.set(0, "x") != small
    assert trie != small.delete(0) and small.delete(0) != trie  # lengths differ


@pytest.mark.parametrize("n", SIZES)
def test_a_frozen_set_of_any_size_adds_and_discards_as_copies(n):
    members = set(range(n))
    s = FrozenSet(members)
    assert is_trie(s) == (n > SMALL)
    assert s == members and set(s) == members and len(s) == n and all(i in s for i in members) and -1 not in s
    added = s.add(-1)
    assert added == members | {-1} and s == members and is_trie(added) == (n + 1 > SMALL)
    assert s.add(0) is s if n else s.add(0) == {0}  # a member already in: the same set
    assert s.discard(-1) is s
    if n:
        assert s.discard(0) == members - {0} and s == members and 0 not in s.discard(0)
    assert added.discard(-1) == s and hash(added.discard(-1)) == hash(s) == hash(frozenset(members))
    assert (s | {-2}) == members | {-2} and isinstance(s | {-2}, FrozenSet) and (s & {0}) == (members & {0})
    assert repr(FrozenSet({3})) == "FrozenSet({3})" and FrozenSet(s) == s


def test_frozen_sets_hash_apart_and_equal_frozensets():
    assert len({hash(FrozenSet({i, -i - 1})) for i in range(100)}) >= 90
    assert FrozenSet({1, 2}) == frozenset({1, 2}) and FrozenSet({1, 2}) != frozenset({1})
    assert set() == EMPTY_SET and not EMPTY_SET and FrozenSet() == EMPTY_SET


# ----------------------------------------------------------------------------- an argument's own code (issue 31)


def test_int_value_reads_an_int_subclass_by_its_value_never_its_own_methods():
    class Liar(int):
        def __int__(self):
            return 7

        def __index__(self):
            return 9

    assert int_value(Liar(5)) == 5 and type(int_value(Liar(5))) is int
    assert int_value(12) == 12 and integer_of(Liar(5)) == 5


def test_read_items_names_the_argument_and_the_exception_its_own_iteration_raised():
    class UnreadableItems(list):
        def __iter__(self):
            raise RuntimeError("no")

    assert read_items([1, 2], "x", ValueError) == (1, 2) and read_items((), "x", ValueError) == ()
    with pytest.raises(TypeError, match=r"^sequence could not be read: its own iteration raised RuntimeError\('no'\)$"):
        read_items(UnreadableItems([1]), "sequence", TypeError)
    assert show_exception(KeyError("k" * 500)).startswith("KeyError(") and len(show_exception(KeyError("k" * 500))) < 80

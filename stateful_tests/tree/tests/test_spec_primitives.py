"""The spec's primitives (spec/primitives.py): the message-safe ``show`` and ``show_int``, and ``FrozenMap``.

The laws: an int of at most 256 bits is shown as its digits, a larger one as its sign and its digit
count (``int(bits * log10 2) + 1``, never ``str`` of it, which Python refuses past 4,300 digits),
wherever it sits in a value; any other value is shown by a short ``repr``, and a value whose ``repr``
raises by its type's name. A ``FrozenMap`` equals every mapping with the same items, hashes as
equal maps do (and unequal ones apart), and its copies-with-changes leave it as it was. ``integer_of`` takes an
``int`` or an ``__index__`` integer, never a bool (numpy's under either of its names) and never a float.
"""

import pytest

from kvproof.spec.primitives import FrozenMap, integer_of, is_numpy_bool, show, show_int


@pytest.mark.parametrize(("value", "shown"), [
    (0, "0"),
    (-7, "-7"),
    (2**256 - 1, str(2**256 - 1)),  # 256 bits: still its digits
    (-(2**256 - 1), str(-(2**256 - 1))),
    (2**256, "<an integer of about 78 digits>"),  # 257 bits: int(257 * 0.30103) + 1 = 78, and 2**256 has 78 digits
    (-(2**300), "-<an integer of about 91 digits>"),  # 301 bits: int(90.61) + 1
    (10**5000, "<an integer of about 5001 digits>"),
], ids=lambda v: f"{'-' if v < 0 else ''}{abs(v).bit_length()}bits" if isinstance(v, int) else "shown")
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

"""Hypothesis strategies for hostile input: the wire format as text, and the Python values around it.

Every strategy draws mostly *nearly valid* input (events over the few hashes a populated tree holds,
so stores and removals take effect) with a hostile part somewhere: a literal or value from
``HOSTILE_LITERALS`` / ``HOSTILE_VALUES``, a duplicated key, a deep nest, a wrong type in an ignored
field. A case is ``(op, args)``: ``apply_event(worker, payload)``, ``remove_worker(worker)``,
``clear_all_blocks(worker)``, ``remove_worker_dp_rank(worker, rank)`` or
``find_matches(query, early_exit)``.

Source: docs/hostile-input.md (the cases docs/sources.md#kvproof-robustness lists, and what Dynamo 1.6.1 does with
each).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy
from hypothesis import strategies as st

from ...spec.events import Cleared, KvCacheEvent, Removed, Stored
from ...spec.primitives import Block

HASHES = (100, 200, 300, 400, 500, 600)
"""The external hashes a fuzzed tree holds or may hold (local hash = hash // 100)."""

HOSTILE_LITERALS = (
    "-0",
    "-1",
    "0.0",
    "1.0",
    "1e3",
    "1E0",
    "-0.0",
    "NaN",
    "Infinity",
    "-Infinity",
    "18446744073709551616",
    "4294967296",
    "1" * 25,
    "9" * 5000,
    "-" + "9" * 5000,
    "1e999",
    "true",
    "false",
    "null",
    '"5"',
    '""',
    "[]",
    "{}",
    "[1]",
    '{"a":1}',
    '"\\ud800"',
    '"\\udc00x"',
    "00",
    "01",
    "+1",
)
"""JSON text put where a number, or anything, belongs."""


class LyingInt(int):
    """An ``int`` whose own ``__int__`` and ``__index__`` disagree with its value: read by its value, as the binding does."""

    def __int__(self) -> int:
        return int.__index__(self) + 2

    def __index__(self) -> int:
        return int.__index__(self) + 4


class Member(enum.IntEnum):
    """An ``IntEnum``: read as its value, kept as a plain ``int``."""

    THREE = 3


class RaisingIndex:
    """An object whose own ``__index__`` raises: not an integer (a typed error, never its exception)."""

    def __index__(self) -> int:
        raise RuntimeError("hostile __index__")


class RaisingList(list):
    """A list whose own ``__iter__`` raises: a typed error naming the argument (docs/hostile-input.md H13)."""

    def __iter__(self):
        raise RuntimeError("hostile __iter__")


HOSTILE_VALUES: tuple[Any, ...] = (
    -1,
    2**64,
    2**64 - 1,
    2**32,
    10**5000,
    -(10**5000),
    True,
    False,
    1.0,
    float("nan"),
    float("inf"),
    "3",
    b"3",
    None,
    numpy.int64(3),
    numpy.uint64(2),
    numpy.int32(-1),
    numpy.bool_(True),
    numpy.float64(1.0),
    [1],
    (1,),
    {1: 2},
    object(),
    LyingInt(2),
    Member.THREE,
    RaisingIndex(),
)
"""Python values put where an argument belongs."""


@dataclass(frozen=True)
class Text:
    """A JSON fragment (already rendered)."""

    text: str


def render(value: Any) -> str:
    """Render a tree of ``Text``, pairs-lists (objects, as ``("obj", [(key, value), ...])``), lists and strs."""
    if isinstance(value, Text):
        return value.text
    if isinstance(value, tuple) and value and value[0] == "obj":
        return "{" + ",".join(f"{_key(k)}:{render(v)}" for k, v in value[1]) + "}"
    if isinstance(value, list):
        return "[" + ",".join(render(v) for v in value) + "]"
    raise TypeError(f"cannot render {value!r}")


def _key(key: str) -> str:
    return key if key.startswith('"') else f'"{key}"'


def _obj(pairs: list[tuple[str, Any]]) -> tuple[str, list[tuple[str, Any]]]:
    return ("obj", pairs)


hostile_literal = st.sampled_from(HOSTILE_LITERALS).map(Text)


def _nest(depth: int, kind: str) -> Text:
    return Text(("[" * depth + "]" * depth) if kind == "list" else ('{"a":' * depth + "1" + "}" * depth))


deep_nest = st.builds(_nest, st.sampled_from([5, 127, 128, 129, 2000, 100_000]), st.sampled_from(["list", "object"]))


def number(values: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    """A number field: mostly a valid literal, sometimes a hostile one."""
    return st.one_of(values.map(lambda v: Text(str(v))), values.map(lambda v: Text(str(v))), hostile_literal)


ignored_value = st.one_of(hostile_literal, deep_nest, st.just(Text('"\\ud800"')), st.just(Text('"x"')))
junk_field = st.tuples(st.sampled_from(["lora_id", "extra", "mm", "\\u0065xtra", "\\ud800"]), ignored_value)


@st.composite
def obj_with(draw: st.DrawFn, pairs: list[tuple[str, Any]]) -> tuple[str, list[tuple[str, Any]]]:
    """An object from ``pairs``: maybe a junk field, a key given twice, a key dropped, fields shuffled."""
    pairs = list(pairs)
    if draw(st.integers(0, 5)) == 5:  # rare choices on the high side: shrinking moves toward 0, the plain input
        pairs.append(draw(junk_field))
    if pairs and draw(st.integers(0, 7)) == 7:
        pairs.append(draw(st.sampled_from(pairs)))  # a duplicate key
    if pairs and draw(st.integers(0, 9)) == 9:
        pairs.pop(draw(st.integers(0, len(pairs) - 1)))
    return _obj(pairs if not draw(st.booleans()) else draw(st.permutations(pairs)))


hash_field = number(st.sampled_from(HASHES))
local_field = number(st.sampled_from([h // 100 for h in HASHES]))


# The strategies a composite draws are built once, here, not inside it: one built at every draw is validated and
# labelled again at every draw (a third of the fuzz row's case generation). The same strategies draw the same cases.
_ext = st.sampled_from(HASHES)
_block_hash = {ext: st.one_of(st.just(Text(str(ext))), hash_field) for ext in HASHES}
_tokens_hash = {ext: st.one_of(st.just(Text(str(ext // 100))), local_field) for ext in HASHES}
_mm_extra_info = st.one_of(
    st.just(Text('{"mm_objects":[{"mm_hash":7,"offsets":[[0,3]]}]}')),
    hostile_literal,
    st.just(Text('{"mm_objects":[{"mm_hash":7,"offsets":[[0]]}]}')),
    st.just(Text('{"mm_objects":[]}')),
)


@st.composite
def block(draw: st.DrawFn) -> Any:
    ext = draw(_ext)
    pairs: list[tuple[str, Any]] = [("block_hash", draw(_block_hash[ext])), ("tokens_hash", draw(_tokens_hash[ext]))]
    extra = draw(st.integers(0, 6))
    if extra == 5:
        pairs.append(("mm_extra_info", Text("null")))
    elif extra == 6:
        pairs.append(("mm_extra_info", draw(_mm_extra_info)))
    if draw(st.integers(0, 15)) == 15:
        return [pairs[0][1], pairs[1][1]]  # serde's sequence form
    return draw(obj_with(pairs))


_data_kind = st.sampled_from(["stored", "stored", "stored", "removed", "removed", "cleared", "hostile"])
_parent = st.one_of(st.just(Text("null")), hash_field)
_blocks = st.lists(block(), max_size=4)
_start_position = number(st.integers(0, 10))
_removed_hashes = st.lists(hash_field, max_size=4)
_cleared = st.sampled_from(
    [
        Text('"cleared"'),
        _obj([("cleared", Text("null"))]),
        _obj([("cleared", Text("{}"))]),
        _obj([("cleared", Text("5"))]),
        Text('"Cleared"'),
    ]
)
_hostile_data = st.one_of(
    hostile_literal, deep_nest, st.just(_obj([])), st.just(_obj([("stored", Text("{}")), ("removed", Text("{}"))]))
)


@st.composite
def data(draw: st.DrawFn) -> Any:
    kind = draw(_data_kind)
    if kind == "stored":
        parent = draw(_parent)
        pairs: list[tuple[str, Any]] = [("parent_hash", parent), ("blocks", draw(_blocks))]
        if draw(st.integers(0, 5)) == 5:
            pairs.append(("start_position", draw(_start_position)))
        return _obj([("stored", draw(st.one_of(obj_with(pairs), st.just(Text("null")), hostile_literal)))])
    if kind == "removed":
        hashes = draw(_removed_hashes)
        return _obj([("removed", draw(obj_with([("block_hashes", hashes)])))])
    if kind == "cleared":
        return draw(_cleared)
    return draw(_hostile_data)


_event_id = number(st.integers(0, 3))
_data = data()
_dp_rank = number(st.integers(0, 1))


@st.composite
def event_text(draw: st.DrawFn) -> str:
    """A ``KvCacheEvent`` JSON document, nearly valid, with hostile parts."""
    pairs: list[tuple[str, Any]] = [("event_id", draw(_event_id)), ("data", draw(_data))]
    if draw(st.booleans()):
        pairs.append(("dp_rank", draw(_dp_rank)))
    root = draw(obj_with(pairs))
    text = render(root)
    if draw(st.integers(0, 30)) == 30:
        text = render([p[1] for p in root[1]])  # the root in serde's sequence form
    return text


def as_python(text: str) -> Any:
    """The mapping ``text`` decodes to under plain ``json.loads`` (a dict payload), or ``None`` if it does not."""
    import json

    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


python_uint = st.one_of(st.sampled_from(HASHES), st.sampled_from(HOSTILE_VALUES))


@st.composite
def event_object(draw: st.DrawFn) -> KvCacheEvent:
    """A ``KvCacheEvent`` object built in Python, with hostile fields (the API path that skips the decoder)."""
    kind = draw(st.sampled_from(["stored", "removed", "cleared", "hostile"]))
    blocks = draw(
        st.lists(
            st.one_of(
                st.sampled_from(HASHES).map(lambda h: Block(h // 100, h)),
                st.builds(Block, python_uint, python_uint),
                st.sampled_from(HOSTILE_VALUES),
            ),
            max_size=3,
        )
    )
    payload: Any
    if kind == "stored":
        payload = Stored(draw(st.one_of(st.none(), python_uint)), draw(st.sampled_from([tuple(blocks), blocks, None, "ab"])))
    elif kind == "removed":
        payload = Removed(draw(st.one_of(st.lists(python_uint, max_size=3).map(tuple), st.sampled_from(HOSTILE_VALUES))))
    elif kind == "cleared":
        payload = Cleared()
    else:
        payload = draw(st.sampled_from(HOSTILE_VALUES + ("cleared",)))
    return KvCacheEvent(
        draw(st.one_of(st.integers(0, 3), st.sampled_from(HOSTILE_VALUES))),
        payload,
        draw(st.one_of(st.just(0), st.integers(0, 1), st.sampled_from(HOSTILE_VALUES))),
    )


worker = st.one_of(st.sampled_from([1, 1, 1, 2, 3]), st.sampled_from(HOSTILE_VALUES))
query_item = st.one_of(st.sampled_from([1, 2, 3, 4, 5, 6]), st.sampled_from(HOSTILE_VALUES))
query = st.one_of(
    st.lists(st.sampled_from([1, 2, 3, 4, 5, 6]), max_size=5),
    st.lists(query_item, max_size=5),
    st.lists(query_item, max_size=5).map(tuple),
    st.sampled_from(
        [
            b"\x01\x02",
            bytearray(b"\x01"),
            memoryview(b"\x01"),
            "12",
            None,
            7,
            {1, 2},
            {1: 2},
            range(1, 4),
            numpy.array([1, 2], dtype=numpy.uint64),
            numpy.array([1.0]),
            numpy.array([[1]]),
        ]
    ),
)
early_exit: st.SearchStrategy[Any] = st.one_of(st.booleans(), st.sampled_from([1, 0, "yes", None, numpy.bool_(True), [], 2.0]))

"""fuzz/codec.py: every value the grammar draws survives a save, exactly; a file of another shape is a CodecError."""

import json

import numpy
import pytest

from kvproof.spec.events import Cleared, KvCacheEvent, Removed, Stored
from kvproof.spec.primitives import Block
from kvproof.stateful_tests.fuzz import codec
from kvproof.stateful_tests.fuzz.grammar import HOSTILE_VALUES, RaisingIndex

VALUES = [
    *HOSTILE_VALUES,
    b"\xff\x00",
    bytearray(b"x"),
    memoryview(b"ab"),
    "\ud800",
    range(1, 4),
    {3, 4},
    numpy.array([1, 2], dtype=numpy.uint64),
    KvCacheEvent(2**64, Stored(None, (Block(1, 2), "x")), -1),  # type: ignore[arg-type]
    KvCacheEvent(0, Removed((1, "2")), 0),  # type: ignore[arg-type]
    KvCacheEvent(0, Cleared()),
    -(2**70),
]


def same(a, b):
    if isinstance(a, float) and a != a:
        return b != b
    if isinstance(a, numpy.ndarray):
        return a.dtype == b.dtype and a.tolist() == b.tolist()
    if isinstance(a, memoryview):
        return bytes(a) == bytes(b)
    if type(a) in (object, RaisingIndex):  # no value of its own: its kind is all there is
        return type(b) is type(a)
    if isinstance(a, int) and not isinstance(a, bool) and abs(a) > 10**300:
        return a == b
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_every_drawn_value_round_trips_through_json(value):
    back = codec.decode(json.loads(json.dumps(codec.encode(value))))
    assert same(value, back) and type(back) is type(value)


def test_a_value_the_codec_does_not_know_is_refused_when_saving():
    with pytest.raises(codec.CodecError, match="cannot save a"):
        codec.encode(lambda: None)


@pytest.mark.parametrize("garbage", [["nope", 1], [], "int", ["int", "zz"], ["numpy", "no_such", "0x1"]])
def test_a_file_that_is_not_tagged_json_is_a_codec_error(garbage):
    with pytest.raises(codec.CodecError):
        codec.decode(garbage)

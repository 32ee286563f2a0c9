"""The tagged JSON a fuzz case is saved in: every value the grammar draws round-trips exactly.

JSON alone cannot hold bytes, a numpy scalar, a 5,000-digit integer (Python refuses to print
it), NaN, a tuple or an event object, so each value is written as ``[tag, content]``. A file
written here replays anywhere kvproof runs (``kvproof fuzz --replay FILE``); loading one builds
only these data types, never runs code.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy

from ...spec.events import Cleared, KvCacheEvent, Removed, Stored
from ...spec.primitives import Block
from .grammar import LyingInt, Member, RaisingIndex

_HOSTILE_KINDS = (LyingInt, Member, RaisingIndex)
_HOSTILE_NAMES = {kind.__name__: kind for kind in _HOSTILE_KINDS}


class CodecError(ValueError):
    """A saved case that is not in this format."""


def encode(value: Any) -> Any:
    """Return ``value`` as tagged JSON."""
    if value is None or isinstance(value, str):
        return ["str", value] if isinstance(value, str) else ["none", None]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, numpy.generic):
        return ["numpy", type(value).__name__, _number_text(value.item())]
    if type(value) in _HOSTILE_KINDS:  # the grammar's objects with code of their own, by kind and value
        return [type(value).__name__, hex(int.__index__(value)) if isinstance(value, int) else None]
    if isinstance(value, int):
        return ["int", hex(value)]
    if isinstance(value, float):
        return ["float", repr(value) if math.isfinite(value) else str(value)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return [type(value).__name__, base64.b64encode(bytes(value)).decode()]
    if isinstance(value, numpy.ndarray):
        return ["ndarray", str(value.dtype), encode(value.tolist())]
    if isinstance(value, Block):
        return ["Block", encode(value.local), encode(value.ext)]
    if isinstance(value, KvCacheEvent):
        return ["KvCacheEvent", encode(value.event_id), encode(value.data), encode(value.dp_rank)]
    if isinstance(value, Stored):
        return ["Stored", encode(value.parent_hash), encode(value.blocks)]
    if isinstance(value, Removed):
        return ["Removed", encode(value.block_hashes)]
    if isinstance(value, Cleared):
        return ["Cleared"]
    if isinstance(value, range):
        return ["range", value.start, value.stop, value.step]
    if isinstance(value, (list, tuple, set)):
        return [type(value).__name__, [encode(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", [[encode(k), encode(v)] for k, v in value.items()]]
    if type(value) is object:
        return ["object"]
    raise CodecError(f"cannot save a {type(value).__name__}")


def _number_text(value: Any) -> str:
    return hex(value) if isinstance(value, int) and not isinstance(value, bool) else repr(value)


def decode(tagged: Any) -> Any:
    """Return the value ``tagged`` stands for (``CodecError`` if it is not tagged JSON of this format)."""
    try:
        return _decode(tagged)
    except CodecError:
        raise
    except Exception as exc:
        raise CodecError(f"not a saved value: {tagged!r:.80} ({type(exc).__name__}: {exc})") from None


def _decode(tagged: Any) -> Any:
    tag, rest = tagged[0], tagged[1:]
    simple = {
        "none": lambda: None,
        "str": lambda: rest[0],
        "bool": lambda: bool(rest[0]),
        "int": lambda: int(rest[0], 16),
        "float": lambda: float(rest[0]),
        "bytes": lambda: base64.b64decode(rest[0]),
        "bytearray": lambda: bytearray(base64.b64decode(rest[0])),
        "memoryview": lambda: memoryview(base64.b64decode(rest[0])),
        "Cleared": Cleared,
        "object": object,
        "range": lambda: range(*rest),
    }
    if tag in simple:
        return simple[tag]()
    if tag in _HOSTILE_NAMES:
        kind: Any = _HOSTILE_NAMES[tag]
        return kind() if rest[0] is None else kind(int(rest[0], 16))
    if tag == "numpy":
        kind, text = rest
        if text in ("True", "False"):
            return getattr(numpy, kind)(text == "True")
        return getattr(numpy, kind)(int(text, 16) if text.lstrip("-").startswith("0x") else float(text))
    if tag == "ndarray":
        return numpy.array(_decode(rest[1]), dtype=rest[0])
    if tag == "Block":
        return Block(_decode(rest[0]), _decode(rest[1]))
    if tag == "KvCacheEvent":
        return KvCacheEvent(_decode(rest[0]), _decode(rest[1]), _decode(rest[2]))
    if tag == "Stored":
        return Stored(_decode(rest[0]), _decode(rest[1]))
    if tag == "Removed":
        return Removed(_decode(rest[0]))
    if tag in ("list", "tuple", "set"):
        items = [_decode(v) for v in rest[0]]
        return {"list": list, "tuple": tuple, "set": set}[tag](items)
    if tag == "dict":
        return {_decode(k): _decode(v) for k, v in rest[0]}
    raise CodecError(f"unknown tag {tag!r}")

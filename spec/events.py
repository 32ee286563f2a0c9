"""KV cache events, their wire format, and the front door that turns a payload into a ranked event.

Data
----
- ``Stored(parent_hash, blocks)``: the rank now holds ``blocks`` (a chain) directly below
  ``parent_hash``; ``parent_hash=None`` means "from the root".
- ``Removed(block_hashes)``: the rank evicted these blocks; any order, possibly spanning
  several sequences.
- ``Cleared()``: the rank dropped everything. It is a per-rank reset (the emitting
  ``(worker_id, dp_rank)`` only).

The front door every tree shares is ``parse_event`` (worker id, decode, rank) followed by
``dispatch``; ``check_rank`` is the front door of ``remove_worker_dp_rank``.

Wire format (Dynamo ``KvCacheEvent``, JSON, snake_case tags)::

    {"event_id": 7, "dp_rank": 0,
     "data": {"stored": {"parent_hash": 100, "blocks": [{"block_hash": 200, "tokens_hash": 2}]}}}
    {"event_id": 8, "data": {"removed": {"block_hashes": [200, 100]}}}
    {"event_id": 9, "data": "cleared"}

Observed on ai-dynamo-runtime 1.6.1 (docs/dynamo-findings.md): ``event_id`` is required,
``dp_rank`` defaults to 0, ``parent_hash`` and ``start_position`` may be absent, unknown
fields are ignored, hashes are u64 and ``dp_rank`` is u32 (anything else is a decode
error), and ``cleared`` may be written as the string or as ``{"cleared": null}``.

Source: docs/sources.md#crtc-1 "Events"; docs/sources.md#dynamo-protocols.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, TypeVar

from .errors import InvalidArgument, InvalidArgumentType, InvalidBlockSequence, MalformedEvent
from .primitives import U32_MAX, U64_MAX, Block, Rank, integer_of, is_int, is_uint, read_items, show, show_int


@dataclass(frozen=True, slots=True)
class Stored:
    """The rank stored ``blocks`` as a chain below ``parent_hash`` (None: the root)."""

    parent_hash: int | None
    blocks: tuple[Block, ...]

    def __repr__(self) -> str:
        return f"Stored(parent_hash={self.parent_hash!r}, blocks={list(map(tuple, self.blocks))!r})"


@dataclass(frozen=True, slots=True)
class Removed:
    """The rank evicted ``block_hashes`` (any order)."""

    block_hashes: tuple[int, ...]

    def __repr__(self) -> str:
        return f"Removed(block_hashes={list(self.block_hashes)!r})"


@dataclass(frozen=True, slots=True)
class Cleared:
    """The rank dropped all of its blocks."""


EventData = Stored | Removed | Cleared


@dataclass(frozen=True, slots=True)
class KvCacheEvent:
    """One event as a rank emits it."""

    event_id: int
    data: EventData
    dp_rank: int = 0


# ---------------------------------------------------------------------------------------
# Decoding
#
# The JSON is read strictly, as Dynamo's serde_json reads it (docs/hostile-input.md):
# NaN and Infinity are not JSON; a known field given twice is an error (an unknown one is
# ignored); a key holding a lone UTF-16 surrogate is an error; ``-0`` is not an unsigned
# integer; an integer literal too long for any field is kept as text, so it is refused where
# a field is read and ignored elsewhere (Python cannot even convert one past 4300 digits).
# kvproof is stricter in two places: nesting deeper than ``MAX_JSON_DEPTH`` and invalid UTF-8
# anywhere are refused (Dynamo skips both inside ignored values).

MAX_JSON_DEPTH = 128
"""The deepest nesting of arrays and objects accepted (a real event nests six deep; Dynamo skips any depth
in an ignored value, kvproof refuses past this one: H1)."""

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _fail(path: str, message: str, what: str = "KvCacheEvent") -> MalformedEvent:
    return MalformedEvent(f"Failed to deserialize {what}: {path}: {message}")


def _kind(value: Any) -> str:
    """The name of a value's type for a message: ``dict`` for every decoded object, whichever way it was read."""
    return "dict" if isinstance(value, dict) else type(value).__name__


class WireLiteral:
    """A number literal kept as text: ``-0``, or an integer too long for any field (more than 20 digits)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        digits = len(self.text.lstrip("-"))
        return self.text if digits <= 20 else f"<an integer literal of {digits} digits>"


class _Unreadable(Exception):
    """What a parser hook refuses (a lone surrogate key, a NaN constant), at a path: ``load_json`` names the document."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, message)
        self.path, self.message = path, message


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers which keys it saw more than once (the last one wins)."""

    __slots__ = ("duplicates",)
    duplicates: frozenset[str]


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    obj.duplicates = frozenset()
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj.duplicates = frozenset(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    for key in obj:
        if not key.isascii() and any(0xD800 <= ord(c) <= 0xDFFF for c in key):
            raise _Unreadable("<key>", f"key {show(key)} holds a lone UTF-16 surrogate")
    return obj


def _parse_int(text: str) -> int | WireLiteral:
    if text == "-0" or len(text.lstrip("-")) > 20:
        return WireLiteral(text)
    return int(text)


def _no_constant(name: str) -> Any:
    raise _Unreadable("<number>", f"{name} is not JSON")


def _too_deep(text: str) -> bool:
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for token in _TOKENS.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif bracket in "]}":
            depth -= 1
    return False


def check_wire_uint(value: Any, path: str, bound: int = U64_MAX, what: str = "KvCacheEvent") -> int:
    """Return ``value`` if it is a wire unsigned integer in ``[0, bound]`` (``is_uint``); raise ``MalformedEvent`` otherwise."""
    if not is_uint(value, bound):
        if isinstance(value, WireLiteral) and value.text != "-0":
            raise _fail(path, f"integer {value!r} out of range [0, {bound}]", what)
        if isinstance(value, WireLiteral):
            raise _fail(path, "expected an unsigned integer, got -0 (a signed zero)", what)
        if not is_int(value):  # a JSON true is not an integer
            raise _fail(path, f"expected an unsigned integer, got {_kind(value)} {show(value)}", what)
        raise _fail(path, f"integer {show_int(value)} out of range [0, {bound}]", what)
    return value


def _field(obj: Mapping[str, Any], key: str, path: str, what: str = "KvCacheEvent") -> Any:
    if key not in obj:
        raise _fail(path, f"missing field `{key}`", what)
    return obj[key]


def _mapping(value: Any, path: str, known: frozenset[str] = frozenset(), what: str = "KvCacheEvent") -> Mapping[str, Any]:
    """Return ``value`` as an object; a known field given twice is an error (serde's ``duplicate field``)."""
    if not isinstance(value, Mapping):
        raise _fail(path, f"expected an object, got {_kind(value)}", what)
    twice: frozenset[str] = getattr(value, "duplicates", frozenset()) & known
    if twice:
        raise _fail(path, f"duplicate field `{min(twice)}`", what)
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(path, f"expected a list, got {_kind(value)}")
    return value


ROOT_FIELDS = frozenset({"event_id", "data", "dp_rank"})
STORED_FIELDS = frozenset({"parent_hash", "start_position", "blocks"})
BLOCK_FIELDS = frozenset({"block_hash", "tokens_hash", "mm_extra_info"})
REMOVED_FIELDS = frozenset({"block_hashes"})
MM_FIELDS = frozenset({"mm_objects"})
MM_OBJECT_FIELDS = frozenset({"mm_hash", "offsets"})


def _check_mm_extra_info(value: Any, path: str) -> None:
    """``mm_extra_info`` is null or ``{"mm_objects": [{"mm_hash": u64, "offsets": [[u64, u64], ...]}, ...]}``.

    The router ignores it, but Dynamo's decoder checks its shape, so the drop-in does too.
    Source: Dynamo ``BlockExtraInfo`` / ``BlockMmObjectInfo`` (docs/sources.md#dynamo-protocols).
    """
    if value is None:
        return
    body = _mapping(value, path, MM_FIELDS)
    for i, obj in enumerate(_list(_field(body, "mm_objects", path), f"{path}.mm_objects")):
        where = f"{path}.mm_objects[{i}]"
        obj = _mapping(obj, where, MM_OBJECT_FIELDS)
        check_wire_uint(_field(obj, "mm_hash", where), f"{where}.mm_hash")
        for j, pair in enumerate(_list(_field(obj, "offsets", where), f"{where}.offsets")):
            pair = _list(pair, f"{where}.offsets[{j}]")
            if len(pair) != 2:
                raise _fail(f"{where}.offsets[{j}]", f"expected a pair, got {len(pair)} items")
            for k, bound in enumerate(pair):
                check_wire_uint(bound, f"{where}.offsets[{j}][{k}]")


def _decode_stored(body: Any) -> Stored:
    body = _mapping(body, "data.stored", STORED_FIELDS)
    parent = body.get("parent_hash")
    if parent is not None:
        parent = check_wire_uint(parent, "data.stored.parent_hash")
    start = body.get("start_position")
    if start is not None:
        check_wire_uint(start, "data.stored.start_position", U32_MAX)
    blocks = []
    for i, raw in enumerate(_list(_field(body, "blocks", "data.stored"), "data.stored.blocks")):
        where = f"data.stored.blocks[{i}]"
        raw = _mapping(raw, where, BLOCK_FIELDS)
        ext = check_wire_uint(_field(raw, "block_hash", where), f"{where}.block_hash")
        local = check_wire_uint(_field(raw, "tokens_hash", where), f"{where}.tokens_hash")
        _check_mm_extra_info(raw.get("mm_extra_info"), f"{where}.mm_extra_info")
        blocks.append(Block(local, ext))
    return Stored(parent, tuple(blocks))


def _decode_removed(body: Any) -> Removed:
    body = _mapping(body, "data.removed", REMOVED_FIELDS)
    hashes = _list(_field(body, "block_hashes", "data.removed"), "data.removed.block_hashes")
    return Removed(tuple(check_wire_uint(h, f"data.removed.block_hashes[{i}]") for i, h in enumerate(hashes)))


def decode_event_data(data: Any) -> EventData:
    """Decode the ``data`` member of a ``KvCacheEvent``."""
    if isinstance(data, str) and data == "cleared":
        return Cleared()
    if not isinstance(data, Mapping):
        raise _fail("data", f'expected the string "cleared" or an object, got {_kind(data)} {show(data)}')
    if len(data) != 1 or getattr(data, "duplicates", None):
        raise _fail("data", f"expected exactly one of stored/removed/cleared, got {show(sorted(map(str, data)))}")
    ((tag, body),) = data.items()
    if tag == "stored":
        return _decode_stored(body)
    if tag == "removed":
        return _decode_removed(body)
    if tag == "cleared":
        if body is not None:
            raise _fail("data.cleared", f"a unit variant takes null, got {_kind(body)} {show(body)}")
        return Cleared()
    raise _fail("data", f"unknown variant `{show(tag)}`, expected stored, removed or cleared")


def load_json(payload: bytes | bytearray | str | Mapping[str, Any], what: str = "KvCacheEvent") -> Mapping[str, Any]:
    """Parse ``payload`` (bytes, str or an already-decoded mapping) into a mapping, strictly (see above)."""
    if isinstance(payload, Mapping):
        return payload
    if isinstance(payload, (bytes, bytearray)):
        try:
            payload = bytes(payload).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedEvent(f"Failed to deserialize {what}: not UTF-8 ({exc})") from None
    if not isinstance(payload, str):
        raise MalformedEvent(f"Failed to deserialize {what}: expected bytes, str or a mapping, got {_kind(payload)}")
    if _too_deep(payload):
        raise MalformedEvent(f"Failed to deserialize {what}: nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        obj = json.loads(payload, object_pairs_hook=_object, parse_int=_parse_int, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise MalformedEvent(f"Failed to deserialize {what}: {exc}") from None
    except _Unreadable as exc:
        raise _fail(exc.path, exc.message, what) from None
    except RecursionError:  # the depth check bounds nesting; this is the last line of defence
        raise MalformedEvent(f"Failed to deserialize {what}: nested too deeply") from None
    return _mapping(obj, "<root>", what=what)


def decode_event(payload: bytes | bytearray | str | Mapping[str, Any]) -> KvCacheEvent:
    """Decode Dynamo's KvCacheEvent JSON into a ``KvCacheEvent``, strictly (see above); ``MalformedEvent`` if it does not.

    This reading is the law. The trees take a faster path to the same answer for a plain event
    (``reference/wire.py``: msgspec, agreeing with this reading wherever it answers).
    """
    obj = _mapping(load_json(payload), "<root>", ROOT_FIELDS)
    event_id = check_wire_uint(_field(obj, "event_id", "<root>"), "event_id")
    dp_rank = check_wire_uint(obj["dp_rank"], "dp_rank", U32_MAX) if "dp_rank" in obj else 0
    return KvCacheEvent(event_id, decode_event_data(_field(obj, "data", "<root>")), dp_rank)


def _api_uint(value: Any, path: str, bound: int = U64_MAX) -> int:
    """An unsigned integer field of a ``KvCacheEvent`` object passed as is (``integer_of``); ``MalformedEvent`` otherwise."""
    number = integer_of(value)
    if number is None:
        raise _fail(path, f"expected an unsigned integer, got {_kind(value)} {show(value)}")
    if not 0 <= number <= bound:
        raise _fail(path, f"integer {show_int(number)} out of range [0, {bound}]")
    return number


def _api_items(value: Any, path: str) -> tuple[Any, ...]:
    if isinstance(value, (str, bytes, bytearray, memoryview)) or not isinstance(value, (tuple, list)):
        raise _fail(path, f"expected a tuple, got {_kind(value)}")
    return read_items(value, path, lambda message: _fail(path, message))


def check_event(event: KvCacheEvent) -> KvCacheEvent:
    """Return a ``KvCacheEvent`` object with every field checked as the wire would check it (``MalformedEvent``).

    A caller that builds events in Python skips the decoder, so the same domain is enforced
    here: u64 ids and hashes, a u32 dp rank, blocks that are ``Block`` pairs, a closed set of
    variants. The event returned holds plain ints.
    """
    event_id = _api_uint(event.event_id, "event_id")
    dp_rank = _api_uint(event.dp_rank, "dp_rank", U32_MAX)
    data = event.data
    if isinstance(data, Stored):
        parent = None if data.parent_hash is None else _api_uint(data.parent_hash, "data.stored.parent_hash")
        blocks = []
        for i, block in enumerate(_api_items(data.blocks, "data.stored.blocks")):
            if not isinstance(block, Block):
                raise _fail(f"data.stored.blocks[{i}]", f"expected a Block, got {_kind(block)}")
            blocks.append(
                Block(
                    _api_uint(block.local, f"data.stored.blocks[{i}].tokens_hash"),
                    _api_uint(block.ext, f"data.stored.blocks[{i}].block_hash"),
                )
            )
        data = Stored(parent, tuple(blocks))
    elif isinstance(data, Removed):
        hashes = _api_items(data.block_hashes, "data.removed.block_hashes")
        data = Removed(tuple(_api_uint(h, f"data.removed.block_hashes[{i}]") for i, h in enumerate(hashes)))
    elif not isinstance(data, Cleared):
        raise _fail("data", f"expected Stored, Removed or Cleared, got {_kind(data)}")
    return KvCacheEvent(event_id, data, dp_rank)


def check_worker_id(worker_id: Any) -> int:
    """Return ``worker_id`` as a u64 (``integer_of``: numpy integers too, never a bool); ``InvalidArgumentType`` / ``InvalidArgument``."""
    number = integer_of(worker_id)
    if number is None:
        raise InvalidArgumentType(f"worker_id must be an int, got {_kind(worker_id)}")
    if not 0 <= number <= U64_MAX:
        raise InvalidArgument(f"worker_id {show_int(number)} is not a u64")
    return number


def check_rank(worker_id: Any, dp_rank: Any) -> Rank:
    """Return the rank ``(worker_id, dp_rank)`` a ``remove_worker_dp_rank`` call names.

    The worker id is checked first (``check_worker_id``), then the dp rank as a u32:
    ``InvalidArgumentType`` / ``InvalidArgument`` naming ``dp_rank`` (an argument of a call, not
    a field of an event; docs/hostile-input.md).
    """
    worker_id = check_worker_id(worker_id)
    number = integer_of(dp_rank)
    if number is None:
        raise InvalidArgumentType(f"dp_rank must be an int, got {_kind(dp_rank)}")
    if not 0 <= number <= U32_MAX:
        raise InvalidArgument(f"dp_rank {show_int(number)} is not a u32")
    return Rank(worker_id, number)


Payload = bytes | bytearray | str | Mapping[str, Any]


def parse_event(
    worker_id: Any, payload: Payload | KvCacheEvent, decode: Callable[[Payload], KvCacheEvent] = decode_event
) -> tuple[Rank, KvCacheEvent]:
    """Return the rank an event applies to and the decoded event: every tree's front door.

    The worker id is checked before the payload is decoded (so a bad id wins over a bad
    payload); a payload that is already a ``KvCacheEvent`` is checked field by field
    (``check_event``), any other by ``decode`` (this module's strict reading, or a reading that
    agrees with it: the trees pass ``reference.wire.decode_event_fast``); the event applies to
    ``(worker_id, event.dp_rank)``. Nothing here
    touches a tree, so a rejected call changes nothing.

    Source: docs/sources.md#crtc-1 "Events" (``apply_event(worker_id, bytes)``, ``dp_rank`` default 0).
    """
    worker_id = check_worker_id(worker_id)
    event = check_event(payload) if isinstance(payload, KvCacheEvent) else decode(payload)
    return Rank(worker_id, event.dp_rank), event


R = TypeVar("R")


def dispatch(
    data: EventData,
    on_stored: Callable[[Stored], R],
    on_removed: Callable[[Removed], R],
    on_cleared: Callable[[Cleared], R],
) -> R:
    """Call the handler of ``data``'s variant (the event set is closed: anything else is a ``TypeError``)."""
    if isinstance(data, Stored):
        return on_stored(data)
    if isinstance(data, Removed):
        return on_removed(data)
    if isinstance(data, Cleared):
        return on_cleared(data)
    raise TypeError(f"not an event: {data!r}")


_BLOCK_EXT = itemgetter(1)  # Block.ext


def is_self_parented(stored: Stored) -> bool:
    """Check if a store names its own parent among its blocks.

    Such a store is rejected with ``InvalidBlockSequence`` before anything changes (the plain
    RadixTree's rule; docs/sources.md#crtc-12 item 1, experiment E14).
    """
    return stored.parent_hash is not None and stored.parent_hash in map(_BLOCK_EXT, stored.blocks)


def check_not_self_parented(stored: Stored) -> None:
    """Raise ``InvalidBlockSequence`` if ``stored`` names its own parent (``is_self_parented``; E14)."""
    if is_self_parented(stored):
        raise InvalidBlockSequence(f"block sequence contains its parent hash {stored.parent_hash}")


# ---------------------------------------------------------------------------------------
# Encoding


def event_data_json(data: EventData) -> Any:
    """Return the JSON value of ``data`` in Dynamo's format (optional fields written as null, as Dynamo does)."""
    if isinstance(data, Stored):
        return {
            "stored": {
                "parent_hash": data.parent_hash,
                "start_position": None,
                "blocks": [{"block_hash": b.ext, "tokens_hash": b.local, "mm_extra_info": None} for b in data.blocks],
            }
        }
    if isinstance(data, Removed):
        return {"removed": {"block_hashes": list(data.block_hashes)}}
    if isinstance(data, Cleared):
        return "cleared"
    raise TypeError(f"not an event: {data!r}")


def encode_event(event: KvCacheEvent) -> bytes:
    """Encode ``event`` as the JSON bytes ``RadixTree.apply_event`` takes."""
    return json.dumps(
        {"event_id": event.event_id, "data": event_data_json(event.data), "dp_rank": event.dp_rank},
        separators=(",", ":"),
    ).encode()


def encode_router_event(worker_id: int, event: KvCacheEvent) -> str:
    """Encode a dump entry (a ``RouterEvent``) the way ``dump_tree_as_events`` writes it."""
    return json.dumps(
        {
            "worker_id": worker_id,
            "storage_tier": "device",
            "residency_domain": "worker",
            "event": {"event_id": event.event_id, "data": event_data_json(event.data), "dp_rank": event.dp_rank},
        },
        separators=(",", ":"),
    )


ROUTER_FIELDS = frozenset({"worker_id", "event"})


def decode_router_event(payload: bytes | str | Mapping[str, Any]) -> tuple[int, KvCacheEvent]:
    """Decode one ``dump_tree_as_events`` entry into ``(worker_id, event)``.

    The envelope's own faults (a missing or repeated field, a bad worker id, an event that is no
    object) name the RouterEvent and the field; the event's faults name the KvCacheEvent and the
    path inside it.
    """
    obj = _mapping(load_json(payload, "RouterEvent"), "<root>", ROUTER_FIELDS, "RouterEvent")
    worker_id = check_wire_uint(_field(obj, "worker_id", "<root>", "RouterEvent"), "worker_id", what="RouterEvent")
    event = _field(obj, "event", "<root>", "RouterEvent")
    if not isinstance(event, (Mapping, str, bytes, bytearray)):
        raise _fail("event", f"expected an object, got {_kind(event)}", "RouterEvent")
    return worker_id, decode_event(event)

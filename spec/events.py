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

Source: crtc.md §1 "Events"; Dynamo ``protocols.rs``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .errors import InvalidArgument, InvalidArgumentType, InvalidBlockSequence, MalformedEvent
from .primitives import U32_MAX, U64_MAX, Block, Rank, is_int, is_uint


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


def _fail(path: str, message: str) -> MalformedEvent:
    return MalformedEvent(f"Failed to deserialize KvCacheEvent: {path}: {message}")


def check_wire_uint(value: Any, path: str, bound: int = U64_MAX) -> int:
    """Return ``value`` if it is a wire unsigned integer in ``[0, bound]`` (``is_uint``); raise ``MalformedEvent`` otherwise."""
    if not is_uint(value, bound):
        if not is_int(value):  # a JSON true is not an integer
            raise _fail(path, f"expected an unsigned integer, got {type(value).__name__} {value!r}")
        raise _fail(path, f"integer {value} out of range [0, {bound}]")
    return value


def _field(obj: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise _fail(path, f"missing field `{key}`")
    return obj[key]


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(path, f"expected an object, got {type(value).__name__}")
    return value


def _decode_stored(body: Any) -> Stored:
    body = _mapping(body, "data.stored")
    parent = body.get("parent_hash")
    if parent is not None:
        parent = check_wire_uint(parent, "data.stored.parent_hash")
    start = body.get("start_position")
    if start is not None:
        check_wire_uint(start, "data.stored.start_position", U32_MAX)
    raw_blocks = _field(body, "blocks", "data.stored")
    if not isinstance(raw_blocks, list):
        raise _fail("data.stored.blocks", "expected a list")
    blocks = []
    for i, raw in enumerate(raw_blocks):
        raw = _mapping(raw, f"data.stored.blocks[{i}]")
        ext = check_wire_uint(_field(raw, "block_hash", f"data.stored.blocks[{i}]"), f"data.stored.blocks[{i}].block_hash")
        local = check_wire_uint(_field(raw, "tokens_hash", f"data.stored.blocks[{i}]"), f"data.stored.blocks[{i}].tokens_hash")
        blocks.append(Block(local, ext))
    return Stored(parent, tuple(blocks))


def _decode_removed(body: Any) -> Removed:
    body = _mapping(body, "data.removed")
    hashes = _field(body, "block_hashes", "data.removed")
    if not isinstance(hashes, list):
        raise _fail("data.removed.block_hashes", "expected a list")
    return Removed(tuple(check_wire_uint(h, f"data.removed.block_hashes[{i}]") for i, h in enumerate(hashes)))


def decode_event_data(data: Any) -> EventData:
    """Decode the ``data`` member of a ``KvCacheEvent``."""
    if data == "cleared":
        return Cleared()
    data = _mapping(data, "data")
    if len(data) != 1:
        raise _fail("data", f"expected exactly one of stored/removed/cleared, got {sorted(data)}")
    (tag, body), = data.items()
    if tag == "stored":
        return _decode_stored(body)
    if tag == "removed":
        return _decode_removed(body)
    if tag == "cleared":
        return Cleared()
    raise _fail("data", f"unknown variant `{tag}`, expected stored, removed or cleared")


def load_json(payload: bytes | bytearray | str | Mapping[str, Any], what: str = "KvCacheEvent") -> Mapping[str, Any]:
    """Parse ``payload`` (bytes, str or an already-decoded mapping) into a mapping."""
    if isinstance(payload, Mapping):
        return payload
    if isinstance(payload, (bytes, bytearray)):
        try:
            payload = bytes(payload).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedEvent(f"Failed to deserialize {what}: not UTF-8 ({exc})") from None
    if not isinstance(payload, str):
        raise MalformedEvent(
            f"Failed to deserialize {what}: expected bytes, str or a mapping, got {type(payload).__name__}"
        )
    try:
        obj = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise MalformedEvent(f"Failed to deserialize {what}: {exc}") from None
    return _mapping(obj, "<root>")


def decode_event(payload: bytes | bytearray | str | Mapping[str, Any]) -> KvCacheEvent:
    """Decode Dynamo's KvCacheEvent JSON into a ``KvCacheEvent``; ``MalformedEvent`` if it does not decode."""
    obj = load_json(payload)
    event_id = check_wire_uint(_field(obj, "event_id", "<root>"), "event_id")
    dp_rank = obj.get("dp_rank")
    dp_rank = 0 if dp_rank is None else check_wire_uint(dp_rank, "dp_rank", U32_MAX)
    return KvCacheEvent(event_id, decode_event_data(_field(obj, "data", "<root>")), dp_rank)


def check_worker_id(worker_id: Any) -> int:
    """Return ``worker_id`` if it is a u64; raise ``InvalidArgumentType`` / ``InvalidArgument`` otherwise."""
    if not is_uint(worker_id, U64_MAX):
        if not is_int(worker_id):
            raise InvalidArgumentType(f"worker_id must be an int, got {type(worker_id).__name__}")
        raise InvalidArgument(f"worker_id {worker_id} is not a u64")
    return worker_id


def check_rank(worker_id: Any, dp_rank: Any) -> Rank:
    """Return the rank ``(worker_id, dp_rank)`` a ``remove_worker_dp_rank`` call names.

    The worker id is checked first (``check_worker_id``), then the dp rank as a u32
    (``MalformedEvent``, as the binding reports it).
    """
    worker_id = check_worker_id(worker_id)
    return Rank(worker_id, check_wire_uint(dp_rank, "dp_rank", U32_MAX))


Payload = bytes | bytearray | str | Mapping[str, Any]


def parse_event(worker_id: Any, payload: Payload | KvCacheEvent) -> tuple[Rank, KvCacheEvent]:
    """Return the rank an event applies to and the decoded event: every tree's front door.

    The worker id is checked before the payload is decoded (so a bad id wins over a bad
    payload); a payload that is already a ``KvCacheEvent`` is taken as is; the event
    applies to ``(worker_id, event.dp_rank)``. Nothing here touches a tree, so a rejected
    call changes nothing.

    Source: crtc.md §1 "Events" (``apply_event(worker_id, bytes)``, ``dp_rank`` default 0).
    """
    worker_id = check_worker_id(worker_id)
    event = payload if isinstance(payload, KvCacheEvent) else decode_event(payload)
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


def is_self_parented(stored: Stored) -> bool:
    """Check if a store names its own parent among its blocks.

    Such a store is rejected with ``InvalidBlockSequence`` before anything changes (the plain
    RadixTree's rule; crtc.md §12 item 1, experiment E14).
    """
    return stored.parent_hash is not None and any(b.ext == stored.parent_hash for b in stored.blocks)


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


def decode_router_event(payload: bytes | str | Mapping[str, Any]) -> tuple[int, KvCacheEvent]:
    """Decode one ``dump_tree_as_events`` entry into ``(worker_id, event)``."""
    obj = load_json(payload, "RouterEvent")
    worker_id = check_wire_uint(_field(obj, "worker_id", "<root>"), "worker_id")
    return worker_id, decode_event(_field(obj, "event", "<root>"))

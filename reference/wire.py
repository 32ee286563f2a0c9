"""The trees' fast reading of an event: msgspec for a plain payload, the spec's strict reading for the rest.

``spec.events.decode_event`` is the law of what a payload means, written for a reader (Python's
``json`` with hooks that keep Dynamo's serde rules). Almost every payload a router sees is a plain
event as an engine writes it; for those, ``fast_decode`` reads the payload with msgspec, a C
decoder, against a closed schema, and returns the event the strict reading returns, or None to
leave the payload to it. It adds no rule: each condition only narrows the payloads it takes to
those on which msgspec and the strict reading agree. The law that holds it there, ``fast_decode(p)
is None or fast_decode(p) == spec.events.decode_event(p)`` for every ``p``, is tested in
``stateful_tests/tree/tests/test_reference_wire.py`` on plain, hostile and fuzzed payloads.

The trees' front door is ``parse_event_fast``: ``spec.events.parse_event`` with this reading.

Source: ``spec/events.py`` (the strict reading it agrees with); msgspec's typed JSON decoding
(https://jcristharif.com/msgspec/).
"""

from __future__ import annotations

from functools import partial
from operator import attrgetter
from typing import Annotated, Any, Literal

import msgspec

from ..spec.events import Cleared, EventData, KvCacheEvent, Payload, Removed, Stored, decode_event, parse_event
from ..spec.primitives import U32_MAX, U64_MAX, Block, Rank

_MAKE_BLOCK = partial(tuple.__new__, Block)
_BLOCK_PAIR = attrgetter("tokens_hash", "block_hash")
_BLOCK_MM = attrgetter("mm_extra_info")
_DIGIT_RUNS = bytes(57 if chr(c).isdigit() and c < 128 else 32 for c in range(256))  # digits -> "9", the rest -> " "
_TWENTY_DIGITS = b"9" * 20


def _may_exceed_u64(payload: bytes | bytearray) -> bool:
    """Check if ``payload`` holds a run of 20 digits or more: only such a literal can exceed ``U64_MAX``."""
    return _TWENTY_DIGITS in payload.translate(_DIGIT_RUNS)


class _WireBlock(msgspec.Struct, forbid_unknown_fields=True):
    block_hash: Annotated[int, msgspec.Meta(ge=0)]
    tokens_hash: Annotated[int, msgspec.Meta(ge=0)]
    mm_extra_info: msgspec.UnsetType | None = msgspec.UNSET  # a non-null one takes the strict path


class _WireStored(msgspec.Struct, forbid_unknown_fields=True):
    blocks: list[_WireBlock]
    parent_hash: Annotated[int, msgspec.Meta(ge=0)] | msgspec.UnsetType | None = msgspec.UNSET
    start_position: Annotated[int, msgspec.Meta(ge=0, le=U32_MAX)] | msgspec.UnsetType | None = msgspec.UNSET


class _WireRemoved(msgspec.Struct, forbid_unknown_fields=True):
    block_hashes: list[Annotated[int, msgspec.Meta(ge=0)]]


class _WireData(msgspec.Struct, forbid_unknown_fields=True):
    stored: _WireStored | msgspec.UnsetType = msgspec.UNSET
    removed: _WireRemoved | msgspec.UnsetType = msgspec.UNSET
    cleared: msgspec.UnsetType | None = msgspec.UNSET


class _WireEvent(msgspec.Struct, forbid_unknown_fields=True):
    event_id: Annotated[int, msgspec.Meta(ge=0)]
    data: Literal["cleared"] | _WireData
    dp_rank: Annotated[int, msgspec.Meta(ge=0, le=U32_MAX)] | msgspec.UnsetType = msgspec.UNSET


_WIRE = msgspec.json.Decoder(_WireEvent)


def _given(value: object) -> int:
    return value is not msgspec.UNSET


def fast_decode(payload: bytes | bytearray | str) -> KvCacheEvent | None:
    """Return ``decode_event(payload)`` for a plain event, or None to leave the payload to the strict decoder.

    The law: ``fast_decode(p)`` is None or equal to the strict ``decode_event(p)``, for every
    ``p`` (stateful_tests/tree/tests/test_spec_events.py checks it on the fuzzer's grammar and
    on every hostile case). It holds because a payload is taken only if:

    - it is ASCII with no backslash and no minus sign: no escape can spell a key, no invalid
      UTF-8 or lone surrogate, no negative number, no ``-0``;
    - msgspec reads it against the closed schema with unknown fields forbidden: no ignored
      value (so no depth, NaN or long literal hidden in one), integers only where integers go,
      exactly the variants and shapes the strict decoder takes, a non-null ``mm_extra_info``
      excepted (left to the strict path);
    - it holds as many strings as the decoded event has keys (``"cleared"`` counted): every
      key seen at least once and no more strings, so no known field is given twice;
    - no hash exceeds ``U64_MAX`` (msgspec bounds only what fits an int64; the hashes are
      compared only when a run of 20 digits is present).
    """
    if isinstance(payload, str):
        if not payload.isascii():
            return None
        payload = payload.encode("ascii")
    elif not payload.isascii():
        return None
    if b"\\" in payload or b"-" in payload:
        return None
    try:
        wire = _WIRE.decode(payload)
    except msgspec.MsgspecError:
        return None
    keys = 2 + _given(wire.dp_rank)
    raw = wire.data
    data: EventData
    if isinstance(raw, str):
        keys += 1  # the string "cleared"
        data = Cleared()
    elif _given(raw.stored) + _given(raw.removed) + _given(raw.cleared) != 1:
        return None
    elif isinstance(raw.stored, _WireStored):
        stored = raw.stored
        wire_blocks = stored.blocks
        keys += 2 + _given(stored.parent_hash) + _given(stored.start_position) + 2 * len(wire_blocks)
        if b"mm_extra_info" in payload:
            keys += len(wire_blocks) - list(map(_BLOCK_MM, wire_blocks)).count(msgspec.UNSET)
        blocks = tuple(map(_MAKE_BLOCK, map(_BLOCK_PAIR, wire_blocks)))
        parent = None if stored.parent_hash is msgspec.UNSET else stored.parent_hash
        if _may_exceed_u64(payload) and (max(map(max, blocks), default=0) > U64_MAX or (parent or 0) > U64_MAX):
            return None
        data = Stored(parent, blocks)
    elif isinstance(raw.removed, _WireRemoved):
        hashes = tuple(raw.removed.block_hashes)
        keys += 2
        if _may_exceed_u64(payload) and max(hashes, default=0) > U64_MAX:
            return None
        data = Removed(hashes)
    else:
        keys += 1
        data = Cleared()
    if payload.count(b'"') != 2 * keys or (wire.event_id > U64_MAX):
        return None
    return KvCacheEvent(wire.event_id, data, 0 if wire.dp_rank is msgspec.UNSET else wire.dp_rank)


def decode_event_fast(payload: Payload) -> KvCacheEvent:
    """``spec.events.decode_event(payload)``, by the fast path where it answers (``fast_decode``)."""
    if isinstance(payload, (bytes, bytearray, str)):
        event = fast_decode(payload)
        if event is not None:
            return event
    return decode_event(payload)


def parse_event_fast(worker_id: Any, payload: Payload | KvCacheEvent) -> tuple[Rank, KvCacheEvent]:
    """The trees' front door: ``spec.events.parse_event`` reading the payload with ``decode_event_fast``."""
    return parse_event(worker_id, payload, decode_event_fast)

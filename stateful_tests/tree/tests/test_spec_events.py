"""Named tests of spec.events: Dynamo's wire format, both ways, and its rejections."""

import json

import pytest

from kvproof.spec.errors import MalformedEvent
from kvproof.spec.events import (
    Cleared,
    KvCacheEvent,
    Removed,
    Stored,
    decode_event,
    decode_router_event,
    encode_event,
    encode_router_event,
)
from kvproof.spec.primitives import Block


def test_decode_stored_removed_cleared():
    stored = decode_event({"event_id": 7, "dp_rank": 1, "data": {"stored": {"parent_hash": 100, "blocks": [{"block_hash": 200, "tokens_hash": 2}]}}})
    assert stored == KvCacheEvent(7, Stored(100, (Block(2, 200),)), 1)
    assert decode_event(b'{"event_id": 8, "data": {"removed": {"block_hashes": [200, 100]}}}').data == Removed((200, 100))
    assert decode_event('{"event_id": 9, "data": "cleared"}').data == Cleared()
    assert decode_event('{"event_id": 9, "data": {"cleared": null}}').data == Cleared()


def test_defaults_observed_on_the_binding():
    """dp_rank defaults to 0, parent_hash may be absent, unknown fields are ignored (docs/dynamo-findings.md)."""
    event = decode_event({"event_id": 1, "x": 1, "data": {"stored": {"blocks": [{"block_hash": 5, "tokens_hash": 1, "mm_extra_info": None}]}}})
    assert event == KvCacheEvent(1, Stored(None, (Block(1, 5),)), 0)


@pytest.mark.parametrize(
    "payload",
    [
        b"garbage",
        b"\xff",
        "[]",
        {"data": "cleared"},
        {"event_id": -1, "data": "cleared"},
        {"event_id": True, "data": "cleared"},
        {"event_id": 1, "data": {"stored": {"blocks": [{"block_hash": 1.5, "tokens_hash": 1}]}}},
        {"event_id": 1, "data": {"stored": {"blocks": [{"block_hash": 2**64, "tokens_hash": 1}]}}},
        {"event_id": 1, "dp_rank": 2**32, "data": "cleared"},
        {"event_id": 1, "data": {"evicted": {}}},
        {"event_id": 1, "data": {"stored": {}, "removed": {}}},
        {"event_id": 1, "data": {"removed": {"block_hashes": "12"}}},
    ],
)
def test_invalid_payloads_raise_malformed_event(payload):
    with pytest.raises(MalformedEvent) as info:
        decode_event(payload)
    assert "Failed to deserialize" in str(info.value)
    assert isinstance(info.value, ValueError)  # the binding raises ValueError for these


def test_encode_round_trips_through_decode():
    event = KvCacheEvent(3, Stored(None, (Block(1, 100), Block(2, 200))), 1)
    assert decode_event(encode_event(event)) == event
    assert decode_router_event(encode_router_event(4, event)) == (4, event)


def test_router_event_matches_the_bindings_dump_layout():
    line = encode_router_event(1, KvCacheEvent(0, Stored(None, (Block(1, 100),)), 0))
    assert json.loads(line) == {
        "worker_id": 1, "storage_tier": "device", "residency_domain": "worker",
        "event": {"event_id": 0, "data": {"stored": {"parent_hash": None, "start_position": None,
                  "blocks": [{"block_hash": 100, "tokens_hash": 1, "mm_extra_info": None}]}}, "dp_rank": 0},
    }

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
    decode_event_strictly,
    decode_router_event,
    encode_event,
    encode_router_event,
    fast_decode,
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


# ------------------------------------------------------------------ the fast path agrees with the strict reading


def strict_outcome(decoder, payload):
    """What ``decoder`` makes of ``payload``: the event, or the error class it raises."""
    try:
        return decoder(payload)
    except MalformedEvent:
        return MalformedEvent


def fast_agrees(fast, payload):
    """The fast-path law: ``fast`` declines (None) or answers exactly what the strict reading answers."""
    answer = fast(payload)
    return answer is None or answer == strict_outcome(decode_event_strictly, payload)


def mutated_payloads():
    from hypothesis import strategies as st

    from kvproof.stateful_tests.fuzz.grammar import event_text
    from kvproof.stateful_tests.fuzz.mutate import apply_mutations, mutations

    texts = event_text().map(str.encode)
    return st.one_of(texts, st.builds(apply_mutations, texts, mutations))


PLAIN = [
    KvCacheEvent(7, Stored(None, (Block(1, 100), Block(2, 200))), 0),
    KvCacheEvent(8, Stored(100, (Block(3, 2**64 - 1),)), 3),
    KvCacheEvent(9, Removed((200, 2**64 - 1, 5)), 0),
    KvCacheEvent(10, Removed(()), 0),
    KvCacheEvent(11, Cleared(), 2**32 - 1),
    KvCacheEvent(12, Stored(None, ()), 0),
]


@pytest.mark.parametrize("event", PLAIN, ids=repr)
def test_fast_path_answers_every_plain_event_as_the_strict_reading_does(event):
    payload = encode_event(event)
    assert fast_decode(payload) == decode_event_strictly(payload) == event
    assert fast_decode(payload.decode()) == event
    assert fast_decode(bytearray(payload)) == event


@pytest.mark.parametrize(
    "payload",
    [
        b'{"event_id":1,"event_id":2,"data":"cleared"}',  # a known field twice: the string count
        b'{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":1,"tokens_hash":1,"block_hash":2}]}}}',
        b'{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":1,"tokens_hash":1,"mm_extra_info":null,"mm_extra_info":null}]}}}',
        b'{"event_id":-0,"data":"cleared"}',  # a minus sign
        b'{"event_id":1,"data":{"removed":{"block_hashes":[18446744073709551616]}}}',  # past U64_MAX
        b'{"event_id":1,"data":{"stored":{"parent_hash":18446744073709551616,"blocks":[]}}}',
        b'{"event_id":18446744073709551616,"data":"cleared"}',
        b'{"event_id":1,"data":{"stored":{"blocks":[{"block\\u005fhash":1,"tokens_hash":1,"block_hash":2}]}}}',  # an escape
        b'{"event_id":1,"data":"cleared","x":1}',  # an unknown field: ignored values are the strict path's
        '{"event_id":1,"data":"cleared","\u00e9":1}',  # not ASCII
        b'{"event_id":1,"data":{"cleared":null,"removed":{"block_hashes":[]}}}',  # two variants
        b'{"event_id":1,"data":{}}',
        b'{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":1,"tokens_hash":1,"mm_extra_info":{"mm_objects":[]}}]}}}',
    ],
)
def test_fast_path_leaves_to_the_strict_reading_what_it_cannot_vouch_for(payload):
    assert fast_decode(payload) is None
    assert fast_agrees(fast_decode, payload)


def test_fast_path_law_on_the_fuzzers_grammar():
    """fast_decode(p) is None or equals the strict reading, on hostile and mutated event text; it must answer some."""
    from hypothesis import HealthCheck, given, settings

    answered = []

    @settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(mutated_payloads())
    def law(payload):
        assert fast_agrees(fast_decode, payload), payload
        answered.append(fast_decode(payload) is not None)

    law()
    assert any(answered), "the fast path declined every payload: the law would hold vacuously"


def test_fast_path_law_catches_a_fast_path_that_trusts_a_plain_json_reading():
    """Negative control: reading with plain ``json.loads`` (last duplicate wins, NaN taken) breaks the law on the grammar."""
    from hypothesis import HealthCheck, find, settings

    def naive(payload):
        try:
            return decode_event_strictly(json.loads(payload))
        except (ValueError, MalformedEvent):
            return None

    found = find(mutated_payloads(), lambda p: not fast_agrees(naive, p),
                 settings=settings(max_examples=2000, database=None, derandomize=True, suppress_health_check=list(HealthCheck)))
    assert not fast_agrees(naive, found)


def test_fast_path_law_holds_on_every_hostile_case():
    from kvproof.stateful_tests.fuzz.tests.test_hostile_cases import CASES

    payloads = [c.args[1] for _, c, _, _ in CASES if c.op == "apply_event" and isinstance(c.args[1], (bytes, bytearray, str))]
    assert len(payloads) > 20
    for payload in payloads:
        assert fast_agrees(fast_decode, payload), payload

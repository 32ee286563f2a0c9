"""reference/wire.py: the trees' fast reading of an event agrees with the spec's strict reading wherever it answers.

The law (``fast_decode``'s): ``fast_decode(p)`` is None or equal to ``spec.events.decode_event(p)``, for every
payload ``p``; so the trees' front door (``decode_event_fast``, ``parse_event_fast``) gives every answer and every
error message the spec's reading gives. Checked on every plain event, on payloads it must decline, on the fuzzer's
grammar (hostile and mutated text), on every hostile case, and on the spec's own tables of refusals and boundary
acceptances; the negative control is a fast path that trusts a plain ``json`` reading.
"""

import json

import pytest

from kvproof.reference.wire import decode_event_fast, fast_decode, parse_event_fast
from kvproof.spec.errors import MalformedEvent
from kvproof.spec.events import Cleared, KvCacheEvent, Removed, Stored, decode_event, encode_event, parse_event
from kvproof.spec.primitives import Block
from kvproof.stateful_tests.tree.tests.test_spec_events import (
    BOUNDARY_ACCEPTANCES,
    DOCUMENT_REFUSALS,
    WIRE_REFUSALS,
    plain_id,
    wire_forms,
)

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
    return answer is None or answer == strict_outcome(decode_event, payload)


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
    KvCacheEvent(2**64 - 1, Removed(()), 0),  # 20 digits: the hashes are bounded, and there are none
    KvCacheEvent(2**64 - 1, Stored(None, ()), 0),
]


@pytest.mark.parametrize("event", PLAIN, ids=plain_id)
def test_fast_path_answers_every_plain_event_as_the_strict_reading_does(event):
    payload = encode_event(event)
    assert fast_decode(payload) == decode_event(payload) == event
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
        # two fields given twice where a block leaves mm_extra_info out: each block's keys are counted as given
        b'{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":1,"tokens_hash":1,"tokens_hash":1,"block_hash":1,'
        b'"mm_extra_info":null},{"block_hash":2,"tokens_hash":2}]}}}',
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
            return decode_event(json.loads(payload))
        except (ValueError, MalformedEvent):
            return None

    found = find(
        mutated_payloads(),
        lambda p: not fast_agrees(naive, p),
        settings=settings(max_examples=2000, database=None, derandomize=True, suppress_health_check=list(HealthCheck)),
    )
    assert not fast_agrees(naive, found)


def test_fast_path_law_holds_on_every_hostile_case():
    from kvproof.stateful_tests.fuzz.tests.test_hostile_cases import CASES

    payloads = [c.args[1] for _, c, _, _ in CASES if c.op == "apply_event" and isinstance(c.args[1], (bytes, bytearray, str))]
    assert len(payloads) > 20
    for payload in payloads:
        assert fast_agrees(fast_decode, payload), payload


def same_answer(payload):
    """The fast front door and the strict reading: the same event, or the same refusal word for word."""

    def outcome(decode):
        try:
            return decode(payload)
        except MalformedEvent as exc:
            return ("MalformedEvent", str(exc))

    return outcome(decode_event_fast) == outcome(decode_event)


@pytest.mark.parametrize(
    "payload",
    [p for p, _, _ in WIRE_REFUSALS] + [p for p, _, _ in DOCUMENT_REFUSALS] + [p for p, _ in BOUNDARY_ACCEPTANCES],
    ids=plain_id,
)
def test_the_front_door_answers_every_table_of_the_spec_as_the_strict_reading(payload):
    for form in wire_forms(payload):
        assert same_answer(form), form


def test_the_trees_front_door_is_the_spec_front_door_with_the_fast_reading():
    payload = encode_event(KvCacheEvent(3, Stored(None, (Block(1, 10),)), 2))
    assert parse_event_fast(7, payload) == parse_event(7, payload)
    with pytest.raises(MalformedEvent) as fast:
        parse_event_fast(7, b"{}")
    with pytest.raises(MalformedEvent) as strict:
        parse_event(7, b"{}")
    assert str(fast.value) == str(strict.value)

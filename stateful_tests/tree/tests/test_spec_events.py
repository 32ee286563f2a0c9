# mypy: disable-error-code="arg-type"
# (the refusal tables hand the decoder ill-typed values on purpose)
"""Named tests of spec.events: Dynamo's wire format, both ways, and its rejections.

The laws (spec/events.py's docstrings; docs/hostile-input.md, what Dynamo 1.6.1's serde decoder accepts and
refuses; crtc.md §1 "Events"):

- the three variants decode, ``dp_rank`` defaults to 0, ``parent_hash`` may be absent, unknown fields are
  ignored;
- each malformed payload, as JSON text and as the equivalent decoded mapping, is a ``MalformedEvent`` (a
  ``ValueError``) whose message is serde's prefix, the path of the bad field and why: a missing or
  duplicated known field, a wrong type, an integer out of its u64 / u32 range, ``-0``, a literal too long
  for any field, NaN and the infinities (not JSON) anywhere, a lone-surrogate key, nesting past
  ``MAX_JSON_DEPTH`` (and a parser out of stack), and every way ``mm_extra_info`` can break Dynamo's
  ``BlockExtraInfo`` shape;
- what serde takes is taken, each boundary value (0 and ``2**64 - 1`` for u64 fields, ``2**32 - 1`` for
  ``dp_rank`` and ``start_position``, an empty ``mm_objects`` or ``offsets`` list) decoded to its exact value;
- a ``RouterEvent`` (a dump line) is refused the same way, its own envelope (``worker_id``, ``event``) named;
- a ``KvCacheEvent`` object passed as is (``check_event``, through ``parse_event``) is checked field by field
  as the wire is, each refusal naming the field, and comes back holding plain ints; ``check_rank`` checks
  the worker id first, then the dp rank as a u32;
- the encoders write Dynamo's layout byte for byte (compact separators, optional fields as null), and
  decoding what they write gives back the event;
- a store that names its own parent is an ``InvalidBlockSequence`` (E14); the event set is closed.
"""

import json
import re

import numpy
import pytest

from kvproof.spec import events
from kvproof.spec.errors import InvalidArgument, InvalidArgumentType, InvalidBlockSequence, MalformedEvent
from kvproof.spec.events import (
    MAX_JSON_DEPTH,
    Cleared,
    KvCacheEvent,
    Removed,
    Stored,
    check_event,
    check_not_self_parented,
    check_rank,
    decode_event,
    decode_router_event,
    encode_event,
    encode_router_event,
    event_data_json,
    is_self_parented,
    parse_event,
)
from kvproof.spec.primitives import Block, Rank


def plain_id(value, limit=120):
    """A test id in printable ASCII without backslashes (any other character written ``U+XXXX``), cut at
    ``limit``. pytest escapes other characters in ids and, collecting a second time in one process (mutmut's
    clean run after its stats pass), escapes its own escapes, so the first collection's ids are not found."""
    text = value if isinstance(value, str) else repr(value)
    return "".join(c if " " <= c <= "~" and c != "\\" else f"U+{ord(c):04X}" for c in text)[:limit]


def test_decode_stored_removed_cleared():
    stored = decode_event(
        {"event_id": 7, "dp_rank": 1, "data": {"stored": {"parent_hash": 100, "blocks": [{"block_hash": 200, "tokens_hash": 2}]}}}
    )
    assert stored == KvCacheEvent(7, Stored(100, (Block(2, 200),)), 1)
    assert decode_event(b'{"event_id": 8, "data": {"removed": {"block_hashes": [200, 100]}}}').data == Removed((200, 100))
    assert decode_event('{"event_id": 9, "data": "cleared"}').data == Cleared()
    assert decode_event('{"event_id": 9, "data": {"cleared": null}}').data == Cleared()


def test_defaults_observed_on_the_binding():
    """dp_rank defaults to 0, parent_hash may be absent, unknown fields are ignored (docs/dynamo-findings.md)."""
    event = decode_event(
        {"event_id": 1, "x": 1, "data": {"stored": {"blocks": [{"block_hash": 5, "tokens_hash": 1, "mm_extra_info": None}]}}}
    )
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
        "worker_id": 1,
        "storage_tier": "device",
        "residency_domain": "worker",
        "event": {
            "event_id": 0,
            "data": {
                "stored": {
                    "parent_hash": None,
                    "start_position": None,
                    "blocks": [{"block_hash": 100, "tokens_hash": 1, "mm_extra_info": None}],
                }
            },
            "dp_rank": 0,
        },
    }


# ------------------------------------------------------------------ every refusal names the path of its bad field

U64 = 2**64 - 1
U32 = 2**32 - 1
U64_RANGE = f"out of range [0, {U64}]"
U32_RANGE = f"out of range [0, {U32}]"


def exactly(message):
    """A ``pytest.raises`` pattern that matches ``message`` and nothing more."""
    return "^" + re.escape(message) + "$"


def at(path, why, what="KvCacheEvent"):
    """serde's message for a field that does not decode: the type being read, the path of the field, and why."""
    return exactly(f"Failed to deserialize {what}: {path}: {why}")


class Only:
    """A Python value with no JSON text (a huge int, a NaN float): the mapping path alone."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return "Only(...)"


def wire_forms(payload):
    """Each form a payload reaches the decoder in: JSON text as given; a mapping as is, as text and as compact bytes."""
    if isinstance(payload, Only):
        return [payload.value]
    if isinstance(payload, (str, bytes)):
        return [payload]
    return [payload, json.dumps(payload), json.dumps(payload, separators=(",", ":")).encode()]


def event(data="cleared", **root):
    return {"event_id": 1, "data": data, **root}


def stored(**body):
    return event({"stored": {"blocks": [], **body}})


def with_block(index=0, **fields):
    """A store whose block ``index`` (of ``index + 1``) holds ``fields`` over a valid block."""
    good = {"block_hash": 5, "tokens_hash": 1}
    return stored(blocks=[good] * index + [{**good, **fields}])


def with_mm(mm):
    return with_block(mm_extra_info=mm)


def mm_object(**fields):
    return {"mm_hash": 7, "offsets": [[0, 3]], **fields}


def removed(hashes):
    return event({"removed": {"block_hashes": hashes}})


BLOCK = "data.stored.blocks[0]"
MM = f"{BLOCK}.mm_extra_info"
OBJ1 = f"{MM}.mm_objects[1]"

WIRE_REFUSALS = [
    # the envelope (KvCacheEvent { event_id: u64, data, dp_rank: u32 = 0 })
    ({"data": "cleared"}, "<root>", "missing field `event_id`"),
    ({"event_id": 1}, "<root>", "missing field `data`"),
    (event(event_id=-1), "event_id", f"integer -1 {U64_RANGE}"),
    (event(event_id=2**64), "event_id", f"integer 18446744073709551616 {U64_RANGE}"),
    (event(event_id=True), "event_id", "expected an unsigned integer, got bool True"),
    (event(event_id=1.0), "event_id", "expected an unsigned integer, got float 1.0"),
    (event(event_id="1"), "event_id", "expected an unsigned integer, got str '1'"),
    (event(dp_rank=None), "dp_rank", "expected an unsigned integer, got NoneType None"),
    (event(dp_rank=2**32), "dp_rank", f"integer 4294967296 {U32_RANGE}"),
    (event(dp_rank=-1), "dp_rank", f"integer -1 {U32_RANGE}"),
    (Only(event(event_id=10**5000)), "event_id", f"integer <an integer of about 5001 digits> {U64_RANGE}"),
    (Only(event(event_id=float("nan"))), "event_id", "expected an unsigned integer, got float nan"),
    ("[]", "<root>", "expected an object, got list"),
    # data: the string "cleared" or an object with exactly one variant
    (event("Cleared"), "data", "expected the string \"cleared\" or an object, got str 'Cleared'"),
    (event(None), "data", 'expected the string "cleared" or an object, got NoneType None'),
    (event([]), "data", 'expected the string "cleared" or an object, got list []'),
    (event({}), "data", "expected exactly one of stored/removed/cleared, got []"),
    (
        event({"stored": {"blocks": []}, "removed": {"block_hashes": []}}),
        "data",
        "expected exactly one of stored/removed/cleared, got ['removed', 'stored']",
    ),
    (event({"evicted": {}}), "data", "unknown variant `'evicted'`, expected stored, removed or cleared"),
    (event({"cleared": []}), "data.cleared", "a unit variant takes null, got list []"),
    (event({"cleared": 5}), "data.cleared", "a unit variant takes null, got int 5"),
    # stored
    (event({"stored": [[5, 1]]}), "data.stored", "expected an object, got list"),
    (event({"stored": {}}), "data.stored", "missing field `blocks`"),
    (stored(blocks="12"), "data.stored.blocks", "expected a list, got str"),
    (stored(parent_hash=-1), "data.stored.parent_hash", f"integer -1 {U64_RANGE}"),
    (stored(parent_hash=2**64), "data.stored.parent_hash", f"integer 18446744073709551616 {U64_RANGE}"),
    (stored(start_position=2**32), "data.stored.start_position", f"integer 4294967296 {U32_RANGE}"),
    (stored(start_position="0"), "data.stored.start_position", "expected an unsigned integer, got str '0'"),
    (stored(blocks=[[5, 1]]), BLOCK, "expected an object, got list"),  # H3: serde's sequence form refused
    (stored(blocks=[{"tokens_hash": 1}]), BLOCK, "missing field `block_hash`"),
    (stored(blocks=[{"block_hash": 5}]), BLOCK, "missing field `tokens_hash`"),
    (with_block(1, block_hash=2**64), "data.stored.blocks[1].block_hash", f"integer 18446744073709551616 {U64_RANGE}"),
    (with_block(1, tokens_hash=1.5), "data.stored.blocks[1].tokens_hash", "expected an unsigned integer, got float 1.5"),
    # mm_extra_info: null or {"mm_objects": [{"mm_hash": u64, "offsets": [[u64, u64], ...]}, ...]} (BlockExtraInfo)
    (with_mm([]), MM, "expected an object, got list"),
    (with_mm("x"), MM, "expected an object, got str"),
    (with_mm({}), MM, "missing field `mm_objects`"),
    (with_mm({"mm_objects": None}), f"{MM}.mm_objects", "expected a list, got NoneType"),
    (with_mm({"mm_objects": 7}), f"{MM}.mm_objects", "expected a list, got int"),
    (with_mm({"mm_objects": [mm_object(), 7]}), OBJ1, "expected an object, got int"),
    (with_mm({"mm_objects": [mm_object(), {"offsets": []}]}), OBJ1, "missing field `mm_hash`"),
    (with_mm({"mm_objects": [mm_object(), {"mm_hash": 7}]}), OBJ1, "missing field `offsets`"),
    (
        with_mm({"mm_objects": [mm_object(), mm_object(mm_hash=2**64)]}),
        f"{OBJ1}.mm_hash",
        f"integer 18446744073709551616 {U64_RANGE}",
    ),
    (with_mm({"mm_objects": [mm_object(), mm_object(mm_hash=-1)]}), f"{OBJ1}.mm_hash", f"integer -1 {U64_RANGE}"),
    (
        with_mm({"mm_objects": [mm_object(), mm_object(mm_hash="7")]}),
        f"{OBJ1}.mm_hash",
        "expected an unsigned integer, got str '7'",
    ),
    (with_mm({"mm_objects": [mm_object(), mm_object(offsets=None)]}), f"{OBJ1}.offsets", "expected a list, got NoneType"),
    (with_mm({"mm_objects": [mm_object(), mm_object(offsets=[[0, 1], 5])]}), f"{OBJ1}.offsets[1]", "expected a list, got int"),
    (
        with_mm({"mm_objects": [mm_object(), mm_object(offsets=[[0, 1], [0]])]}),
        f"{OBJ1}.offsets[1]",
        "expected a pair, got 1 items",
    ),
    (
        with_mm({"mm_objects": [mm_object(), mm_object(offsets=[[0, 1], [0, 1, 2]])]}),
        f"{OBJ1}.offsets[1]",
        "expected a pair, got 3 items",
    ),
    (
        with_mm({"mm_objects": [mm_object(), mm_object(offsets=[[0, 1], [0, -1]])]}),
        f"{OBJ1}.offsets[1][1]",
        f"integer -1 {U64_RANGE}",
    ),
    (
        with_mm({"mm_objects": [mm_object(), mm_object(offsets=[[2**64, 1]])]}),
        f"{OBJ1}.offsets[0][0]",
        f"integer 18446744073709551616 {U64_RANGE}",
    ),
    (
        with_mm({"mm_objects": [mm_object(), mm_object(offsets=[[0, None]])]}),
        f"{OBJ1}.offsets[0][1]",
        "expected an unsigned integer, got NoneType None",
    ),
    # removed
    (event({"removed": [[80]]}), "data.removed", "expected an object, got list"),  # H3
    (event({"removed": {}}), "data.removed", "missing field `block_hashes`"),
    (removed("12"), "data.removed.block_hashes", "expected a list, got str"),
    (removed([1, -1]), "data.removed.block_hashes[1]", f"integer -1 {U64_RANGE}"),
    (removed([1, 2, None]), "data.removed.block_hashes[2]", "expected an unsigned integer, got NoneType None"),
    # JSON text alone: a known field twice (serde's "duplicate field"; the least one named)
    ('{"event_id":1,"event_id":2,"data":"cleared"}', "<root>", "duplicate field `event_id`"),
    ('{"event_id":1,"dp_rank":0,"data":"cleared","dp_rank":0,"event_id":1}', "<root>", "duplicate field `dp_rank`"),
    ('{"event_id":1,"data":"cleared","data":"cleared"}', "<root>", "duplicate field `data`"),
    (
        '{"event_id":1,"data":{"cleared":null,"cleared":null}}',
        "data",
        "expected exactly one of stored/removed/cleared, got ['cleared']",
    ),
    (
        '{"event_id":1,"data":{"stored":{"parent_hash":1,"parent_hash":1,"blocks":[]}}}',
        "data.stored",
        "duplicate field `parent_hash`",
    ),
    ('{"event_id":1,"data":{"stored":{"blocks":[],"blocks":[]}}}', "data.stored", "duplicate field `blocks`"),
    (
        '{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":5,"tokens_hash":1,"block_hash":5}]}}}',
        BLOCK,
        "duplicate field `block_hash`",
    ),
    (
        '{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":5,"tokens_hash":1,"mm_extra_info":null,"mm_extra_info":null}]}}}',
        BLOCK,
        "duplicate field `mm_extra_info`",
    ),
    (
        '{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":5,"tokens_hash":1,"mm_extra_info":'
        '{"mm_objects":[],"mm_objects":[]}}]}}}',
        MM,
        "duplicate field `mm_objects`",
    ),
    (
        '{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":5,"tokens_hash":1,"mm_extra_info":{"mm_objects":'
        '[{"mm_hash":7,"offsets":[]},{"mm_hash":7,"offsets":[],"mm_hash":7}]}}]}}}',
        OBJ1,
        "duplicate field `mm_hash`",
    ),
    (
        '{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":5,"tokens_hash":1,"mm_extra_info":{"mm_objects":'
        '[{"mm_hash":7,"offsets":[]},{"offsets":[],"mm_hash":7,"offsets":[]}]}}]}}}',
        OBJ1,
        "duplicate field `offsets`",
    ),
    ('{"event_id":1,"data":{"removed":{"block_hashes":[],"block_hashes":[]}}}', "data.removed", "duplicate field `block_hashes`"),
    # JSON text alone: NaN and the infinities are not JSON, ignored fields included
    ('{"event_id":NaN,"data":"cleared"}', "<number>", "NaN is not JSON"),
    ('{"event_id":1,"data":"cleared","lora_id":Infinity}', "<number>", "Infinity is not JSON"),
    (
        '{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":5,"tokens_hash":1,"mm_extra_info":{"mm_objects":'
        '[{"mm_hash":7,"offsets":[[0,-Infinity]]}]}}]}}}',
        "<number>",
        "-Infinity is not JSON",
    ),
    # JSON text alone: -0 (serde: "invalid type: floating point `-0.0`") and literals too long for any field
    ('{"event_id":-0,"data":"cleared"}', "event_id", "expected an unsigned integer, got -0 (a signed zero)"),
    (
        '{"event_id":1,"data":{"removed":{"block_hashes":[1,-0]}}}',
        "data.removed.block_hashes[1]",
        "expected an unsigned integer, got -0 (a signed zero)",
    ),
    ('{"event_id":1,"data":-0}', "data", 'expected the string "cleared" or an object, got WireLiteral -0'),
    ('{"event_id":1,"data":{"cleared":-0}}', "data.cleared", "a unit variant takes null, got WireLiteral -0"),
    ('{"event_id":123456789012345678901,"data":"cleared"}', "event_id", f"integer <an integer literal of 21 digits> {U64_RANGE}"),
    (
        '{"event_id":-123456789012345678901,"data":"cleared"}',
        "event_id",
        f"integer <an integer literal of 21 digits> {U64_RANGE}",
    ),
    (
        '{"event_id":1,"dp_rank":' + "9" * 5000 + ',"data":"cleared"}',
        "dp_rank",
        f"integer <an integer literal of 5000 digits> {U32_RANGE}",
    ),
    (
        '{"event_id":1,"data":1234567890123456789012345}',
        "data",
        'expected the string "cleared" or an object, got WireLiteral <an integer literal of 25 digits>',
    ),
    # JSON text alone: a key holding a lone UTF-16 surrogate
    ('{"event_id":1,"data":"cleared","\\ud800":1}', "<key>", "key '\\ud800' holds a lone UTF-16 surrogate"),
    ('{"event_id":1,"data":"cleared","a\\udfff":1}', "<key>", "key 'a\\udfff' holds a lone UTF-16 surrogate"),
]


@pytest.mark.parametrize(("payload", "path", "why"), WIRE_REFUSALS, ids=[plain_id(f"{p}: {w}", 80) for _, p, w in WIRE_REFUSALS])
def test_each_malformed_payload_is_refused_naming_the_path_of_its_bad_field(payload, path, why):
    """serde's refusal, as JSON text and as the decoded mapping: the prefix, the path of the bad field, and why."""
    for form in wire_forms(payload):
        with pytest.raises(MalformedEvent, match=at(path, why)):
            decode_event(form)


DEEP = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH  # below the root object: MAX_JSON_DEPTH + 1 levels in all
DEEP_PAST_A_SIBLING = "[[]," + DEEP[1:-1] + "]"  # as deep, past a closed sibling: depth counts closings too

DOCUMENT_REFUSALS = [  # (a KvCacheEvent payload, a RouterEvent payload, why)
    (b"\xff", b"\xff", "not UTF-8 ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte)"),  # H2
    ("garbage", "garbage", "Expecting value: line 1 column 1 (char 0)"),
    ("{} x", "{} x", "Extra data: line 1 column 4 (char 3)"),
    (Only(5), Only(5), "expected bytes, str or a mapping, got int"),
    (
        '{"event_id":1,"data":"cleared","x":' + DEEP + "}",
        '{"worker_id":1,"x":' + DEEP + ',"event":{}}',
        f"nested deeper than {MAX_JSON_DEPTH} levels",
    ),  # H1
    (
        '{"event_id":1,"data":"cleared","x":' + DEEP_PAST_A_SIBLING + "}",
        '{"worker_id":1,"x":' + DEEP_PAST_A_SIBLING + ',"event":{}}',
        f"nested deeper than {MAX_JSON_DEPTH} levels",
    ),
]


@pytest.mark.parametrize(("payload", "line", "why"), DOCUMENT_REFUSALS, ids=[plain_id(w, 40) for _, _, w in DOCUMENT_REFUSALS])
def test_a_payload_that_is_no_json_document_is_refused_naming_what_was_being_read(payload, line, why):
    """A document-level refusal has no field to name: the type being read (KvCacheEvent, RouterEvent) and why."""
    for form in wire_forms(payload):
        with pytest.raises(MalformedEvent, match=exactly(f"Failed to deserialize KvCacheEvent: {why}")):
            decode_event(form)
    for form in wire_forms(line):
        with pytest.raises(MalformedEvent, match=exactly(f"Failed to deserialize RouterEvent: {why}")):
            decode_router_event(form)


# ------------------------------------------------------------------ what serde takes is taken, to the exact value

BOUNDARY_ACCEPTANCES = [
    (event(event_id=0), KvCacheEvent(0, Cleared(), 0)),
    (event(event_id=U64, dp_rank=U32), KvCacheEvent(U64, Cleared(), U32)),
    (event({"cleared": None}, dp_rank=0), KvCacheEvent(1, Cleared(), 0)),
    (
        stored(parent_hash=0, start_position=0, blocks=[{"block_hash": 0, "tokens_hash": 0}]),
        KvCacheEvent(1, Stored(0, (Block(0, 0),))),
    ),
    (
        stored(parent_hash=U64, start_position=U32, blocks=[{"block_hash": U64, "tokens_hash": U64}]),
        KvCacheEvent(1, Stored(U64, (Block(U64, U64),))),
    ),
    (stored(parent_hash=None, start_position=None), KvCacheEvent(1, Stored(None, ()))),
    (with_mm(None), KvCacheEvent(1, Stored(None, (Block(1, 5),)))),
    (with_mm({"mm_objects": []}), KvCacheEvent(1, Stored(None, (Block(1, 5),)))),
    (
        with_mm({"mm_objects": [{"mm_hash": 0, "offsets": []}, {"mm_hash": U64, "offsets": [[0, U64], [U64, 0]]}]}),
        KvCacheEvent(1, Stored(None, (Block(1, 5),))),
    ),
    (with_mm({"mm_objects": [mm_object(lora="x")], "extra": [1]}), KvCacheEvent(1, Stored(None, (Block(1, 5),)))),
    (removed([0, U64, 0]), KvCacheEvent(1, Removed((0, U64, 0)))),
    (removed([]), KvCacheEvent(1, Removed(()))),
    (event(lora_id="x", x=[1, {"y": None}]), KvCacheEvent(1, Cleared())),  # wrong types in unknown fields
    # JSON text alone: what serde skips in an ignored field (docs/hostile-input.md)
    ('{"event_id":1,"x":1,"x":[2],"data":"cleared"}', KvCacheEvent(1, Cleared())),  # an unknown field twice
    ('{"event_id":1,"x":-0,"y":' + "9" * 5000 + ',"data":"cleared"}', KvCacheEvent(1, Cleared())),
    ('{"event_id":1,"x":"\\ud800","data":"cleared"}', KvCacheEvent(1, Cleared())),  # a lone surrogate in a value
    ('{"event_id":1,"\u00e9":1,"\\ud7ff":1,"\\ue000":1,"data":"cleared"}', KvCacheEvent(1, Cleared())),  # no surrogate
    ('{"event_id":1,"\\ud83d\\ude00":1,"data":"cleared"}', KvCacheEvent(1, Cleared())),  # a surrogate pair: one character
    ('{"event_id":1,"data":"cleared","x":' + DEEP[1:-1] + "}", KvCacheEvent(1, Cleared())),  # exactly MAX_JSON_DEPTH
    ('{"event_id":1,"data":"cleared","y":[{}],"x":' + DEEP[1:-1] + "}", KvCacheEvent(1, Cleared())),  # and more brackets
    ('{"event_id":1,"data":"cleared","x":"' + "[" * 200 + '"}', KvCacheEvent(1, Cleared())),  # brackets in a string
]


def test_a_parser_that_runs_out_of_stack_is_refused_not_a_recursion_error(monkeypatch):
    """load_json's last line of defence: a RecursionError while parsing (say, a caller already deep in its own stack)
    is a typed refusal naming what was being read."""

    class OutOfStack:
        JSONDecodeError = json.JSONDecodeError

        @staticmethod
        def loads(*args, **kwargs):
            raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(events, "json", OutOfStack)
    with pytest.raises(MalformedEvent, match=exactly("Failed to deserialize KvCacheEvent: nested too deeply")):
        decode_event('{"event_id":1,"data":"cleared"}')
    with pytest.raises(MalformedEvent, match=exactly("Failed to deserialize RouterEvent: nested too deeply")):
        decode_router_event('{"worker_id":1,"event":{"event_id":1,"data":"cleared"}}')


@pytest.mark.parametrize(("payload", "expected"), BOUNDARY_ACCEPTANCES, ids=plain_id)
def test_each_boundary_value_is_accepted_and_decoded_to_its_exact_value(payload, expected):
    for form in wire_forms(payload):
        assert decode_event(form) == expected


# ------------------------------------------------------------------ a RouterEvent (a dump line)

ROUTER = "RouterEvent"  # the envelope's own faults name it; the event's name the KvCacheEvent and the path inside it

ROUTER_REFUSALS = [
    ("[]", ROUTER, "<root>", "expected an object, got list"),
    ({"event": event()}, ROUTER, "<root>", "missing field `worker_id`"),
    ({"worker_id": 1}, ROUTER, "<root>", "missing field `event`"),
    ('{"worker_id":1,"worker_id":2,"event":{"event_id":1,"data":"cleared"}}', ROUTER, "<root>", "duplicate field `worker_id`"),
    ({"worker_id": -1, "event": event()}, ROUTER, "worker_id", f"integer -1 {U64_RANGE}"),
    ({"worker_id": 2**64, "event": event()}, ROUTER, "worker_id", f"integer 18446744073709551616 {U64_RANGE}"),
    (
        '{"worker_id":123456789012345678901,"event":{"event_id":1,"data":"cleared"}}',
        ROUTER,
        "worker_id",
        f"integer <an integer literal of 21 digits> {U64_RANGE}",
    ),  # a literal kept as text names the RouterEvent too
    ({"worker_id": "1", "event": event()}, ROUTER, "worker_id", "expected an unsigned integer, got str '1'"),
    ({"worker_id": {}, "event": event()}, ROUTER, "worker_id", "expected an unsigned integer, got dict {}"),  # read either way
    (
        '{"worker_id":-0,"event":{"event_id":1,"data":"cleared"}}',
        ROUTER,
        "worker_id",
        "expected an unsigned integer, got -0 (a signed zero)",
    ),
    ({"worker_id": 1, "event": [1]}, ROUTER, "event", "expected an object, got list"),
    ({"worker_id": 1, "event": None}, ROUTER, "event", "expected an object, got NoneType"),
    ({"worker_id": 1, "event": {"event_id": 1}}, "KvCacheEvent", "<root>", "missing field `data`"),  # the event's own root
    ({"worker_id": 1, "event": removed([1, -1])}, "KvCacheEvent", "data.removed.block_hashes[1]", f"integer -1 {U64_RANGE}"),
    ('{"worker_id":1,"event":{"event_id":NaN,"data":"cleared"}}', ROUTER, "<number>", "NaN is not JSON"),  # read with the line
]


@pytest.mark.parametrize(
    ("line", "what", "path", "why"), ROUTER_REFUSALS, ids=[plain_id(f"{w}: {p}: {y}", 70) for _, w, p, y in ROUTER_REFUSALS]
)
def test_each_malformed_router_event_is_refused_naming_the_path_of_its_bad_field(line, what, path, why):
    """The envelope's faults name the RouterEvent and its field (``worker_id``, ``event``, a repeated field, as serde
    refuses for a struct); a fault inside the event names the KvCacheEvent and the path from the event's root."""
    for form in wire_forms(line):
        with pytest.raises(MalformedEvent, match=at(path, why, what)):
            decode_router_event(form)


@pytest.mark.parametrize("worker_id", [0, U64])
def test_a_router_event_decodes_to_its_worker_and_event(worker_id):
    line = {"worker_id": worker_id, "storage_tier": "device", "residency_domain": "worker", "event": removed([0, U64])}
    for form in wire_forms(line):
        assert decode_router_event(form) == (worker_id, KvCacheEvent(1, Removed((0, U64))))


# ------------------------------------------------------------------ a KvCacheEvent object, checked as the wire is

API_REFUSALS = [
    (KvCacheEvent(-1, Cleared()), "event_id", f"integer -1 {U64_RANGE}"),
    (KvCacheEvent(2**64, Cleared()), "event_id", f"integer 18446744073709551616 {U64_RANGE}"),
    (KvCacheEvent(10**5000, Cleared()), "event_id", f"integer <an integer of about 5001 digits> {U64_RANGE}"),
    (KvCacheEvent(True, Cleared()), "event_id", "expected an unsigned integer, got bool True"),  # H9
    (KvCacheEvent(1.0, Cleared()), "event_id", "expected an unsigned integer, got float 1.0"),
    (KvCacheEvent("1", Cleared()), "event_id", "expected an unsigned integer, got str '1'"),
    (KvCacheEvent(1, Cleared(), 2**32), "dp_rank", f"integer 4294967296 {U32_RANGE}"),
    (KvCacheEvent(1, Cleared(), numpy.int32(-1)), "dp_rank", f"integer -1 {U32_RANGE}"),
    (KvCacheEvent(1, Cleared(), None), "dp_rank", "expected an unsigned integer, got NoneType None"),
    (KvCacheEvent(1, None), "data", "expected Stored, Removed or Cleared, got NoneType"),
    (KvCacheEvent(1, "cleared"), "data", "expected Stored, Removed or Cleared, got str"),
    (KvCacheEvent(1, Stored(-1, ())), "data.stored.parent_hash", f"integer -1 {U64_RANGE}"),
    (KvCacheEvent(1, Stored("1", ())), "data.stored.parent_hash", "expected an unsigned integer, got str '1'"),
    (KvCacheEvent(1, Stored(None, "ab")), "data.stored.blocks", "expected a tuple, got str"),
    (KvCacheEvent(1, Stored(None, b"ab")), "data.stored.blocks", "expected a tuple, got bytes"),
    (KvCacheEvent(1, Stored(None, None)), "data.stored.blocks", "expected a tuple, got NoneType"),
    (KvCacheEvent(1, Stored(None, {Block(1, 100)})), "data.stored.blocks", "expected a tuple, got set"),
    (KvCacheEvent(1, Stored(None, (Block(1, 100), (2, 200)))), "data.stored.blocks[1]", "expected a Block, got tuple"),
    (
        KvCacheEvent(1, Stored(None, (Block(1, 100), Block("a", 200)))),
        "data.stored.blocks[1].tokens_hash",
        "expected an unsigned integer, got str 'a'",
    ),
    (
        KvCacheEvent(1, Stored(None, (Block(1, 100), Block(2, 2**64)))),
        "data.stored.blocks[1].block_hash",
        f"integer 18446744073709551616 {U64_RANGE}",
    ),
    (KvCacheEvent(1, Removed(None)), "data.removed.block_hashes", "expected a tuple, got NoneType"),
    (KvCacheEvent(1, Removed(bytearray(b"ab"))), "data.removed.block_hashes", "expected a tuple, got bytearray"),
    (KvCacheEvent(1, Removed(memoryview(b"ab"))), "data.removed.block_hashes", "expected a tuple, got memoryview"),
    (KvCacheEvent(1, Removed((1, -1))), "data.removed.block_hashes[1]", f"integer -1 {U64_RANGE}"),
    (KvCacheEvent(1, Removed([1, 2, 1.5])), "data.removed.block_hashes[2]", "expected an unsigned integer, got float 1.5"),
]


@pytest.mark.parametrize(("event", "path", "why"), API_REFUSALS, ids=[plain_id(f"{p}: {w}", 60) for _, p, w in API_REFUSALS])
def test_each_ill_typed_event_object_is_refused_naming_its_field(event, path, why):
    """docs/hostile-input.md: an object is checked as the wire is (``check_event``), at every tree's front door."""
    with pytest.raises(MalformedEvent, match=at(path, why)):
        check_event(event)
    with pytest.raises(MalformedEvent, match=at(path, why)):
        parse_event(3, event)
    with pytest.raises(InvalidArgumentType, match=exactly("worker_id must be an int, got str")):
        parse_event("3", event)  # the worker id is checked before the payload


API_ACCEPTANCES = [
    (
        KvCacheEvent(
            numpy.uint64(U64), Stored(numpy.uint64(0), [Block(numpy.int64(1), numpy.uint64(U64)), Block(0, 0)]), numpy.uint32(U32)
        ),
        KvCacheEvent(U64, Stored(0, (Block(1, U64), Block(0, 0))), U32),
    ),
    (KvCacheEvent(0, Stored(None, ()), 0), KvCacheEvent(0, Stored(None, ()), 0)),
    (KvCacheEvent(numpy.int64(0), Removed([numpy.int64(0), U64])), KvCacheEvent(0, Removed((0, U64)))),
    (KvCacheEvent(7, Removed(())), KvCacheEvent(7, Removed(()))),
    (KvCacheEvent(7, Cleared(), 5), KvCacheEvent(7, Cleared(), 5)),
]


def plain(value):
    """``value`` with every int replaced by its type and every container kept: numpy integers show up as themselves."""
    if isinstance(value, (tuple, list)):
        return (type(value), *map(plain, value))
    if isinstance(value, (Stored, Removed, KvCacheEvent)):
        return (type(value), *(plain(getattr(value, f)) for f in value.__slots__))
    return type(value)


@pytest.mark.parametrize(("event", "expected"), API_ACCEPTANCES, ids=plain_id)
def test_an_event_object_in_the_domain_comes_back_exact_with_plain_ints(event, expected):
    assert check_event(event) == expected
    assert plain(check_event(event)) == plain(expected)  # plain ints, tuples: the event a decoder would give
    assert parse_event(U64, event) == (Rank(U64, expected.dp_rank), expected)


@pytest.mark.parametrize(
    ("worker_id", "dp_rank", "error", "message"),
    [
        (1, 2**32, InvalidArgument, "dp_rank 4294967296 is not a u32"),
        (1, -1, InvalidArgument, "dp_rank -1 is not a u32"),
        (1, 10**5000, InvalidArgument, "dp_rank <an integer of about 5001 digits> is not a u32"),
        (1, "0", InvalidArgumentType, "dp_rank must be an int, got str"),
        (1, True, InvalidArgumentType, "dp_rank must be an int, got bool"),
        (1, None, InvalidArgumentType, "dp_rank must be an int, got NoneType"),
        (-1, "x", InvalidArgument, "worker_id -1 is not a u64"),  # the worker id first
        ("1", 2**32, InvalidArgumentType, "worker_id must be an int, got str"),
    ],
    ids=["u32+1", "-1", "huge", "str", "bool", "None", "bad worker, bad rank", "ill-typed worker, rank out of range"],
)
def test_check_rank_refuses_a_bad_worker_first_then_a_dp_rank_out_of_u32_naming_the_argument(worker_id, dp_rank, error, message):
    with pytest.raises(error, match=exactly(message)):
        check_rank(worker_id, dp_rank)


def test_check_rank_takes_every_u64_worker_and_u32_dp_rank_as_plain_ints():
    assert check_rank(0, 0) == Rank(0, 0)
    assert check_rank(U64, U32) == Rank(U64, U32)
    rank = check_rank(numpy.uint64(3), numpy.uint32(U32))
    assert rank == Rank(3, U32) and type(rank.worker_id) is type(rank.dp_rank) is int


# ------------------------------------------------------------------ the encoders, byte for byte

ENCODED = [
    (
        KvCacheEvent(3, Stored(100, (Block(1, 200), Block(2, 300))), 2),
        '{"event_id":3,"data":{"stored":{"parent_hash":100,"start_position":null,"blocks":['
        '{"block_hash":200,"tokens_hash":1,"mm_extra_info":null},{"block_hash":300,"tokens_hash":2,"mm_extra_info":null}]}},'
        '"dp_rank":2}',
    ),
    (
        KvCacheEvent(0, Stored(None, ()), 0),
        '{"event_id":0,"data":{"stored":{"parent_hash":null,"start_position":null,"blocks":[]}},"dp_rank":0}',
    ),
    (
        KvCacheEvent(U64, Removed((5, U64)), U32),
        '{"event_id":18446744073709551615,"data":{"removed":{"block_hashes":[5,18446744073709551615]}},"dp_rank":4294967295}',
    ),
    (KvCacheEvent(9, Cleared(), 1), '{"event_id":9,"data":"cleared","dp_rank":1}'),
]


@pytest.mark.parametrize(("event", "text"), ENCODED, ids=plain_id)
def test_the_encoders_write_dynamos_layout_exactly_and_decode_back(event, text):
    """Compact JSON, optional fields as null (as Dynamo writes them); a dump line wraps it in a RouterEvent."""
    line = '{"worker_id":7,"storage_tier":"device","residency_domain":"worker","event":' + text + "}"
    assert encode_event(event) == text.encode()
    assert encode_router_event(7, event) == line
    assert decode_event(encode_event(event)) == event
    assert decode_router_event(line) == decode_router_event(line.encode()) == (7, event)


# ------------------------------------------------------------------ the event set is closed; a store may not name its own parent


def test_a_store_naming_its_own_parent_is_an_invalid_block_sequence():
    """E14 (crtc.md §12 item 1): the plain RadixTree refuses it with "Invalid block sequence" before anything changes."""
    looped = Stored(200, (Block(1, 100), Block(2, 200)))
    assert is_self_parented(looped)
    with pytest.raises(InvalidBlockSequence, match=exactly("Failed to apply event: block sequence contains its parent hash 200")):
        check_not_self_parented(looped)
    for fine in (Stored(None, (Block(1, 100),)), Stored(300, (Block(1, 100), Block(3, 200))), Stored(0, ())):
        assert not is_self_parented(fine)
        check_not_self_parented(fine)


@pytest.mark.parametrize("data", [None, "cleared", KvCacheEvent(1, Cleared())], ids=plain_id)
def test_anything_but_the_three_variants_is_not_an_event(data):
    with pytest.raises(TypeError, match=exactly(f"not an event: {data!r}")):
        events.dispatch(data, repr, repr, repr)
    with pytest.raises(TypeError, match=exactly(f"not an event: {data!r}")):
        event_data_json(data)


def test_an_event_that_cannot_be_applied_carries_dynamos_prefix_and_its_own_detail():
    """``KvCacheEventError``: the message is Dynamo's ``Failed to apply event: <detail>``; ``detail`` is the part after
    it, for a caller that reports the reason without the prefix."""
    from kvproof.spec.errors import KvCacheEventError

    error = KvCacheEventError("parent 5 is not held by rank (1, 0)")
    assert str(error) == "Failed to apply event: parent 5 is not held by rank (1, 0)"
    assert error.detail == "parent 5 is not held by rank (1, 0)" and error.dynamo_message == "Failed to apply event"


@pytest.mark.parametrize("data", [Stored(None, (Block(1, 2),)), Removed((2,)), Cleared()], ids=["stored", "removed", "cleared"])
def test_dispatch_hands_each_variant_to_its_own_handler_and_returns_its_answer(data):
    from kvproof.spec.events import dispatch

    answer = dispatch(data, lambda d: ("stored", d), lambda d: ("removed", d), lambda d: ("cleared", d))
    assert answer == (type(data).__name__.lower(), data) and answer[1] is data


def test_an_event_objects_blocks_whose_own_iteration_raises_are_a_malformed_event_naming_the_field():
    """An argument's own exception never escapes untyped (docs/hostile-input.md H13): here a list of blocks."""
    from kvproof.spec.primitives import Block

    class UnreadableBlocks(list):
        def __iter__(self):
            raise RuntimeError("no")

    event = KvCacheEvent(1, Stored(None, UnreadableBlocks([Block(1, 100)])), 0)
    with pytest.raises(
        MalformedEvent,
        match=r"^Failed to deserialize KvCacheEvent: data\.stored\.blocks: data\.stored\.blocks "
        r"could not be read: its own iteration raised RuntimeError\('no'\)$",
    ):
        check_event(event)

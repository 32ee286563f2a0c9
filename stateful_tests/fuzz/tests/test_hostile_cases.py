"""The hostile inputs issue 12 lists, one by one, with the decision docs/hostile-input.md records for each: what every
kvproof tree must do, and what Dynamo 1.6.1 does (``None``: a payload the binding cannot take). Each case also passes
the fuzz campaign's checks (no drift, check() holds, the trees agree, Dynamo alike or a recorded difference)."""

import numpy
import pytest

from kvproof.spec.events import Cleared, KvCacheEvent, Removed, Stored
from kvproof.spec.primitives import Block
from kvproof.stateful_tests.fuzz.campaign import TARGETS, FuzzCase, FuzzFleet, run_case
from kvproof.stateful_tests.fuzz.grammar import LyingInt, Member, RaisingIndex, RaisingList
from kvproof.stateful_tests.harness.targets import dynamo_tree_factory

OK, MALFORMED, TYPE, RANGE = "ok", "MalformedEvent", "InvalidArgumentType", "InvalidArgument"
STORE = '{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":700,"tokens_hash":7}]}}'


def with_field(field):
    return (STORE + "," + field + "}").encode()


def block_with(extra):
    return (
        '{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":700,"tokens_hash":7,' + extra + "}]}}}"
    ).encode()


def event(**kw):
    return FuzzCase("apply_event", (1, KvCacheEvent(**{"event_id": 1, "dp_rank": 0, **kw})))


# (name, case, kvproof's outcome, Dynamo's: "ok", "refused", or None when the binding cannot take it)
CASES = [
    (
        "nesting 100,000 deep in an ignored field (H1)",
        FuzzCase("apply_event", (1, with_field('"x":' + "[" * 100_000 + "]" * 100_000))),
        MALFORMED,
        "ok",
    ),
    (
        "nesting 100,000 deep in data",
        FuzzCase("apply_event", (1, b'{"event_id":1,"data":' + b"[" * 100_000 + b"]" * 100_000 + b"}")),
        MALFORMED,
        "refused",
    ),
    ("nesting 100 deep in an ignored field", FuzzCase("apply_event", (1, with_field('"x":' + "[" * 100 + "]" * 100))), OK, "ok"),
    (
        "a 5,000-digit event_id",
        FuzzCase("apply_event", (1, b'{"event_id":' + b"9" * 5000 + b',"data":"cleared"}')),
        MALFORMED,
        "refused",
    ),
    (
        "a 5,000-digit block_hash",
        FuzzCase("apply_event", (1, STORE.replace("700", "9" * 5000).encode() + b"}")),
        MALFORMED,
        "refused",
    ),
    ("a 5,000-digit ignored integer", FuzzCase("apply_event", (1, with_field('"x":' + "9" * 5000))), OK, "ok"),
    ("event_id given twice", FuzzCase("apply_event", (1, b'{"event_id":1,"event_id":2,"data":"cleared"}')), MALFORMED, "refused"),
    ("block_hash given twice", FuzzCase("apply_event", (1, block_with('"block_hash":800'))), MALFORMED, "refused"),
    ("an unknown field given twice", FuzzCase("apply_event", (1, with_field('"x":1,"x":2'))), OK, "ok"),
    ("NaN in an ignored field", FuzzCase("apply_event", (1, with_field('"x":NaN'))), MALFORMED, "refused"),
    ("Infinity as event_id", FuzzCase("apply_event", (1, b'{"event_id":Infinity,"data":"cleared"}')), MALFORMED, "refused"),
    ("-0 as event_id", FuzzCase("apply_event", (1, b'{"event_id":-0,"data":"cleared"}')), MALFORMED, "refused"),
    ("-0 in an ignored field", FuzzCase("apply_event", (1, with_field('"x":-0'))), OK, "ok"),
    ("1.0 as block_hash", FuzzCase("apply_event", (1, STORE.replace("700", "1.0").encode() + b"}")), MALFORMED, "refused"),
    ("dp_rank null", FuzzCase("apply_event", (1, b'{"event_id":1,"data":"cleared","dp_rank":null}')), MALFORMED, "refused"),
    ("mm_extra_info 5", FuzzCase("apply_event", (1, block_with('"mm_extra_info":5'))), MALFORMED, "refused"),
    ("mm_extra_info without mm_objects", FuzzCase("apply_event", (1, block_with('"mm_extra_info":{}'))), MALFORMED, "refused"),
    (
        "mm_extra_info in full",
        FuzzCase("apply_event", (1, block_with('"mm_extra_info":{"mm_objects":[{"mm_hash":3,"offsets":[[0,4]]}]}'))),
        OK,
        "ok",
    ),
    ("a wrong type in an unknown field", FuzzCase("apply_event", (1, with_field('"lora_id":[1,"x"]'))), OK, "ok"),
    ('{"cleared": 5}', FuzzCase("apply_event", (1, b'{"event_id":1,"data":{"cleared":5}}')), MALFORMED, "refused"),
    ('{"cleared": null}', FuzzCase("apply_event", (1, b'{"event_id":1,"data":{"cleared":null}}')), OK, "ok"),
    ("a lone surrogate in a key", FuzzCase("apply_event", (1, with_field('"\\ud800":1'))), MALFORMED, "refused"),
    ("a lone surrogate in an ignored string", FuzzCase("apply_event", (1, with_field('"x":"\\ud800"'))), OK, "ok"),
    (
        "invalid UTF-8 in an ignored string (H2)",
        FuzzCase("apply_event", (1, (STORE + ',"x":"').encode() + b'\xff"}')),
        MALFORMED,
        "ok",
    ),
    ("the root as serde's list form (H3)", FuzzCase("apply_event", (1, b'[1,"cleared",0]')), MALFORMED, "ok"),
    ("a bytearray payload (H4)", FuzzCase("apply_event", (1, bytearray(STORE.encode() + b"}"))), OK, None),
    ("worker_id True (H9)", FuzzCase("apply_event", (True, STORE.encode() + b"}")), TYPE, "ok"),
    ("worker_id numpy.uint64", FuzzCase("apply_event", (numpy.uint64(3), STORE.encode() + b"}")), OK, "ok"),
    ("worker_id 10**5000", FuzzCase("remove_worker", (10**5000,)), RANGE, "refused"),
    ("worker_id -1", FuzzCase("clear_all_blocks", (-1,)), RANGE, "refused"),
    ("query [True] (H9)", FuzzCase("find_matches", ([1, True], False)), TYPE, "ok"),
    ("query as bytes (H10)", FuzzCase("find_matches", (b"\x01\x02", False)), TYPE, "ok"),
    ("query as a set", FuzzCase("find_matches", ({1, 2}, False)), TYPE, "refused"),
    ("query as a generator", FuzzCase("find_matches", ((x for x in (1, 2)), False)), TYPE, "refused"),
    ("query as a numpy array", FuzzCase("find_matches", (numpy.array([1, 2], dtype=numpy.uint64), False)), OK, "ok"),
    ("query item 10**5000", FuzzCase("find_matches", ([10**5000], False)), RANGE, "refused"),
    ("early_exit 1", FuzzCase("find_matches", ([1, 2], 1)), TYPE, "refused"),
    ("early_exit None", FuzzCase("find_matches", ([1, 2], None)), TYPE, "refused"),
    ("early_exit numpy.bool_", FuzzCase("find_matches", ([1, 2], numpy.bool_(True))), OK, "ok"),
    ("worker_id an int whose __int__ and __index__ lie", FuzzCase("apply_event", (LyingInt(5), STORE.encode() + b"}")), OK, "ok"),
    ("query item an int whose __int__ and __index__ lie", FuzzCase("find_matches", ([LyingInt(1)], False)), OK, "ok"),
    ("worker_id an IntEnum member", FuzzCase("apply_event", (Member.THREE, STORE.encode() + b"}")), OK, "ok"),
    ("worker_id whose own __index__ raises", FuzzCase("remove_worker", (RaisingIndex(),)), TYPE, "refused"),
    ("query item whose own __index__ raises", FuzzCase("find_matches", ([RaisingIndex()], False)), TYPE, "refused"),
    ("query a list whose own __iter__ raises (H13)", FuzzCase("find_matches", (RaisingList([1]), False)), TYPE, None),
    ("remove_worker_dp_rank(1, 2**32)", FuzzCase("remove_worker_dp_rank", (1, 2**32)), RANGE, None),
    ("remove_worker_dp_rank(1, '0')", FuzzCase("remove_worker_dp_rank", (1, "0")), TYPE, None),
    ("an event object with dp_rank 2**32", event(data=Cleared(), dp_rank=2**32), MALFORMED, None),
    ("an event object with blocks as plain tuples", event(data=Stored(None, ((7, 700),))), MALFORMED, None),  # type: ignore[arg-type]
    ("an event object with Block('a', 'b')", event(data=Stored(None, (Block("a", "b"),))), MALFORMED, None),  # type: ignore[arg-type]
    ("an event object with Removed(None)", event(data=Removed(None)), MALFORMED, None),  # type: ignore[arg-type]
    ("an event object with data None", event(data=None), MALFORMED, None),
    ("an event object with a numpy hash", event(data=Stored(None, (Block(numpy.uint64(7), 700),))), OK, None),  # type: ignore[arg-type]
]


@pytest.fixture(scope="module")
def fleet():
    fleet = FuzzFleet(TARGETS)
    yield fleet
    fleet.close()


@pytest.mark.parametrize(("name", "case", "kvproof", "dynamo"), CASES, ids=[c[0] for c in CASES])
def test_each_hostile_input_is_decided_as_recorded(fleet, name, case, kvproof, dynamo):
    seen, problems = run_case(fleet, case)
    assert not problems, problems[0].line()
    for target in ("reference", "impl", "impl-lanes", "impl-pool"):
        # the thread-pool indexer has no remove_worker_dp_rank, as Dynamo's ThreadPoolIndexer
        expected = "n/a" if case.op == "remove_worker_dp_rank" and target == "impl-pool" else kvproof
        assert seen[target].outcome == expected, f"{target}: {seen[target].outcome} {seen[target].message}"
    if dynamo is not None and "dynamo" in seen:
        assert (seen["dynamo"].outcome == "ok") == (dynamo == "ok"), f"Dynamo: {seen['dynamo'].outcome} {seen['dynamo'].message}"


def test_an_int_subclass_is_stored_by_its_value(fleet):
    """The lying int of the cases above lands as worker 5 (its value) in every tree, and Dynamo's: never 7 (``__int__``)."""
    run_case(fleet, FuzzCase("apply_event", (LyingInt(5), STORE.encode() + b"}")))
    for name, tree in fleet.trees.items():
        assert (5, 0) in tree.find_matches([7]).scores, name


def test_dynamo_is_in_the_fleet_where_installed(fleet):
    factory, why = dynamo_tree_factory()
    assert ("dynamo" in fleet.trees) == (factory is not None), why

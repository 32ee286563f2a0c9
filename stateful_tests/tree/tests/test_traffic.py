"""The soak's and the memory bench's traffic (stateful_tests/tree/traffic.py)."""

from __future__ import annotations

from itertools import islice

from kvproof.reference import RadixTree
from kvproof.stateful_tests.tree.streams import EventOp, apply_op
from kvproof.stateful_tests.tree.traffic import NO_CHURN, Fleet, Rates, synthetic_requests


def _ops(seed: int, n: int, rates: Rates | None = None) -> list:
    fleet = Fleet(seed, capacity=40, rates=rates or Rates())
    return [op for r in islice(synthetic_requests(seed), n) for op in fleet.serve(r)]


def test_traffic_is_a_pure_function_of_the_seed() -> None:
    assert _ops(3, 300) == _ops(3, 300) != _ops(4, 300)


def test_engines_never_exceed_their_capacity_and_the_live_content_matches_them() -> None:
    fleet = Fleet(1, capacity=40)
    for r in islice(synthetic_requests(1), 500):
        fleet.serve(r)
        assert all(len(e) <= 40 for e in fleet.engines.values())
    live = fleet.live()
    assert live.pairs == sum(len(e) for e in fleet.engines.values()) and live.blocks == len(set().union(*fleet.engines.values()))


def test_without_churn_every_store_is_accepted_and_the_tree_holds_what_the_engines_hold() -> None:
    fleet, tree = Fleet(2, capacity=50, rates=NO_CHURN), RadixTree()
    for r in islice(synthetic_requests(2), 400):
        for op in fleet.serve(r):
            assert apply_op(tree, op) == "ok", op
    held = {rank: set(engine) for rank, engine in fleet.engines.items() if engine}
    assert {rank: set(lookup) for rank, lookup in tree._lookups.items() if lookup} == held
    tree.check()


def test_churn_emits_every_kind_of_operation() -> None:
    ops = _ops(5, 3000, Rates(remove_rank=0.002))
    kinds = {type(op).__name__ for op in ops} | {type(op.event.data).__name__ for op in ops if isinstance(op, EventOp)}
    assert kinds >= {"Stored", "Removed", "Cleared", "ClearAllBlocksOp", "RemoveWorkerOp", "RemoveWorkerDpRankOp"}


def test_a_mooncake_trace_becomes_requests_with_fresh_ids_per_loop(tmp_path) -> None:
    """Each line's hash_ids are its prompt's blocks (id = local = external hash); a loop of the hour shifts every id
    past the trace's largest and its time by 3600 s; the response's 512-token blocks get ids of their own."""
    from kvproof.stateful_tests.tree.traffic import mooncake_requests

    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        '{"timestamp": 0, "input_length": 1024, "output_length": 1100, "hash_ids": [0, 1]}\n'
        '{"timestamp": 2500, "input_length": 1536, "output_length": 10, "hash_ids": [0, 1, 2]}\n'
    )
    first, second, again, _ = list(mooncake_requests(trace, loops=2))
    assert [b.ext for b in first.prompt] == [0, 1] and all(b.local == b.ext for b in first.prompt)
    assert len(first.decode) == 2 and not second.decode and second.time_s == 2.5
    assert [b.ext for b in again.prompt] == [3, 4] and again.time_s == 3600.0
    assert not {b.ext for b in first.decode} & {b.ext for r in (first, second, again) for b in r.prompt}


def test_the_shipped_slice_is_the_first_thousand_requests_of_the_trace_with_its_notice() -> None:
    from kvproof.stateful_tests.tree.traffic import SHIPPED_TRACE, read_trace

    records = read_trace(SHIPPED_TRACE)
    assert len(records) == 1000 and records[0].hash_ids[0] == 0 and records[0].timestamp_ms == 0
    assert "Apache" in (SHIPPED_TRACE.parent / "NOTICE.md").read_text()


BAD_LINES = [
    ("{not json", "line 2: not JSON"),
    ("[1, 2]", "line 2: expected a JSON object"),
    ('{"timestamp": 5}', "line 2: missing hash_ids"),
    ('{"timestamp": 5, "hash_ids": [1, -2]}', "line 2: hash_ids must be a list of integers >= 0"),
    ('{"timestamp": 5, "hash_ids": [true]}', "line 2: hash_ids must be a list of integers >= 0"),
    ('{"timestamp": "5", "hash_ids": [1]}', "line 2: timestamp must be a finite number"),
    ('{"timestamp": 5, "hash_ids": [1], "output_length": 1.5}', "line 2: output_length must be an integer >= 0"),
    ('{"timestamp": -1, "hash_ids": [1]}', "line 2: timestamp must be a finite number"),
]


def test_a_bad_trace_line_is_a_typed_error_naming_the_file_and_the_line(tmp_path) -> None:
    import pytest

    from kvproof.spec.errors import KvProofError
    from kvproof.stateful_tests.tree.traffic import TraceFormatError, read_trace

    for bad, message in BAD_LINES:
        trace = tmp_path / "bad.jsonl"
        trace.write_text('{"timestamp": 0, "hash_ids": [0]}\n' + bad + "\n")
        with pytest.raises(TraceFormatError, match=message) as caught:
            read_trace(trace)
        assert str(trace) in str(caught.value) and isinstance(caught.value, KvProofError)
    trace.write_text('{"timestamp": 10, "hash_ids": [0]}\n\n{"timestamp": 9, "hash_ids": [0]}\n')
    with pytest.raises(TraceFormatError, match="line 3: timestamp 9 ms is earlier"):
        read_trace(trace)
    with pytest.raises(TraceFormatError, match="cannot read"):
        read_trace(tmp_path / "absent.jsonl")


def test_a_trace_without_lengths_takes_512_tokens_per_block_and_no_output(tmp_path) -> None:
    from kvproof.stateful_tests.tree.traffic import read_trace

    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 1.5, "hash_ids": [3, 4], "extra": "ignored"}\n')
    (record,) = read_trace(trace)
    assert (record.timestamp_ms, record.input_length, record.output_length, record.hash_ids) == (1.5, 1024, 0, (3, 4))


def test_decode_blocks_are_stored_in_batches_as_extensions_of_the_prompt() -> None:
    """With decode_batch=2, five response blocks arrive as three extension stores, each under the last."""
    from kvproof.spec.events import Stored
    from kvproof.spec.primitives import Block, Rank
    from kvproof.stateful_tests.tree.traffic import Request

    fleet = Fleet(0, workers=1, capacity=100, rates=NO_CHURN, dp_ranks=1, exact_dp=True, decode_batch=2)
    request = Request(0.0, tuple(Block(i, i) for i in (1, 2)), tuple(Block(i, i) for i in (10, 11, 12, 13, 14)))
    stores = [op.event.data for op in fleet.serve(request, Rank(1, 0)) if isinstance(op, EventOp)]
    assert all(isinstance(s, Stored) for s in stores)
    assert [(s.parent_hash, [b.ext for b in s.blocks]) for s in stores if isinstance(s, Stored)] == [
        (None, [1, 2]),
        (2, [10, 11]),
        (11, [12, 13]),
        (13, [14]),
    ]

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
    trace.write_text('{"timestamp": 0, "input_length": 1024, "output_length": 1100, "hash_ids": [0, 1]}\n'
                     '{"timestamp": 2500, "input_length": 1536, "output_length": 10, "hash_ids": [0, 1, 2]}\n')
    first, second, again, _ = list(mooncake_requests(trace, loops=2))
    assert [b.ext for b in first.prompt] == [0, 1] and all(b.local == b.ext for b in first.prompt)
    assert len(first.decode) == 2 and not second.decode and second.time_s == 2.5
    assert [b.ext for b in again.prompt] == [3, 4] and again.time_s == 3600.0
    assert not {b.ext for b in first.decode} & {b.ext for r in (first, second, again) for b in r.prompt}

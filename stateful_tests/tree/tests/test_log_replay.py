"""log.py and replay.py: logs of router events, their errors, replay side by side, written regressions."""

import json

import pytest

from kvproof.reference import RadixTree
from kvproof.spec.events import Block, KvCacheEvent, Stored
from kvproof.spec.rules import with_variants
from kvproof.stateful_tests.tree.conformance import conform, write_failure_files
from kvproof.stateful_tests.tree.log import LogError, Recorder, ops_to_lines, parse_log
from kvproof.stateful_tests.tree.mutants import WalkSkipsEqualSizedIntersection
from kvproof.stateful_tests.tree.replay import chain_queries, replay_log
from kvproof.stateful_tests.tree.streams import ClearAllBlocksOp, EventOp, RemoveWorkerDpRankOp, RemoveWorkerOp, generate


def test_a_stream_round_trips_through_log_lines():
    ops = generate(1, 3).ops + [RemoveWorkerDpRankOp(1, 1)]
    log = parse_log("\n".join(ops_to_lines(ops, [[1, 2]])))
    assert log.ops == ops and log.queries == [(len(ops), [1, 2])]
    assert log.op_lines == list(range(1, len(ops) + 1))


def test_a_dump_is_a_log():
    tree = RadixTree()
    for op in generate(1, 2).ops:
        if isinstance(op, EventOp):
            try:
                tree.apply_event(op.worker_id, op.event)
            except Exception:
                pass
    log = parse_log("\n".join(tree.dump_tree_as_events()))
    assert log.ops and all(isinstance(op, EventOp) for op in log.ops)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("garbage", "line 1: not JSON"),
        ("[1, 2]", "line 1: a log line is a JSON object"),
        ('# c\n{"worker": 1}', "line 2: expected a RouterEvent"),
        ('{"worker_id": 1, "event": {"data": "cleared"}}', "line 1: not a RouterEvent"),
        ('{"remove_worker": -1}', "line 1: remove_worker must be a u64"),
        ('{"remove_worker_dp_rank": [1]}', "takes [worker_id, dp_rank]"),
        ('{"find_matches": "abc"}', "takes a list of local hashes"),
        ('{"remove_worker": 1, "clear_all_blocks": 1}', "expected a RouterEvent"),
    ],
)
def test_a_bad_log_line_is_a_typed_error_naming_the_line(text, message):
    with pytest.raises(LogError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_log(text)


def test_chain_queries_follow_parent_links():
    ops = [
        EventOp(1, KvCacheEvent(0, Stored(None, (Block(5, 50), Block(6, 60))))),
        EventOp(1, KvCacheEvent(1, Stored(60, (Block(7, 70),)))),
        ClearAllBlocksOp(1),
        RemoveWorkerOp(1),
    ]
    after, final = chain_queries(ops)
    assert after[0] == [[5, 6]] and after[1] == [[5, 6, 7]] and after[2:] == [[], []]
    assert final == [[5, 6], [5, 6, 7]]


def test_the_recorder_logs_what_the_tree_was_asked():
    rec = Recorder(RadixTree())
    rec.apply_event(1, json.dumps({"event_id": 0, "data": "cleared", "dp_rank": 0}).encode())
    rec.find_matches([1])
    rec.find_matches([1])  # the same query again, with nothing in between, is not logged twice
    rec.remove_worker(1)
    log = parse_log("\n".join(rec.lines))
    assert len(log.ops) == 2 and log.queries == [(1, [1])]


def test_a_replayed_counterexample_shows_the_same_kind_and_its_regression_test_fails(tmp_path):
    report = conform(
        WalkSkipsEqualSizedIntersection,
        RadixTree,
        streams=40,
        seed=1,
        max_reported=1,
        subject_name="kvproof.stateful_tests.tree.mutants:WalkSkipsEqualSizedIntersection",
        oracle_name="reference",
    )
    m = report.mismatches[0]
    written = write_failure_files(report, tmp_path)
    log = next(p for p in written if p.suffix == ".jsonl")
    result = replay_log(parse_log(log.read_text()), WalkSkipsEqualSizedIntersection, RadixTree)
    assert result.failing is not None and result.failing.kind == m.kind
    log_lines = log.read_text().splitlines()
    assert result.line is not None and result.line <= len(log_lines)
    if m.query_list:  # a query found it: the reported line is that query's
        assert '"find_matches"' in log_lines[result.line - 1]
    test = next(p for p in written if p.name.startswith("test_"))
    namespace: dict = {"__file__": str(test)}
    exec(compile(test.read_text(), str(test), "exec"), namespace)
    with pytest.raises(AssertionError, match=m.kind):
        namespace[test.stem]()


def test_a_log_without_differences_replays_clean_and_counts_contract_refusals():
    lines = ops_to_lines(generate(1, 5).ops)
    result = replay_log(parse_log("\n".join(lines)), RadixTree, lambda: RadixTree(with_variants(frozenset())))
    assert result.failing is None and result.queries > 0
    assert result.refused_lines  # the generator sends a measured dose of stores under unheld parents

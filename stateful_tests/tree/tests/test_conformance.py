"""Differential conformance of every tree against the real Dynamo tree (a bounded slice; kvproof conform tree runs any size)."""

import pytest

from kvproof.reference import RadixTree
from kvproof.stateful_tests.harness.targets import load_target
from kvproof.stateful_tests.tree.conformance import conform, shrink
from kvproof.stateful_tests.tree.mutants import SplitDropsCarriedCutoffs
from kvproof.stateful_tests.tree.streams import StreamProfile, generate

pytestmark = pytest.mark.dynamo


@pytest.mark.parametrize("name", ["reference", "impl", "impl-lanes", "impl-pool"])
def test_every_tree_conforms_to_dynamo(dynamo_tree, name):
    """Every tree kvproof ships gets the same conformance budget against the real package."""
    target = load_target(name)
    report = conform(target.factory, dynamo_tree, streams=120, seed=2024)
    print(name, report.summary_line())
    assert report.queries > 50_000
    assert not report.mismatches, report.mismatches[0].report(name, "dynamo")


def test_streams_exercise_every_operation():
    kinds = {}
    for i in range(20):
        for op in generate(1, i).ops:
            name = type(op).__name__ if not hasattr(op, "event") else type(op.event.data).__name__
            kinds[name] = kinds.get(name, 0) + 1
    assert {"Stored", "Removed", "Cleared", "RemoveWorkerOp", "ClearAllBlocksOp"} <= set(kinds)


def test_streams_are_a_pure_function_of_seed_and_index():
    assert generate(3, 7).ops == generate(3, 7).ops
    assert generate(3, 7).ops != generate(3, 8).ops


def test_a_mismatch_is_shrunk_and_replayable(dynamo_tree):
    report = conform(SplitDropsCarriedCutoffs, dynamo_tree, streams=40, seed=1, max_reported=1)
    assert report.mismatches
    m = report.mismatches[0]
    assert 1 <= len(m.shrunk) <= 8, m.report("mutant", "dynamo")
    assert m.replay_command("t", "dynamo") == f"kvproof conform tree --target t --oracle dynamo --seed 1 --stream {m.stream}"
    # Replaying the one stream finds the same mismatch again.
    again = conform(SplitDropsCarriedCutoffs, dynamo_tree, streams=0, seed=1, only_stream=m.stream)
    assert again.mismatches and again.mismatches[0].op_index == m.op_index


def test_shrink_keeps_a_difference():
    def broken():
        return SplitDropsCarriedCutoffs()

    stream = generate(1, 3, StreamProfile(events=30))
    queries = [q for qs in stream.queries for q in qs]
    small = shrink(broken, RadixTree, stream.ops, queries)
    assert len(small) <= len(stream.ops)

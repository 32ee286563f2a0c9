"""Differential conformance of every tree against the real Dynamo tree (a bounded slice; kvproof conform tree runs any size)."""

import pytest

from kvproof.reference import RadixTree
from kvproof.spec.events import KvCacheEvent, Stored
from kvproof.spec.primitives import Block
from kvproof.stateful_tests.harness.paths import ext
from kvproof.stateful_tests.harness.targets import OK, load_target
from kvproof.stateful_tests.tree.conformance import ChainNames, conform, shrink
from kvproof.stateful_tests.tree.mutants import SplitDropsCarriedCutoffs
from kvproof.stateful_tests.tree.streams import EventOp, StreamProfile, generate


@pytest.mark.dynamo
# impl: the gate's "differential vs Dynamo" row runs it (500 streams in ci); slow here, run by CI's deep job and mutation.
@pytest.mark.parametrize("name", ["reference", pytest.param("impl", marks=pytest.mark.slow), "impl-lanes", "impl-pool"])
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


@pytest.mark.dynamo
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


RANK_REMOVAL = StreamProfile(rank_removal=0.5)


def test_rank_removal_streams_draw_remove_worker_dp_rank():
    from kvproof.stateful_tests.tree.streams import RemoveWorkerDpRankOp

    drawn = sum(isinstance(op, RemoveWorkerDpRankOp) for i in range(40) for op in generate(1, i, RANK_REMOVAL).ops)
    assert drawn >= 10
    assert not any(isinstance(op, RemoveWorkerDpRankOp) for i in range(40) for op in generate(1, i).ops)


@pytest.mark.parametrize("name", ["impl", "impl-lanes"])
def test_the_concurrent_tree_removes_single_ranks_as_the_reference_does(name):
    """Dynamo 1.6.1 has no remove_worker_dp_rank, so the trees that have it are conformed with the reference."""
    report = conform(load_target(name).factory, RadixTree, streams=120, seed=2024, profile=RANK_REMOVAL)
    assert report.queries > 50_000
    assert not report.mismatches, report.mismatches[0].report(name, "reference")


def test_a_rank_removal_that_drops_the_worker_is_caught():
    from kvproof.stateful_tests.tree.mutants import RankRemovalDropsTheWorker

    report = conform(RankRemovalDropsTheWorker, RadixTree, streams=40, seed=2024, profile=RANK_REMOVAL, max_reported=1)
    assert report.mismatches, "dropping every rank of the worker went unnoticed"


def test_a_rank_removal_mismatch_replays_with_its_options():
    from kvproof.stateful_tests.tree.mutants import RankRemovalDropsTheWorker

    report = conform(RankRemovalDropsTheWorker, RadixTree, streams=40, seed=2024, profile=RANK_REMOVAL, max_reported=1)
    m = report.mismatches[0]
    assert m.replay_command("t", "reference").endswith(f"--stream {m.stream} --rank-removal 0.5")
    again = conform(RankRemovalDropsTheWorker, RadixTree, streams=0, seed=2024, profile=RANK_REMOVAL, only_stream=m.stream)
    assert again.mismatches and again.mismatches[0].op_index == m.op_index


def _store(*blocks: tuple[int, int]) -> EventOp:
    return EventOp(1, KvCacheEvent(1, Stored(None, tuple(Block(*b) for b in blocks))))


def test_a_query_is_named_by_the_stores_learned_before_it_is_asked_though_its_chain_was_kept():
    """ChainNames keeps a query's chain between ops, until a store names a path no store named before."""
    names = ChainNames()
    assert names.chain([1, 2]) == (ext((1,)), ext((1, 2)))  # nothing stored yet: the derived hashes
    names.learn(_store((1, 11), (2, 12)), OK)
    assert names.chain([1, 2]) == (11, 12) and names.chain([1, 2, 3]) == (11, 12, ext((1, 2, 3)))


def test_control_a_kept_chain_that_a_store_does_not_forget_names_the_old_hashes():
    class NeverForgets(ChainNames):
        def learn(self, op, outcome):
            kept = dict(self._chains)
            super().learn(op, outcome)
            self._chains.update(kept)

    names = NeverForgets()
    names.chain([1, 2])
    names.learn(_store((1, 11), (2, 12)), OK)
    assert names.chain([1, 2]) == (ext((1,)), ext((1, 2)))  # stale: the law above fails on it

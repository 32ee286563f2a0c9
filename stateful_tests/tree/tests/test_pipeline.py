"""The thread-pool indexer pipelined (submit, then one flush): equal to the reference, and both broken pools caught."""

import pytest

from kvproof.impl.indexer import ThreadPoolIndexer
from kvproof.stateful_tests.tree.impl_mutants import PIPELINE_MUTANTS
from kvproof.stateful_tests.tree.pipeline import check_pipelined, runs
from kvproof.stateful_tests.tree.streams import EventOp, generate


def test_the_pool_pipelined_equals_the_reference():
    for index in range(100):
        problems = check_pipelined(lambda: ThreadPoolIndexer(threads=4), generate(11, index))
        assert not problems, f"stream {index}: {problems[:3]}"


@pytest.mark.parametrize("mutant", PIPELINE_MUTANTS, ids=lambda m: m.__name__)
def test_each_broken_pool_is_caught(mutant):
    """Real threads make each stream a draw; measured 97-100 of 100 streams catch each, so 40 streams cannot all miss."""
    caught = [i for i in range(40) if check_pipelined(mutant, generate(11, i))]
    assert caught, f"{mutant.__name__} passed 40 pipelined streams"


def test_runs_cut_at_every_change_of_worker_and_around_every_other_operation():
    stream = generate(1, 0)
    cut = runs(stream)
    assert [op for run in cut for _, op in run] == stream.ops
    for run in cut:
        ops = [op for _, op in run]
        assert len(ops) == 1 or (all(isinstance(op, EventOp) for op in ops) and len({op.worker_id for op in ops}) == 1)

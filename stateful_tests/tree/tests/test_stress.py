"""Real-thread stress of the concurrent tree (a bounded slice; ``kvproof stress`` runs any size)."""

import pytest

from kvproof.stateful_tests.harness.profiles import profile_named
from kvproof.stateful_tests.tree.impl_mutants import IMPL_MUTANTS
from kvproof.stateful_tests.tree.stress import StressConfig, run_stress

PROFILE = profile_named()


@pytest.mark.parametrize("mode", ["strict", "chaos"])
def test_no_overcount_and_parity_at_quiescence(mode):
    """The stress reaches what it exists for (reads racing writes, checkpoints, splits, repairs, fan-out inserts) and
    finds nothing. 3,000 operations (the quick profile's), a checkpoint every 100 per writer: the gate's stress row runs the ci
    profile's 8,000. Readers read only while writers write, so their count follows the machine's load (370 to 3,700
    measured on 2 busy cores): the bound asks that they ran, not how often."""
    report = run_stress(StressConfig(ops=3_000, seed=7, mode=mode, yield_sleep=0.05, check_every=100))
    print(report.summary_line(), f"{report.seconds:.1f} s", report.statistics)
    assert report.reads > 100 and report.checkpoints >= 4
    assert report.statistics["splits"] and report.statistics["repairs"] and report.statistics["fanout_inserts"]
    assert not report.failed, report.problems[:5]


@pytest.mark.parametrize("mutant", IMPL_MUTANTS, ids=lambda m: m.__name__)
def test_negative_control_stress_catches(mutant):
    """Each broken tree is caught within a few short runs (rates per 100 runs: docs/concurrency.md).

    Real threads make each run a draw; the weakest control (``NoVersionCheck``) is caught in
    about half of 1,500-operation runs, so up to 25 runs of 3,000 leave a miss chance far
    below one in a billion, while the usual cost is one or two runs.
    """
    for run in range(25):
        report = run_stress(StressConfig(ops=3_000, seed=100 + run, mode="chaos", yield_sleep=0.05), mutant)
        if report.failed:
            print(f"{mutant.__name__} caught on run {run + 1}: {report.problems[0][:200]}")
            return
    pytest.fail(f"{mutant.__name__} survived 25 stress runs")


def test_summary_line_format():
    report = run_stress(StressConfig(ops=400, seed=1, writers=2, readers=1, check_every=100))
    assert report.summary_line() == (
        f"stress: ops={report.ops} reads={report.reads} overcounts={report.overcounts} parity_breaks={report.parity_breaks}"
    )


def test_stress_shards_together_run_exactly_the_campaigns_runs():
    """Items are (seed, mode) pairs numbered run-major; shard 1/2 and 2/2 together run each once."""
    from kvproof.stateful_tests.harness.shards import WHOLE, Shard
    from kvproof.stateful_tests.tree.stress import StressTask, stress_sharded

    task = StressTask(ops=200, seed=4, runs=2, writers=2, readers=1, check_every=50)
    whole = [(i, r.config.seed, r.config.mode) for i, r in stress_sharded(task, WHOLE)]
    halves = [(i, r.config.seed, r.config.mode) for k in (1, 2) for i, r in stress_sharded(task, Shard(k, 2))]
    assert whole == [(0, 4, "strict"), (1, 4, "chaos"), (2, 5, "strict"), (3, 5, "chaos")]
    assert sorted(halves) == whole

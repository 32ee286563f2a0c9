"""Named tests of harness.shards: shards partition a run, parts partition a shard, every executor merges alike."""

import textwrap
from operator import attrgetter

import pytest

from kvproof.stateful_tests.harness.shards import (
    WHOLE,
    Shard,
    ShardError,
    SuiteRunError,
    ray_unavailable,
    run_parts,
    run_suite,
    suite_counts,
)


def union_is_a_partition(shards, total):
    """The shards' items are disjoint and together every item once: the law a split must keep."""
    items = [i for s in shards for i in s.of(total)]
    return sorted(items) == list(range(total))


@pytest.mark.parametrize("text, shard", [("1/1", WHOLE), ("2/4", Shard(2, 4)), (" 3 / 3 ", Shard(3, 3))])
def test_a_shard_parses_from_k_over_n(text, shard):
    assert Shard.parse(text) == shard and str(shard) == f"{shard.index}/{shard.count}"


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "1", "a/b", "-1/2", "", "1/2/3"])
def test_a_shard_that_is_not_k_over_n_is_a_typed_error(text):
    with pytest.raises(ShardError):
        Shard.parse(text)


@pytest.mark.parametrize("count", [1, 2, 3, 7])
@pytest.mark.parametrize("total", [0, 1, 10, 2000])
def test_the_shards_of_a_run_partition_it(count, total):
    assert union_is_a_partition([Shard(k, count) for k in range(1, count + 1)], total)


@pytest.mark.parametrize("parts", [1, 2, 5])
def test_the_parts_of_a_shard_partition_the_shard(parts):
    shard = Shard(2, 3)
    split = shard.split(parts)
    assert sorted(i for p in split for i in p.of(100)) == list(shard.of(100))
    assert len({i for p in split for i in p.of(100)}) == len(shard.of(100))


def test_the_partition_law_catches_an_overlapping_split():
    """Negative control: shards that step by N-1 overlap and miss items; the law says so."""

    class Overlapping(Shard):
        def of(self, total):
            return range(self.index - 1, total, max(1, self.count - 1))

    assert not union_is_a_partition([Overlapping(k, 3) for k in (1, 2, 3)], 30)


def test_a_process_pool_returns_the_parts_in_order_as_run_here():
    task = attrgetter("index")  # picklable by reference, so it crosses to a spawned process
    parts = Shard(2, 3).split(4)
    assert run_parts(task, parts, processes=2) == run_parts(task, parts, processes=1) == [2, 5, 8, 11]


def test_an_unknown_executor_is_a_typed_error():
    with pytest.raises(ShardError):
        run_parts(attrgetter("index"), [WHOLE], executor="nosuch")


def conform_task(streams=12):
    from kvproof.stateful_tests.tree.conformance import ConformTask

    return ConformTask("impl", "reference", "dynamo-1.6", streams, 3)


def same_run(a, b):
    return (
        a.streams,
        a.events,
        a.queries,
        a.stream_indices,
        a.kinds.counts,
        a.kinds.known,
        len(a.mismatches),
        len(a.tolerated),
    ) == (b.streams, b.events, b.queries, b.stream_indices, b.kinds.counts, b.kinds.known, len(b.mismatches), len(b.tolerated))


def test_conformance_shards_together_compare_exactly_the_streams_of_the_whole_run():
    from kvproof.stateful_tests.tree.conformance import TreeConformReport, conform_sharded

    task = conform_task()
    whole = conform_sharded(task)
    halves = [conform_sharded(task, Shard(k, 2)) for k in (1, 2)]
    assert [h.stream_indices for h in halves] == [list(range(0, 12, 2)), list(range(1, 12, 2))]
    assert same_run(TreeConformReport.merge(halves), whole)
    assert whole.events > 0 and whole.queries > 0


def test_conformance_over_two_processes_counts_what_one_process_counts():
    from kvproof.stateful_tests.tree.conformance import conform_sharded

    task = conform_task()
    assert same_run(conform_sharded(task, processes=2), conform_sharded(task))


def test_the_ray_executor_gives_the_same_counts():
    """Ray tasks on a local ``ray.init()`` (the [ray] extra; skipped without it, a failure under ``KVPROOF_REQUIRE_RAY=1``, as in CI)."""
    from kvproof.stateful_tests.harness.optional import skip_or_fail
    from kvproof.stateful_tests.tree.conformance import conform_sharded

    skip_or_fail(ray_unavailable(), "KVPROOF_REQUIRE_RAY")

    task = conform_task(8)
    assert same_run(conform_sharded(task, processes=2, executor="ray"), conform_sharded(task))


def test_pytest_summaries_are_read_into_outcome_counts():
    assert suite_counts("1746 passed, 53 skipped, 2 warnings in 294.53s (0:04:54)") == (("passed", 1746), ("skipped", 53))
    assert suite_counts("1 failed, 3 passed, 1 error in 2.0s") == (("error", 1), ("failed", 1), ("passed", 3))


def a_test_folder(tmp_path, body):
    folder = tmp_path / "probe_suite"
    folder.mkdir()
    (folder / "test_probe.py").write_text(textwrap.dedent(body))
    return folder


def test_the_suite_over_xdist_workers_counts_what_one_process_counts(tmp_path):
    a_test_folder(
        tmp_path,
        """
        import pytest
        @pytest.mark.parametrize("i", range(6))
        def test_even(i):
            assert i >= 0
        def test_skipped():
            pytest.skip("visibly")
    """,
    )
    one, two = run_suite(tmp_path, ["probe_suite"], 1), run_suite(tmp_path, ["probe_suite"], 2)
    assert one.counts == two.counts == (("passed", 6), ("skipped", 1))


def test_control_a_test_that_passes_only_alone_makes_the_counts_differ(tmp_path):
    a_test_folder(
        tmp_path,
        """
        import os
        def test_alone():
            assert "PYTEST_XDIST_WORKER" not in os.environ
    """,
    )
    assert run_suite(tmp_path, ["probe_suite"], 1).counts != run_suite(tmp_path, ["probe_suite"], 2).counts


def test_pytest_that_runs_nothing_is_a_typed_error(tmp_path):
    with pytest.raises(SuiteRunError, match="exited"):
        run_suite(tmp_path, ["no_such_folder"], 1)


def _workers_by_module(folder, mark: str) -> dict[str, set[str]]:
    """Run two modules of six tests each over two xdist workers with ``--dist loadgroup`` (as pyproject's addopts
    do), the first with ``mark`` on top; return the workers each module's tests ran on."""
    import subprocess
    import sys

    body = textwrap.dedent("""
        import os, time
        import pytest
        {mark}
        @pytest.mark.parametrize("i", range(6))
        def test_where(i):
            time.sleep(0.05)
            with open(os.path.join(os.path.dirname(__file__), "seen.txt"), "a") as f:
                f.write(f"{{__name__}} {{os.environ['PYTEST_XDIST_WORKER']}}\\n")
    """)
    folder.mkdir()
    (folder / "test_grouped.py").write_text(body.format(mark=mark))
    (folder / "test_loose.py").write_text(body.format(mark=""))
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:kvproof",
            str(folder),
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout[-2000:]
    seen: dict[str, set[str]] = {}
    for line in (folder / "seen.txt").read_text().splitlines():
        module, worker = line.split()
        seen.setdefault(module.rsplit(".", 1)[-1], set()).add(worker)
    return seen


def test_an_xdist_group_runs_on_one_worker_so_its_module_fixture_is_built_once(tmp_path):
    """``--dist loadgroup`` (pyproject's addopts) keeps a module marked ``xdist_group`` on one worker; the control, the
    same module unmarked, is spread over both (handed out one test at a time). pytest 9.2 broke the grouping silently
    (pytest-xdist#1386): the pin in pyproject."""
    grouped = _workers_by_module(tmp_path / "marked", 'pytestmark = pytest.mark.xdist_group("one")')
    assert len(grouped["test_grouped"]) == 1, grouped
    control = _workers_by_module(tmp_path / "unmarked", "")
    assert len(control["test_grouped"]) == 2, control

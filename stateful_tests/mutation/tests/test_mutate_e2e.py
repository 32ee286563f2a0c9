"""mutmut run for real on one tiny module (spec/arith.py, ten mutants), with a killer and a blind test.

The killer test file checks each operation; the blind one calls each and checks nothing, the
negative control: every mutant it reaches must survive, so a report that counted reached
mutants as killed, or read the wrong results file, fails here. The killer's and the blind file's
runs are made once for the module (``arith_runs``) and the module's tests share one xdist worker
(the ``xdist_group`` mark; pyproject's ``--dist loadgroup``): six mutmut runs, not nine.

Without mutmut (the [mutate] extra) the test skips visibly, and fails under
``KVPROOF_REQUIRE_MUTMUT=1``, as ``.ci/run`` sets.
"""

import copy
import os
import shutil
from pathlib import Path

import pytest

from kvproof.report import write_json
from kvproof.stateful_tests.harness.optional import skip_or_fail
from kvproof.stateful_tests.harness.shards import WHOLE, Shard
from kvproof.stateful_tests.mutation.driver import mutmut_unavailable, rejudge, run_mutation
from kvproof.stateful_tests.mutation.equivalents import Equivalent, split_equivalents
from kvproof.stateful_tests.mutation.profiles import MutationTarget
from kvproof.stateful_tests.mutation.scores import KILLED, NO_TESTS, SURVIVED, Report, merge_shard_runs, read_shard_run
from kvproof.stateful_tests.mutation.workspace import WORK_ROOT

ROOT = Path(__file__).resolve().parents[3]
HERE = "stateful_tests/mutation/tests/"


pytestmark = pytest.mark.xdist_group("mutate-e2e")


@pytest.fixture(scope="module")
def mutmut_here():
    skip_or_fail(mutmut_unavailable(), "KVPROOF_REQUIRE_MUTMUT")


@pytest.fixture(scope="module")
def arith_runs(mutmut_here):
    """The killer's and the blind file's runs over spec/arith.py, made once: ``(killer run, blind report, work)``."""
    work = ROOT / WORK_ROOT / f"e2e-{os.getpid()}"
    try:
        yield mutate_arith("arith_killer.py", work / "killer"), mutate_arith("arith_blind.py", work / "blind").report, work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def processes_in(folder: Path) -> list[int]:
    """Live processes whose working directory is inside ``folder`` (mutmut's children run there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")).is_relative_to(folder):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def mutate_arith(tests: str, work: Path, shard: Shard = WHOLE):
    return run_mutation(ROOT, [MutationTarget("spec/arith.py", (HERE + tests,))], shard, max_children=2, timeout=120, work=work)


def test_mutmut_kills_with_real_checks_and_a_blind_test_kills_nothing(arith_runs):
    run, blind, work = arith_runs
    report = run.report
    assert len(report.mutants) >= 5 and all(m.module == "spec/arith.py" for m in report.mutants)
    killed, survivors = report.of(KILLED), report.of(SURVIVED)
    assert len(killed) >= 5 and not report.of(NO_TESTS)
    assert all(m.ttd_s is not None and m.ttd_s < 30 for m in killed), "the ttd plugin timed every kill"
    assert all(m.diff.startswith("--- src/kvproof/spec/arith.py") for m in survivors)
    # what survives real checks is min's and max's `<=` / `>=` made strict: at a == b both branches give a
    assert {m.diff.splitlines()[-1].strip() for m in survivors} <= {
        "+    return a if a < b else b",
        "+    return a if a > b else b",
    }
    # listed as reviewed equivalents (with the function's current hash) they leave the score: 100%
    entries = [Equivalent(m.name, str(m.function_hash), "strict comparison, same value at a == b") for m in survivors]
    valid, stale = split_equivalents(entries, {m.name: m.function_hash for m in report.mutants})
    reviewed = copy.deepcopy(report.mutants)  # the runs are shared with the module's other tests: leave them as they ran
    for m in reviewed:
        m.equivalent = valid.get(m.name)
    assert not stale and Report(reviewed).modules[0].score == 1.0
    assert not processes_in(work), "a mutmut process outlived the run"

    assert {m.name for m in blind.mutants} == {m.name for m in report.mutants}
    gaps = blind.of(NO_TESTS)  # floordiv, which the blind file does not call
    assert gaps and {m.name for m in gaps} == {m.name for m in blind.mutants if "floordiv" in m.name}
    assert all(m.diff.startswith("--- src/kvproof/spec/arith.py") and "//" in m.diff for m in gaps), "a gap comes with its diff"
    assert not blind.of(KILLED) and len(blind.of(SURVIVED)) + len(gaps) == len(blind.mutants), (
        "the negative control killed something"
    )
    assert blind.modules[0].score == 0.0 and blind.failures()


def test_the_shards_of_a_real_run_merge_into_the_whole_run(arith_runs, tmp_path):
    """Law (issue 14): shards 1/2 and 2/2, run apart and merged from their JSON, give the whole run's verdicts."""
    work = ROOT / WORK_ROOT / f"e2e-shards-{os.getpid()}"
    whole = arith_runs[0].report
    try:
        files = []
        for k in (1, 2):
            part = mutate_arith("arith_killer.py", work / f"shard-{k}", Shard(k, 2)).report
            assert part.mutants and len(part.mutants) < len(whole.mutants)
            files.append(tmp_path / f"shard-{k}.json")
            write_json(files[-1], "mutate", part.to_json({"profile": "e2e", "paths": ["spec"], "shard": f"{k}/2", "seconds": 1}))
        merged = merge_shard_runs([read_shard_run(f) for f in reversed(files)])
        assert {m.name: m.status for m in merged.mutants} == {m.name: m.status for m in whole.mutants}
        assert merged.table_rows() == whole.table_rows()
        assert not processes_in(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_a_rejudge_runs_only_the_unsettled_mutants_and_reports_the_whole(arith_runs):
    """``kvproof mutate --rejudge``: over the blind run's report (no kill to carry) every mutant is judged again,
    and the killing tests then give the full run's verdicts; over the killer's own report only its survivors run."""
    work = ROOT / WORK_ROOT / f"e2e-rejudge-{os.getpid()}"
    targets = [MutationTarget("spec/arith.py", (HERE + "arith_killer.py",))]
    whole, blind = arith_runs[0].report, arith_runs[1]
    try:
        again = rejudge(ROOT, targets, blind, max_children=2, timeout=120, work=work / "again")
        assert again.carried == 0 and {m.name: m.status for m in again.report.mutants} == {
            m.name: m.status for m in whole.mutants
        }
        settled = rejudge(ROOT, targets, whole, max_children=2, timeout=120, work=work / "settled")
        judged = {n for r in settled.runs for n in r.names}
        assert settled.carried == len(whole.of(KILLED)) and judged == {m.name for m in whole.of(SURVIVED)}
        assert {m.name: m.status for m in settled.report.mutants} == {m.name: m.status for m in whole.mutants}
        assert not processes_in(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

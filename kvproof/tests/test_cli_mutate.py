"""kvproof mutate, with mutmut's run replaced by a canned report: the table, the survivors' diffs, the gap line,
the JSON, and the exit code by the goals (a missed goal fails and says so; a missing mutmut is exit 2)."""

import json
from pathlib import Path

from kvproof.report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from kvproof.stateful_tests.mutation import driver
from kvproof.stateful_tests.mutation.scores import Mutant, Report, sharded_names
from kvproof.stateful_tests.mutation.workspace import Workspace


def canned(killed: int, survived: int, gaps: int = 0):
    mutants = [Mutant(f"kvproof.spec.coverage.x_f__mutmut_{i}", "spec/coverage.py", 1, ttd_s=0.25) for i in range(killed)]
    mutants += [
        Mutant(f"kvproof.spec.coverage.x_g__mutmut_{i}", "spec/coverage.py", 0, diff=f"-a\n+b{i}") for i in range(survived)
    ]
    mutants += [Mutant(f"kvproof.spec.coverage.x_h__mutmut_{i}", "spec/coverage.py", 33, diff=f"-c\n+d{i}") for i in range(gaps)]

    def fake(root, targets, shard, max_children, equivalents, timeout, work, *args, **kwargs):
        """One group's run (``driver.run_groups`` calls it per test list): the canned mutants of its modules."""
        assert work.name.startswith("group-") and work.parent.name == f"quick-{shard.index}-of-{shard.count}"
        assert work.parent.parent.name == ".kvproof-mutate"
        modules = {t.module for t in targets}
        mine = set(sharded_names([m.name for m in mutants], shard))
        return driver.MutationRun(
            Report([m for m in mutants if m.name in mine and m.module in modules]),
            Workspace(Path("/nonexistent"), tuple(targets)),
            [],
            1.5,
            Path("/nonexistent/log"),
        )

    return fake


def test_goals_met_exit_zero_with_the_table_and_json(kvproof_cli, monkeypatch, tmp_path):
    monkeypatch.setattr(driver, "run_mutation", canned(killed=99, survived=1, gaps=4))
    ran = kvproof_cli("mutate", "--profile", "quick", "--json", str(tmp_path / "m.json"))
    assert ran.code == EXIT_PASS, ran.out
    assert "spec/coverage.py" in ran.out and "99.0%" in ran.out and "SURVIVED kvproof.spec.coverage.x_g__mutmut_0" in ran.out
    assert "gap: 4 mutants reached by no selected test (not counted as killed):" in ran.out
    assert "GAP kvproof.spec.coverage.x_h__mutmut_3\n-c\n+d3" in ran.out and "median time to detection: 0.250 s" in ran.out
    assert ran.last.startswith("mutate: pass mutants=104 spec=99.0%")
    body = json.loads((tmp_path / "m.json").read_text())
    assert body["schema"] == "kvproof.mutate/1" and body["passed"] and body["modules"][0]["no_tests"] == 4


def test_a_missed_goal_fails_and_says_so(kvproof_cli, monkeypatch):
    monkeypatch.setattr(driver, "run_mutation", canned(killed=90, survived=10))
    ran = kvproof_cli("mutate", "--profile", "quick")
    assert ran.code == EXIT_FAIL
    assert "GOAL NOT MET: spec/: score 90.0% is below the goal 95%" in ran.out and ran.last.startswith("mutate: FAIL")


def test_missing_mutmut_and_bad_layers_are_usage_errors(kvproof_cli, monkeypatch):
    assert kvproof_cli("mutate", "--paths", "proofs").code == EXIT_USAGE
    assert kvproof_cli("mutate", "--paths", "spec,reference").code == EXIT_USAGE  # one per --paths, repeated
    monkeypatch.setattr(driver, "mutmut_unavailable", lambda: "mutmut is not installed")
    ran = kvproof_cli("mutate")
    assert ran.code == EXIT_USAGE and "mutmut is not installed" in ran.out


def test_the_merged_shards_print_the_whole_runs_table_and_verdict(kvproof_cli, monkeypatch, tmp_path):
    monkeypatch.setattr(driver, "run_mutation", canned(killed=90, survived=10, gaps=3))
    whole = kvproof_cli("mutate", "--profile", "quick")
    files = []
    for k in (1, 2, 3):
        files.append(str(tmp_path / f"shard-{k}.json"))
        part = kvproof_cli("mutate", "--profile", "quick", "--shard", f"{k}/3", "--json", files[-1])
        assert part.last.endswith(f"shard={k}/3")
    merged = kvproof_cli(
        "mutate", "--merge", files[2], "--merge", files[0], "--merge", files[1], "--json", str(tmp_path / "merged.json")
    )
    assert merged.code == whole.code == EXIT_FAIL
    assert merged.last == whole.last + " merged=3", merged.out
    table = [line for line in whole.out.splitlines() if line.startswith("spec/coverage.py")]
    assert table and all(line in merged.out for line in table)
    assert "merged 3 shards of profile=quick layers=spec" in merged.out
    body = json.loads((tmp_path / "merged.json").read_text())
    assert [m["shard"] for m in body["merged"]] == ["1/3", "2/3", "3/3"] and len(body["mutants"]) == 103


def test_a_merge_of_part_of_a_run_is_refused(kvproof_cli, monkeypatch, tmp_path):
    monkeypatch.setattr(driver, "run_mutation", canned(killed=9, survived=1))
    kvproof_cli("mutate", "--profile", "quick", "--shard", "1/2", "--json", str(tmp_path / "a.json"))
    ran = kvproof_cli("mutate", "--merge", str(tmp_path / "a.json"))
    assert ran.code == EXIT_USAGE and "shards 2/2 are missing" in ran.out and "Traceback" not in ran.out
    (tmp_path / "b.json").write_text("{not json")
    ran = kvproof_cli("mutate", "--merge", str(tmp_path / "a.json"), "--merge", str(tmp_path / "b.json"))
    assert ran.code == EXIT_USAGE and "not a readable JSON report" in ran.out


def test_whole_runs_split_by_module_merge_into_the_layers_verdict(kvproof_cli, monkeypatch, tmp_path):
    """A matrix split by module: each job's whole run of some modules, merged, is the whole layer's run; a layer
    judged in part is refused, naming the modules no report has."""
    monkeypatch.setattr(driver, "run_mutation", canned(killed=95, survived=5))
    whole = kvproof_cli("mutate", "--profile", "quick")
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    kvproof_cli("mutate", "--profile", "quick", "--paths", "spec/coverage.py", "--json", a)
    kvproof_cli("mutate", "--profile", "quick", "--paths", "spec/service_queue.py", "--paths", "spec/token_load.py", "--json", b)
    merged = kvproof_cli("mutate", "--merge", a, "--merge", b, "--json", str(tmp_path / "m.json"))
    assert merged.code == whole.code == EXIT_PASS, merged.out
    assert merged.last == whole.last + " merged=2"
    assert "merged 2 whole runs of profile=quick by module: spec/coverage.py (100 mutants" in merged.out
    body = json.loads((tmp_path / "m.json").read_text())
    assert body["paths"] == ["spec/coverage.py", "spec/service_queue.py", "spec/token_load.py"] and len(body["mutants"]) == 100
    part = kvproof_cli("mutate", "--merge", a, "--merge", a)
    assert part.code == EXIT_USAGE and "spec/coverage.py is judged by" in part.out
    kvproof_cli("mutate", "--profile", "quick", "--paths", "spec/token_load.py", "--json", b)
    part = kvproof_cli("mutate", "--merge", a, "--merge", b)
    assert (
        part.code == EXIT_USAGE
        and part.last == "kvproof mutate --merge: spec/ is not judged whole: no report has spec/service_queue.py"
    )

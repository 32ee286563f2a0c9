"""kvproof explore, replay of a schedule token, and bench explore: exit codes, the promised last lines, tokens that replay."""

import json

from kvproof.report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE


def test_explore_passes_the_implementation_and_prints_the_pct_guarantee(kvproof_cli):
    ran = kvproof_cli("explore", "fanout-vs-split", "--budget", "40")
    assert ran.code == EXIT_PASS and ran.last == "explore: scenarios=1 schedules=40 failing=0"
    assert "PCT depth 3: n=3 threads" in ran.out and "schedules give 95% confidence" in ran.out


def test_explore_finds_a_broken_tree_saves_the_schedule_and_its_token_replays(kvproof_cli, tmp_path):
    saved = tmp_path / "schedules"
    ran = kvproof_cli(
        "explore", "fanout-vs-split", "--target", "FanoutWithoutGate", "--save", str(saved), "--json", str(tmp_path / "e.json")
    )
    assert ran.code == EXIT_FAIL and ran.last == "explore: scenarios=1 schedules=4 failing=1"
    token = next(line.split()[-1] for line in ran.out.splitlines() if line.strip().startswith("token:"))
    assert token.startswith("fanout-vs-split/FanoutWithoutGate/pct.d3.s1#") and len(list(saved.glob("*.json"))) == 1
    assert json.loads((tmp_path / "e.json").read_text())["found"][0]["token"] == token
    again = kvproof_cli("replay", "schedule", token)
    assert again.code == EXIT_FAIL and "not linearizable" in again.out and again.last.startswith("replay: outcome=failed")
    file_again = kvproof_cli("replay", "schedule", str(next(saved.glob("*.json"))))
    assert file_again.code == EXIT_FAIL and "shows 'not linearizable' as recorded" in file_again.out
    clean = kvproof_cli("replay", "schedule", token, "--target", "impl")
    assert clean.code == EXIT_PASS and clean.last.startswith("replay: outcome=ok")


def test_a_malformed_token_or_unknown_scenario_is_a_usage_error(kvproof_cli):
    assert kvproof_cli("replay", "schedule", "fanout-vs-split/impl/x/b5%").code == EXIT_USAGE
    assert kvproof_cli("replay", "schedule", "no-such-scenario/impl/x/b").code == EXIT_USAGE
    assert kvproof_cli("explore", "no-such-scenario").code == EXIT_USAGE


def test_an_unknown_structure_is_a_usage_error_that_lists_the_known_ones(kvproof_cli):
    """``--target`` is a STRUCTURE: impl, a broken structure's short name, or module.path:Factory."""
    ran = kvproof_cli("explore", "fanout-vs-split", "--target", "NoSuchStructure")
    assert ran.code == EXIT_USAGE and "ReadSkipsVersionCheck" in ran.out and "NoSuchStructure" in ran.out
    assert kvproof_cli("explore", "fanout-vs-split", "--target", "FanoutWithoutGate", "--budget", "20").code != EXIT_USAGE


def test_explore_mutants_finds_every_broken_structure(kvproof_cli):
    ran = kvproof_cli("explore", "--mutants", "--profile", "quick")
    assert ran.code == EXIT_PASS and ran.last == "explore: mutants=17 found=17 missed=0"


def test_explore_lists_its_scenarios(kvproof_cli):
    ran = kvproof_cli("explore", "--list")
    assert ran.code == EXIT_PASS and "find-during-split" in ran.out and "PublishAfterUnlock" in ran.out


def test_bench_explore_reports_rates_side_by_side(kvproof_cli):
    ran = kvproof_cli("bench", "explore", "--schedules", "200", "--histories", "3")
    assert ran.code == EXIT_PASS and "toy 3x10 schedules/s, pct d=3" in ran.out
    assert ran.last.startswith("slowest toy strategy:") and "ms per linearizability check" in ran.out


def test_explore_on_real_threads_runs_the_same_checks(kvproof_cli):
    ran = kvproof_cli("explore", "--real", "5")
    assert ran.code == EXIT_PASS and ran.last == "explore --real: scenarios=13 runs=65 failing=0"
    broken = kvproof_cli("explore", "fanout-vs-split", "--real", "20", "--target", "ExtendsInternalNode")
    assert broken.code == EXIT_FAIL and "real-thread run 0: not linearizable" in broken.out


def test_explore_faults_reports_every_pair_and_exits_non_zero_on_a_broken_one(kvproof_cli, tmp_path):
    ran = kvproof_cli("explore", "fanout-vs-split", "--faults", "--json", str(tmp_path / "f.json"))
    body = json.loads((tmp_path / "f.json").read_text())
    assert ran.code == EXIT_PASS and ran.last.startswith("faults: pairs=25 clean=") and ran.last.endswith(" broken=0")
    assert body["rows"][0]["poisoned"] > 0 and not body["broken"]
    target = "kvproof.stateful_tests.tree.impl_mutants:NeverPoisoned"
    broken = kvproof_cli("explore", "fanout-vs-split", "--faults", "--target", target)
    assert broken.code == EXIT_FAIL and "BROKEN fanout-vs-split: a fault in" in broken.out
    assert f"replay: kvproof explore fanout-vs-split --faults --target {target}" in broken.out

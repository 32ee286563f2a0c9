"""Release-aware verdicts at the command line: rule sets, known findings, replay, explain, releases."""

import json
import shutil
from pathlib import Path

import pytest

from kvproof.report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from kvproof.stateful_tests.tree.releases import ReleaseResult, markdown, verdict_of


@pytest.mark.dynamo
def test_check_on_the_pinned_release_passes_and_names_what_it_tolerated(dynamo_tree, kvproof_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ran = kvproof_cli("check", "--target", "dynamo", "--profile", "quick", "--only", "api")
    assert ran.code == EXIT_PASS, ran.out
    assert "rules: dynamo-1.6" in ran.out and "detected from ai-dynamo-runtime 1.6.1" in ran.out
    assert "pass (known: F2)" in ran.out and "F2 in " in ran.out


@pytest.mark.dynamo
def test_strict_fails_on_a_known_finding(dynamo_tree, kvproof_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ran = kvproof_cli("check", "--target", "dynamo", "--profile", "quick", "--only", "dump rebuilds", "--strict")
    assert ran.code == EXIT_FAIL and "dump entry refused on replay" in ran.out


@pytest.mark.dynamo
def test_a_tree_following_older_rules_passes_only_under_them(dynamo_tree, kvproof_cli, tmp_path, monkeypatch):
    """reference@dynamo-1.4 reuses dead nodes: judged by 1.6's rules (Dynamo 1.6.1) it differs; by its own it agrees."""
    monkeypatch.chdir(tmp_path)
    plain = kvproof_cli(
        "check", "--target", "reference@dynamo-1.4", "--profile", "quick", "--only", "conformance", "--rules", "dynamo-1.6"
    )
    assert plain.code == EXIT_FAIL and "streams differ against ai-dynamo-runtime" in plain.out
    ruled = kvproof_cli("check", "--target", "reference@dynamo-1.4", "--profile", "quick", "--only", "conformance")
    assert ruled.code == EXIT_PASS and "the rule set of the target reference@dynamo-1.4" in ruled.out


def test_replay_finds_the_difference_at_its_line_and_writes_a_shrunk_log(kvproof_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    conformed = kvproof_cli(
        "conform",
        "tree",
        "--target",
        "kvproof.stateful_tests.tree.mutants:WalkSkipsEqualSizedIntersection",
        "--oracle",
        "reference",
        "--streams",
        "20",
        "--failures",
        "out",
    )
    assert conformed.code == EXIT_FAIL and "[contract]" in conformed.out
    log = sorted(Path("out").glob("*.jsonl"))[0]
    ran = kvproof_cli(
        "replay", "log", str(log), "--target", "kvproof.stateful_tests.tree.mutants:WalkSkipsEqualSizedIntersection"
    )
    assert ran.code == EXIT_FAIL and "FAIL [contract] at line" in ran.out
    assert ran.last.startswith("replay: events=") and ran.last.endswith("failing=1")
    shrunk = log.with_suffix(".min.jsonl")
    assert shrunk.exists()
    again = kvproof_cli(
        "replay", "log", str(shrunk), "--target", "kvproof.stateful_tests.tree.mutants:WalkSkipsEqualSizedIntersection"
    )
    assert again.code == EXIT_FAIL and "FAIL [contract]" in again.out
    clean = kvproof_cli("replay", "log", str(shrunk))  # the reference against itself under the contract
    assert clean.code == EXIT_PASS and clean.last.endswith("failing=0")


def test_replay_refuses_a_bad_log_with_the_line(kvproof_cli, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"remove_worker": 1}\nnot json\n')
    ran = kvproof_cli("replay", "log", str(bad))
    assert ran.code == EXIT_USAGE and "line 2: not JSON" in ran.out


def test_explain_names_the_variant_of_an_older_rule_set(kvproof_cli):
    ran = kvproof_cli("explain", "--target", "reference@dynamo-1.4", "--rules", "dynamo-1.6", "--streams", "12")
    assert ran.code == EXIT_PASS, ran.out
    assert "explain: behaves like the spec with reuse-dead-nodes" in ran.out and "PR #14878" in ran.out


def test_explain_calls_a_bug_a_bug(kvproof_cli):
    ran = kvproof_cli("explain", "--target", "kvproof.stateful_tests.tree.mutants:NoLookupScrub", "--streams", "12")
    assert ran.code == EXIT_FAIL and "likely a bug" in ran.last


def test_release_verdicts_from_gate_rows():
    def row(name, layer, result, detail=""):
        return {"name": name, "layer": layer, "result": result, "detail": detail, "known": []}

    ok = [row("node-rule laws", "spec", "pass")]
    assert verdict_of(ok) == "pass"
    assert verdict_of(ok + [row("state machine vs contract", "contract", "FAIL", "overcount")]) == "upstream bug"
    assert verdict_of(ok + [row("differential vs Dynamo", "conformance", "FAIL", "(contract=3 outcome=0)")]) == "upstream bug"
    assert verdict_of(ok + [row("differential vs Dynamo", "conformance", "FAIL", "(contract=0 outcome=2)")]) == "differs"
    assert verdict_of(ok + [row("dump rebuilds the tree", "api", "SKIP", "no dump")]) == "not checkable"
    table = markdown([ReleaseResult("1.4.2", "pass", "dynamo-1.4", ok)], "kvproof releases")
    assert (
        "| 1.4.2 | tree | dynamo-1.4 | **pass** |" in table and "reuse-dead-nodes (ended by ai-dynamo/dynamo PR #14878" in table
    )
    memory = row(
        "observed Dynamo behaviours",
        "vectors",
        "FAIL",
        "FINDING [memory] the target dynamo ran out of memory in "
        "dump_tree_as_events: killed by signal SIGABRT; its last words: memory allocation of 8 bytes failed\nreplay: ...",
    )
    found = ReleaseResult("1.1.1", verdict_of(ok + [memory]), "dynamo-0.6", ok + [memory])
    assert found.verdict == "upstream bug"  # a target that dies is a finding about it, recorded per release
    assert found.findings() == [
        "FINDING [memory] the target dynamo ran out of memory in dump_tree_as_events: killed by "
        "signal SIGABRT (observed Dynamo behaviours)"
    ]
    assert ReleaseResult("1.4.2", "upstream bug", "dynamo-1.4", ok + [row("x", "contract", "FAIL", "overcount")]).findings() == []


@pytest.mark.dynamo
def test_releases_runs_the_gate_on_an_unpacked_release_in_a_child(dynamo_tree, kvproof_cli, tmp_path):
    """The installed release, copied where the survey would unpack a wheel (no download)."""
    import dynamo

    source = Path(next(iter(dynamo.__path__)))
    site = tmp_path / "cache" / "site" / "1.6.1"
    shutil.copytree(source, site / "dynamo")
    for info in source.parent.glob("ai_dynamo_runtime-1.6.1*.dist-info"):
        shutil.copytree(info, site / info.name)
    table = tmp_path / "releases.md"
    ran = kvproof_cli(
        "releases",
        "--profile",
        "quick",
        "--version",
        "1.6.1",
        "--component",
        "tree",
        "--cache",
        str(tmp_path / "cache"),
        "--markdown",
        str(table),
        "--json",
        str(tmp_path / "r.json"),
    )
    assert ran.code == EXIT_PASS, ran.out
    assert ran.last == "releases: 1 releases: 1 pass, 0 upstream bug, 0 differs, 0 not checkable"
    body = json.loads((tmp_path / "r.json").read_text())
    assert body["releases"][0]["rules"] == "dynamo-1.6" and body["releases"][0]["rows"]
    assert "| 1.6.1 | tree | dynamo-1.6 | **pass** |" in table.read_text()


def test_an_older_api_is_adapted_to_or_skipped_with_a_reason_never_a_traceback(kvproof_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ran = kvproof_cli(
        "check",
        "--target",
        "kvproof.stateful_tests.tree.mutants:OldApiTree",
        "--profile",
        "quick",
        "--allow-skip",
        "--rules",
        "dynamo-1.6",
    )
    assert "Traceback" not in ran.out
    assert "the target has no dump_tree_as_events" in ran.out and "keys scores by plain worker id" in ran.out
    assert ran.code == EXIT_PASS, ran.out  # laws and conformance (dp rank 0 streams) pass; the rest is skipped
    strict = kvproof_cli(
        "check", "--target", "kvproof.stateful_tests.tree.mutants:OldApiTree", "--profile", "quick", "--only", "dump rebuilds"
    )
    assert "skip" in strict.out and strict.code != EXIT_PASS  # a skip is never a pass


@pytest.mark.parametrize("row", ["vectors", "conformance"])
def test_a_panicking_binding_fails_rows_with_the_reason_never_a_traceback(kvproof_cli, tmp_path, monkeypatch, row):
    """Two rows, not the whole gate: the contract row's shrink of a panic takes 25 s and adds nothing here."""
    monkeypatch.chdir(tmp_path)
    ran = kvproof_cli(
        "check", "--target", "kvproof.stateful_tests.tree.mutants:PanicsOnClear", "--profile", "quick", "--only", row
    )
    assert ran.code == EXIT_FAIL and "Traceback" not in ran.out
    assert "panicked" in ran.out or "PanicException" in ran.out


def test_a_vector_that_depends_on_a_variant_is_judged_under_the_rule_set(kvproof_cli, tmp_path, monkeypatch):
    """E10 records 1.6's per-rank clear: under dynamo-1.3 it is judged by that rule set, under 1.6's rules it fails."""
    monkeypatch.chdir(tmp_path)
    ruled = kvproof_cli("check", "--target", "reference@dynamo-1.3", "--profile", "quick", "--only", "vectors")
    assert ruled.code == EXIT_PASS and "E10_dp_ranks_cleared_per_rank" in ruled.out
    plain = kvproof_cli(
        "check", "--target", "reference@dynamo-1.3", "--profile", "quick", "--only", "vectors", "--rules", "dynamo-1.6"
    )
    assert plain.code == EXIT_FAIL and "E10_dp_ranks_cleared_per_rank" in plain.out


def test_a_release_that_is_no_version_is_a_usage_error_naming_it(kvproof_cli, tmp_path):
    ran = kvproof_cli("releases", "--version", "1.6.1", "--version", "latest", "--cache", str(tmp_path / "cache"))
    assert ran.code == EXIT_USAGE and "--version: 'latest' is not a release (PEP 440)" in ran.out
    assert "Traceback" not in ran.out and not (tmp_path / "cache").exists()  # refused before anything is fetched

"""The kvproof command: exit codes, the promised last lines, the JSON files."""

import json

import pytest

from kvproof.cli import main


@pytest.mark.dynamo
def test_conform_prints_the_summary_line_last_and_writes_json(dynamo_tree, tmp_path, capsys):
    out = tmp_path / "conform.json"
    assert main(["conform", "dynamo", "--streams", "3", "--seed", "5", "--json", str(out)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    body = json.loads(out.read_text())
    assert last == f"conform: streams=3 events={body['events']} queries={body['queries']} mismatches=0"


@pytest.mark.dynamo
def test_conform_exits_non_zero_on_a_mismatch(dynamo_tree, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["conform", "dynamo", "--target", "kvproof.stateful_tests.tree.mutants:SplitDropsCarriedCutoffs", "--streams", "20"])
    out = capsys.readouterr().out
    assert code == 1 and "replay: kvproof conform dynamo" in out and "mismatches=0" not in out.splitlines()[-1]
    assert list((tmp_path / "kvproof-failures").glob("*.json"))


def test_check_runs_one_layer_and_reports_a_table(tmp_path, capsys):
    out = tmp_path / "gate.json"
    assert main(["check", "--only", "spec", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "layer" in text and "node-rule laws" in text and "1 passed, 0 failed, 0 skipped" in text
    assert json.loads(out.read_text())["rows"][0]["result"] == "pass"


def test_check_fails_on_a_broken_target(capsys):
    code = main(["check", "--target", "kvproof.stateful_tests.tree.mutants:NoLookupScrub", "--only", "vectors"])
    assert code == 1 and "FAIL" in capsys.readouterr().out


def test_unknown_target_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["check", "--target", "nope"])
    assert info.value.code == 2

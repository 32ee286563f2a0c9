"""kvproof fuzz: a seeded run over every tree, its promised last line and JSON, a saved case that replays, and a
file that is not a saved case refused as a usage error."""

import json

from kvproof.report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from kvproof.spec.events import KvCacheEvent, Stored
from kvproof.stateful_tests.fuzz.campaign import FuzzCase, Problem, save_case


def test_fuzz_runs_every_tree_and_ends_with_its_summary_line(kvproof_cli, tmp_path):
    ran = kvproof_cli("fuzz", "--inputs", "80", "--seed", "2", "--json", str(tmp_path / "f.json"))
    assert ran.code == EXIT_PASS, ran.out
    assert ran.last.startswith("fuzz: inputs=80 targets=") and " untyped=0 problems=0 " in ran.last
    body = json.loads((tmp_path / "f.json").read_text())
    assert body["inputs"] == 80 and not body["problems"] and sum(body["outcomes"]["reference"].values()) == 80
    assert "impl-pool" in body["outcomes"] and ran.out.splitlines()[0].split()[:2] == ["outcome", "reference"]


def test_a_saved_case_replays_with_what_each_tree_did(kvproof_cli, tmp_path):
    bad = KvCacheEvent(0, Stored(None, ((7, 700),)))  # blocks that are not Blocks
    path = save_case(FuzzCase("apply_event", (1, bad)), Problem("untyped", "x", "an old crash"), 1, tmp_path)
    ran = kvproof_cli("fuzz", "--replay", str(path), "--target", "impl")
    assert ran.code == EXIT_PASS and ran.last == "replay: problems=0"
    assert "MalformedEvent" in ran.out and "data.stored.blocks[0]" in ran.out


def test_a_replayed_case_that_still_fails_exits_non_zero(kvproof_cli, tmp_path, monkeypatch):
    from kvproof.reference import radix_tree

    monkeypatch.setattr(radix_tree, "check_early_exit", bool)  # the reference takes early_exit=1 again
    path = save_case(FuzzCase("find_matches", ([1, 2], 1)), Problem("dynamo", "dynamo", "d"), 1, tmp_path)
    ran = kvproof_cli("fuzz", "--replay", str(path))
    assert ran.code == EXIT_FAIL and "PROBLEM disagree on impl" in ran.out


def test_a_file_that_is_not_a_saved_case_is_a_usage_error(kvproof_cli, tmp_path):
    (tmp_path / "x.json").write_text('{"format": "kvproof-schedule/1"}')
    ran = kvproof_cli("fuzz", "--replay", str(tmp_path / "x.json"))
    assert ran.code == EXIT_USAGE and "not a kvproof-fuzz/1 file" in ran.out

"""The kvproof command: exit codes, the promised last lines, the JSON, JUnit and help texts."""

import json

import pytest
from junitparser import JUnitXml

from kvproof.report import EXIT_FAIL, EXIT_PASS, EXIT_SKIPPED, EXIT_USAGE


@pytest.mark.dynamo
def test_conform_prints_the_summary_line_last_and_writes_json(dynamo_tree, tmp_path, kvproof_cli):
    out = tmp_path / "conform.json"
    ran = kvproof_cli("conform", "tree", "--streams", "3", "--seed", "5", "--json", str(out))
    body = json.loads(out.read_text())
    assert ran.code == EXIT_PASS and body["schema"] == "kvproof.conform-tree/1"
    assert ran.last.startswith(f"conform: streams=3 events={body['events']} queries={body['queries']} mismatches=0 tolerated=")
    assert "contract=0 outcome=0 score=0" in ran.last and body["kinds"]["contract"] == 0
    assert "subject=impl oracle=dynamo" in ran.out


@pytest.mark.dynamo
def test_conform_exits_non_zero_on_a_mismatch(dynamo_tree, tmp_path, monkeypatch, kvproof_cli):
    monkeypatch.chdir(tmp_path)
    ran = kvproof_cli(
        "conform", "tree", "--target", "kvproof.stateful_tests.tree.mutants:SplitDropsCarriedCutoffs", "--streams", "20"
    )
    assert ran.code == EXIT_FAIL and "regenerate the stream: kvproof conform tree --target" in ran.out
    assert "replay the events: kvproof replay log " in ran.out and "mismatches=0" not in ran.last
    assert list((tmp_path / "kvproof-failures").glob("*.json"))


@pytest.mark.dynamo
def test_conform_dynamo_is_conform_tree_against_dynamo_and_its_shards_make_the_whole_run(dynamo_tree, tmp_path, kvproof_cli):
    """``conform dynamo`` (the issue's command) runs ``conform tree --oracle dynamo``; its two shards run exactly the whole
    run's streams, and their events, queries and tolerated differences add up to the whole run's."""

    def run(name: str, *args: str, command: str = "dynamo") -> dict:
        out = tmp_path / f"{name}.json"
        ran = kvproof_cli(
            "conform", command, "--streams", "12", "--seed", "3", "--failures", str(tmp_path / name), "--json", str(out), *args
        )
        assert ran.code == EXIT_PASS and "subject=impl oracle=dynamo" in ran.out, ran.out
        return json.loads(out.read_text())

    whole, first, second = run("whole"), run("first", "--shard", "1/2"), run("second", "--shard", "2/2")
    assert sorted(first["stream_indices"] + second["stream_indices"]) == whole["stream_indices"] == list(range(12))
    assert not set(first["stream_indices"]) & set(second["stream_indices"])
    for key in ("events", "queries", "tolerated"):
        assert first[key] + second[key] == whole[key], key
    streams = sorted(d["stream"] for d in first["tolerated_differences"] + second["tolerated_differences"])
    assert streams == sorted(d["stream"] for d in whole["tolerated_differences"])
    tree = run("tree", "--oracle", "dynamo", command="tree")
    assert {**tree, "seconds": 0} == {**whole, "seconds": 0}
    assert kvproof_cli("conform", "dynamo", "--oracle", "reference").code == EXIT_USAGE


def test_conform_refuses_a_tree_against_itself(kvproof_cli):
    ran = kvproof_cli("conform", "tree", "--target", "reference", "--oracle", "reference")
    assert ran.code == EXIT_USAGE and "always agrees with itself" in ran.out


def test_check_runs_one_row_and_reports_a_table_json_and_junit(tmp_path, kvproof_cli):
    out, xml = tmp_path / "gate.json", tmp_path / "gate.xml"
    ran = kvproof_cli("check", "--profile", "quick", "--only", "spec", "--json", str(out), "--junit", str(xml))
    assert ran.code == EXIT_PASS
    assert "layer" in ran.out and "node-rule laws" in ran.out and "1 passed, 0 failed, 0 skipped" in ran.last
    body = json.loads(out.read_text())
    assert body["schema"] == "kvproof.gate/1" and body["rows"][0]["result"] == "pass"
    cases = [case for suite in JUnitXml.fromfile(str(xml)) for case in suite]
    assert [(c.classname, c.name, c.is_passed) for c in cases] == [("kvproof.tree.spec", "node-rule laws", True)]


def test_check_fails_on_a_broken_target_and_the_junit_row_says_why(tmp_path, kvproof_cli):
    xml = tmp_path / "gate.xml"
    ran = kvproof_cli(
        "check", "--target", "kvproof.stateful_tests.tree.mutants:NoLookupScrub", "--only", "vectors", "--junit", str(xml)
    )
    assert ran.code == EXIT_FAIL and "FAIL" in ran.out and "replay: kvproof check --target" in ran.out
    (case,) = [case for suite in JUnitXml.fromfile(str(xml)) for case in suite]
    assert not case.is_passed and "steps differ" in case.result[0].text


def test_a_foreign_target_runs_the_tree_family_and_says_what_it_left_out(kvproof_cli):
    ran = kvproof_cli("check", "--target", "reference", "--only", "vectors")
    assert ran.code == EXIT_PASS and "families=tree" in ran.out
    assert "left out the families sequences (10 rows), deepinfer (4 rows), proofs (2 rows); --family all runs them" in ran.out


def test_a_skip_is_not_a_pass(kvproof_cli, monkeypatch):
    from kvproof.gate import deepinfer

    monkeypatch.setattr(deepinfer, "_torch_applies", lambda ctx: "torch is not here (simulated)")
    for check in deepinfer.CHECKS:
        if check.name.endswith("torch CPU"):
            monkeypatch.setattr(check, "applies", deepinfer._torch_applies)
    ran = kvproof_cli("check", "--only", "torch CPU")
    assert ran.code == EXIT_SKIPPED and "SKIP" in ran.out and "not a pass" in ran.last
    assert kvproof_cli("check", "--only", "torch CPU", "--allow-skip").code == EXIT_PASS


def test_unknown_or_broken_targets_are_usage_errors(kvproof_cli, tmp_path, monkeypatch):
    ran = kvproof_cli("check", "--target", "nope")
    assert ran.code == EXIT_USAGE and "unknown target 'nope'" in ran.out and "impl-pool" in ran.out
    ran = kvproof_cli("check", "--target", "no_such_module:Tree")
    assert ran.code == EXIT_USAGE and "ModuleNotFoundError" in ran.out
    (tmp_path / "crashing_tree.py").write_text("raise RuntimeError('boom at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ran = kvproof_cli("check", "--target", "crashing_tree:Tree")
    assert ran.code == EXIT_USAGE and "boom at import" in ran.out
    assert kvproof_cli("check", "--only", "no such row").code == EXIT_USAGE


def test_help_lists_every_command_and_group(kvproof_cli):
    text = kvproof_cli("--help").out
    for command in ("check", "conform", "vectors", "stress", "bench", "roundtrip", "deepinfer-labs", "prove"):
        assert f"  {command} " in text
    assert "tree" in kvproof_cli("conform", "--help").out and "slot-tracker" in kvproof_cli("conform", "--help").out
    assert "sequences" in kvproof_cli("stress", "--help").out and "roundtrip" in kvproof_cli("bench", "--help").out


def test_vectors_pass_on_the_reference(kvproof_cli):
    ran = kvproof_cli("vectors", "--target", "reference")
    assert ran.code == EXIT_PASS and ran.last.startswith("vectors: ") and ran.last.endswith(" steps, pass (target=reference)")


def test_stress_sequences_replays_by_command(kvproof_cli):
    ran = kvproof_cli("stress", "sequences", "--ops", "60", "--seed", "3")
    assert ran.code == EXIT_PASS and ran.last == "stress sequences: rounds=1 ops=480 problems=0"  # 60 per thread


def gate_rows(kvproof_cli, tmp_path, *args):
    out = tmp_path / f"gate{len(list(tmp_path.iterdir()))}.json"
    ran = kvproof_cli("check", "--profile", "quick", "--family", "all", "--only", "bad input", "--json", str(out), *args)
    assert ran.code == EXIT_PASS, ran.out
    return [(r["family"], r["name"], r["result"]) for r in json.loads(out.read_text())["rows"]], ran.out


def test_gate_shards_together_run_exactly_the_rows_of_the_whole_gate(kvproof_cli, tmp_path):
    whole, _ = gate_rows(kvproof_cli, tmp_path)
    first, said = gate_rows(kvproof_cli, tmp_path, "--shard", "1/2")
    second, _ = gate_rows(kvproof_cli, tmp_path, "--shard", "2/2")
    assert len(whole) == 2 and sorted(first + second) == sorted(whole) and first and second
    assert "shard=1/2 (1 rows)" in said and "left out tree: bad input is rejected, harmless" not in said.split("shard=1/2")[0]


def test_gate_rows_over_two_processes_are_the_rows_of_one_process(kvproof_cli, tmp_path):
    whole, _ = gate_rows(kvproof_cli, tmp_path)
    pooled, said = gate_rows(kvproof_cli, tmp_path, "--processes", "2")
    assert pooled == whole and "2 rows as tasks of 2 processes, slowest first" in said


def test_the_pool_runs_untimed_rows_first_then_the_slowest():
    """The longest-processing-time order: a row never timed here may be slow, so it goes first; then slowest first."""
    from kvproof.gate.pool import slowest_first

    checks = [type("C", (), {"key": k})() for k in ("a", "b", "c", "d")]
    assert [c.key for c in slowest_first(checks, {"a": 1.0, "c": 9.0, "d": 3.0})] == ["b", "c", "d", "a"]


def test_a_row_that_waits_runs_beside_the_processes_rows_one_at_a_time():
    """``Check.waits``: never more than ``processes`` rows that use a core at once, and beside them at most one row
    that waits, which starts though every process is busy (the slot-tracker conformance is such a row)."""
    from kvproof.gate import all_checks
    from kvproof.gate.pool import admitted

    def row(key: str, waits: bool = False):
        return type("C", (), {"key": key, "waits": waits})()

    a, b, c, t, u = row("a"), row("b"), row("c"), row("t", True), row("u", True)
    assert admitted([c, t], [a, b], 2) is t  # both processes busy: the waiting row still starts
    assert admitted([c, u], [a, b, t], 2) is None  # one waiting row at a time
    assert admitted([u, c], [a, t], 2) is c  # a core is free: the next core row, past the waiting one
    assert admitted([a, b], [], 1) is a and admitted([b], [a], 1) is None
    assert [k.key for k in all_checks() if k.waits] == ["sequences: vs dynamo.slot_tracker"]


def test_a_row_whose_process_dies_fails_naming_the_death_and_a_row_beside_it_still_runs():
    """kvproof's own process dying under a row (an in-process tree that ends it, as a crashing extension would) is that
    row's FAIL with the command that replays it; a row the broken pool held runs again alone, and passes. The
    laws row is marked as one that waits, so the pool is one process larger, as in a run with the slot-tracker row."""
    import dataclasses

    from kvproof.gate import GateTask, Result
    from kvproof.gate.pool import run_rows

    task = GateTask("kvproof.stateful_tests.tree.mutants:EndsItsProcessOnDump", "quick", 1, families=("tree",))
    _, selection = task.plan()
    by_name = {c.name: c for c in selection.checks}
    laws = dataclasses.replace(by_name["node-rule laws"], waits=True)
    rows, not_run = run_rows(task, [by_name["dump rebuilds the tree"], laws], 2, {})
    result = {r.name: r for r in rows}
    dump = result["dump rebuilds the tree"]
    assert dump.result is Result.FAIL and "the process running this row died before it reported" in dump.detail
    assert dump.replay.endswith("--processes 1 --only 'dump rebuilds the tree'"), dump.replay
    assert result["node-rule laws"].result is Result.PASS, result["node-rule laws"].detail
    assert not_run == []


def test_on_a_machine_that_never_timed_the_rows_the_typically_slowest_start_first():
    """A fresh clone (CI) has no timings: the rows ``TYPICAL_SECONDS`` names go first, heaviest first, then the rest in
    their declared order (before, the declared order alone let the differential row start last of the heavy ones)."""
    from kvproof.gate.pool import TYPICAL_SECONDS, slowest_first

    keys = ["tree: node-rule laws", "proofs: CrossHair contracts and diffs", "tree: differential vs Dynamo", "x: y"]
    checks = [type("C", (), {"key": k})() for k in keys]
    assert TYPICAL_SECONDS["tree: differential vs Dynamo"] > TYPICAL_SECONDS["proofs: CrossHair contracts and diffs"]
    assert [c.key for c in slowest_first(checks, {})] == [keys[2], keys[1], keys[0], keys[3]]
    from kvproof.gate import all_checks

    assert set(TYPICAL_SECONDS) <= {c.key for c in all_checks()}, "a typical figure names a row that is gone"


def test_a_shard_that_is_not_k_over_n_is_a_usage_error(kvproof_cli):
    assert kvproof_cli("check", "--shard", "3/2").code == EXIT_USAGE
    assert kvproof_cli("conform", "tree", "--shard", "x").code == EXIT_USAGE
    assert kvproof_cli("fuzz", "--shard", "0/1").code == EXIT_USAGE


@pytest.mark.parametrize("processes", ["1", "2"])
def test_fail_fast_stops_at_the_first_failing_row_and_lists_the_rest_as_not_run(kvproof_cli, tmp_path, monkeypatch, processes):
    """A broken tree under --fail-fast: exit 1 at the first failing row; every row it did not reach is listed as not run
    (never as passed); the next run starts with the rows that were cheapest here. In one process or as a pool's tasks
    (where a row running beside the failing one may fail too, or is stopped and listed as not run)."""
    from kvproof import gate

    monkeypatch.chdir(tmp_path)
    target = "kvproof.stateful_tests.tree.mutants:SplitDropsCarriedCutoffs"
    ran = kvproof_cli("check", "--target", target, "--profile", "quick", "--fail-fast", "--processes", processes)
    assert ran.code == EXIT_FAIL, ran.out
    failed = int(ran.last.split(" failed")[0].rsplit(" ", 1)[-1])
    assert 1 <= failed <= int(processes) and "0 skipped" in ran.last
    stopped = [line for line in ran.out.splitlines() if "not run: --fail-fast stopped at" in line]
    assert stopped, ran.out
    seconds = gate.recorded_seconds(target, "quick", tmp_path / gate.ROW_SECONDS)
    assert seconds and all(v >= 0 for v in seconds.values())
    checks = [type("C", (), {"key": k})() for k in ("a", "b", "c")]
    assert [c.key for c in gate.cheapest_first(checks, {"c": 1.0, "a": 5.0})] == ["c", "a", "b"]


def test_the_row_timings_remember_the_targets_run_last_and_forget_the_oldest(tmp_path):
    """A one-off target (a test's temporary command line) adds a key per run: the table keeps the latest
    ``SECONDS_KEPT`` (profile, target) pairs, so it cannot grow for ever, and a target run again is kept."""
    from kvproof import gate

    path = tmp_path / "seconds.json"

    def ran(target: str, seconds: float) -> None:
        row = gate.Row("tree", "impl", "fuzz", seconds=seconds)
        gate.record_seconds(gate.GateReport(target, "quick", 1, ("tree",), [row]), path)

    for i in range(gate.SECONDS_KEPT + 4):
        ran(f"exec:one-off {i}", float(i))
    ran("exec:one-off 2", 9.0)  # forgotten, then run again: remembered anew
    kept = json.loads(path.read_text())
    # 0-3 went first; running 2 again let 4, the oldest, go
    assert len(kept) == gate.SECONDS_KEPT and "quick:exec:one-off 4" not in kept
    assert gate.recorded_seconds("exec:one-off 2", "quick", path) == {"tree: fuzz": 9.0}
    assert gate.recorded_seconds(f"exec:one-off {gate.SECONDS_KEPT + 3}", "quick", path) == {
        "tree: fuzz": float(gate.SECONDS_KEPT + 3)
    }


def options_without_help(group) -> list[str]:
    """Every option of every command under ``group`` that has no line of help (``--help`` itself aside)."""
    import click

    found = []

    def walk(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])
        found.extend(
            f"{' '.join(path)} {p.opts[0]}"
            for p in command.params
            if isinstance(p, click.Option) and not p.help and not p.hidden and p.name != "help"
        )

    walk(group, ["kvproof"])
    return found


def test_every_option_of_every_command_has_a_line_of_help():
    import click

    from kvproof.cli import main

    assert options_without_help(main) == []

    @click.group()
    def toy():
        """A toy group (the negative control)."""

    @toy.command()
    @click.option("--size", type=int, default=1)
    def run(size):
        """A command whose option says nothing."""

    assert options_without_help(toy) == ["kvproof run --size"]


def profile_defaults_that_differ(group) -> list[str]:
    """Every ``--profile`` of ``group``'s commands whose default is not the shared one (None, resolved by
    ``profiles.profile_choice`` to $KVPROOF_PROFILE or ci) or whose help does not say so."""
    import click

    found: list[str] = []

    def walk(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])
        found.extend(
            f"{' '.join(path)} --profile"
            for p in command.params
            if isinstance(p, click.Option)
            and "--profile" in p.opts
            and (p.default is not None or not (p.help or "").endswith("default: $KVPROOF_PROFILE or ci"))
        )

    walk(group, ["kvproof"])
    return found


def test_every_profile_option_has_the_one_default(monkeypatch):
    """One option, one default: ``--profile`` of check, prove, explore, fuzz, releases, mutate and bench ttd is
    $KVPROOF_PROFILE (when the command offers that profile), else ci."""
    import click

    from kvproof.cli import main
    from kvproof.cli.options import profile_option
    from kvproof.stateful_tests.harness.profiles import profile_choice

    assert profile_defaults_that_differ(main) == []
    monkeypatch.delenv("KVPROOF_PROFILE", raising=False)
    assert profile_choice(None) == "ci" and profile_choice("quick") == "quick"
    monkeypatch.setenv("KVPROOF_PROFILE", "quick")
    assert profile_choice(None) == "quick" == profile_choice(None, ("quick", "ci"))
    monkeypatch.setenv("KVPROOF_PROFILE", "deep")
    assert profile_choice(None) == "deep" and profile_choice(None, ("quick", "ci")) == "ci"

    @click.group()
    def toy():
        """A toy group (the negative control)."""

    @toy.command()
    @click.option("--profile", type=click.Choice(["quick", "ci"]), default="quick", help="its own default")
    def own():
        """A command with a default of its own."""

    @toy.command()
    @profile_option()
    def shared(profile):
        """A command with the shared option."""

    assert profile_defaults_that_differ(toy) == ["kvproof own --profile"]


def test_every_processes_option_has_the_one_default(monkeypatch):
    """One option, one default: ``--processes`` of check, conform, fuzz and stress tree is $KVPROOF_PROCESSES, else
    the machine's cores (``shards.processes_choice``); the control: a value given wins."""
    import os

    import click

    from kvproof.cli import main
    from kvproof.stateful_tests.harness.shards import processes_choice

    commands = {
        "check": main.commands["check"],
        "conform tree": main.commands["conform"].commands["tree"],
        "fuzz": main.commands["fuzz"],
        "stress tree": main.commands["stress"].commands["tree"],
    }
    for name, command in commands.items():
        option = next(p for p in command.params if isinstance(p, click.Option) and "--processes" in p.opts)
        ctx = click.Context(command)
        monkeypatch.setenv("KVPROOF_PROCESSES", "3")
        assert option.process_value(ctx, None) == 3 and option.process_value(ctx, 1) == 1, name
        monkeypatch.delenv("KVPROOF_PROCESSES")
        assert option.process_value(ctx, None) == (os.cpu_count() or 1), name
        assert option.help.endswith("default: $KVPROOF_PROCESSES, else the machine's cores"), name
    assert processes_choice(5) == 5


def test_a_profile_variable_that_names_no_profile_is_a_usage_error_on_every_command(kvproof_cli, monkeypatch):
    """``KVPROOF_PROFILE=dep``: every command that takes ``--profile`` refuses it (exit 2, the variable named), where
    ``check`` raised a traceback and ``mutate`` or ``releases`` quietly ran ci; the control: ``--profile`` given wins."""
    from kvproof.stateful_tests.harness.profiles import UnknownProfile, profile_choice

    monkeypatch.setenv("KVPROOF_PROFILE", "dep")
    with pytest.raises(UnknownProfile, match="KVPROOF_PROFILE='dep' names no profile"):
        profile_choice(None, ("quick", "ci"))
    assert profile_choice("quick") == "quick"  # the control
    for command in (("check", "--only", "node-rule"), ("mutate",), ("releases", "--version", "1.6.1"), ("bench", "ttd")):
        ran = kvproof_cli(*command)
        assert ran.code == EXIT_USAGE and "KVPROOF_PROFILE='dep' names no profile" in ran.out, (command, ran.out[-500:])
        assert "Traceback" not in ran.out
    assert kvproof_cli("check", "--only", "node-rule", "--profile", "quick").code == EXIT_PASS  # the control


def test_the_time_left_of_a_fresh_clone_counts_its_rows_by_their_typical_seconds():
    """``gate.run.time_left``: a row with a figure (timed here, or typical in the ci profile) counts it; any other the
    mean of the light rows finished so far, 2 s before any. Before, a fresh clone's first heavy row made it extrapolate:
    "about 507 s left" of a 98 s run."""
    from kvproof.gate.run import time_left

    assert time_left(["a", "b"], {"a": 4.0, "b": 6.0}, {}, 2) == 5.0
    assert time_left(["heavy", "light"], {"heavy": 32.0}, {"x: done": 3.0}, 1) == 35.0
    assert time_left(["light"], {}, {}, 2) == 2.0

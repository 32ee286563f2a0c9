"""`kvproof check` (the gate) and `kvproof vectors` (its vectors row alone)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import click

from .. import report as out
from ..report import EXIT_FAIL, EXIT_PASS, EXIT_SKIPPED
from .app import main
from .options import (
    allow_skip_option,
    json_option,
    profile_option,
    rules_option,
    seed_option,
    shard_options,
    strict_option,
    strict_shape_option,
    target_option,
)

# ----------------------------------------------------------------------------- check


@main.command()
@target_option("the tree the gate checks")
@profile_option()
@click.option("--family", "families", multiple=True, type=click.Choice(["tree", "sequences", "deepinfer", "proofs", "all"]),
              help="run only these rule families (repeatable); default: all for the embedded implementation, tree for any other target")
@seed_option(None, "replay a run (the deep profile draws a fresh seed and prints it)")
@click.option("--only", default=None, help="run only the rows whose family, layer or name contains this")
@json_option
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="also write JUnit XML, one testcase per row")
@allow_skip_option
@rules_option()
@strict_option
@strict_shape_option
@shard_options("rows", every_core=True)
@click.option("--fail-fast", is_flag=True,
              help="stop at the first failing row, running the rows cheapest first by what each took here last time "
                   "(.kvproof-cache/gate-seconds.json); the rows not reached are listed as not run")
def check(target: Any, profile: str | None, families: tuple[str, ...], seed: int | None, only: str | None,
          json_path: str | None, junit_path: str | None, allow_skip: bool, rules: str | None, strict: bool,
          strict_shape: bool, shard: Any, processes: int, executor: str, fail_fast: bool) -> None:
    """Run the gate: every check against one target, one row per check.

    Against Dynamo the reference follows the rule set of the installed release (printed at the
    start); a row whose only differences are known findings or intended variants passes as
    `pass (known: ...)` and names them, unless --strict.
    """
    from ..gate import FAMILIES, GateReport, Result, Row, plan, run_gate
    from ..stateful_tests.harness.profiles import profile_named

    chosen = profile_named(profile)
    factory = target.factory
    if target.name == "reference" and rules:  # the reference follows the rule set it is asked to
        from ..spec.rules import rule_set_named
        from ..stateful_tests.harness.targets import load_target

        factory = load_target("reference", rule_set_named(rules)).factory
    wanted = FAMILIES if "all" in families else families or None
    ctx, selection = plan(target.name, factory, chosen, seed, only, wanted, rules, strict, strict_shape, shard)
    console = out.console()
    console.print(f"kvproof check: target={target.name} profile={chosen.name} seed={ctx.seed} families={','.join(selection.families)}"
                  + ("" if shard.whole else f" shard={shard} ({len(selection.checks)} rows)"))
    console.print(f"kvproof check: {ctx.rules_note}", markup=False)
    if not selection.checks:
        raise click.UsageError(f"no gate row matches --only {only!r} in families {', '.join(selection.families)}")
    started = time.perf_counter()

    from ..gate import GateTask, cheapest_first, record_seconds, recorded_seconds

    processes = processes or int(os.environ.get("KVPROOF_PROCESSES") or 0) or os.cpu_count() or 1
    seconds = recorded_seconds(target.name, chosen.name)
    finished: set[str] = set()

    def progress(row: Row, done: int, total: int) -> None:
        elapsed = time.perf_counter() - started
        finished.add(f"{row.family}: {row.name}")
        rest = [c.key for c in selection.checks if c.key not in finished]
        left = (sum(seconds[k] for k in rest) / min(processes, len(rest) or 1) if all(k in seconds for k in rest)
                else elapsed / done * (total - done))  # by what the rows left took here last time, else the mean so far
        console.print(f"  [{done}/{total}] {row.result.value:<4} {row.family}: {row.name} ({row.seconds:.1f} s; "
                      f"elapsed {elapsed:.0f} s, about {left:.0f} s left)")

    task = GateTask(target.name, chosen.name, ctx.seed, only, wanted, rules, strict, strict_shape)
    if fail_fast and executor != "local":
        raise click.UsageError("--fail-fast stops the local rows at the first failure: drop --executor ray")
    if executor == "local" and processes > 1 and len(selection.checks) > 1:
        from ..gate.pool import run_rows

        console.print(f"kvproof check: {len(selection.checks)} rows as tasks of {processes} processes, "
                      + ("cheapest first (--fail-fast)" if fail_fast else "slowest first"))
        rows, not_run = run_rows(task, selection.checks, processes, seconds, progress, fail_fast)
        report = GateReport(target.name, chosen.name, ctx.seed, selection.families, rows,
                        [(c.key, why) for c, why in selection.left_out] + not_run, ctx.rules.name, ctx.rules_note)
        record_seconds(report)
    elif executor != "local":
        from ..gate import merge_gate
        from ..stateful_tests.harness.shards import ShardError, run_parts

        console.print(f"kvproof check: {len(selection.checks)} rows in {processes} parts ({executor})")
        try:
            parts = run_parts(task, shard.split(processes), processes, executor)
        except ShardError as exc:
            raise click.ClickException(str(exc)) from None
        report = merge_gate(parts, [c.key for c in selection.checks])
        report.left_out = [(c.key, why) for c, why in selection.left_out]
        for done, row in enumerate(report.rows, 1):
            progress(row, done, len(report.rows))
    else:
        if fail_fast:
            selection.checks = cheapest_first(selection.checks, seconds)
        report = run_gate(ctx, selection, progress, fail_fast)
        record_seconds(report)
    console.print()
    out.print_table(GateReport.HEADERS, report.table_rows(), numeric=(3, 4, 5), out=console)
    for row in report.rows:
        if row.left_out:
            console.print(f"\n{row.family}/{row.layer}: {row.name}: " + "".join(f"\n  {n}" for n in row.left_out), markup=False)
        if row.result is Result.PASS and row.known:
            said = row.notes or sorted(set(row.known))
            console.print(f"\nknown {row.family}/{row.layer}: {row.name}: " + "".join(f"\n  {n}" for n in said), markup=False)
        if row.result is not Result.PASS:
            console.print(f"\n{row.result.value} {row.family}/{row.layer}: {row.name}\n  {row.detail}", markup=False)
            if row.replay:
                console.print(f"  replay: {row.replay}", markup=False)
    if report.left_out:
        console.print()
        unselected: dict[str, int] = {}
        for key, why in report.left_out:
            family = key.split(": ", 1)[0]
            if why.startswith("family "):
                unselected[family] = unselected.get(family, 0) + 1
            else:
                console.print(f"left out {key}: {why}", markup=False)
        if unselected:
            counts = ", ".join(f"{family} ({n} rows)" for family, n in unselected.items())
            console.print(f"left out the families {counts}; --family all runs them")
    if json_path:
        out.write_json(json_path, "gate", report.to_json())
    if junit_path:
        out.write_junit(junit_path, f"kvproof check --target {target.name}",
                        [{"classname": f"kvproof.{r.family}.{r.layer}", **r.to_json()} for r in report.rows])
    total = time.perf_counter() - started
    console.print(f"\nkvproof check: {len(report.passed)} passed, {len(report.failed)} failed, {len(report.skipped)} skipped "
                  f"in {total:.1f} s (target={target.name} profile={chosen.name} seed={report.seed})")
    if report.failed:
        sys.exit(EXIT_FAIL)
    if report.skipped and not allow_skip:
        console.print("kvproof check: a skipped check is not a pass; install what it needs or pass --allow-skip")
        sys.exit(EXIT_SKIPPED)
    sys.exit(EXIT_PASS)



# ----------------------------------------------------------------------------- vectors


@main.command()
@target_option()
def vectors(target: Any) -> None:
    """Replay the observed-behaviour vectors (crtc.md §13 and §10), judged as the gate's vectors row judges them.

    The target's rule set is detected as for `kvproof check`: under a rule set that is not exact (Dynamo's
    concurrent tree) each vector is a differential stream against the reference under it; calls the target's
    surface cannot carry are listed as left out.
    """
    from ..gate import Result, make_context, run_check
    from ..gate.tree import CHECKS
    from ..stateful_tests.harness.profiles import profile_named
    from ..stateful_tests.tree.vectors import SCENARIOS

    ctx = make_context(target.name, target.factory, profile_named("quick"), 1)
    click.echo(f"vectors: {ctx.rules_note}")
    row = run_check(next(c for c in CHECKS if c.layer == "vectors"), ctx)
    for line in row.left_out + row.notes:
        click.echo(line)
    if row.result is not Result.PASS:
        click.echo(f"{row.result.value}: {row.detail}")
    click.echo(f"vectors: {len(SCENARIOS)} scenarios, {row.checks} steps, {row.result.value} (target={target.name})")
    sys.exit({Result.PASS: EXIT_PASS, Result.FAIL: EXIT_FAIL}.get(row.result, EXIT_SKIPPED))

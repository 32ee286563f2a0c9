"""`kvproof explore` and the schedule replay."""

from __future__ import annotations

import sys
from typing import Any

import click

from .. import report as out
from ..report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from .app import main
from .options import (
    json_option,
    profile_option,
    seed_option,
)


def _replay_schedule(text: str, target: Any) -> None:
    """``kvproof replay TOKEN|SCHEDULE.json``: one interleaving again, deterministically."""
    import dataclasses

    from ..stateful_tests.explore.campaign import replay_schedule
    from ..stateful_tests.explore.replay import Divergence
    from ..stateful_tests.explore.token import TokenError, load_schedule, parse_token

    try:
        schedule = load_schedule(text) if text.endswith(".json") else parse_token(text)
    except TokenError as exc:
        click.echo(f"replay: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    recorded_on = schedule.target
    if target is not None:
        schedule = dataclasses.replace(schedule, target=target.name)
    try:
        result, program = replay_schedule(schedule)
    except KeyError as exc:
        click.echo(f"replay: {exc.args[0]}", err=True)
        sys.exit(EXIT_USAGE)
    except Divergence as exc:
        why = (f"it was recorded on {recorded_on}, whose threads take other turns" if schedule.target != recorded_on
               else "the code under it has changed since it was recorded")
        click.echo(f"replay: the schedule does not fit {schedule.target} ({exc}): {why}", err=True)
        sys.exit(EXIT_FAIL)
    click.echo(f"replay: {schedule.scenario} on {schedule.target}: {len(schedule.decisions)} recorded decisions "
               f"(threads: {', '.join(f'{chr(97 + i)}={n}' for i, n in sorted(result.names.items()))})")
    for line in program.recorder.describe():
        click.echo(f"  {line}")
    for problem in result.problems:
        click.echo(problem)
    if schedule.kind and result.failed:
        click.echo(f"replay: shows {schedule.kind!r} as recorded" if problem_kind(result) == schedule.kind
                   else f"replay: shows {problem_kind(result)!r}, recorded as {schedule.kind!r}")
    elif schedule.kind:
        click.echo(f"replay: recorded as {schedule.kind!r} on {recorded_on}; passes on {schedule.target}")
    click.echo(f"replay: outcome={result.outcome.value} decisions={len(result.decisions)} steps={result.steps} "
               f"(decisions past the recorded ones never preempt)")
    sys.exit(EXIT_FAIL if result.failed else EXIT_PASS)


def problem_kind(result: Any) -> str:
    from ..stateful_tests.explore.programs import kind_of

    return kind_of(result.problems[0]) if result.problems else result.outcome.value


# ----------------------------------------------------------------------------- explore


@main.command()
@click.argument("scenario", required=False)
@click.option("--strategy", type=click.Choice(["pct", "random", "dfs", "hypothesis"]), default="pct", show_default=True,
              help="how schedules are chosen: PCT (random priorities, d change points), a random walk, bounded-preemption "
                   "depth-first search, or Hypothesis drawing and shrinking the schedule")
@click.option("--budget", type=int, default=None, help="schedules to run (default: the profile's; dfs stops when exhausted)")
@seed_option()
@click.option("--depth", type=int, default=None, help="PCT's bug depth d (default: the profile's, 3)")
@click.option("--preemptions", type=int, default=2, show_default=True, help="dfs: the preemption bound (-1: unbounded)")
@click.option("--target", "target_name", default="impl", show_default=True,
              help="impl, a broken structure's name (see --list), or module.path:Factory")
@profile_option()
@click.option("--faults", "faults", is_flag=True,
              help="instead: raise an injected fault at each decision point of each thread, once each, and judge what is left")
@click.option("--real", "real_runs", type=int, default=0,
              help="instead: run each scenario this many times on real threads (switch interval 1e-6), same checks")
@click.option("--list", "list_only", is_flag=True, help="list the scenarios and the broken structures, and exit")
@click.option("--mutants", is_flag=True, help="run the gate's explorer rows on every broken structure: each must be found")
@click.option("--fresh", is_flag=True, help="with --mutants: skip the saved regressions, so every find is the explorer's own")
@click.option("--save", "save_dir", type=click.Path(file_okay=False), default="kvproof-failures/schedules", show_default=True,
              help="where a failing schedule is saved as a file")
@json_option
def explore(scenario: str | None, strategy: str, budget: int | None, seed: int, depth: int | None, preemptions: int,
            target_name: str, profile: str | None, faults: bool, real_runs: int, list_only: bool, mutants: bool,
            fresh: bool, save_dir: str, json_path: str | None) -> None:
    """Explore the interleavings of a race scenario under the controlled scheduler (every scenario when none is named).

    SCENARIO is one of `--list`, a seeded random workload `random-ops.sSEED`, or (with
    `--strategy hypothesis`) `random-ops`, whose workload Hypothesis draws and shrinks with the schedule.

    Each schedule runs the scenario's threads one at a time, the strategy choosing who runs at
    every yield point and acquire; its history is checked for linearizability against the
    reference, and the structure's check() runs at the end. The first failing schedule is shrunk,
    saved, and printed as a token with the command that replays it. The last line is
    `explore: scenarios=N schedules=S failing=F`.
    """
    from ..stateful_tests.explore import campaign
    from ..stateful_tests.explore.token import save_schedule
    from ..stateful_tests.harness.profiles import profile_named

    if list_only:
        out.print_table(("scenario", "family", "race"), [(n, sc.family, sc.story) for n, sc in campaign.SCENARIOS.items()])
        click.echo("broken structures (targets): " + ", ".join(campaign.broken_subjects()))
        sys.exit(EXIT_PASS)
    chosen = profile_named(profile)
    if mutants:
        _explore_mutants(chosen, seed, fresh, json_path)
        return
    if scenario == campaign.RANDOM and strategy != "hypothesis":
        raise click.BadParameter(f"{campaign.RANDOM} draws its workload with --strategy hypothesis; "
                                 f"{campaign.RANDOM}.sSEED is a seeded one", param_hint="SCENARIO")
    if scenario is not None and scenario != campaign.RANDOM:
        try:
            campaign.scenario_named(scenario)
        except KeyError as exc:
            raise click.BadParameter(exc.args[0], param_hint="SCENARIO") from None
    subject = campaign.subject_for(target_name)
    if subject.why:
        click.echo(f"explore: {subject.why}", err=True)
        sys.exit(EXIT_USAGE)
    names = [scenario] if scenario else [n for n, sc in campaign.SCENARIOS.items() if subject.maker(sc.family) is not None]
    if real_runs:
        _explore_real(campaign, subject, names, real_runs)
        return
    if faults:
        _explore_faults(subject, names, json_path)
        return
    schedules = budget if budget is not None else chosen.explore.schedules
    d = depth if depth is not None else chosen.explore.pct_depth
    rows, found = [], []
    for name in names:
        if strategy == "hypothesis":
            report = campaign.explore_with_hypothesis(name, subject, schedules, seed)
        else:
            strat = campaign.strategy_named(strategy, seed, d, None if preemptions < 0 else preemptions)
            report = campaign.explore(name, subject, strat, schedules if strategy != "dfs" or budget else 10**9)
        verdict = "FAIL" if report.found else ("exhausted" if report.exhausted else "pass")
        rows.append((name, report.strategy, report.schedules, report.max_decisions, f"{report.seconds:.2f}", verdict))
        if strategy == "hypothesis" and report.schedules:
            click.echo(f"  {report.schedules} schedules, Hypothesis's shrinking runs included")
        if strategy == "pct" and report.schedules:
            click.echo(campaign.pct_budget_line(report.threads, report.max_decisions, d))
        for note in report.notes:
            click.echo(f"  note: {note}")
        if report.found:
            found.append(report.found)
    out.print_table(("scenario", "strategy", "schedules", "max decisions", "seconds", "result"), rows, numeric=(2, 3, 4))
    for f in found:
        path = save_schedule(f.schedule, save_dir)
        f.file = str(path)
        click.echo(f"\nFAIL {f.schedule.scenario} on {subject.name}: {f.problems[0].splitlines()[0]}")
        for line in f.problems[0].splitlines()[1:]:
            click.echo(f"  {line}")
        click.echo(f"  found at schedule {f.index} after {f.seconds:.2f} s; shrunk to {len(f.schedule.decisions)} decisions "
                   f"({f.preemptions} preemptions) from {f.original_decisions}")
        click.echo("  history of the shrunk schedule:")
        for line in f.history:
            click.echo(f"    {line}")
        if f.schedule.workload is None:
            click.echo(f"  token:  {f.token}")
        click.echo(f"  saved:  {path}\n  replay: {f.replay}")
    if json_path:
        out.write_json(json_path, "explore", {"target": subject.name, "strategy": strategy, "seed": seed, "rows": [
            dict(zip(("scenario", "strategy", "schedules", "max_decisions", "seconds", "result"), r)) for r in rows],
            "found": [{"token": f.token, "file": f.file, "kind": f.schedule.kind, "problem": f.problems[0]} for f in found]})
    click.echo(f"explore: scenarios={len(rows)} schedules={sum(r[2] for r in rows)} failing={len(found)}")
    sys.exit(EXIT_FAIL if found else EXIT_PASS)


def _explore_faults(subject: Any, names: list[str], json_path: str | None) -> None:
    """``kvproof explore --faults``: every (thread, decision point) pair faulted once; clean, torn, poisoned or broken."""
    from ..stateful_tests.explore.faults import OUTCOMES, explore_faults, summary

    reports = [r for r in (explore_faults(name, subject.name) for name in names) if r.pairs]
    rows = [(r.scenario, r.pairs, *(r.count(o) for o in OUTCOMES)) for r in reports]
    out.print_table(("scenario", "pairs tried", "clean", "torn-but-consistent", "poisoned", "broken"), rows,
                    numeric=(1, 2, 3, 4, 5))
    broken = [(r.scenario, *b) for r in reports for b in r.broken]
    for name, thread, at, point, problem in broken:
        click.echo(f"BROKEN {name}: a fault in {thread} at decision {at} ({point}): {problem}")
        click.echo(f"  replay: kvproof explore {name} --faults --target {subject.name}")
    if json_path:
        out.write_json(json_path, "explore-faults", {"target": subject.name, "rows": [
            dict(zip(("scenario", "pairs", *OUTCOMES), r)) for r in rows],
            "broken": [dict(zip(("scenario", "thread", "decision", "point", "problem"), b)) for b in broken]})
    click.echo(summary(reports))
    sys.exit(EXIT_FAIL if broken else EXIT_PASS)


def _explore_real(campaign: Any, subject: Any, names: list[str], runs: int) -> None:
    """``kvproof explore --real N``: the scenarios on real threads (failures replay only probabilistically)."""
    from ..stateful_tests.explore.real_threads import explore_real

    rows, failing = [], []
    for name in names:
        sc = campaign.scenario_named(name)
        make = subject.maker(sc.family)
        if make is None:
            continue
        report = explore_real(name, sc.build(make), runs)
        rows.append((name, report.runs, f"{report.seconds:.2f}", "FAIL" if report.failures else "pass"))
        for index, problems in report.failures:
            failing.append(name)
            click.echo(f"FAIL {name} on {subject.name}, real-thread run {index}: {problems[0]}")
    out.print_table(("scenario", "real-thread runs", "seconds", "result"), rows, numeric=(1, 2))
    click.echo(f"explore --real: scenarios={len(rows)} runs={sum(r[1] for r in rows)} failing={len(failing)}")
    sys.exit(EXIT_FAIL if failing else EXIT_PASS)


def _explore_mutants(profile: Any, seed: int, fresh: bool, json_path: str | None) -> None:
    """``kvproof explore --mutants``: the gate's explorer sweep on every broken structure, each must be found."""
    from ..stateful_tests.explore import campaign

    rows, missed = [], []
    for name in campaign.broken_subjects():
        subject = campaign.subject_for(name)
        report = campaign.sweep(subject, subject.families, profile.explore.schedules, seed, profile.explore.pct_depth,
                                regressions=not fresh)
        f = report.found
        if report.regression_failure:
            click.echo(f"explore: {report.regression_failure}", err=True)
        if f is None:
            missed.append(name)
        rows.append((name, f.schedule.scenario if f else "-", f.schedule.kind if f else "NOT FOUND", report.schedules,
                     f"{report.seconds:.2f}", f.token if f else "-"))
    if not fresh:
        click.echo("(the saved regressions, stateful_tests/explore/regressions/, are replayed first: a structure one of "
                   "them catches shows 0 schedules; --fresh explores from nothing)")
    out.print_table(("broken structure", "scenario", "kind", "schedules", "seconds", "token"), rows, numeric=(3, 4),
                    title=f"the gate's explorer rows ({profile.name} profile: {profile.explore.schedules} schedules per "
                          f"scenario and strategy, seed {seed})")
    if json_path:
        out.write_json(json_path, "explore-mutants", {"profile": profile.name, "seed": seed, "rows": [
            dict(zip(("mutant", "scenario", "kind", "schedules", "seconds", "token"), r)) for r in rows]})
    click.echo(f"explore: mutants={len(rows)} found={len(rows) - len(missed)} missed={len(missed)}"
               + (f" ({', '.join(missed)})" if missed else ""))
    sys.exit(EXIT_FAIL if missed else EXIT_PASS)

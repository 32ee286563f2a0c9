"""`kvproof explore`: the interleaving explorer, its fault injection, real threads and the broken-structure sweep."""

from __future__ import annotations

import click

from ..report import finish
from .app import main
from .options import STRUCTURE, json_option, profile_option, seed_option

EXAMPLES = """
\b
Examples:
  kvproof explore --list
  kvproof explore fanout-vs-split --budget 200
  kvproof explore fanout-vs-split --target FanoutWithoutGate
  kvproof explore --mutants --profile quick
  kvproof explore --faults
  kvproof replay schedule 'fanout-vs-split/FanoutWithoutGate/pct.d3.s1#...'
"""


@main.command(epilog=EXAMPLES)
@click.argument("scenario", required=False)
@click.option(
    "--strategy",
    type=click.Choice(["pct", "random", "dfs", "hypothesis"]),
    default="pct",
    show_default=True,
    help="how schedules are chosen: PCT (random priorities, d change points), a random walk, bounded-preemption "
    "depth-first search, or Hypothesis drawing and shrinking the schedule",
)
@click.option("--budget", type=int, default=None, help="schedules to run (default: the profile's; dfs stops when exhausted)")
@seed_option()
@click.option("--depth", type=int, default=None, help="PCT's bug depth d (default: the profile's, 3)")
@click.option("--preemptions", type=int, default=2, show_default=True, help="dfs: the preemption bound (-1: unbounded)")
@click.option(
    "--target",
    "target_name",
    type=STRUCTURE,
    default="impl",
    show_default=True,
    help="impl, a broken structure's name (see --list), or module.path:Factory",
)
@profile_option()
@click.option(
    "--faults",
    "faults",
    is_flag=True,
    help="instead: raise an injected fault at each decision point of each thread, once each, and judge what is left",
)
@click.option(
    "--real",
    "real_runs",
    type=int,
    default=0,
    help="instead: run each scenario this many times on real threads (switch interval 1e-6), same checks",
)
@click.option("--list", "list_only", is_flag=True, help="list the scenarios and the broken structures, and exit")
@click.option("--mutants", is_flag=True, help="run the gate's explorer rows on every broken structure: each must be found")
@click.option("--fresh", is_flag=True, help="with --mutants: skip the saved regressions, so every find is the explorer's own")
@click.option(
    "--save",
    "save_dir",
    type=click.Path(file_okay=False),
    default="kvproof-failures/schedules",
    show_default=True,
    help="where a failing schedule is saved as a file",
)
@json_option
def explore(
    scenario: str | None,
    strategy: str,
    budget: int | None,
    seed: int,
    depth: int | None,
    preemptions: int,
    target_name: str,
    profile: str | None,
    faults: bool,
    real_runs: int,
    list_only: bool,
    mutants: bool,
    fresh: bool,
    save_dir: str,
    json_path: str | None,
) -> None:
    """Explore the interleavings of a race scenario under the controlled scheduler (every scenario when none is named).

    SCENARIO is one of `--list`, a seeded random workload `random-ops.sSEED`, or (with
    `--strategy hypothesis`) `random-ops`, whose workload Hypothesis draws and shrinks with the schedule.

    Each schedule runs the scenario's threads one at a time, the strategy choosing who runs at
    every yield point and acquire; its history is checked for linearizability against the
    reference, and the structure's check() runs at the end. The first failing schedule is shrunk,
    saved, and printed as a token with the command that replays it. The last line is
    `explore: scenarios=N schedules=S failing=F`.
    """
    from ..stateful_tests.explore import runs
    from ..stateful_tests.harness.profiles import profile_named

    if list_only:
        finish(runs.ScenarioList())
    chosen = profile_named(profile)
    if mutants:
        finish(runs.run_mutants(chosen, seed, fresh, warn=lambda line: click.echo(line, err=True)), json_path)
    if real_runs:
        finish(runs.run_real(target_name, scenario, real_runs, say=click.echo))
    if faults:
        finish(runs.run_faults(target_name, scenario), json_path)
    plan = runs.ExplorePlan(scenario, strategy, budget, seed, depth, preemptions, save_dir)
    finish(runs.run_explore(plan, target_name, chosen, say=click.echo), json_path)

"""`kvproof fuzz`: hostile input over every tree at once."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import click

from .. import report as out
from ..report import EXIT_FAIL, EXIT_PASS
from .app import main
from .options import (
    json_option,
    profile_option,
    seed_option,
    shard_options,
)

# ----------------------------------------------------------------------------- fuzz


@main.command()
@click.option("--inputs", type=int, default=None,
              help="hostile cases to run, each over every target (default: the profile's: quick 300, ci 2,000, deep 100,000)")
@seed_option(None, "Hypothesis's seed (default: 1, or a fresh one in the deep profile, printed)")
@profile_option()
@click.option("--target", "names", multiple=True, type=click.Choice(["reference", "impl", "impl-lanes", "impl-pool", "dynamo"]),
              help="run only these trees (repeatable; the reference always runs, as the judge); default: all five")
@click.option("--replay", "replay_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="instead: run one saved case (kvproof-failures/fuzz/*.json) again and show what each tree did")
@click.option("--save", "save_dir", type=click.Path(file_okay=False), default="kvproof-failures/fuzz", show_default=True,
              help="where a failing case is saved, shrunk")
@shard_options("cases")
@json_option
def fuzz(inputs: int | None, seed: int | None, profile: str | None, names: tuple[str, ...], replay_file: str | None,
         save_dir: str, shard: Any, processes: int, executor: str, json_path: str | None) -> None:
    """Hostile input: grammar-aware and byte-level cases over every tree at once (docs/hostile-input.md).

    After each case: a typed error or an acceptance, the state byte-identical after a rejection, check()
    holding, every kvproof tree deciding as the reference does, Dynamo too except the recorded
    differences. The last line is `fuzz: inputs=N targets=T untyped=0 problems=0 known=...`.
    """
    from ..stateful_tests.fuzz.campaign import SAID, TARGETS, FuzzFileError, FuzzTask, fuzz_sharded, replay, summary_line
    from ..stateful_tests.harness.profiles import profile_named
    from ..stateful_tests.harness.shards import ShardError

    fleet = tuple(dict.fromkeys(("reference", *names))) if names else TARGETS
    if replay_file:
        try:
            case, seen, problems = replay(replay_file, fleet)
        except FuzzFileError as exc:
            raise click.BadParameter(str(exc), param_hint="--replay") from None
        click.echo(f"case: {case.describe()}")
        out.print_table(("target", "outcome", "message", "check()"),
                        [(name, o.outcome, o.message[:90], o.check or "holds") for name, o in seen.items()])
        for problem in problems:
            click.echo(f"PROBLEM {problem.line()}")
        click.echo(f"replay: problems={len(problems)}")
        sys.exit(EXIT_FAIL if problems else EXIT_PASS)
    chosen = profile_named(profile)
    if seed is None:
        seed = 1 if chosen.fixed_seed else int.from_bytes(os.urandom(4), "big")
        click.echo(f"kvproof fuzz: seed={seed} (replay with --seed {seed})")
    count = inputs if inputs is not None else chosen.tree.fuzz_inputs
    started = time.monotonic()
    try:
        report = fuzz_sharded(FuzzTask(count, seed, fleet, save_dir), shard, processes, executor)
    except ShardError as exc:
        raise click.ClickException(str(exc)) from None
    seconds = time.monotonic() - started
    outcomes = sorted({o for c in report.outcomes.values() for o in c}, key=lambda o: (o != "ok", o))
    columns = list(report.outcomes)
    out.print_table(("outcome", *columns), [(o, *(report.outcomes[n].get(o, 0) for n in columns)) for o in outcomes],
                    numeric=tuple(range(1, len(columns) + 1)))
    for name, why in report.unavailable.items():
        click.echo(f"not run: {name}: {why}")
    for finding, n in sorted(report.known.items()):
        click.echo(f"known {finding} in {n} cases: {SAID[finding]} (docs/hostile-input.md)")
    if report.problems:
        click.echo(f"PROBLEM {report.problems[0].line()}")
        if report.case is not None:
            click.echo(f"  shrunk case: {report.case.describe()}")
        if report.file:
            click.echo(f"  saved: {report.file}")
            click.echo(f"  replay: kvproof fuzz --replay {report.file}")
    if json_path:
        out.write_json(json_path, "fuzz", {"seed": seed, "inputs": report.inputs, "seconds": round(seconds, 2),
                                           "outcomes": {n: dict(c) for n, c in report.outcomes.items()},
                                           "known": dict(report.known), "problems": [p.line() for p in report.problems],
                                           "file": report.file, "unavailable": report.unavailable,
                                           "shard": report.shard, "cases_run": report.ordinals})
    click.echo(f"{summary_line(report)} seconds={seconds:.1f} seed={seed}" + ("" if shard.whole else f" shard={shard}"))
    sys.exit(EXIT_FAIL if report.problems else EXIT_PASS)

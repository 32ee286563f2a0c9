"""`kvproof fuzz`: hostile input over every tree at once."""

from __future__ import annotations

from typing import Any

import click

from ..report import finish
from .app import main
from .options import (
    json_option,
    profile_option,
    seed_option,
    shard_options,
)

# ----------------------------------------------------------------------------- fuzz


@main.command(
    epilog="""
\b
Examples:
  kvproof fuzz --profile quick
  kvproof fuzz --inputs 5000 --seed 3 --target impl --target dynamo
  kvproof fuzz --shard 1/4 --processes 2
  kvproof fuzz --replay kvproof-failures/fuzz/<case>.json
"""
)
@click.option(
    "--inputs",
    type=int,
    default=None,
    help="hostile cases to run, each over every target (default: the profile's: quick 300, ci 2,000, deep 100,000)",
)
@seed_option(None, "Hypothesis's seed (default: 1, or a fresh one in the deep profile, printed)")
@profile_option()
@click.option(
    "--target",
    "names",
    multiple=True,
    type=click.Choice(["reference", "impl", "impl-lanes", "impl-pool", "dynamo"]),
    help="run only these trees (repeatable; the reference always runs, as the judge); default: all five",
)
@click.option(
    "--replay",
    "replay_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="instead: run one saved case (kvproof-failures/fuzz/*.json) again and show what each tree did",
)
@click.option(
    "--save",
    "save_dir",
    type=click.Path(file_okay=False),
    default="kvproof-failures/fuzz",
    show_default=True,
    help="where a failing case is saved, shrunk",
)
@shard_options("cases")
@json_option
def fuzz(
    inputs: int | None,
    seed: int | None,
    profile: str | None,
    names: tuple[str, ...],
    replay_file: str | None,
    save_dir: str,
    shard: Any,
    processes: int,
    executor: str,
    json_path: str | None,
) -> None:
    """Hostile input: grammar-aware and byte-level cases over every tree at once (docs/hostile-input.md).

    After each case: a typed error or an acceptance, the state byte-identical after a rejection, check()
    holding, every kvproof tree deciding as the reference does, Dynamo too except the recorded
    differences. The last line is `fuzz: inputs=N targets=T untyped=0 problems=0 known=...`.
    """
    from ..stateful_tests.fuzz.runs import run_fuzz, run_fuzz_replay
    from ..stateful_tests.harness.profiles import profile_named

    if replay_file:
        finish(run_fuzz_replay(replay_file, names), json_path)
    report = run_fuzz(inputs, seed, profile_named(profile), names, save_dir, shard, processes, executor, say=click.echo)
    finish(report, json_path)

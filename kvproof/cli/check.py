"""`kvproof check` (the gate) and `kvproof vectors` (its vectors row alone)."""

from __future__ import annotations

from typing import Any

import click

from ..report import finish
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
    trace_option,
)

# ----------------------------------------------------------------------------- check


@main.command(
    epilog="""
\b
Examples:
  kvproof check --profile quick --fail-fast
  kvproof check --target dynamo --family tree
  kvproof check --target mypackage.tree:MyTree --json gate.json --junit gate.xml
  kvproof check --only vectors --seed 7
"""
)
@target_option("the tree the gate checks")
@profile_option()
@click.option(
    "--family",
    "families",
    multiple=True,
    type=click.Choice(["tree", "sequences", "deepinfer", "proofs", "all"]),
    help="run only these rule families (repeatable); default: all for the embedded implementation, tree for any other target",
)
@seed_option(None, "replay a run (the deep profile draws a fresh seed and prints it)")
@click.option("--only", default=None, help="run only the rows whose family, layer or name contains this")
@json_option
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="also write JUnit XML, one testcase per row",
)
@allow_skip_option
@rules_option()
@strict_option
@strict_shape_option
@shard_options("rows (as tasks of a process pool, the slowest first)")
@click.option(
    "--fail-fast",
    is_flag=True,
    help="stop at the first failing row, running the rows cheapest first by what each took here last time "
    "(.kvproof-cache/gate-seconds.json); the rows not reached are listed as not run",
)
@trace_option(
    "the Mooncake trace the traffic row replays (its first requests, by profile: quick 150, ci 1,000, deep "
    "12,031); default: the full trace beside the checkout (../shared/data/mooncake), else the shipped slice"
)
def check(
    target: Any,
    profile: str | None,
    families: tuple[str, ...],
    seed: int | None,
    only: str | None,
    json_path: str | None,
    junit_path: str | None,
    allow_skip: bool,
    rules: str | None,
    strict: bool,
    strict_shape: bool,
    shard: Any,
    processes: int,
    executor: str,
    fail_fast: bool,
    trace: str | None,
) -> None:
    """Run the gate: every check against one target, one row per check.

    Against Dynamo the reference follows the rule set of the installed release (printed at the
    start); a row whose only differences are known findings or intended variants passes as
    `pass (known: ...)` and names them, unless --strict.
    """
    from ..gate.run import CheckPlan, run_check

    options = CheckPlan(profile, families, seed, only, rules, strict, strict_shape, shard, processes, executor, fail_fast, trace)
    finish(run_check(target, options, say=click.echo), json_path, junit_path, allow_skip)


# ----------------------------------------------------------------------------- vectors


@main.command()
@target_option()
def vectors(target: Any) -> None:
    """Replay the observed-behaviour vectors (crtc.md §13 and §10), judged as the gate's vectors row judges them.

    The target's rule set is detected as for `kvproof check`: under a rule set that is not exact (Dynamo's
    concurrent tree) each vector is a differential stream against the reference under it; calls the target's
    surface cannot carry are listed as left out.
    """
    from ..gate.run import run_vectors

    finish(run_vectors(target, say=click.echo))

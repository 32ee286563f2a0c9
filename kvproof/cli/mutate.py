"""`kvproof mutate`: mutation testing with mutmut."""

from __future__ import annotations

from typing import Any

import click

from ..report import finish
from .app import main
from .options import (
    _parse_shard,
    json_option,
    profile_option,
)

# ----------------------------------------------------------------------------- mutate


def _layers(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    from ..stateful_tests.mutation.profiles import LAYERS

    listed = [v for v in value if "," in v or " " in v.strip()]
    if listed:
        raise click.BadParameter(f"{listed[0]!r}: one layer or module per --paths (repeat the option for several)")
    chosen = [v.strip().strip("/") for v in value]
    unknown = [c for c in chosen if c.split("/", 1)[0] not in LAYERS or ("/" in c and not c.endswith(".py"))]
    if unknown:
        raise click.BadParameter(f"{unknown[0]!r}: choose from {', '.join(LAYERS)}, or a module of one (reference/sequences.py)")
    return tuple(dict.fromkeys(chosen)) or LAYERS


@main.command()
@click.option(
    "--paths",
    "layers",
    multiple=True,
    callback=_layers,
    metavar="LAYERS",
    help="mutate only these layers (spec, reference, impl) or modules (reference/sequences.py), one per "
    "--paths, repeatable; default: all three layers",
)
@profile_option(
    "quick: a few spec modules with the tests written for them (minutes); ci: every module of the layers, "
    "judged by the tree, sequences and deepinfer tests without their slow campaigns (hours)",
    among=("quick", "ci"),
)
@click.option(
    "--shard",
    callback=_parse_shard,
    default=None,
    metavar="K/N",
    help="run only shard K of N: the mutants, sorted by name, numbered i with i % N == K-1",
)
@click.option("--max-children", type=click.IntRange(1), default=1, show_default=True, help="mutmut's parallel test workers")
@click.option("--timeout", type=click.FloatRange(1), default=None, help="stop mutmut (and fail) after this many seconds")
@click.option(
    "--equivalents",
    "equivalents_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="the reviewed equivalent mutants (default: stateful_tests/mutation/equivalents.toml)",
)
@click.option(
    "--merge",
    "merge_paths",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    metavar="JSON",
    help="run nothing: merge the --json reports of every shard K/N of one run, or of whole runs that split "
    "whole layers by module (repeat), and judge the union",
)
@click.option(
    "--rejudge",
    "rejudge_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    metavar="JSON",
    help="judge again only what this earlier --json report (same profile and shard; its modules or some of them) left unsettled: "
    "its survivors, gaps, unchecked mutants and every mutant of an edited function; carry its kills",
)
@click.option(
    "--gate-ttd",
    "gate_sample",
    type=click.IntRange(0),
    default=None,
    help="after the run, switch on this many of its killed mutants (every k-th by name) one at a time and time "
    "`kvproof check --profile PROFILE --fail-fast` until it fails; default: 10 for quick, 0 for ci",
)
@json_option
def mutate(
    layers: tuple[str, ...],
    profile: str | None,
    shard: Any,
    max_children: int,
    timeout: float | None,
    equivalents_path: str | None,
    merge_paths: tuple[str, ...],
    rejudge_path: str | None,
    gate_sample: int | None,
    json_path: str | None,
) -> None:
    """Mutation testing with mutmut: does the suite notice a changed rule? (stateful_tests/mutation/)

    Prints the score per module and layer (killed / (killed + survived); mutants no test reaches are
    a gap, in their own column, never killed), every survivor's diff, and the median time to detection.
    Exit 0 when spec/ and reference/ score at least 95% and impl/ 90%, 1 when not, 2 when mutmut
    is not installed (the [mutate] extra). Works in a copy under .kvproof-mutate/ of a checkout.

    A CI matrix runs ``--shard K/N --json shard-K.json`` per job, then ``--merge shard-*.json``
    judges the whole run: the shards must be all N of one run, disjoint, or the merge refuses. A
    matrix split by module (``--paths impl/radix_tree.py`` per job) merges the same way: whole runs,
    each module in one of them, every layer they touch judged whole.
    """
    from ..stateful_tests.harness.profiles import profile_choice
    from ..stateful_tests.mutation.runs import MutatePlan, run_merge, run_mutate

    if merge_paths:
        finish(run_merge(merge_paths, say=click.echo), json_path)
    plan = MutatePlan(
        layers,
        profile_choice(profile, ("quick", "ci")),
        shard,
        max_children,
        timeout,
        equivalents_path,
        rejudge_path,
        gate_sample,
    )
    finish(run_mutate(plan, say=click.echo, warn=lambda line: click.echo(line, err=True)), json_path)

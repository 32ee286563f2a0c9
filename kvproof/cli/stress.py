"""`kvproof stress tree|sequences` and `kvproof soak`."""

from __future__ import annotations

from typing import Any

import click

from ..report import finish
from .app import main
from .options import (
    SOAK_TARGET,
    json_option,
    model_option,
    seed_option,
    shard_options,
)

# ----------------------------------------------------------------------------- stress


@main.group(
    epilog="""
\b
Examples:
  kvproof stress tree --ops 20000 --seed 1
  kvproof stress tree --mutant NoVersionCheck --runs 5          (a broken tree: it must be caught)
  kvproof stress sequences --threads 8 --rounds 3
"""
)
def stress() -> None:
    """Real-thread stress of the concurrent structures."""


@stress.command("tree")
@click.option(
    "--ops", type=int, default=20_000, show_default=True, help="write operations in all, split evenly over the modes run"
)
@seed_option()
@click.option(
    "--mode",
    type=click.Choice(["strict", "chaos", "both"]),
    default="both",
    show_default=True,
    help="strict: no holes, exact parity with the reference; chaos: holes and churn; both: half each",
)
@click.option("--writers", type=int, default=8, show_default=True, help="threads applying events")
@click.option("--readers", type=int, default=4, show_default=True, help="threads asking find_matches while the writers run")
@click.option("--check-every", type=int, default=250, show_default=True, help="operations per writer between quiescent checks")
@click.option(
    "--yield-sleep", type=float, default=0.02, show_default=True, help="chance a yield point gives up the interpreter lock"
)
@click.option("--mutant", default=None, help="stress a deliberately broken tree (a negative control)")
@click.option("--runs", type=int, default=1, show_default=True, help="repeat with seeds seed, seed+1, ... and count detections")
@shard_options("runs (each mode of each seed, numbered run-major)")
@json_option
def stress_tree(
    ops: int,
    seed: int,
    mode: str,
    writers: int,
    readers: int,
    check_every: int,
    yield_sleep: float,
    mutant: str | None,
    runs: int,
    shard: Any,
    processes: int,
    executor: str,
    json_path: str | None,
) -> None:
    """The concurrent tree under 8 writers and 4 readers; last line `stress: ops=N reads=R overcounts=0 parity_breaks=0`."""
    from ..stateful_tests.tree.stress import StressTask, run_stress_tree

    modes = ("strict", "chaos") if mode == "both" else (mode,)
    task = StressTask(ops, seed, modes, writers, readers, check_every, yield_sleep, max(1, runs), mutant)
    finish(run_stress_tree(task, mode, shard, processes, executor), json_path)


@stress.command("sequences")
@click.option("--threads", type=int, default=8, show_default=True, help="threads calling the tracker at once")
@click.option("--ops", type=int, default=400, show_default=True, help="operations per thread and round")
@seed_option(1, "the first round's seed; round k uses seed + k")
@click.option("--rounds", type=int, default=1, show_default=True, help="rounds, each on a fresh tracker")
@model_option("impl", "the tracker stressed: impl, a broken twin's name, or module.path:Class")
def stress_sequences(threads: int, ops: int, seed: int, rounds: int, model: Any) -> None:
    """The concurrent slot tracker under racing adds, marks and frees; audited at quiescence.

    The last line is `stress sequences: rounds=R ops=N problems=P`.
    """
    from ..stateful_tests.sequences.stress import run_stress_command

    finish(run_stress_command(model.factory, model.name, threads, ops, seed, rounds, say=click.echo))


# ----------------------------------------------------------------------------- soak


@main.command()
@click.option(
    "--family",
    type=click.Choice(["tree", "sequences"]),
    default="tree",
    show_default=True,
    help="soak a tree, or a slot tracker (stateful_tests/sequences/soak.py)",
)
@click.option(
    "--target",
    "target_name",
    type=SOAK_TARGET,
    default="impl",
    show_default=True,
    help="reference, impl, impl-lanes, impl-pool, reference@RULES, module.path:Factory (a tree), or a leaking "
    "twin of the family's soak module (LEAKY)",
)
@click.option("--epochs", type=int, default=36, show_default=True, help="epochs of simulated traffic")
@click.option("--epoch-s", type=float, default=600.0, show_default=True, help="simulated seconds per epoch")
@click.option("--rate", type=float, default=4.0, show_default=True, help="requests per simulated second")
@click.option("--workers", type=int, default=6, show_default=True, help="workers of the simulated traffic")
@click.option("--capacity", type=int, default=160, show_default=True, help="blocks each rank's engine holds")
@click.option("--slack", type=float, default=0.25, show_default=True, help="allowed growth per live pair, first to last window")
@click.option("--untraced", is_flag=True, help="skip tracemalloc (faster): the traced and hidden bytes are then not judged")
@click.option(
    "--tolerate-dead-nodes",
    is_flag=True,
    help="growth that dead nodes kept by design explain (the rule sets before 1.6, e.g. reference@dynamo-1.4), "
    "and nothing else, exits 0, reported as known",
)
@click.option(
    "--trace",
    "trace_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="serve the requests of this Mooncake trace (looped with fresh ids each hour) instead of synthetic chat "
    "traffic; 'default': the full trace beside the checkout, else the shipped slice",
)
@seed_option()
@json_option
def soak(
    family: str,
    target_name: str,
    epochs: int,
    epoch_s: float,
    rate: float,
    workers: int,
    capacity: int,
    slack: float,
    untraced: bool,
    tolerate_dead_nodes: bool,
    trace_file: str | None,
    seed: int,
    json_path: str | None,
) -> None:
    """The churn soak: hours of simulated traffic, a census of the tree after each epoch, and no unbounded growth.

    Prints one line per epoch and a verdict; lists every size law broken and every figure that
    trends up. Exits 1 on growth. The rule sets of releases before 1.6 keep dead leaves as those
    releases did (stateful_tests/tree/soak.py, beyond_dead_nodes); --tolerate-dead-nodes fails only on
    growth beyond that.
    """
    if family == "sequences":
        from ..stateful_tests.sequences.soak import TrackerPlan
        from ..stateful_tests.sequences.soak import run_soak_command as soak_tracker

        tracker_plan = TrackerPlan(
            epochs=epochs,
            epoch_s=epoch_s,
            rate=rate,
            workers=workers,
            slack=slack,
            traced=not untraced,
            warmup=max(1, epochs // 6),
            window=max(1, epochs // 4),
        )
        finish(soak_tracker(target_name, tracker_plan, seed, say=click.echo), json_path)
    from ..stateful_tests.tree.soak import SoakPlan, run_soak_command

    plan = SoakPlan(
        epochs=epochs,
        epoch_s=epoch_s,
        rate=rate,
        workers=workers,
        capacity=capacity,
        slack=slack,
        warmup=max(1, epochs // 6),
        window=max(1, epochs // 4),
        traced=not untraced,
    )
    finish(run_soak_command(target_name, plan, seed, trace_file, tolerate_dead_nodes, say=click.echo), json_path)

"""`kvproof stress tree|sequences` and `kvproof soak`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from .. import report as out
from ..report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from .app import main
from .options import (
    _sequence_model,
    json_option,
    seed_option,
    shard_options,
)

# ----------------------------------------------------------------------------- stress


@main.group()
def stress() -> None:
    """Real-thread stress of the concurrent structures."""


@stress.command("tree")
@click.option("--ops", type=int, default=20_000, show_default=True, help="write operations in all, split evenly over the modes run")
@seed_option()
@click.option("--mode", type=click.Choice(["strict", "chaos", "both"]), default="both", show_default=True,
              help="strict: no holes, exact parity with the reference; chaos: holes and churn; both: half each")
@click.option("--writers", type=int, default=8, show_default=True, help="threads applying events")
@click.option("--readers", type=int, default=4, show_default=True, help="threads asking find_matches while the writers run")
@click.option("--check-every", type=int, default=250, show_default=True, help="operations per writer between quiescent checks")
@click.option("--yield-sleep", type=float, default=0.02, show_default=True, help="chance a yield point gives up the interpreter lock")
@click.option("--mutant", default=None, help="stress a deliberately broken tree (a negative control)")
@click.option("--runs", type=int, default=1, show_default=True, help="repeat with seeds seed, seed+1, ... and count detections")
@shard_options("runs (each mode of each seed, numbered run-major)")
@json_option
def stress_tree(ops: int, seed: int, mode: str, writers: int, readers: int, check_every: int, yield_sleep: float,
                mutant: str | None, runs: int, shard: Any, processes: int, executor: str, json_path: str | None) -> None:
    """The concurrent tree under 8 writers and 4 readers; last line `stress: ops=N reads=R overcounts=0 parity_breaks=0`."""
    from ..stateful_tests.harness.shards import ShardError
    from ..stateful_tests.tree.impl_mutants import IMPL_MUTANTS, short_name
    from ..stateful_tests.tree.stress import StressTask, stress_sharded

    if mutant and not any(short_name(m) == mutant for m in IMPL_MUTANTS):
        raise click.BadParameter(f"unknown mutant {mutant!r}; one of {[short_name(m) for m in IMPL_MUTANTS]}", param_hint="--mutant")
    modes = ("strict", "chaos") if mode == "both" else (mode,)
    task = StressTask(ops, seed, modes, writers, readers, check_every, yield_sleep, max(1, runs), mutant)
    try:
        done = stress_sharded(task, shard, processes, executor)
    except ShardError as exc:
        raise click.ClickException(str(exc)) from None
    reports = [result for _, result in done]
    caught = sum(r.failed for r in reports)
    for item, result in done:
        config = result.config
        click.echo(f"run {item // len(modes) + 1}/{task.runs} {config.mode} seed={config.seed}: {result.summary_line()} "
                   f"({result.seconds:.1f} s)")
        for problem in result.problems[:5]:
            click.echo(f"  problem: {problem}")
    if json_path:
        out.write_json(json_path, "stress-tree", {"runs": [r.to_json() | {"item": item} for item, r in done],
                                                  "shard": str(shard)})
    if mutant is not None:
        click.echo(f"mutant {mutant}: caught in {caught} of {len(reports)} runs ({mode}, {ops} ops each)")
        sys.exit(EXIT_PASS if caught else EXIT_FAIL)
    stats: dict[str, int] = {}
    for r in reports:
        for k, v in r.statistics.items():
            stats[k] = stats.get(k, 0) + v
    click.echo(f"seconds={sum(r.seconds for r in reports):.1f} seed={seed} modes={'+'.join(modes)} "
               f"writers={writers} readers={readers} checkpoints={sum(r.checkpoints for r in reports)}")
    click.echo(f"statistics: { {k: v for k, v in stats.items() if v} }")
    failed = any(r.failed for r in reports)
    if failed:
        click.echo(f"replay the workload: kvproof stress tree --ops {ops} --seed {seed} --mode {mode} --yield-sleep {yield_sleep}")
    click.echo(f"stress: ops={sum(r.ops for r in reports)} reads={sum(r.reads for r in reports)} "
               f"overcounts={sum(r.overcounts for r in reports)} parity_breaks={sum(r.parity_breaks for r in reports)}"
               + ("" if shard.whole else f" shard={shard}"))
    sys.exit(EXIT_FAIL if failed else EXIT_PASS)


@stress.command("sequences")
@click.option("--threads", type=int, default=8, show_default=True, help="threads calling the tracker at once")
@click.option("--ops", type=int, default=400, show_default=True, help="operations per thread and round")
@seed_option(1, "the first round's seed; round k uses seed + k")
@click.option("--rounds", type=int, default=1, show_default=True, help="rounds, each on a fresh tracker")
@click.option("--model", default="impl", show_default=True, help="the tracker stressed: impl, or module:Class")
def stress_sequences(threads: int, ops: int, seed: int, rounds: int, model: str) -> None:
    """The concurrent slot tracker under racing adds, marks and frees; audited at quiescence.

    The last line is `stress sequences: rounds=R ops=N problems=P`.
    """
    from ..stateful_tests.sequences.stress import stress as run_stress

    factory = _sequence_model(model)
    total_ops, problems = 0, 0
    for k in range(rounds):
        result = run_stress(factory, threads=threads, ops=ops, seed=seed + k)
        total_ops += result.ops
        problems += len(result.problems)
        click.echo(f"round {k + 1}/{rounds} seed={seed + k}: {result.summary_line()}")
        for p in result.problems[:5]:
            click.echo(f"  problem: {p}")
    if problems:
        click.echo(f"replay: kvproof stress sequences --threads {threads} --ops {ops} --seed {seed} --rounds {rounds} --model {model}")
    click.echo(f"stress sequences: rounds={rounds} ops={total_ops} problems={problems}")
    sys.exit(EXIT_FAIL if problems else EXIT_PASS)



# ----------------------------------------------------------------------------- soak


@main.command()
@click.option("--family", type=click.Choice(["tree", "sequences"]), default="tree", show_default=True,
              help="soak a tree, or a slot tracker (stateful_tests/sequences/soak.py)")
@click.option("--target", "target_name", default="impl", show_default=True,
              help="reference, impl, impl-lanes, impl-pool, or a leaking twin of the family's soak module (LEAKY)")
@click.option("--epochs", type=int, default=36, show_default=True, help="epochs of simulated traffic")
@click.option("--epoch-s", type=float, default=600.0, show_default=True, help="simulated seconds per epoch")
@click.option("--rate", type=float, default=4.0, show_default=True, help="requests per simulated second")
@click.option("--workers", type=int, default=6, show_default=True, help="workers of the simulated traffic")
@click.option("--capacity", type=int, default=160, show_default=True, help="blocks each rank's engine holds")
@click.option("--slack", type=float, default=0.25, show_default=True, help="allowed growth per live pair, first to last window")
@click.option("--untraced", is_flag=True, help="skip tracemalloc (faster): the traced and hidden bytes are then not judged")
@click.option("--tolerate-dead-nodes", is_flag=True,
              help="growth that dead nodes kept by design explain (the rule sets before 1.6, e.g. reference@dynamo-1.4), "
                   "and nothing else, exits 0, reported as known")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False), default=None,
              help="serve the requests of this Mooncake trace (looped with fresh ids each hour) instead of synthetic chat "
                   "traffic; 'default': the full trace beside the checkout, else the shipped slice")
@seed_option()
@json_option
def soak(family: str, target_name: str, epochs: int, epoch_s: float, rate: float, workers: int, capacity: int,
         slack: float, untraced: bool, tolerate_dead_nodes: bool, trace_file: str | None, seed: int, json_path: str | None) -> None:
    """The churn soak: hours of simulated traffic, a census of the tree after each epoch, and no unbounded growth.

    Prints one line per epoch and a verdict; lists every size law broken and every figure that
    trends up. Exits 1 on growth. The rule sets of releases before 1.6 keep dead leaves as those
    releases did (stateful_tests/tree/soak.py, beyond_dead_nodes); --tolerate-dead-nodes fails only on
    growth beyond that.
    """
    if family == "sequences":
        _soak_tracker(target_name, epochs, epoch_s, rate, workers, slack, untraced, seed, json_path)
        return
    from ..stateful_tests.harness.targets import load_target
    from ..stateful_tests.tree.soak import SoakPlan, beyond_dead_nodes, run_soak, soak_targets

    known = dict(soak_targets())
    by_name = ":" in target_name or target_name.startswith("reference@")
    factory = load_target(target_name).factory if by_name else known.get(target_name)
    if factory is None:
        raise click.BadParameter(f"unknown or unavailable soak target {target_name!r}: use {', '.join(known)} "
                                 "or module.path:Factory", param_hint="--target")
    plan = SoakPlan(epochs=epochs, epoch_s=epoch_s, rate=rate, workers=workers, capacity=capacity, slack=slack,
                    warmup=max(1, epochs // 6), window=max(1, epochs // 4), traced=not untraced)
    requests = None
    if trace_file is not None:
        from ..stateful_tests.tree.traffic import TraceFormatError, default_trace, mooncake_requests, read_trace

        path = default_trace() if trace_file == "default" else Path(trace_file)
        try:
            records = read_trace(path)
        except TraceFormatError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        if not records:
            click.echo(f"error: {path}: the trace has no requests", err=True)
            sys.exit(EXIT_USAGE)
        period = records[-1].timestamp_ms / 1000.0 + 1.0  # the trace again, fresh ids, a second after its last request
        requests = mooncake_requests(path, loops=int(epochs * epoch_s // period) + 2, period_s=period)
        click.echo(f"traffic: {path} ({len(records)} requests), replayed every {period:.0f} s with fresh ids")
    report = run_soak(factory, target_name, plan, seed, requests=requests, each=lambda r, s: click.echo(r.line(s)))
    for line in report.growth_lines():
        click.echo(line)
    if json_path:
        out.write_json(json_path, "soak", report.to_json())
    beyond = beyond_dead_nodes(report)
    if report.grew and not beyond:
        click.echo("known: every growth above is dead nodes kept until a store passes them (the rule of releases before 1.6)")
    click.echo(report.verdict() + f" ({report.seconds:.0f} s)")
    sys.exit(EXIT_FAIL if (beyond if tolerate_dead_nodes else report.grew) else EXIT_PASS)


def _soak_tracker(target_name: str, epochs: int, epoch_s: float, rate: float, workers: int, slack: float, untraced: bool,
                  seed: int, json_path: str | None) -> None:
    """``kvproof soak --family sequences``: the slot tracker's churn soak."""
    from dataclasses import asdict

    from ..stateful_tests.sequences.soak import TRACKERS, TrackerPlan, run_tracker_soak

    factory = TRACKERS.get(target_name)
    if factory is None:
        raise click.BadParameter(f"unknown tracker {target_name!r}: use {', '.join(TRACKERS)}", param_hint="--target")
    plan = TrackerPlan(epochs=epochs, epoch_s=epoch_s, rate=rate, workers=workers, slack=slack, traced=not untraced,
                       warmup=max(1, epochs // 6), window=max(1, epochs // 4))
    report = run_tracker_soak(factory, target_name, plan, seed, each=lambda r, s: click.echo(r.line(s)))
    for line in report.growth_lines():
        click.echo(line)
    if json_path:
        out.write_json(json_path, "soak-sequences", {"target": target_name, "plan": asdict(plan), "sizes": report.sizes,
                                                     "trends": report.trends, "samples": [asdict(s) for s in report.samples]})
    sim = epochs * epoch_s / 3600
    verdict = (f"GROWTH: {len(report.sizes)} size laws broken, {len(report.trends)} figures trend up" if report.grew
               else "growth=none")
    click.echo(f"soak: family=sequences target={target_name} epochs={epochs} sim={sim:.2f}h {verdict} ({report.seconds:.0f} s)")
    sys.exit(EXIT_FAIL if report.grew else EXIT_PASS)

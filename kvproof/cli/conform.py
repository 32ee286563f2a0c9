"""`kvproof conform tree|dynamo|selection|slot-tracker` and `kvproof explain`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..report import Progress, finish
from .app import main
from .options import (
    TARGET,
    json_option,
    model_option,
    rules_option,
    seed_option,
    shard_options,
    strict_option,
    strict_shape_option,
    target_option,
)

# ----------------------------------------------------------------------------- conform


@main.group(
    epilog="""
\b
Examples:
  kvproof conform tree --streams 200 --seed 1                  (impl against the installed Dynamo)
  kvproof conform tree --target reference@dynamo-1.4 --oracle reference --rules dynamo-1.6
  kvproof conform tree --concurrent --target dynamo-indexer@4
  kvproof conform slot-tracker --scenarios 20
  kvproof conform selection --model impl
"""
)
def conform() -> None:
    """Differential conformance: a subject against an oracle, every outcome and score compared."""


@conform.command("tree")
@target_option("the subject: the tree under test")
@click.option("--oracle", type=TARGET, default="dynamo", show_default=True, help="the tree whose answers are taken as right")
@click.option("--streams", type=int, default=200, show_default=True, help="random streams of operations, each on fresh trees")
@seed_option()
@click.option("--stream", type=int, default=None, help="replay one stream of the run")
@click.option("--events", type=int, default=48, show_default=True, help="operations per stream")
@click.option(
    "--rank-removal",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="share of worker churn that calls remove_worker_dp_rank (both trees must have it; Dynamo 1.6.1 has not)",
)
@click.option(
    "--dp-ranks",
    type=click.IntRange(1, 8),
    default=None,
    help="most data-parallel ranks per worker (default 2; 1 for a tree that keys scores by plain worker id)",
)
@rules_option()
@strict_option
@strict_shape_option
@click.option(
    "--failures",
    "failures_dir",
    type=click.Path(file_okay=False),
    default="kvproof-failures",
    show_default=True,
    help="where each reported difference is written: events (.jsonl), summary (.json) and a pytest regression test",
)
@click.option(
    "--concurrent",
    is_flag=True,
    help="production mode: the target's events of different workers sent at once, reads racing them, judged by "
    "the contract and linearizability against the reference (a target with send_many: dynamo-indexer, "
    "dynamo-selection); --oracle is not used",
)
@shard_options("streams")
@json_option
def conform_tree(
    target: Any,
    oracle: Any,
    streams: int,
    seed: int,
    stream: int | None,
    events: int,
    rank_removal: float,
    dp_ranks: int | None,
    rules: str | None,
    strict: bool,
    strict_shape: bool,
    failures_dir: str,
    concurrent: bool,
    shard: Any,
    processes: int,
    executor: str,
    json_path: str | None,
) -> None:
    """Random event streams through the subject and the oracle; every difference classified, the worst shrunk.

    Kinds: contract (always a bug), outcome, score, dump, early-exit (reported; fails only
    with --strict-shape). Known findings pass as known unless --strict. The last line is
    `conform: streams=N events=E queries=Q mismatches=M tolerated=T (<count per kind> known=...)`.
    """
    from ..stateful_tests.tree.conformance import ConformOptions, run_conform_tree

    if concurrent:
        from ..stateful_tests.explore.production import run_concurrent

        finish(run_concurrent(target.name, streams, seed, stream, rules, say=click.echo), json_path)
    options = ConformOptions(
        streams,
        seed,
        stream,
        events,
        rank_removal,
        dp_ranks,
        rules,
        strict,
        strict_shape,
        failures_dir,
        shard,
        processes,
        executor,
    )
    report = run_conform_tree(target, oracle, options, say=click.echo, progress=Progress("conform tree", "streams"))
    finish(report, json_path)


def _conform_dynamo(**options: Any) -> None:
    conform_tree.callback(oracle=TARGET.convert("dynamo", None, click.get_current_context()), **options)  # type: ignore[misc]


conform.add_command(
    click.Command(
        "dynamo",
        callback=_conform_dynamo,
        params=[p for p in conform_tree.params if p.name != "oracle"],
        help="""The subject against the real Dynamo tree (``dynamo._core.RadixTree`` of the installed ai-dynamo-runtime).

    The same run as `conform tree --oracle dynamo`, with every other option of `conform tree`
    (--target, --streams, --seed, --shard, --processes, --executor, ...); the last line is
    `conform: streams=N events=E queries=Q mismatches=M tolerated=T (...)`. The slot tracker's
    conformance against Dynamo is `conform slot-tracker`.
    """,
        short_help="The subject against the real Dynamo tree: conform tree --oracle dynamo.",
    )
)


@main.command()
@click.argument("log_file", type=click.Path(exists=True, dir_okay=False), required=False)
@target_option("the subject whose differences are to be explained", default="dynamo")
@rules_option()
@click.option("--streams", type=int, default=40, show_default=True, help="without LOG_FILE: the conformance run's streams")
@seed_option()
@click.option("--examples", type=int, default=5, show_default=True, help="shrunk counterexamples to explain, at most")
def explain(log_file: str | None, target: Any, rules: str | None, streams: int, seed: int, examples: int) -> None:
    """Search the rule variants (one switched, then two) for one under which the subject agrees exactly.

    With LOG_FILE, explains that counterexample (a log as `kvproof replay log` reads); without,
    runs a conformance run against the reference under the detected rule set and explains
    its shrunk counterexamples. The last line is `explain: <verdict>`: "behaves like the spec
    with <variant> (<upstream reference>)" or "no variant explains it: likely a bug".
    """
    from ..stateful_tests.tree.explain import explain_command

    finish(explain_command(log_file, target, rules, streams, seed, examples, say=click.echo))


@conform.command("selection")
@click.option("--scenarios", type=int, default=200, show_default=True, help="the slot tracker's random scenarios to run")
@seed_option(1, "the run's seed; scenario K of seed S is always the same plan")
@click.option("--scenario", type=int, default=None, help="replay only scenario K of the run")
@click.option(
    "--trace",
    "trace_requests",
    type=int,
    default=None,
    metavar="REQUESTS",
    help="also replay the tracker calls a router makes on this many requests of the shipped Mooncake slice",
)
@model_option("reference", "the model compared: reference, impl, spec, a broken twin's name, or module.path:Class")
@json_option
def conform_selection(
    scenarios: int, seed: int, scenario: int | None, trace_requests: int | None, model: Any, json_path: str | None
) -> None:
    """A sequence tracker against the Rust ActiveSequences inside Dynamo's selection service (in process).

    Reservations, prefill completions, frees and output blocks; every outcome and every rank's
    load and potential load compared exactly. Ends with `conform selection: scenarios=N ...
    mismatches=M`; what the service's surface cannot carry is listed as left out.
    """
    from ..campaigns import run_conform_selection

    finish(run_conform_selection(scenarios, seed, scenario, trace_requests, model.factory, say=click.echo), json_path)


@conform.command("slot-tracker")
@click.option("--scenarios", type=int, default=20, show_default=True, help="random scenarios to run")
@seed_option(1, "the run's seed; scenario K of seed S is always the same plan")
@click.option("--scenario", type=int, default=None, help="replay only scenario K of the run")
@click.option(
    "--jitter-ms",
    type=int,
    default=25,
    show_default=True,
    help="pacing unit (ms): operations are 2-6 units apart; the time windows themselves are measured",
)
@click.option(
    "--parallel",
    type=int,
    default=10,
    show_default=True,
    help="scenarios run at once, each on its own model name (they mostly wait on the timeline: the ci profile's 10 run together)",
)
@model_option("reference", "the model compared: reference, impl, spec, a broken twin's name, or module.path:Class")
@json_option
@click.option("--log", "log_path", default=None, help="append the slot tracker's own log to this file")
@click.option(
    "--netns",
    is_flag=True,
    help="run the whole conformance run (tracker and clients) in a private network namespace "
    "(unshare --net --map-root-user); the tracker otherwise listens on all interfaces",
)
def conform_slot_tracker(
    scenarios: int,
    seed: int,
    scenario: int | None,
    jitter_ms: int,
    parallel: int,
    model: Any,
    json_path: str | None,
    log_path: str | None,
    netns: bool,
) -> None:
    """The sequence trackers against the real `python -m dynamo.slot_tracker` (HTTP routes and replica sync).

    Starts the slot tracker on free local ports, prints the ai-dynamo-runtime release and the wire
    format used with it, drives random scenarios, compares every read with the model within the
    measured time windows, and ends with `conform: scenarios=N reads=R mismatches=M`. The tracker
    binds 0.0.0.0; with --netns the run is re-executed inside a private network namespace.
    """
    from ..stateful_tests.harness import process_guard
    from ..stateful_tests.sequences.oracle import run_conform_slot_tracker

    if netns and not process_guard.in_private_netns():
        given = {
            "--scenarios": scenarios,
            "--seed": seed,
            "--jitter-ms": jitter_ms,
            "--parallel": parallel,
            "--model": model.name,
            "--scenario": scenario,
            "--json": json_path and Path(json_path).resolve(),
            "--log": log_path and Path(log_path).resolve(),
        }
        args = [str(x) for option, value in given.items() if value is not None for x in (option, value)]
        process_guard.rerun_in_private_netns(["conform", "slot-tracker", *args, "--netns"])  # the same pid; does not return
    report = run_conform_slot_tracker(
        scenarios,
        seed,
        scenario,
        jitter_ms,
        parallel,
        model.name,
        model.factory,
        log_path,
        say=click.echo,
        progress=Progress("conform slot-tracker", "scenarios"),
    )
    finish(report, json_path)

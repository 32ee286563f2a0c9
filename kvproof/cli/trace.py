"""`kvproof trace`: a Mooncake trace through the router simulation and every layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..report import finish
from .app import main
from .options import (
    TRACKER,
    json_option,
    trace_option,
)

# ----------------------------------------------------------------------------- trace


@main.command(
    epilog="""
\b
Examples:
  kvproof trace --requests 300
  kvproof trace --trace ../shared/data/mooncake/conversation_trace.jsonl --real-tracker 50
  kvproof trace --tree reference --tree impl --tracker reference --plot load.png
  kvproof trace --no-trees --tracker kvproof.stateful_tests.sequences.mutants:NoSpillover
"""
)
@trace_option()
@click.option("--workers", type=click.IntRange(1), default=8, show_default=True, help="workers of the router simulation")
@click.option("--capacity", type=click.IntRange(1), default=2000, show_default=True, help="blocks each rank's prefix cache holds")
@click.option("--dp-ranks", type=click.IntRange(1), default=1, show_default=True, help="dp ranks per worker")
@click.option(
    "--policy",
    type=click.Choice(["truth", "tree", "round-robin"]),
    default="truth",
    show_default=True,
    help="route by the cached prefix the engines hold, by the oracle tree's scores, or in turn",
)
@click.option("--requests", "limit", type=click.IntRange(1), default=None, help="replay only the first N requests")
@click.option(
    "--tree",
    "trees",
    multiple=True,
    metavar="TARGET",
    help="a tree to compare (repeatable; a target name or module.path:Factory); default: reference, impl, "
    "impl-lanes, impl-pool and dynamo (left out, with a note, when it is not installed)",
)
@click.option("--no-trees", is_flag=True, help="compare no tree (the trackers only)")
@click.option(
    "--oracle", default=None, help="the tree whose answers are the reference (default: dynamo when compared, else the first)"
)
@click.option(
    "--tracker",
    "trackers",
    multiple=True,
    type=TRACKER,
    help="a slot tracker to compare (repeatable; spec, reference, impl, a broken twin's name, or "
    "module.path:Class); default: spec, reference and impl",
)
@click.option("--no-trackers", is_flag=True, help="compare no slot tracker (the trees only)")
@click.option(
    "--prefill-rate",
    type=click.FloatRange(min=0, min_open=True),
    default=20_000.0,
    show_default=True,
    help="prefill tokens per second of a rank",
)
@click.option(
    "--decode-rate",
    type=click.FloatRange(min=0, min_open=True),
    default=40.0,
    show_default=True,
    help="decode tokens per second of a request",
)
@click.option("--decode-batch", type=click.IntRange(1), default=1, show_default=True, help="response blocks per stored extension")
@click.option(
    "--stress-writers",
    type=click.IntRange(0),
    default=4,
    show_default=True,
    help="also replay the events on this many writer threads of the concurrent tree, read the whole time (0: skip)",
)
@click.option(
    "--real-tracker",
    "real_speedup",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="also replay the tracker calls on the real `python -m dynamo.slot_tracker`, time compressed this many "
    "times, against the reference bracketed by the measured instants (0: skip)",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="write the active requests of every rank over time to this image (needs the [plot] extra)",
)
@json_option
def trace(
    trace: str | None,
    workers: int,
    capacity: int,
    dp_ranks: int,
    policy: str,
    limit: int | None,
    trees: tuple[str, ...],
    no_trees: bool,
    oracle: str | None,
    trackers: tuple[Any, ...],
    no_trackers: bool,
    prefill_rate: float,
    decode_rate: float,
    decode_batch: int,
    stress_writers: int,
    real_speedup: float,
    plot_path: str | None,
    json_path: str | None,
) -> None:
    """Replay a Mooncake trace through a simulated router and every layer, and compare them at every step.

    The trace is the 1,000-request slice shipped with kvproof unless --trace names another file of the
    Mooncake format (the full conversation trace, ../shared/data/mooncake/conversation_trace.jsonl).
    Every routing query is asked of every tree in both early_exit modes before the request is routed
    and compared with the oracle's answer; every score is held to what the engines really hold (an
    over-credit fails); the slot trackers are fed the requests' add, prefill completion and free on
    the trace's time axis and compared read by read (stateful_tests/tree/trace_check.py). Exits 1 on
    any mismatch or over-credit. With --stress-writers the same events are applied by that many
    threads (by worker) to the concurrent tree while readers check every read against what was held
    during it, then compared with the reference at the end (stateful_tests/tree/trace_stress.py).
    """
    from ..campaigns import TRACE_TREES, TracePlan, run_trace, trace_trees
    from ..plot import plot_load
    from ..stateful_tests.tree.router import RouterPlan
    from ..stateful_tests.tree.traffic import SHIPPED_TRACE

    forest = {} if no_trees else trace_trees(trees or TRACE_TREES, say=click.echo)
    books = {} if no_trackers else dict(trackers or tuple(TRACKER.convert(n, None, None) for n in ("spec", "reference", "impl")))
    router = RouterPlan(workers, capacity, dp_ranks, policy, prefill_rate, decode_rate, decode_batch)
    plan = TracePlan(Path(trace) if trace else SHIPPED_TRACE, limit, router, oracle, stress_writers, real_speedup, plot_path)
    finish(run_trace(plan, forest, books, say=click.echo, plot=plot_load), json_path)

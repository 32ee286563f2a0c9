"""`kvproof bench ...`: throughput side by side (benchmarks, never tests)."""

from __future__ import annotations

from pathlib import Path

import click

from ..report import finish
from .app import main
from .options import (
    json_option,
    profile_option,
    seed_option,
    trace_option,
)

# ----------------------------------------------------------------------------- bench


@main.group(
    epilog="""
\b
Examples:
  kvproof bench trees --requests 300
  kvproof bench trees --trace ../shared/data/mooncake/conversation_trace.jsonl
  kvproof bench shards --processes 2 --suite stateful_tests/tree/tests
  kvproof bench roundtrip --backend numpy --backend torch
  kvproof bench crowd --ranks 100 --ranks 1000
"""
)
def bench() -> None:
    """Throughput side by side in one run, as ratios (a benchmark, never a test)."""


@bench.command("trees")
@trace_option()
@click.option("--requests", type=click.IntRange(1), default=None, help="the trace's first N requests (default: all)")
@click.option("--workers", type=click.IntRange(1), default=8, show_default=True, help="workers of the router simulation")
@click.option("--capacity", type=click.IntRange(1), default=2000, show_default=True, help="blocks per worker before LRU eviction")
@click.option("--streams", type=int, default=60, show_default=True, help="generated streams of the synthetic row (0: none)")
@click.option("--no-trace", is_flag=True, help="only the synthetic workload")
@click.option("--no-memory", is_flag=True, help="skip bytes per cached block (the child-process builds)")
@seed_option()
@click.option("--repeats", type=click.IntRange(1), default=3, show_default=True, help="runs per tree (median reported)")
@json_option
def bench_trees(
    trace: str | None,
    requests: int | None,
    workers: int,
    capacity: int,
    streams: int,
    no_trace: bool,
    no_memory: bool,
    seed: int,
    repeats: int,
    json_path: str | None,
) -> None:
    """CPU time per event and per query, wall rates and bytes per cached block of every tree on the same JSON bytes.

    CPU time is this process's (every thread, the binding's and the pool's included); the ratios
    to the binding lead by CPU, since wall ratios swing on a shared machine.

    The representative workload leads: the Mooncake trace (the shipped 1,000-request slice, or the
    file --trace names) through the router simulation. The synthetic streams follow as a labelled
    regression row.
    """
    from ..stateful_tests.tree.bench import run_bench_trees
    from ..stateful_tests.tree.traffic import SHIPPED_TRACE

    path = None if no_trace else Path(trace) if trace else SHIPPED_TRACE
    finish(run_bench_trees(path, requests, workers, capacity, streams, seed, repeats, memory=not no_memory), json_path)


@bench.command("shards")
@click.option("--streams", type=int, default=1000, show_default=True, help="conformance streams of the campaign")
@click.option("--inputs", type=int, default=10000, show_default=True, help="fuzz cases of the campaign (40 blocks of 250)")
@click.option("--processes", type=click.IntRange(2), default=2, show_default=True, help="processes of the parallel run")
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="the parallel run in a local process pool or as Ray tasks",
)
@click.option(
    "--suite",
    "suite",
    multiple=True,
    default=("stateful_tests/tree/tests",),
    show_default=True,
    metavar="FOLDER",
    help="a test folder of the checkout run by pytest alone and by pytest-xdist (repeatable; '' for none)",
)
@json_option
def bench_shards(streams: int, inputs: int, processes: int, executor: str, suite: tuple[str, ...], json_path: str | None) -> None:
    """The campaigns run whole in one process, then split over --processes, in one run: wall seconds and the speed-up.

    Conformance (the concurrent tree against the reference, --streams streams) and fuzz (--inputs cases over
    the reference and the concurrent tree); each parallel run must count exactly what the serial one counts.
    Then part of the test suite (--suite), by pytest in one process and over --processes pytest-xdist
    workers: the same tests must pass, skip and fail.
    """
    from ..campaigns import run_bench_shards

    folders = tuple(f for f in suite if f.strip())
    finish(run_bench_shards(streams, inputs, processes, executor, folders, say=click.echo), json_path)


@bench.command("services")
@click.option(
    "--target",
    "names",
    multiple=True,
    help="a Dynamo target (repeatable; default: dynamo, dynamo-indexer@1, dynamo-indexer, dynamo-selection@1, dynamo-selection)",
)
@click.option("--streams", type=int, default=20, show_default=True, help="generated streams, each on a fresh tree")
@json_option
def bench_services(names: tuple[str, ...], streams: int, json_path: str | None) -> None:
    """Events/s and queries/s each Dynamo door sustains, deterministic and concurrent, beside the binding in one run.

    CPU per call counts this process (every thread) and the standalone indexer's own process; ratios
    to the binding are by CPU.
    """
    from ..stateful_tests.explore.bench_services import run_bench_services

    finish(run_bench_services(names, streams, say=click.echo), json_path)


@bench.command("crowd")
@click.option(
    "--ranks",
    "sizes",
    type=int,
    multiple=True,
    help="crowd sizes (repeatable; default: 100, 1,000 and 10,000 ranks on one prefix)",
)
@click.option(
    "--tree",
    "names",
    type=click.Choice(["reference", "impl", "dynamo"]),
    multiple=True,
    help="trees to measure (repeatable; default: all three)",
)
@click.option(
    "--repeats",
    type=click.IntRange(1),
    default=3,
    show_default=True,
    help="runs of the whole workload, interleaved (the median of each figure is reported)",
)
@json_option
def bench_crowd(sizes: tuple[int, ...], names: tuple[str, ...], repeats: int, json_path: str | None) -> None:
    """Per-op cost of a store and of a removal when many ranks share one prefix, and its growth, beside Dynamo.

    Ratios and exponents are by CPU time (this process); wall time is shown beside it.
    """
    from ..stateful_tests.tree.crowd import run_crowd_command

    finish(run_crowd_command(sizes, names, repeats, say=click.echo), json_path)


@bench.command("ttd")
@profile_option("the gate profile the broken changes are checked under", among=("quick", "ci"))
@click.option(
    "--order",
    "orders",
    type=click.Choice(["declared", "cheapest"]),
    multiple=True,
    help="the row orders to time (repeatable; default both)",
)
@json_option
def bench_ttd(profile: str | None, orders: tuple[str, ...], json_path: str | None) -> None:
    """Time to detection: how long the gate takes, stopping at its first failing row, to report each of its own broken
    changes (the gate's controls), rows as declared and cheapest first (``check --fail-fast``); median and p90."""
    from ..gate.ttd import run_ttd_bench
    from ..stateful_tests.harness.profiles import profile_choice

    finish(run_ttd_bench(profile_choice(profile, ("quick", "ci")), orders, say=click.echo), json_path)


@bench.command("memory")
@click.option(
    "--family",
    type=click.Choice(["tree", "sequences"]),
    default="tree",
    show_default=True,
    help="the trees (bytes per cached block) or the slot trackers (bytes per active request block)",
)
@click.option(
    "--requests", type=int, default=12031, show_default=True, help="requests served (the Mooncake trace has 12,031 in its hour)"
)
@seed_option()
@click.option("--workers", type=int, default=8, show_default=True, help="workers in the fleet (one or two dp ranks each)")
@click.option(
    "--capacity", type=int, default=10**9, show_default=True, help="blocks per rank before LRU eviction (default: none)"
)
@click.option(
    "--trace",
    type=click.Path(dir_okay=False),
    default=None,
    help="a Mooncake-format trace (default: the project's copy if present, else synthetic chat traffic)",
)
@click.option("--synthetic", is_flag=True, help="use synthetic chat traffic even when the trace is present")
@click.option(
    "--tree",
    "trees",
    multiple=True,
    metavar="NAME",
    help="a tree to measure (repeatable): reference, 'impl (1 lane)', 'impl (3 lanes)', 'pool x4' or dynamo; default: all five",
)
@json_option
def bench_memory(
    family: str,
    requests: int,
    seed: int,
    workers: int,
    capacity: int,
    trace: str | None,
    synthetic: bool,
    trees: tuple[str, ...],
    json_path: str | None,
) -> None:
    """Bytes per cached (rank, block) pair of every tree, by tracemalloc and by RSS, each tree in a fresh child process.

    With --family sequences: bytes per active request block of the reference and the concurrent slot tracker.
    """
    if family == "sequences":
        from ..stateful_tests.sequences.memory import run_tracker_memory_bench

        finish(run_tracker_memory_bench(requests, seed, workers), json_path)
    from ..stateful_tests.tree.memory import run_memory_command

    finish(run_memory_command(requests, seed, workers, capacity, trace, synthetic, trees), json_path)


@bench.command("explore")
@click.option("--schedules", type=int, default=3000, show_default=True, help="schedules of the toy program per strategy")
@click.option("--histories", type=int, default=200, show_default=True, help="50-call histories for the checker")
@seed_option()
@json_option
def bench_explore(schedules: int, histories: int, seed: int, json_path: str | None) -> None:
    """Schedules per second (3 threads x 10 yield points, one core) and milliseconds per 50-call linearizability check."""
    from ..stateful_tests.explore.bench import run_bench_explore

    finish(run_bench_explore(schedules, histories, seed), json_path)


@bench.command("roundtrip")
@click.option(
    "--backend",
    "backends",
    multiple=True,
    type=click.Choice(["numpy", "torch", "cuda", "cupy"]),
    help="an array backend to measure (repeatable); default: numpy, torch, cuda and cupy",
)
@click.option("--repeats", type=int, default=41, show_default=True, help="timed repeats per operation (median reported)")
@click.option("--warmup", type=int, default=3, show_default=True, help="untimed runs of each operation first")
@click.option("--row-bytes", type=int, default=1024, show_default=True, help="bytes per ring row")
@click.option(
    "--stored-layers", type=int, default=40, show_default=True, help="stored SWA rings of the bench layout (each R = 134 rows)"
)
@click.option("--dropped-layers", type=int, default=20, show_default=True, help="dropped rings of the bench layout")
@click.option(
    "--torch-threads",
    type=int,
    default=1,
    show_default=True,
    help="torch intra-op threads on CPU (1: on a shared 2-core machine torch's parallel copy collapses; 0: torch's default)",
)
@json_option
def bench_roundtrip(
    backends: tuple[str, ...],
    repeats: int,
    warmup: int,
    row_bytes: int,
    stored_layers: int,
    dropped_layers: int,
    torch_threads: int,
    json_path: str | None,
) -> None:
    """select/load GB/s of the state round trip against a plain copy of the same bytes, per backend."""
    from ..stateful_tests.deepinfer.bench import run_bench_roundtrip

    names = list(backends or ("numpy", "torch", "cuda", "cupy"))
    finish(run_bench_roundtrip(names, repeats, warmup, row_bytes, stored_layers, dropped_layers, torch_threads), json_path)

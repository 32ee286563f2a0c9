"""`kvproof trace`: a Mooncake trace through the router simulation and every layer."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from .. import report as out
from ..report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from .app import main
from .options import (
    _sequence_model,
    json_option,
)

# ----------------------------------------------------------------------------- trace


TRACE_TREES = "reference,impl,impl-lanes,impl-pool,dynamo"


def _trace_trees(names: str) -> tuple[dict[str, Any], list[str]]:
    """The trees named (comma-separated targets); Dynamo is left out, with a note, when it is not installed."""
    from ..stateful_tests.harness.targets import load_target

    trees, notes = {}, []
    for name in [n.strip() for n in names.split(",") if n.strip()]:
        target = load_target(name)
        if target.factory is None:
            if name == "dynamo":
                notes.append(f"dynamo left out: {target.reason}")
                continue
            raise click.BadParameter(f"{name!r} is unavailable: {target.reason}", param_hint="--trees")
        trees[name] = target.factory
    return trees, notes


@main.command()
@click.argument("trace_file", type=click.Path(dir_okay=False), required=False)
@click.option("--workers", type=click.IntRange(1), default=8, show_default=True, help="workers of the router simulation")
@click.option("--capacity", type=click.IntRange(1), default=2000, show_default=True, help="blocks each rank's prefix cache holds")
@click.option("--dp-ranks", type=click.IntRange(1), default=1, show_default=True, help="dp ranks per worker")
@click.option("--policy", type=click.Choice(["truth", "tree", "round-robin"]), default="truth", show_default=True,
              help="route by the cached prefix the engines hold, by the oracle tree's scores, or in turn")
@click.option("--requests", "limit", type=click.IntRange(1), default=None, help="replay only the first N requests")
@click.option("--trees", default=TRACE_TREES, show_default=True,
              help="comma-separated trees to compare (targets, or module.path:Factory; empty: none)")
@click.option("--oracle", default=None, help="the tree whose answers are the reference (default: dynamo when compared, else the first)")
@click.option("--trackers", default="spec,reference,impl", show_default=True,
              help="comma-separated slot trackers to compare (spec, reference, impl, or module.path:Class; empty: none)")
@click.option("--prefill-rate", type=click.FloatRange(min=0, min_open=True), default=20_000.0, show_default=True,
              help="prefill tokens per second of a rank")
@click.option("--decode-rate", type=click.FloatRange(min=0, min_open=True), default=40.0, show_default=True,
              help="decode tokens per second of a request")
@click.option("--decode-batch", type=click.IntRange(1), default=1, show_default=True, help="response blocks per stored extension")
@click.option("--stress-writers", type=click.IntRange(0), default=4, show_default=True,
              help="also replay the events on this many writer threads of the concurrent tree, read the whole time (0: skip)")
@click.option("--real-tracker", "real_speedup", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="also replay the tracker calls on the real `python -m dynamo.slot_tracker`, time compressed this many "
                   "times, against the reference bracketed by the measured instants (0: skip)")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="write the active requests of every rank over time to this image (needs the [plot] extra)")
@json_option
def trace(trace_file: str | None, workers: int, capacity: int, dp_ranks: int, policy: str, limit: int | None, trees: str,
          oracle: str | None, trackers: str, prefill_rate: float, decode_rate: float, decode_batch: int, stress_writers: int,
          real_speedup: float, plot_path: str | None, json_path: str | None) -> None:
    """Replay a Mooncake trace through a simulated router and every layer, and compare them at every step.

    TRACE_FILE is any file of the Mooncake trace format (default: the full conversation trace beside
    the checkout, else the 1,000-request slice shipped with kvproof). Every routing query is asked
    of every tree in both early_exit modes before the request is routed and compared with the
    oracle's answer; every score is held to what the engines really hold (an over-credit fails);
    the slot trackers are fed the requests' add, prefill completion and free on the trace's time
    axis and compared read by read (stateful_tests/tree/trace_check.py). Exits 1 on any mismatch
    or over-credit. With --stress-writers the same events are applied by that many threads (by
    worker) to the concurrent tree while readers check every read against what was held during it,
    then compared with the reference at the end (stateful_tests/tree/trace_stress.py).
    """
    from ..plot import plot_load
    from ..stateful_tests.tree.router import RouterPlan

    started = time.perf_counter()
    from ..stateful_tests.tree.trace_check import check_trace
    from ..stateful_tests.tree.traffic import TraceFormatError, default_trace, mooncake_requests, read_trace

    path = Path(trace_file) if trace_file else default_trace()
    try:
        read_trace(path, limit)  # a bad line fails here, named, before anything runs
    except TraceFormatError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    forest, notes = _trace_trees(trees)
    books = {name: _sequence_model(name) for name in [n.strip() for n in trackers.split(",") if n.strip()]}
    if oracle is not None and oracle not in forest:
        raise click.BadParameter(f"{oracle!r} is not one of the trees compared ({', '.join(forest) or 'none'})",
                                 param_hint="--oracle")
    if policy == "tree" and not forest:
        raise click.BadParameter("the tree policy routes by a tree's scores: compare at least one tree", param_hint="--policy")
    plan = RouterPlan(workers, capacity, dp_ranks, policy, prefill_rate, decode_rate, decode_batch)
    for note in notes:
        click.echo(note)
    click.echo(f"trace {path}: workers={workers} dp_ranks={dp_ranks} capacity={capacity} policy={policy}")
    report = check_trace(mooncake_requests(path, limit=limit), plan, forest, books, oracle, keep_calls=bool(real_speedup))
    if real_speedup:
        _trace_real_tracker(report, real_speedup)
    if stress_writers:
        from ..stateful_tests.tree.trace_stress import run_trace_stress

        report.stress = run_trace_stress(mooncake_requests(path, limit=limit), plan, writers=stress_writers)
    s = report.stats
    click.echo(f"requests {s.requests}; events: stored {s.events['stored']} ({s.events['stored_blocks']} blocks), removed "
               f"{s.events['removed']} ({s.events['removed_blocks']} blocks); hit rate {s.hit_rate:.1%} "
               f"({s.cached_blocks} of {s.prompt_blocks} prompt blocks cached where routed)")
    out.print_table(["rank", "requests", "peak active"],
                    [(f"{w}.{dp}", s.routed[(w, dp)], s.peak[(w, dp)]) for w, dp in sorted(s.routed | s.peak)], numeric=(1, 2))
    if report.trees:
        out.print_table(["tree", "queries", "mismatches", "over-credits", "tolerated", "first failure"],
                        [(t.name + (" (oracle)" if t.name == report.oracle else ""), t.queries, t.mismatches, t.overcredits,
                          t.tolerated, t.first or "-") for t in report.trees], numeric=(1, 2, 3, 4))
    if report.trackers:
        out.print_table(["tracker", "calls", "reads", "mismatches", "first failure"],
                        [(t.name, t.calls, t.reads, t.mismatches, t.first or "-") for t in report.trackers], numeric=(1, 2, 3))
    if report.stress:
        click.echo(report.stress.summary_line() + "".join(f"\n  {p}" for p in report.stress.problems))
    if plot_path:
        why = plot_load(s.samples, plot_path, f"{path.name}: {workers} workers x {dp_ranks} dp, capacity {capacity}, {policy}")
        click.echo(f"plot skipped: {why}" if why else f"wrote {plot_path}")
    if json_path:
        out.write_json(json_path, "trace", report.to_json() | {"trace": str(path)})
    click.echo(f"{report.summary_line()} ({time.perf_counter() - started:.1f} s)")
    sys.exit(EXIT_PASS if report.ok else EXIT_FAIL)


def _trace_real_tracker(report: Any, speedup: float) -> None:
    """Replay the trace's tracker calls on the real slot tracker; add its verdict as a tracker row (or say why not)."""
    from ..stateful_tests.sequences.oracle import OracleStartError, oracle_unavailable, replay_calls
    from ..stateful_tests.tree.trace_check import TrackerVerdict

    why = oracle_unavailable()
    if why:
        click.echo(f"real slot tracker skipped: {why}")
        return
    try:
        result = replay_calls(report.calls, speedup)
    except OracleStartError as exc:
        click.echo(f"real slot tracker skipped: it did not start ({exc})")
        return
    verdict = TrackerVerdict(f"dynamo.slot_tracker (x{speedup:g})", calls=result.writes, reads=result.reads)
    for m in result.mismatches:
        verdict.fail(f"step {m.step} {m.op}: {m.detail}")
    if result.unexpressible:
        verdict.fail(f"cut short: {result.unexpressible}")
    report.trackers.append(verdict)
    report.calls = []

"""`kvproof conform tree|dynamo|selection|slot-tracker` and `kvproof explain`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from .. import report as out
from ..report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE, Progress, finish
from .app import main
from .options import (
    TARGET,
    _sequence_model,
    json_option,
    rules_option,
    seed_option,
    shard_options,
    strict_option,
    strict_shape_option,
    target_option,
)

# ----------------------------------------------------------------------------- conform


@main.group(epilog="""
\b
Examples:
  kvproof conform tree --streams 200 --seed 1                  (impl against the installed Dynamo)
  kvproof conform tree --target reference@dynamo-1.4 --oracle reference --rules dynamo-1.6
  kvproof conform tree --concurrent --target dynamo-indexer@4
  kvproof conform slot-tracker --scenarios 20
  kvproof conform selection --model impl
""")
def conform() -> None:
    """Differential conformance: a subject against an oracle, every outcome and score compared."""


@conform.command("tree")
@target_option("the subject: the tree under test")
@click.option("--oracle", type=TARGET, default="dynamo", show_default=True, help="the tree whose answers are taken as right")
@click.option("--streams", type=int, default=200, show_default=True, help="random streams of operations, each on fresh trees")
@seed_option()
@click.option("--stream", type=int, default=None, help="replay one stream of the run")
@click.option("--events", type=int, default=48, show_default=True, help="operations per stream")
@click.option("--rank-removal", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="share of worker churn that calls remove_worker_dp_rank (both trees must have it; Dynamo 1.6.1 has not)")
@click.option("--dp-ranks", type=click.IntRange(1, 8), default=None,
              help="most data-parallel ranks per worker (default 2; 1 for a tree that keys scores by plain worker id)")
@rules_option()
@strict_option
@strict_shape_option
@click.option("--failures", "failures_dir", type=click.Path(file_okay=False), default="kvproof-failures", show_default=True,
              help="where each reported difference is written: events (.jsonl), summary (.json) and a pytest regression test")
@click.option("--concurrent", is_flag=True,
              help="production mode: the target's events of different workers sent at once, reads racing them, judged by "
                   "the contract and linearizability against the reference (a target with send_many: dynamo-indexer, "
                   "dynamo-selection); --oracle is not used")
@shard_options("streams")
@json_option
def conform_tree(target: Any, oracle: Any, streams: int, seed: int, stream: int | None, events: int, rank_removal: float,
                 dp_ranks: int | None, rules: str | None, strict: bool, strict_shape: bool, failures_dir: str,
                 concurrent: bool, shard: Any, processes: int, executor: str, json_path: str | None) -> None:
    """Random event streams through the subject and the oracle; every difference classified, the worst shrunk.

    Kinds: contract (always a bug), outcome, score, dump, early-exit (reported; fails only
    with --strict-shape). Known findings pass as known unless --strict. The last line is
    `conform: streams=N events=E queries=Q mismatches=M tolerated=T (<count per kind> known=...)`.
    """
    from ..stateful_tests.tree.conformance import ConformOptions, run_conform_tree

    if concurrent:
        from ..stateful_tests.explore.production import run_concurrent

        finish(run_concurrent(target.name, streams, seed, stream, rules, say=click.echo), json_path)
    options = ConformOptions(streams, seed, stream, events, rank_removal, dp_ranks, rules, strict, strict_shape, failures_dir,
                             shard, processes, executor)
    report = run_conform_tree(target, oracle, options, say=click.echo, progress=Progress("conform tree", "streams"))
    finish(report, json_path)


def _conform_dynamo(**options: Any) -> None:
    conform_tree.callback(oracle=TARGET.convert("dynamo", None, click.get_current_context()), **options)  # type: ignore[misc]


conform.add_command(click.Command(
    "dynamo", callback=_conform_dynamo, params=[p for p in conform_tree.params if p.name != "oracle"],
    help="""The subject against the real Dynamo tree (``dynamo._core.RadixTree`` of the installed ai-dynamo-runtime).

    The same run as `conform tree --oracle dynamo`, with every other option of `conform tree`
    (--target, --streams, --seed, --shard, --processes, --executor, ...); the last line is
    `conform: streams=N events=E queries=Q mismatches=M tolerated=T (...)`. The slot tracker's
    conformance against Dynamo is `conform slot-tracker`.
    """,
    short_help="The subject against the real Dynamo tree: conform tree --oracle dynamo."))



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
    from ..stateful_tests.harness.targets import load_target, resolve_rules
    from ..stateful_tests.tree.conformance import conform as run_conform
    from ..stateful_tests.tree.explain import Counterexample
    from ..stateful_tests.tree.explain import explain as run_explain
    from ..stateful_tests.tree.log import LogError, read_log
    from ..stateful_tests.tree.replay import queries_of

    if target.name == "reference" and rules is None:
        raise click.BadParameter("the reference follows the rule set it is given; explain another tree", param_hint="--target")
    base, note = resolve_rules(target.name, override=rules)
    click.echo(f"explain: {note}")

    def reference(rule_set: Any) -> Any:
        return load_target("reference", rule_set).factory

    cases: list[Any] = []
    if log_file:
        try:
            log = read_log(Path(log_file))
        except LogError as exc:
            click.echo(f"explain: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        after, final = queries_of(log)
        cases.append(Counterexample(log_file, log.ops, final, after))
    else:
        from ..stateful_tests.harness.targets import capabilities
        from ..stateful_tests.tree.streams import DEFAULT_PROFILE, StreamProfile

        profile = DEFAULT_PROFILE if capabilities(target.factory).dp_ranks else StreamProfile(max_dp_ranks=1)
        report = run_conform(target.factory, reference(base), streams, seed, profile, subject_name=target.name,
                             oracle_name="reference", max_reported=examples, shrunk_tolerated=examples, strict_shape=True,
                             rules=base.name)
        click.echo(report.summary_line())
        for m in (report.mismatches + report.tolerated)[:examples]:
            if m.is_shrunk:
                cases.append(Counterexample(f"seed {m.seed} stream {m.stream} [{m.label()}]", m.shrunk, m.query_list))
            else:
                click.echo(f"explain: seed {m.seed} stream {m.stream} [{m.label()}] left out: its difference does not "
                           f"show by itself outside the stream (regenerate it: {m.replay_command(target.name, 'reference')})")
        if report.mismatches and not cases:
            click.echo("explain: the run differs, but no counterexample could be shrunk to explain; nothing was explained")
            sys.exit(EXIT_FAIL)
    result = run_explain(target.factory, cases, base, reference)
    click.echo(result.report())
    sys.exit(EXIT_PASS if not result.evidence or result.explained_by else EXIT_FAIL)


@conform.command("selection")
@click.option("--scenarios", type=int, default=200, show_default=True, help="the slot tracker's random scenarios to run")
@seed_option(1, "the run's seed; scenario K of seed S is always the same plan")
@click.option("--scenario", type=int, default=None, help="replay only scenario K of the run")
@click.option("--trace", "trace_requests", type=int, default=None, metavar="REQUESTS",
              help="also replay the tracker calls a router makes on this many requests of the shipped Mooncake slice")
@click.option("--model", default="reference", show_default=True, help="the model compared: reference, impl, spec, or module:Class")
@json_option
def conform_selection(scenarios: int, seed: int, scenario: int | None, trace_requests: int | None, model: str,
                      json_path: str | None) -> None:
    """A sequence tracker against the Rust ActiveSequences inside Dynamo's selection service (in process).

    Reservations, prefill completions, frees and output blocks; every outcome and every rank's
    load and potential load compared exactly. Ends with `conform selection: scenarios=N ...
    mismatches=M`; what the service's surface cannot carry is listed as left out.
    """
    from ..gate.sequences import trace_calls
    from ..stateful_tests.sequences.selection_oracle import conform_selection as run_conform
    from ..stateful_tests.sequences.selection_oracle import conform_selection_trace, unavailable

    reason = unavailable()
    if reason:
        click.echo(f"kvproof: the selection service is unavailable: {reason}", err=True)
        sys.exit(EXIT_USAGE)
    factory = _sequence_model(model)
    report = run_conform(scenarios, seed, scenario, on_mismatch=lambda m: click.echo(m.report(seed, scenarios)),
                         model_factory=factory)
    reports = [report]
    if trace_requests:
        trace = conform_selection_trace(trace_calls(trace_requests), factory)
        for m in trace.mismatches:
            click.echo(m.report(seed, scenarios, trace=True))
        click.echo(f"trace: {trace.summary_line()}")
        reports.append(trace)
    for r in reports[1:]:
        report.left_out.merge(r.left_out)
    for line in report.left_out.lines():
        click.echo(line)
    if json_path:
        out.write_json(json_path, "conform-selection", {"scenarios": report.to_json(),
                                                        "trace": reports[1].to_json() if len(reports) > 1 else None})
    click.echo(report.summary_line())
    sys.exit(EXIT_FAIL if any(r.mismatches for r in reports) else EXIT_PASS)


@conform.command("slot-tracker")
@click.option("--scenarios", type=int, default=20, show_default=True, help="random scenarios to run")
@seed_option(1, "the run's seed; scenario K of seed S is always the same plan")
@click.option("--scenario", type=int, default=None, help="replay only scenario K of the run")
@click.option("--jitter-ms", type=int, default=25, show_default=True,
              help="pacing unit (ms): operations are 2-6 units apart; the time windows themselves are measured")
@click.option("--parallel", type=int, default=8, show_default=True, help="scenarios run at once, each on its own model name")
@click.option("--model", default="reference", show_default=True, help="the model compared: reference, impl, spec, or module:Class")
@json_option
@click.option("--log", "log_path", default=None, help="append the slot tracker's own log to this file")
@click.option("--netns", is_flag=True,
              help="run the whole conformance run (tracker and clients) in a private network namespace "
                   "(unshare --net --map-root-user); the tracker otherwise listens on all interfaces")
def conform_slot_tracker(scenarios: int, seed: int, scenario: int | None, jitter_ms: int, parallel: int, model: str,
                         json_path: str | None, log_path: str | None, netns: bool) -> None:
    """The sequence trackers against the real `python -m dynamo.slot_tracker` (HTTP routes and replica sync).

    Starts the slot tracker on free local ports, prints the ai-dynamo-runtime release and the wire
    format used with it, drives random scenarios, compares every read with the model within the
    measured time windows, and ends with `conform: scenarios=N reads=R mismatches=M`. The tracker
    binds 0.0.0.0; with --netns the run is re-executed inside a private network namespace.
    """
    from ..stateful_tests.harness import process_guard
    from ..stateful_tests.sequences.oracle import OracleStartError, SlotTrackerProcess, oracle_unavailable
    from ..stateful_tests.sequences.oracle import conform_slot_tracker as run_conform

    reason = oracle_unavailable()
    if reason:
        click.echo(f"kvproof: the slot-tracker oracle is unavailable: {reason}", err=True)
        sys.exit(EXIT_USAGE)
    factory = _sequence_model(model)
    if netns and not process_guard.in_private_netns():
        why = process_guard.netns_unavailable()
        if why:
            click.echo(f"kvproof: --netns: cannot make a private network namespace: {why}", err=True)
            sys.exit(EXIT_USAGE)
        args = ["conform", "slot-tracker", "--scenarios", str(scenarios), "--seed", str(seed), "--jitter-ms", str(jitter_ms),
                "--parallel", str(parallel), "--model", model, "--netns"]
        args += ["--scenario", str(scenario)] if scenario is not None else []
        args += ["--json", str(Path(json_path).resolve())] if json_path else []
        args += ["--log", str(Path(log_path).resolve())] if log_path else []
        sys.stdout.flush()
        sys.stderr.flush()
        os.environ[process_guard.NETNS_ENV] = "1"
        argv = [*process_guard.netns_prefix(), sys.executable, "-m", "kvproof", *args]
        os.execvp(argv[0], argv)  # the same pid, inside the namespace; does not return

    oracle = SlotTrackerProcess(log_path)
    click.echo(oracle.release.banner())
    try:
        oracle.start()
    except OracleStartError as exc:
        click.echo(f"FAIL: the slot tracker of ai-dynamo-runtime {oracle.release.version} could not be driven: {exc}")
        click.echo("conform: scenarios=0 reads=0 mismatches=0 (not run)")
        sys.exit(EXIT_FAIL)
    try:
        if process_guard.in_private_netns():
            click.echo("network: the tracker runs in a private network namespace (--netns)")
        else:
            notice = oracle.bind_notice()
            if notice:
                click.echo(notice)

        def on_mismatch(m: Any) -> None:
            click.echo(m.report(seed, scenarios))

        result = run_conform(scenarios, seed, jitter_ms=jitter_ms, parallel=parallel, only=scenario, on_mismatch=on_mismatch,
                             model_factory=lambda: factory(), oracle=oracle,
                             on_progress=out.Progress("conform slot-tracker", "scenarios"))
    finally:
        oracle.close()
    for line in result.unexpressible:
        click.echo(f"cut short: {line}")
    click.echo(f"seconds={result.seconds:.1f} seed={seed} model={model} jitter_ms={jitter_ms} "
               f"ops={result.ops} writes={result.writes} modeled_adds={result.modeled_adds} release={result.release}")
    if json_path:
        out.write_json(json_path, "conform-slot-tracker", result.to_json())
    click.echo(result.summary_line())
    sys.exit(EXIT_FAIL if result.mismatches else EXIT_PASS)

"""The ``kvproof`` command: the gate, conformance, vectors, stress, benchmarks, round trips, labs and proofs.

Built on click: command groups (``conform``, ``stress``, ``bench``), option decorators shared
by every command that takes them, and a ``TARGET`` parameter type that loads ``reference``,
``impl``, ``impl-lanes``, ``impl-pool``, ``dynamo``, ``dynamo-indexer[@N]``, ``dynamo-selection[@N]``
or ``module.path:Factory`` with a clear error. Exit codes are those of ``kvproof.report`` (0 pass, 1 fail, 2 usage or unavailable
target, 3 skipped).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from . import report as out
from .report import EXIT_FAIL, EXIT_PASS, EXIT_SKIPPED, EXIT_USAGE

DEFAULT_TARGET = "impl"


class TargetType(click.ParamType):
    """A tree target by name (``kvproof.stateful_tests.harness.targets``), loaded and checked to be available."""

    name = "TARGET"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from .stateful_tests.harness.targets import Target, load_target

        if isinstance(value, Target):
            return value
        target = load_target(value)
        if not target.available:
            self.fail(f"{value!r} is unavailable: {target.reason}", param, ctx)
        return target


TARGET = TargetType()


def _under(target: Any, rule_set: Any) -> Any:
    """The target with its factory: the plain ``reference`` re-made under ``rule_set``, any other as it is."""
    from .stateful_tests.harness.targets import load_target

    chosen = load_target(target.name, rule_set) if target.name == "reference" else target
    if chosen.factory is None:
        raise click.UsageError(f"{target.name} is unavailable: {chosen.reason}")
    return chosen


def target_option(help_text: str = "the tree under test", default: str = DEFAULT_TARGET) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("--target", "target", type=TARGET, default=default, show_default=True,
                        help=f"{help_text}: reference, reference@RULES, impl, impl-lanes, impl-pool, dynamo, dynamo-indexer[@N], "
                             "dynamo-selection[@N], module.path:Factory, or a tree in any language over the wire protocol "
                             "(docs/protocol.md): exec:CMD or http://127.0.0.1:PORT")


def seed_option(default: int | None = 1, help_text: str = "the run's seed") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("--seed", type=int, default=default, show_default=default is not None, help=help_text)


def _parse_shard(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    from .stateful_tests.harness.shards import WHOLE, Shard, ShardError

    if value is None:
        return WHOLE
    try:
        return Shard.parse(value)
    except ShardError as exc:
        raise click.BadParameter(str(exc)) from None


def shard_options(work: str, every_core: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--shard K/N``, ``--processes P`` and ``--executor local|ray``: the campaign split (stateful_tests/harness/shards.py).

    With ``every_core`` the default of ``--processes`` is the machine's core count (the gate's rows as a pool's tasks).
    """

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        f = click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                         help="run the parts in a local process pool, or as Ray tasks (RAY_ADDRESS, else ray.init() here; "
                              "the [ray] extra)")(f)
        if every_core:
            f = click.option("--processes", type=click.IntRange(1), default=None,
                             help=f"run this shard's {work} as tasks of this many processes, the slowest first (1: one "
                                  f"after another in this process); default: $KVPROOF_PROCESSES, else the machine's cores "
                                  f"({os.cpu_count() or 1} here)")(f)
        else:
            f = click.option("--processes", type=click.IntRange(1), default=1, show_default=True,
                             help=f"split this shard's {work} over this many processes (or Ray tasks)")(f)
        return click.option("--shard", callback=_parse_shard, default=None, metavar="K/N",
                            help=f"run only shard K of N: the {work} numbered i with i % N == K-1 (the shards' union "
                                 "is the whole run)")(f)

    return decorate


json_option = click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True), default=None,
                           help="also write the report as JSON (with a schema version) to this file")
allow_skip_option = click.option("--allow-skip", is_flag=True, help="exit 0 when something was skipped (a skip is never a pass)")


def profile_option(help_text: str = "quick (pre-commit, about 30 s on 2 cores), ci (default), or deep; default: $KVPROOF_PROFILE or ci"):
    from .stateful_tests.harness.profiles import PROFILES

    return click.option("--profile", type=click.Choice(list(PROFILES)), default=None, help=help_text)


def rules_option() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    from .spec.rules import RULE_SETS

    return click.option("--rules", type=click.Choice(list(RULE_SETS)), default=None,
                        help="the rule set the reference follows (spec/rules.py; docs/releases.md); default: detected from "
                             "the installed ai-dynamo-runtime when Dynamo is involved, else dynamo-1.6")


strict_option = click.option("--strict", is_flag=True, help="known findings (docs/*-findings.md) fail instead of passing as known")
strict_shape_option = click.option("--strict-shape", is_flag=True,
                                   help="early_exit differences (which depend on node boundaries, F7) fail instead of being reported")


NETNS_COMMANDS = frozenset({"check", "conform", "vectors", "trace", "replay", "explain", "bench"})
"""The commands that may start servers (Dynamo's standalone indexer, the slot tracker): run in a private network
namespace by default, where the machine allows one."""


def entry() -> None:
    """The ``kvproof`` program: ``main``, re-executed first inside a private network namespace when it may start servers.

    Dynamo's standalone indexer and slot tracker listen on every interface and have no option to bind
    loopback only. A command of ``NETNS_COMMANDS`` is therefore re-executed (same pid, same arguments) under
    ``unshare --net --map-root-user`` with only ``lo`` up, where the machine allows it (root, or unprivileged
    user namespaces): nothing the run starts can be reached from outside. ``KVPROOF_NETNS=0`` opts out (and
    ``--executor ray`` does, since a Ray cluster needs the machine's network). Where no namespace can be had
    the run's first line says so.
    """
    from .stateful_tests.harness import process_guard

    argv = sys.argv[1:]
    command = next((a for a in argv if not a.startswith("-")), None)
    wanted = (command in NETNS_COMMANDS and os.environ.get("KVPROOF_NETNS", "1") != "0" and "ray" not in argv
              and not process_guard.in_private_netns() and not {"-h", "--help"} & set(argv)
              and not any("http://127.0.0.1:" in a for a in argv))  # a loopback http target lives outside any namespace
    if wanted:
        why = process_guard.netns_unavailable()
        if why is None:
            sys.stdout.flush()
            sys.stderr.flush()
            os.environ[process_guard.NETNS_ENV] = "1"
            os.execvp("unshare", [*process_guard.netns_prefix(), sys.executable, "-m", "kvproof", *argv])
        print(f"kvproof: network: no private network namespace here ({why}); a server this run starts (Dynamo's "
              "indexer, the slot tracker) listens on every interface, and kvproof speaks to it on 127.0.0.1 only "
              "(KVPROOF_NETNS=0 to silence)", flush=True)
    main()


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="kvproof")
def main() -> None:
    """kvproof: the executable specification and verification suite for a KV-cache-aware router's state.

    Run `kvproof check` for the gate on the embedded implementation, or point it at your own tree
    with `--target module.path:Factory`. Exit codes: 0 pass, 1 fail, 2 usage error or unavailable
    target, 3 something was skipped (without --allow-skip).
    """


# ----------------------------------------------------------------------------- check


@main.command()
@target_option("the tree the gate checks")
@profile_option()
@click.option("--family", "families", multiple=True, type=click.Choice(["tree", "sequences", "deepinfer", "proofs", "all"]),
              help="run only these rule families (repeatable); default: all for the embedded implementation, tree for any other target")
@seed_option(None, "replay a run (the deep profile draws a fresh seed and prints it)")
@click.option("--only", default=None, help="run only the rows whose family, layer or name contains this")
@json_option
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="also write JUnit XML, one testcase per row")
@allow_skip_option
@rules_option()
@strict_option
@strict_shape_option
@shard_options("rows", every_core=True)
@click.option("--fail-fast", is_flag=True,
              help="stop at the first failing row, running the rows cheapest first by what each took here last time "
                   "(.kvproof-cache/gate-seconds.json); the rows not reached are listed as not run")
def check(target: Any, profile: str | None, families: tuple[str, ...], seed: int | None, only: str | None,
          json_path: str | None, junit_path: str | None, allow_skip: bool, rules: str | None, strict: bool,
          strict_shape: bool, shard: Any, processes: int, executor: str, fail_fast: bool) -> None:
    """Run the gate: every check against one target, one row per check.

    Against Dynamo the reference follows the rule set of the installed release (printed at the
    start); a row whose only differences are known findings or intended variants passes as
    `pass (known: ...)` and names them, unless --strict.
    """
    from .gate import FAMILIES, GateReport, Result, Row, plan, run_gate
    from .stateful_tests.harness.profiles import profile_named

    chosen = profile_named(profile)
    factory = target.factory
    if target.name == "reference" and rules:  # the reference follows the rule set it is asked to
        from .spec.rules import rule_set_named
        from .stateful_tests.harness.targets import load_target

        factory = load_target("reference", rule_set_named(rules)).factory
    wanted = FAMILIES if "all" in families else families or None
    ctx, selection = plan(target.name, factory, chosen, seed, only, wanted, rules, strict, strict_shape, shard)
    console = out.console()
    console.print(f"kvproof check: target={target.name} profile={chosen.name} seed={ctx.seed} families={','.join(selection.families)}"
                  + ("" if shard.whole else f" shard={shard} ({len(selection.checks)} rows)"))
    console.print(f"kvproof check: {ctx.rules_note}", markup=False)
    if not selection.checks:
        raise click.UsageError(f"no gate row matches --only {only!r} in families {', '.join(selection.families)}")
    started = time.perf_counter()

    from .gate import GateTask, cheapest_first, record_seconds, recorded_seconds

    processes = processes or int(os.environ.get("KVPROOF_PROCESSES") or 0) or os.cpu_count() or 1
    seconds = recorded_seconds(target.name, chosen.name)
    finished: set[str] = set()

    def progress(row: Row, done: int, total: int) -> None:
        elapsed = time.perf_counter() - started
        finished.add(f"{row.family}: {row.name}")
        rest = [c.key for c in selection.checks if c.key not in finished]
        left = (sum(seconds[k] for k in rest) / min(processes, len(rest) or 1) if all(k in seconds for k in rest)
                else elapsed / done * (total - done))  # by what the rows left took here last time, else the mean so far
        console.print(f"  [{done}/{total}] {row.result.value:<4} {row.family}: {row.name} ({row.seconds:.1f} s; "
                      f"elapsed {elapsed:.0f} s, about {left:.0f} s left)")

    task = GateTask(target.name, chosen.name, ctx.seed, only, wanted, rules, strict, strict_shape)
    if fail_fast and executor != "local":
        raise click.UsageError("--fail-fast stops the local rows at the first failure: drop --executor ray")
    if executor == "local" and processes > 1 and len(selection.checks) > 1:
        from .gate.pool import run_rows

        console.print(f"kvproof check: {len(selection.checks)} rows as tasks of {processes} processes, "
                      + ("cheapest first (--fail-fast)" if fail_fast else "slowest first"))
        rows, not_run = run_rows(task, selection.checks, processes, seconds, progress, fail_fast)
        report = GateReport(target.name, chosen.name, ctx.seed, selection.families, rows,
                        [(c.key, why) for c, why in selection.left_out] + not_run, ctx.rules.name, ctx.rules_note)
        record_seconds(report)
    elif executor != "local":
        from .gate import merge_gate
        from .stateful_tests.harness.shards import ShardError, run_parts

        console.print(f"kvproof check: {len(selection.checks)} rows in {processes} parts ({executor})")
        try:
            parts = run_parts(task, shard.split(processes), processes, executor)
        except ShardError as exc:
            raise click.ClickException(str(exc)) from None
        report = merge_gate(parts, [c.key for c in selection.checks])
        report.left_out = [(c.key, why) for c, why in selection.left_out]
        for done, row in enumerate(report.rows, 1):
            progress(row, done, len(report.rows))
    else:
        if fail_fast:
            selection.checks = cheapest_first(selection.checks, seconds)
        report = run_gate(ctx, selection, progress, fail_fast)
        record_seconds(report)
    console.print()
    out.print_table(GateReport.HEADERS, report.table_rows(), numeric=(3, 4, 5), out=console)
    for row in report.rows:
        if row.left_out:
            console.print(f"\n{row.family}/{row.layer}: {row.name}: " + "".join(f"\n  {n}" for n in row.left_out), markup=False)
        if row.result is Result.PASS and row.known:
            said = row.notes or sorted(set(row.known))
            console.print(f"\nknown {row.family}/{row.layer}: {row.name}: " + "".join(f"\n  {n}" for n in said), markup=False)
        if row.result is not Result.PASS:
            console.print(f"\n{row.result.value} {row.family}/{row.layer}: {row.name}\n  {row.detail}", markup=False)
            if row.replay:
                console.print(f"  replay: {row.replay}", markup=False)
    if report.left_out:
        console.print()
        unselected: dict[str, int] = {}
        for key, why in report.left_out:
            family = key.split(": ", 1)[0]
            if why.startswith("family "):
                unselected[family] = unselected.get(family, 0) + 1
            else:
                console.print(f"left out {key}: {why}", markup=False)
        if unselected:
            counts = ", ".join(f"{family} ({n} rows)" for family, n in unselected.items())
            console.print(f"left out the families {counts}; --family all runs them")
    if json_path:
        out.write_json(json_path, "gate", report.to_json())
    if junit_path:
        out.write_junit(junit_path, f"kvproof check --target {target.name}",
                        [{"classname": f"kvproof.{r.family}.{r.layer}", **r.to_json()} for r in report.rows])
    total = time.perf_counter() - started
    console.print(f"\nkvproof check: {len(report.passed)} passed, {len(report.failed)} failed, {len(report.skipped)} skipped "
                  f"in {total:.1f} s (target={target.name} profile={chosen.name} seed={report.seed})")
    if report.failed:
        sys.exit(EXIT_FAIL)
    if report.skipped and not allow_skip:
        console.print("kvproof check: a skipped check is not a pass; install what it needs or pass --allow-skip")
        sys.exit(EXIT_SKIPPED)
    sys.exit(EXIT_PASS)


@main.command()
@click.option("--target", "target_name", default="reference", show_default=True,
              help="the Python target served: reference, reference@RULES, impl, impl-lanes, impl-pool, dynamo, "
                   "or module.path:Factory (a broken twin)")
@rules_option()
@click.option("--stdio", is_flag=True, help="speak the protocol on stdin and stdout, one JSON message per line")
@click.option("--http", "port", type=click.IntRange(0, 65535), default=None,
              help="answer POST / on 127.0.0.1:PORT instead (0: a free port; the address is printed)")
def serve(target_name: str, rules: str | None, stdio: bool, port: int | None) -> None:
    """Serve a tree over the wire protocol (docs/protocol.md), as an oracle for another language's tests, or as a
    target: `kvproof check --target "exec:kvproof serve --stdio --target reference"`."""
    from .stateful_tests.harness.wire_server import run

    sys.exit(run(target_name, rules, stdio, port))


# ----------------------------------------------------------------------------- conform


@main.group()
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
    from .stateful_tests.harness.targets import capabilities, resolve_rules
    from .stateful_tests.tree.conformance import conform as run_conform
    from .stateful_tests.tree.conformance import write_failure_files
    from .stateful_tests.tree.streams import StreamProfile

    if concurrent:
        _conform_concurrent(target, streams, seed, stream, rules, json_path)
    if target.name == oracle.name:
        raise click.BadParameter(f"the subject and the oracle are both {target.name!r}: a tree always agrees with itself",
                                 param_hint="--oracle")
    rule_set, note = resolve_rules(target.name, oracle.name, override=rules)
    subject_t, oracle_t = _under(target, rule_set), _under(oracle, rule_set)
    subject_f, oracle_f = subject_t.factory, oracle_t.factory
    click.echo(f"conform tree: {note}")
    caps = {t.name: capabilities(f) for t, f in ((subject_t, subject_f), (oracle_t, oracle_f))}
    if dp_ranks is None:
        plain = [name for name, c in caps.items() if not c.dp_ranks]
        dp_ranks = 1 if plain else 2
        if plain:
            click.echo(f"conform tree: {', '.join(plain)} keys scores by plain worker id: streams use dp rank 0 only")
    for name, c in caps.items():
        if not c.dump:
            click.echo(f"conform tree: {name} has no dump_tree_as_events: dumps are not compared")

    from .stateful_tests.tree.log import judging_options

    extra = judging_options(rules, strict, strict_shape)

    def on_mismatch(m: Any) -> None:
        from .stateful_tests.harness.targets import dynamo_component
        from .stateful_tests.tree.verdicts import ORACLE_CONTRACT, named_finding

        click.echo(m.report(target.name, oracle.name, str(Path(failures_dir) / f"{m.file_stem(oracle.name, target.name)}.jsonl"),
                            extra))
        named = named_finding(dynamo_component(oracle.name if m.kind == ORACLE_CONTRACT else target.name), m.detail)
        if named:
            click.echo(f"  {named}")

    profile = StreamProfile(events=events, rank_removal=rank_removal, max_dp_ranks=dp_ranks)
    if stream is None and (processes > 1 or executor != "local"):
        from .stateful_tests.harness.shards import ShardError
        from .stateful_tests.tree.conformance import ConformTask, conform_sharded

        task = ConformTask(target.name, oracle.name, rule_set.name, streams, seed, profile, strict, strict_shape)
        click.echo(f"conform tree: shard {shard} of {streams} streams in {processes} parts ({executor})")
        try:
            result = conform_sharded(task, shard, processes, executor)
        except ShardError as exc:
            raise click.ClickException(str(exc)) from None
        for m in result.mismatches + result.tolerated[:1]:
            on_mismatch(m)
    else:
        result = run_conform(subject_f, oracle_f, streams, seed, profile,
                             only_stream=stream,
                             subject_name=target.name, oracle_name=oracle.name, on_mismatch=on_mismatch,
                             on_progress=out.Progress("conform tree", "streams"), strict=strict, strict_shape=strict_shape,
                             rules=rule_set.name, shard=shard)
    if result.mismatches or result.tolerated:
        for path in write_failure_files(result, Path(failures_dir)):
            click.echo(f"wrote {path}")
    click.echo(f"seconds={result.seconds:.1f} seed={seed} subject={target.name} oracle={oracle.name} rules={rule_set.name}")
    for line in result.left_out.lines():
        click.echo(line)
    if json_path:
        out.write_json(json_path, "conform-tree", result.to_json())
    click.echo(result.summary_line())
    sys.exit(EXIT_FAIL if result.mismatches else EXIT_PASS)


def _conform_concurrent(target: Any, streams: int, seed: int, stream: int | None, rules: str | None,
                        json_path: str | None) -> None:
    """``conform tree --concurrent``: production mode (stateful_tests/explore/production.py)."""
    from .stateful_tests.explore.production import feed, feeds_concurrently
    from .stateful_tests.harness.targets import production_factory, resolve_rules

    factory = production_factory(target.name)
    probe = factory() if factory is not None else None
    takes_many = probe is not None and feeds_concurrently(probe)
    if probe is not None:
        from .stateful_tests.harness.targets import dispose

        dispose(probe)
    if not takes_many:
        raise click.UsageError(f"--concurrent needs a target that takes events of several ranks at once (send_many); "
                               f"{target.name} does not")
    rule_set, note = resolve_rules(target.name, override=rules)
    click.echo(f"conform tree --concurrent: {note}")
    assert factory is not None
    report = feed(factory, target.name, rule_set, streams, seed, stream, on_failure=click.echo)
    click.echo(f"seconds={report.seconds:.1f} seed={seed} subject={target.name} rules={rule_set.name}")
    for line in report.left_out.lines():
        click.echo(line)
    if json_path:
        out.write_json(json_path, "conform-concurrent", report.to_json())
    click.echo(report.summary_line())
    sys.exit(EXIT_PASS if report.ok else EXIT_FAIL)


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
@click.option("--versions", default=None, help="comma-separated releases (default: 0.6.0 and every release 0.6.1 to 1.6.1)")
@click.option("--cache", type=click.Path(file_okay=False), default=".kvproof-releases", show_default=True,
              help="where wheels are downloaded and unpacked (throwaway; reused between runs)")
@profile_option("the gate profile each release runs under (default quick)")
@click.option("--timeout", type=float, default=600.0, show_default=True, help="seconds per release")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="write the table (docs/releases.md's) here")
@json_option
@click.option("--component", "components", multiple=True, type=click.Choice(["tree", "indexer", "selection"]),
              help="the Dynamo trees to check (repeatable; default: every one a release ships): tree (the binding), "
                   "indexer (python -m dynamo.indexer, from 1.1.0), selection (SelectionService, from 1.4.0)")
def releases(versions: str | None, cache: str, profile: str | None, timeout: float, markdown_path: str | None,
             json_path: str | None, components: tuple[str, ...]) -> None:
    """Run `kvproof check` on every Dynamo tree of every release of ai-dynamo-runtime, one child process each.

    Each release's wheel comes from the package index (pip download --no-deps), is unpacked
    into --cache, and is put first on the child's PYTHONPATH, so the child detects the
    release and its rule set. The last line is `releases: N releases: P pass, B upstream bug,
    D differs, U not checkable`.
    """
    from packaging.version import InvalidVersion

    from .spec.rules import version_key
    from .stateful_tests.tree.releases import RELEASES, markdown, survey, write_between_markers

    chosen = [v.strip() for v in versions.split(",")] if versions else list(RELEASES)
    for version in chosen:
        try:
            version_key(version)
        except InvalidVersion:
            raise click.UsageError(f"--versions: {version!r} is not a release (PEP 440), e.g. 1.6.1 or 0.8.1.post3") from None
    profile_name = profile or "quick"
    cmd = ("kvproof releases" + (f" --versions {versions}" if versions else "") + (f" --profile {profile}" if profile else "")
           + "".join(f" --component {c}" for c in components))

    def on_result(r: Any) -> None:
        failing = ", ".join(row["name"] for row in r.failing())
        click.echo(f"{r.version:<12} {r.component:<10} {r.rules:<22} {r.verdict:<14} {r.seconds:5.0f} s"
                   + (f"  failing: {failing}" if failing else "") + (f"  ({r.note})" if r.note and not r.rows else ""))
        for finding in r.findings():
            click.echo(f"{'':<12} {r.component:<10} {finding}")

    results = survey(chosen, Path(cache).resolve(), profile_name, timeout, on_result, components or None)
    if markdown_path:
        click.echo(f"wrote {write_between_markers(Path(markdown_path), markdown(results, cmd))}")
    if json_path:
        out.write_json(json_path, "releases", {"profile": profile_name, "releases": [r.to_json() for r in results]})
    counts = {v: sum(r.verdict == v for r in results) for v in ("pass", "upstream bug", "differs", "not checkable")}
    click.echo(f"releases: {len(results)} releases: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    # A difference nobody explains fails the survey; so does a survey that could check nothing (no index, a typo).
    sys.exit(EXIT_FAIL if counts["differs"] or counts["not checkable"] == len(results) else EXIT_PASS)


@main.command()
@click.argument("log_file", type=click.Path(exists=True, dir_okay=False), required=False)
@target_option("the subject whose differences are to be explained", default="dynamo")
@rules_option()
@click.option("--streams", type=int, default=40, show_default=True, help="without LOG_FILE: the conformance run's streams")
@seed_option()
@click.option("--examples", type=int, default=5, show_default=True, help="shrunk counterexamples to explain, at most")
def explain(log_file: str | None, target: Any, rules: str | None, streams: int, seed: int, examples: int) -> None:
    """Search the rule variants (one switched, then two) for one under which the subject agrees exactly.

    With LOG_FILE, explains that counterexample (a log as `kvproof replay` reads); without,
    runs a conformance run against the reference under the detected rule set and explains
    its shrunk counterexamples. The last line is `explain: <verdict>`: "behaves like the spec
    with <variant> (<upstream reference>)" or "no variant explains it: likely a bug".
    """
    from .stateful_tests.harness.targets import load_target, resolve_rules
    from .stateful_tests.tree.conformance import conform as run_conform
    from .stateful_tests.tree.explain import Counterexample
    from .stateful_tests.tree.explain import explain as run_explain
    from .stateful_tests.tree.log import LogError, read_log
    from .stateful_tests.tree.replay import queries_of

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
        from .stateful_tests.harness.targets import capabilities
        from .stateful_tests.tree.streams import DEFAULT_PROFILE, StreamProfile

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


@main.command()
@click.argument("log_file", metavar="LOG_FILE|TOKEN|SCHEDULE.json")
@click.option("--target", type=TARGET, default=None,
              help="the subject to replay the log through (default: only the reference and the contract)")
@click.option("--oracle", type=TARGET, default="reference", show_default=True, help="the tree whose answers are taken as right")
@rules_option()
@strict_option
@strict_shape_option
@click.option("--out", "out_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="write the shrunk reproduction here as a log (default: next to LOG_FILE, .min.jsonl)")
@json_option
def replay(log_file: str, target: Any, oracle: Any, rules: str | None, strict: bool, strict_shape: bool,
           out_path: str | None, json_path: str | None) -> None:
    """Replay a log of router events, or a schedule (a token or a schedule file) of the interleaving explorer.

    A log (RouterEvent JSON lines) goes through the contract and two trees side by side: the
    lines the contract refuses, then the first difference of each kind with its log line, and
    the worst one shrunk (same kind) written as a log replayable with this command. The last
    line is `replay: events=E queries=Q differences=D failing=F`.

    A schedule token (SCENARIO/TARGET/STRATEGY/DECISIONS, as `kvproof explore` prints it) or a
    schedule file (.json) runs that exact interleaving again under the controlled scheduler and
    prints its history and what it showed; `--target` runs it on another subject instead.
    """
    from .stateful_tests.explore.token import looks_like_token
    from .stateful_tests.harness.isolation import TargetFailure
    from .stateful_tests.tree.target_failures import finding

    if looks_like_token(log_file) or log_file.endswith(".json"):
        _replay_schedule(log_file, target)
        return
    if not Path(log_file).is_file():
        raise click.BadParameter(f"{log_file!r} is neither a file nor a schedule token", param_hint="LOG_FILE")
    from .stateful_tests.harness.targets import load_target, resolve_rules
    from .stateful_tests.tree.log import LogError, judging_options, ops_to_lines, read_log
    from .stateful_tests.tree.replay import replay_log

    subject = target or load_target("reference")
    if subject.name == oracle.name and target is not None:
        raise click.BadParameter(f"the subject and the oracle are both {subject.name!r}", param_hint="--oracle")
    rule_set, note = resolve_rules(subject.name, oracle.name, override=rules)
    subject_t, oracle_t = _under(subject, rule_set), _under(oracle, rule_set)
    subject_f, oracle_f = subject_t.factory, oracle_t.factory
    try:
        log = read_log(Path(log_file))
    except LogError as exc:
        click.echo(f"replay: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(f"replay: {note}")
    from .stateful_tests.harness.targets import capabilities
    from .stateful_tests.tree.streams import RemoveWorkerDpRankOp

    if any(isinstance(op, RemoveWorkerDpRankOp) for op in log.ops):
        lacking = [t.name for t, f in ((subject_t, subject_f), (oracle_t, oracle_f)) if not capabilities(f).rank_removal]
        if lacking:
            click.echo(f"replay: the log calls remove_worker_dp_rank, which {', '.join(lacking)} does not have", err=True)
            sys.exit(EXIT_USAGE)
    try:
        result = replay_log(log, subject_f, oracle_f, subject.name, oracle.name, rule_set, log_file,
                            strict, strict_shape)
    except TargetFailure as failure:  # the subject's (or the oracle's) process crashed, ran out of memory or hung
        failed = subject_t if failure.target == subject.name else oracle_t
        assert failed.factory is not None
        found = finding(failed.name, failed.factory, failure)
        click.echo(found.report())
        click.echo(f"  replay: {found.replay}")
        click.echo(f"replay: events={len(log.ops)} failing=1 (the target's process: {failure.kind})")
        sys.exit(EXIT_FAIL)
    click.echo(result.report())
    if result.failing is not None:
        target_path = Path(out_path) if out_path else Path(log_file).with_suffix(".min.jsonl")
        try:
            target_path.write_text("".join(line + "\n" for line in ops_to_lines(result.shrunk, result.shrunk_queries)))
        except OSError as exc:
            click.echo(f"replay: cannot write the shrunk log to {target_path}: {exc}", err=True)
        else:
            import shlex

            extra = judging_options(rules, strict, strict_shape)
            click.echo(f"wrote {target_path}\n  replay: kvproof replay {target_path} --target {shlex.quote(subject.name)} "
                       f"--oracle {oracle.name}{extra}")
    if json_path:
        out.write_json(json_path, "replay", {
            "log": log_file, "subject": subject.name, "oracle": oracle.name, "rules": rule_set.name,
            "events": result.events, "queries": result.queries, "refused_lines": result.refused_lines,
            "differences": [{"kind": d.kind, "known": d.known, "line": result.line_of(d), "detail": d.detail}
                            for d in result.differences],
            "failing": result.failing.kind if result.failing else None,
            "shrunk": ops_to_lines(result.shrunk, result.shrunk_queries)})
    failing = 1 if result.failing is not None else 0
    click.echo(f"replay: events={result.events} queries={result.queries} differences={len(result.differences)} "
               f"failing={failing}")
    sys.exit(EXIT_FAIL if failing else EXIT_PASS)


def _sequence_model(value: str) -> Callable[..., Any]:
    from .stateful_tests.harness.targets import import_factory
    from .stateful_tests.sequences.model import TARGETS

    if value in TARGETS:
        return TARGETS[value]
    factory, reason = import_factory(value)
    if factory is None:
        raise click.BadParameter(f"{reason}; use {', '.join(TARGETS)} or module.path:Class", param_hint="--model")
    return factory


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
    from .gate.sequences import trace_calls
    from .stateful_tests.sequences.selection_oracle import conform_selection as run_conform
    from .stateful_tests.sequences.selection_oracle import conform_selection_trace, unavailable

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
    from .stateful_tests.harness import process_guard
    from .stateful_tests.sequences.oracle import OracleStartError, SlotTrackerProcess, oracle_unavailable
    from .stateful_tests.sequences.oracle import conform_slot_tracker as run_conform

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


# ----------------------------------------------------------------------------- vectors


@main.command()
@target_option()
def vectors(target: Any) -> None:
    """Replay the observed-behaviour vectors (crtc.md §13 and §10), judged as the gate's vectors row judges them.

    The target's rule set is detected as for `kvproof check`: under a rule set that is not exact (Dynamo's
    concurrent tree) each vector is a differential stream against the reference under it; calls the target's
    surface cannot carry are listed as left out.
    """
    from .gate import Result, make_context, run_check
    from .gate.tree import CHECKS
    from .stateful_tests.harness.profiles import profile_named
    from .stateful_tests.tree.vectors import SCENARIOS

    ctx = make_context(target.name, target.factory, profile_named("quick"), 1)
    click.echo(f"vectors: {ctx.rules_note}")
    row = run_check(next(c for c in CHECKS if c.layer == "vectors"), ctx)
    for line in row.left_out + row.notes:
        click.echo(line)
    if row.result is not Result.PASS:
        click.echo(f"{row.result.value}: {row.detail}")
    click.echo(f"vectors: {len(SCENARIOS)} scenarios, {row.checks} steps, {row.result.value} (target={target.name})")
    sys.exit({Result.PASS: EXIT_PASS, Result.FAIL: EXIT_FAIL}.get(row.result, EXIT_SKIPPED))


# ----------------------------------------------------------------------------- fuzz


@main.command()
@click.option("--inputs", type=int, default=None,
              help="hostile cases to run, each over every target (default: the profile's: quick 300, ci 2,000, deep 100,000)")
@seed_option(None, "Hypothesis's seed (default: 1, or a fresh one in the deep profile, printed)")
@profile_option()
@click.option("--target", "names", multiple=True, type=click.Choice(["reference", "impl", "impl-lanes", "impl-pool", "dynamo"]),
              help="run only these trees (repeatable; the reference always runs, as the judge); default: all five")
@click.option("--replay", "replay_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="instead: run one saved case (kvproof-failures/fuzz/*.json) again and show what each tree did")
@click.option("--save", "save_dir", type=click.Path(file_okay=False), default="kvproof-failures/fuzz", show_default=True,
              help="where a failing case is saved, shrunk")
@shard_options("cases")
@json_option
def fuzz(inputs: int | None, seed: int | None, profile: str | None, names: tuple[str, ...], replay_file: str | None,
         save_dir: str, shard: Any, processes: int, executor: str, json_path: str | None) -> None:
    """Hostile input: grammar-aware and byte-level cases over every tree at once (docs/hostile-input.md).

    After each case: a typed error or an acceptance, the state byte-identical after a rejection, check()
    holding, every kvproof tree deciding as the reference does, Dynamo too except the recorded
    differences. The last line is `fuzz: inputs=N targets=T untyped=0 problems=0 known=...`.
    """
    from .stateful_tests.fuzz.campaign import SAID, TARGETS, FuzzFileError, FuzzTask, fuzz_sharded, replay, summary_line
    from .stateful_tests.harness.profiles import profile_named
    from .stateful_tests.harness.shards import ShardError

    fleet = tuple(dict.fromkeys(("reference", *names))) if names else TARGETS
    if replay_file:
        try:
            case, seen, problems = replay(replay_file, fleet)
        except FuzzFileError as exc:
            raise click.BadParameter(str(exc), param_hint="--replay") from None
        click.echo(f"case: {case.describe()}")
        out.print_table(("target", "outcome", "message", "check()"),
                        [(name, o.outcome, o.message[:90], o.check or "holds") for name, o in seen.items()])
        for problem in problems:
            click.echo(f"PROBLEM {problem.line()}")
        click.echo(f"replay: problems={len(problems)}")
        sys.exit(EXIT_FAIL if problems else EXIT_PASS)
    chosen = profile_named(profile)
    if seed is None:
        seed = 1 if chosen.fixed_seed else int.from_bytes(os.urandom(4), "big")
        click.echo(f"kvproof fuzz: seed={seed} (replay with --seed {seed})")
    count = inputs if inputs is not None else chosen.tree.fuzz_inputs
    started = time.monotonic()
    try:
        report = fuzz_sharded(FuzzTask(count, seed, fleet, save_dir), shard, processes, executor)
    except ShardError as exc:
        raise click.ClickException(str(exc)) from None
    seconds = time.monotonic() - started
    outcomes = sorted({o for c in report.outcomes.values() for o in c}, key=lambda o: (o != "ok", o))
    columns = list(report.outcomes)
    out.print_table(("outcome", *columns), [(o, *(report.outcomes[n].get(o, 0) for n in columns)) for o in outcomes],
                    numeric=tuple(range(1, len(columns) + 1)))
    for name, why in report.unavailable.items():
        click.echo(f"not run: {name}: {why}")
    for finding, n in sorted(report.known.items()):
        click.echo(f"known {finding} in {n} cases: {SAID[finding]} (docs/hostile-input.md)")
    if report.problems:
        click.echo(f"PROBLEM {report.problems[0].line()}")
        if report.case is not None:
            click.echo(f"  shrunk case: {report.case.describe()}")
        if report.file:
            click.echo(f"  saved: {report.file}")
            click.echo(f"  replay: kvproof fuzz --replay {report.file}")
    if json_path:
        out.write_json(json_path, "fuzz", {"seed": seed, "inputs": report.inputs, "seconds": round(seconds, 2),
                                           "outcomes": {n: dict(c) for n, c in report.outcomes.items()},
                                           "known": dict(report.known), "problems": [p.line() for p in report.problems],
                                           "file": report.file, "unavailable": report.unavailable,
                                           "shard": report.shard, "cases_run": report.ordinals})
    click.echo(f"{summary_line(report)} seconds={seconds:.1f} seed={seed}" + ("" if shard.whole else f" shard={shard}"))
    sys.exit(EXIT_FAIL if report.problems else EXIT_PASS)


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
    from .stateful_tests.harness.shards import ShardError
    from .stateful_tests.tree.impl_mutants import IMPL_MUTANTS, short_name
    from .stateful_tests.tree.stress import StressTask, stress_sharded

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
    from .stateful_tests.sequences.stress import stress as run_stress

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


def _replay_schedule(text: str, target: Any) -> None:
    """``kvproof replay TOKEN|SCHEDULE.json``: one interleaving again, deterministically."""
    import dataclasses

    from .stateful_tests.explore.campaign import replay_schedule
    from .stateful_tests.explore.replay import Divergence
    from .stateful_tests.explore.token import TokenError, load_schedule, parse_token

    try:
        schedule = load_schedule(text) if text.endswith(".json") else parse_token(text)
    except TokenError as exc:
        click.echo(f"replay: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    recorded_on = schedule.target
    if target is not None:
        schedule = dataclasses.replace(schedule, target=target.name)
    try:
        result, program = replay_schedule(schedule)
    except KeyError as exc:
        click.echo(f"replay: {exc.args[0]}", err=True)
        sys.exit(EXIT_USAGE)
    except Divergence as exc:
        why = (f"it was recorded on {recorded_on}, whose threads take other turns" if schedule.target != recorded_on
               else "the code under it has changed since it was recorded")
        click.echo(f"replay: the schedule does not fit {schedule.target} ({exc}): {why}", err=True)
        sys.exit(EXIT_FAIL)
    click.echo(f"replay: {schedule.scenario} on {schedule.target}: {len(schedule.decisions)} recorded decisions "
               f"(threads: {', '.join(f'{chr(97 + i)}={n}' for i, n in sorted(result.names.items()))})")
    for line in program.recorder.describe():
        click.echo(f"  {line}")
    for problem in result.problems:
        click.echo(problem)
    if schedule.kind and result.failed:
        click.echo(f"replay: shows {schedule.kind!r} as recorded" if problem_kind(result) == schedule.kind
                   else f"replay: shows {problem_kind(result)!r}, recorded as {schedule.kind!r}")
    elif schedule.kind:
        click.echo(f"replay: recorded as {schedule.kind!r} on {recorded_on}; passes on {schedule.target}")
    click.echo(f"replay: outcome={result.outcome.value} decisions={len(result.decisions)} steps={result.steps} "
               f"(decisions past the recorded ones never preempt)")
    sys.exit(EXIT_FAIL if result.failed else EXIT_PASS)


def problem_kind(result: Any) -> str:
    from .stateful_tests.explore.programs import kind_of

    return kind_of(result.problems[0]) if result.problems else result.outcome.value


# ----------------------------------------------------------------------------- explore


@main.command()
@click.argument("scenario", required=False)
@click.option("--strategy", type=click.Choice(["pct", "random", "dfs", "hypothesis"]), default="pct", show_default=True,
              help="how schedules are chosen: PCT (random priorities, d change points), a random walk, bounded-preemption "
                   "depth-first search, or Hypothesis drawing and shrinking the schedule")
@click.option("--budget", type=int, default=None, help="schedules to run (default: the profile's; dfs stops when exhausted)")
@seed_option()
@click.option("--depth", type=int, default=None, help="PCT's bug depth d (default: the profile's, 3)")
@click.option("--preemptions", type=int, default=2, show_default=True, help="dfs: the preemption bound (-1: unbounded)")
@click.option("--target", "target_name", default="impl", show_default=True,
              help="impl, a broken structure's name (see --list), or module.path:Factory")
@profile_option()
@click.option("--faults", "faults", is_flag=True,
              help="instead: raise an injected fault at each decision point of each thread, once each, and judge what is left")
@click.option("--real", "real_runs", type=int, default=0,
              help="instead: run each scenario this many times on real threads (switch interval 1e-6), same checks")
@click.option("--list", "list_only", is_flag=True, help="list the scenarios and the broken structures, and exit")
@click.option("--mutants", is_flag=True, help="run the gate's explorer rows on every broken structure: each must be found")
@click.option("--fresh", is_flag=True, help="with --mutants: skip the saved regressions, so every find is the explorer's own")
@click.option("--save", "save_dir", type=click.Path(file_okay=False), default="kvproof-failures/schedules", show_default=True,
              help="where a failing schedule is saved as a file")
@json_option
def explore(scenario: str | None, strategy: str, budget: int | None, seed: int, depth: int | None, preemptions: int,
            target_name: str, profile: str | None, faults: bool, real_runs: int, list_only: bool, mutants: bool,
            fresh: bool, save_dir: str, json_path: str | None) -> None:
    """Explore the interleavings of a race scenario under the controlled scheduler (every scenario when none is named).

    SCENARIO is one of `--list`, a seeded random workload `random-ops.sSEED`, or (with
    `--strategy hypothesis`) `random-ops`, whose workload Hypothesis draws and shrinks with the schedule.

    Each schedule runs the scenario's threads one at a time, the strategy choosing who runs at
    every yield point and acquire; its history is checked for linearizability against the
    reference, and the structure's check() runs at the end. The first failing schedule is shrunk,
    saved, and printed as a token with the command that replays it. The last line is
    `explore: scenarios=N schedules=S failing=F`.
    """
    from .stateful_tests.explore import campaign
    from .stateful_tests.explore.token import save_schedule
    from .stateful_tests.harness.profiles import profile_named

    if list_only:
        out.print_table(("scenario", "family", "race"), [(n, sc.family, sc.story) for n, sc in campaign.SCENARIOS.items()])
        click.echo("broken structures (targets): " + ", ".join(campaign.broken_subjects()))
        sys.exit(EXIT_PASS)
    chosen = profile_named(profile)
    if mutants:
        _explore_mutants(chosen, seed, fresh, json_path)
        return
    if scenario == campaign.RANDOM and strategy != "hypothesis":
        raise click.BadParameter(f"{campaign.RANDOM} draws its workload with --strategy hypothesis; "
                                 f"{campaign.RANDOM}.sSEED is a seeded one", param_hint="SCENARIO")
    if scenario is not None and scenario != campaign.RANDOM:
        try:
            campaign.scenario_named(scenario)
        except KeyError as exc:
            raise click.BadParameter(exc.args[0], param_hint="SCENARIO") from None
    subject = campaign.subject_for(target_name)
    if subject.why:
        click.echo(f"explore: {subject.why}", err=True)
        sys.exit(EXIT_USAGE)
    names = [scenario] if scenario else [n for n, sc in campaign.SCENARIOS.items() if subject.maker(sc.family) is not None]
    if real_runs:
        _explore_real(campaign, subject, names, real_runs)
        return
    if faults:
        _explore_faults(subject, names, json_path)
        return
    schedules = budget if budget is not None else chosen.explore.schedules
    d = depth if depth is not None else chosen.explore.pct_depth
    rows, found = [], []
    for name in names:
        if strategy == "hypothesis":
            report = campaign.explore_with_hypothesis(name, subject, schedules, seed)
        else:
            strat = campaign.strategy_named(strategy, seed, d, None if preemptions < 0 else preemptions)
            report = campaign.explore(name, subject, strat, schedules if strategy != "dfs" or budget else 10**9)
        verdict = "FAIL" if report.found else ("exhausted" if report.exhausted else "pass")
        rows.append((name, report.strategy, report.schedules, report.max_decisions, f"{report.seconds:.2f}", verdict))
        if strategy == "hypothesis" and report.schedules:
            click.echo(f"  {report.schedules} schedules, Hypothesis's shrinking runs included")
        if strategy == "pct" and report.schedules:
            click.echo(campaign.pct_budget_line(report.threads, report.max_decisions, d))
        for note in report.notes:
            click.echo(f"  note: {note}")
        if report.found:
            found.append(report.found)
    out.print_table(("scenario", "strategy", "schedules", "max decisions", "seconds", "result"), rows, numeric=(2, 3, 4))
    for f in found:
        path = save_schedule(f.schedule, save_dir)
        f.file = str(path)
        click.echo(f"\nFAIL {f.schedule.scenario} on {subject.name}: {f.problems[0].splitlines()[0]}")
        for line in f.problems[0].splitlines()[1:]:
            click.echo(f"  {line}")
        click.echo(f"  found at schedule {f.index} after {f.seconds:.2f} s; shrunk to {len(f.schedule.decisions)} decisions "
                   f"({f.preemptions} preemptions) from {f.original_decisions}")
        click.echo("  history of the shrunk schedule:")
        for line in f.history:
            click.echo(f"    {line}")
        if f.schedule.workload is None:
            click.echo(f"  token:  {f.token}")
        click.echo(f"  saved:  {path}\n  replay: {f.replay}")
    if json_path:
        out.write_json(json_path, "explore", {"target": subject.name, "strategy": strategy, "seed": seed, "rows": [
            dict(zip(("scenario", "strategy", "schedules", "max_decisions", "seconds", "result"), r)) for r in rows],
            "found": [{"token": f.token, "file": f.file, "kind": f.schedule.kind, "problem": f.problems[0]} for f in found]})
    click.echo(f"explore: scenarios={len(rows)} schedules={sum(r[2] for r in rows)} failing={len(found)}")
    sys.exit(EXIT_FAIL if found else EXIT_PASS)


def _explore_faults(subject: Any, names: list[str], json_path: str | None) -> None:
    """``kvproof explore --faults``: every (thread, decision point) pair faulted once; clean, torn, poisoned or broken."""
    from .stateful_tests.explore.faults import OUTCOMES, explore_faults, summary

    reports = [r for r in (explore_faults(name, subject.name) for name in names) if r.pairs]
    rows = [(r.scenario, r.pairs, *(r.count(o) for o in OUTCOMES)) for r in reports]
    out.print_table(("scenario", "pairs tried", "clean", "torn-but-consistent", "poisoned", "broken"), rows,
                    numeric=(1, 2, 3, 4, 5))
    broken = [(r.scenario, *b) for r in reports for b in r.broken]
    for name, thread, at, point, problem in broken:
        click.echo(f"BROKEN {name}: a fault in {thread} at decision {at} ({point}): {problem}")
        click.echo(f"  replay: kvproof explore {name} --faults --target {subject.name}")
    if json_path:
        out.write_json(json_path, "explore-faults", {"target": subject.name, "rows": [
            dict(zip(("scenario", "pairs", *OUTCOMES), r)) for r in rows],
            "broken": [dict(zip(("scenario", "thread", "decision", "point", "problem"), b)) for b in broken]})
    click.echo(summary(reports))
    sys.exit(EXIT_FAIL if broken else EXIT_PASS)


def _explore_real(campaign: Any, subject: Any, names: list[str], runs: int) -> None:
    """``kvproof explore --real N``: the scenarios on real threads (failures replay only probabilistically)."""
    from .stateful_tests.explore.real_threads import explore_real

    rows, failing = [], []
    for name in names:
        sc = campaign.scenario_named(name)
        make = subject.maker(sc.family)
        if make is None:
            continue
        report = explore_real(name, sc.build(make), runs)
        rows.append((name, report.runs, f"{report.seconds:.2f}", "FAIL" if report.failures else "pass"))
        for index, problems in report.failures:
            failing.append(name)
            click.echo(f"FAIL {name} on {subject.name}, real-thread run {index}: {problems[0]}")
    out.print_table(("scenario", "real-thread runs", "seconds", "result"), rows, numeric=(1, 2))
    click.echo(f"explore --real: scenarios={len(rows)} runs={sum(r[1] for r in rows)} failing={len(failing)}")
    sys.exit(EXIT_FAIL if failing else EXIT_PASS)


def _explore_mutants(profile: Any, seed: int, fresh: bool, json_path: str | None) -> None:
    """``kvproof explore --mutants``: the gate's explorer sweep on every broken structure, each must be found."""
    from .stateful_tests.explore import campaign

    rows, missed = [], []
    for name in campaign.broken_subjects():
        subject = campaign.subject_for(name)
        report = campaign.sweep(subject, subject.families, profile.explore.schedules, seed, profile.explore.pct_depth,
                                regressions=not fresh)
        f = report.found
        if report.regression_failure:
            click.echo(f"explore: {report.regression_failure}", err=True)
        if f is None:
            missed.append(name)
        rows.append((name, f.schedule.scenario if f else "-", f.schedule.kind if f else "NOT FOUND", report.schedules,
                     f"{report.seconds:.2f}", f.token if f else "-"))
    if not fresh:
        click.echo("(the saved regressions, stateful_tests/explore/regressions/, are replayed first: a structure one of "
                   "them catches shows 0 schedules; --fresh explores from nothing)")
    out.print_table(("broken structure", "scenario", "kind", "schedules", "seconds", "token"), rows, numeric=(3, 4),
                    title=f"the gate's explorer rows ({profile.name} profile: {profile.explore.schedules} schedules per "
                          f"scenario and strategy, seed {seed})")
    if json_path:
        out.write_json(json_path, "explore-mutants", {"profile": profile.name, "seed": seed, "rows": [
            dict(zip(("mutant", "scenario", "kind", "schedules", "seconds", "token"), r)) for r in rows]})
    click.echo(f"explore: mutants={len(rows)} found={len(rows) - len(missed)} missed={len(missed)}"
               + (f" ({', '.join(missed)})" if missed else ""))
    sys.exit(EXIT_FAIL if missed else EXIT_PASS)


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
    from .stateful_tests.harness.targets import load_target
    from .stateful_tests.tree.soak import SoakPlan, beyond_dead_nodes, run_soak, soak_targets

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
        from .stateful_tests.tree.traffic import TraceFormatError, default_trace, mooncake_requests, read_trace

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

    from .stateful_tests.sequences.soak import TRACKERS, TrackerPlan, run_tracker_soak

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


# ----------------------------------------------------------------------------- trace


TRACE_TREES = "reference,impl,impl-lanes,impl-pool,dynamo"


def _trace_trees(names: str) -> tuple[dict[str, Any], list[str]]:
    """The trees named (comma-separated targets); Dynamo is left out, with a note, when it is not installed."""
    from .stateful_tests.harness.targets import load_target

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
    from .plot import plot_load
    from .stateful_tests.tree.router import RouterPlan

    started = time.perf_counter()
    from .stateful_tests.tree.trace_check import check_trace
    from .stateful_tests.tree.traffic import TraceFormatError, default_trace, mooncake_requests, read_trace

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
        from .stateful_tests.tree.trace_stress import run_trace_stress

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
    from .stateful_tests.sequences.oracle import OracleStartError, oracle_unavailable, replay_calls
    from .stateful_tests.tree.trace_check import TrackerVerdict

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


# ----------------------------------------------------------------------------- bench


@main.group()
def bench() -> None:
    """Throughput side by side in one run, as ratios (a benchmark, never a test)."""


@bench.command("trees")
@click.argument("trace", required=False, type=click.Path(dir_okay=False))
@click.option("--requests", type=int, default=None, help="the trace's first N requests (default: all)")
@click.option("--workers", type=int, default=8, show_default=True, help="workers of the router simulation")
@click.option("--capacity", type=int, default=2000, show_default=True, help="blocks per worker before LRU eviction")
@click.option("--streams", type=int, default=60, show_default=True, help="generated streams of the synthetic row (0: none)")
@click.option("--no-trace", is_flag=True, help="only the synthetic workload")
@click.option("--no-memory", is_flag=True, help="skip bytes per cached block (the child-process builds)")
@seed_option()
@click.option("--repeats", type=int, default=3, show_default=True, help="runs per tree (median reported)")
@json_option
def bench_trees(trace: str | None, requests: int | None, workers: int, capacity: int, streams: int, no_trace: bool,
                no_memory: bool, seed: int, repeats: int, json_path: str | None) -> None:
    """CPU time per event and per query, wall rates and bytes per cached block of every tree on the same JSON bytes.

    CPU time is this process's (every thread, the binding's and the pool's included); the ratios
    to the binding lead by CPU, since wall ratios swing on a shared machine.

    The representative workload leads: TRACE (default: the project's Mooncake conversation trace)
    through the router simulation. The synthetic streams follow as a labelled regression row.
    """
    from .stateful_tests.tree.bench import BenchReport, run_bench
    from .stateful_tests.tree.traffic import default_trace

    for name, value in (("--workers", workers), ("--capacity", capacity), ("--repeats", repeats)):
        if value < 1:
            raise click.BadParameter(f"must be at least 1, got {value}", param_hint=name)
    if requests is not None and requests < 1:
        raise click.BadParameter(f"must be at least 1, got {requests}", param_hint="--requests")
    path = None if no_trace else Path(trace) if trace else default_trace()
    if path is not None and not path.is_file():
        raise click.BadParameter(f"no such trace file: {path}", param_hint="TRACE")
    try:
        reports = run_bench(path, requests, workers, capacity, streams, seed, repeats, memory=not no_memory)
    except ValueError as exc:  # a trace that does not read (traffic.TraceFormatError)
        raise click.ClickException(str(exc)) from None
    for number, report in enumerate(reports, 1):
        kind = "the representative one" if report.label == "trace" else "a regression row, not traffic"
        click.echo(f"workload {number} ({report.label}; {kind}): {report.detail}; median of {report.repeats} runs")
        out.print_table(BenchReport.HEADERS, report.table_rows(), numeric=(1, 2, 3, 4, 5))
        for line in report.ratio_lines():
            click.echo(line)
        if report.decode_line():
            click.echo(report.decode_line())
        if report.label == "trace":
            met = report.goals_met()
            click.echo("goal (<= 1.5x the binding's bytes/block, for reference and impl): "
                       + ("no binding to compare with" if met is None else "met" if met else "NOT met"))
        click.echo("")
    if json_path:
        out.write_json(json_path, "bench-trees", {"workloads": [r.to_json() for r in reports]})
    sys.exit(EXIT_PASS)


@bench.command("shards")
@click.option("--streams", type=int, default=1000, show_default=True, help="conformance streams of the campaign")
@click.option("--inputs", type=int, default=10000, show_default=True, help="fuzz cases of the campaign (40 blocks of 250)")
@click.option("--processes", type=click.IntRange(2), default=2, show_default=True, help="processes of the parallel run")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="the parallel run in a local process pool or as Ray tasks")
@click.option("--suite", "suite_paths", default="stateful_tests/tree/tests", show_default=True,
              help="test folders (space-separated, in the checkout) run by pytest alone and by pytest-xdist; '' for none")
@json_option
def bench_shards(streams: int, inputs: int, processes: int, executor: str, suite_paths: str, json_path: str | None) -> None:
    """The campaigns run whole in one process, then split over --processes, in one run: wall seconds and the speed-up.

    Conformance (the concurrent tree against the reference, --streams streams) and fuzz (--inputs cases over
    the reference and the concurrent tree); each parallel run must count exactly what the serial one counts.
    Then part of the test suite (--suite), by pytest in one process and over --processes pytest-xdist
    workers: the same tests must pass, skip and fail.
    """
    from .stateful_tests.fuzz.campaign import FuzzTask, fuzz_sharded
    from .stateful_tests.harness.shards import WHOLE, SuiteRunError, run_suite
    from .stateful_tests.tree.conformance import ConformTask, conform_sharded

    conform_task = ConformTask("impl", "reference", "dynamo-1.6", streams, 1)
    fuzz_task = FuzzTask(inputs, 1, ("reference", "impl"), None)
    campaigns: list[tuple[str, Callable[[int], Any], Callable[[Any], Any]]] = [
        ("conform tree", lambda p: conform_sharded(conform_task, WHOLE, p, executor if p > 1 else "local"),
         lambda r: (r.streams, r.events, r.queries, r.kinds.counts, len(r.mismatches))),
        ("fuzz", lambda p: fuzz_sharded(fuzz_task, WHOLE, p, executor if p > 1 else "local"),
         lambda r: (r.inputs, r.outcomes, r.known, len(r.problems))),
    ]
    root = Path(__file__).resolve().parent.parent
    folders = suite_paths.split()
    if folders:
        missing = [f for f in folders if not (root / f).is_dir()]
        if missing:
            raise click.BadParameter(f"{', '.join(missing)} is not a test folder of the checkout at {root}",
                                     param_hint="--suite")
        campaigns.append((f"pytest {' '.join(folders)}", lambda p: run_suite(root, folders, p), lambda r: r.counts))
    rows, body, same = [], [], True
    for name, run, counts in campaigns:
        timed = []
        for p in (1, processes):
            started = time.perf_counter()
            try:
                result = run(p)
            except SuiteRunError as exc:
                raise click.ClickException(str(exc)) from None
            timed.append((time.perf_counter() - started, counts(result)))
        (one, a), (many, b) = timed
        same &= a == b
        rows.append((name, f"{one:.1f}", f"{many:.1f}", f"{one / many:.2f}x", "yes" if a == b else "NO"))
        body.append({"campaign": name, "serial_s": one, "parallel_s": many, "speedup": one / many, "same_counts": a == b,
                     "serial_counts": repr(a), "parallel_counts": repr(b)})
        if a != b:
            click.echo(f"{name}: counts differ: 1 process {a!r}, {processes} processes {b!r}")
    click.echo(f"machine: {os.cpu_count()} cores; parallel: {processes} processes ({executor}; the suite: pytest-xdist)")
    out.print_table(("campaign", "1 process (s)", f"{processes} processes (s)", "speed-up", "same counts"), rows,
                    numeric=(1, 2, 3))
    if json_path:
        out.write_json(json_path, "bench-shards", {"processes": processes, "executor": executor, "rows": body})
    sys.exit(EXIT_PASS if same else EXIT_FAIL)


@bench.command("services")
@click.option("--target", "names", multiple=True,
              help="a Dynamo target (repeatable; default: dynamo, dynamo-indexer@1, dynamo-indexer, dynamo-selection@1, "
                   "dynamo-selection)")
@click.option("--streams", type=int, default=20, show_default=True, help="generated streams, each on a fresh tree")
@json_option
def bench_services(names: tuple[str, ...], streams: int, json_path: str | None) -> None:
    """Events/s and queries/s each Dynamo door sustains, deterministic and concurrent, beside the binding in one run.

    CPU per call counts this process (every thread) and the standalone indexer's own process; ratios
    to the binding are by CPU.
    """
    from .stateful_tests.explore import bench_services as bench_room

    rows, missing = bench_room.bench_services(names or bench_room.DEFAULT_TARGETS, streams)
    for name, why in missing.items():
        click.echo(f"bench services: {name} left out: {why}")
    if not rows:
        click.echo("bench services: no target available", err=True)
        sys.exit(EXIT_USAGE)
    out.print_table(bench_room.HEADERS, bench_room.table(rows), numeric=(2, 3, 4, 6, 7, 8))
    if json_path:
        out.write_json(json_path, "bench-services", {"streams": streams, "rows": [r.to_json() for r in rows],
                                                     "missing": missing})
    sys.exit(EXIT_PASS)


@bench.command("crowd")
@click.option("--ranks", "sizes", type=int, multiple=True,
              help="crowd sizes (repeatable; default: 100, 1,000 and 10,000 ranks on one prefix)")
@click.option("--tree", "names", type=click.Choice(["reference", "impl", "dynamo"]), multiple=True,
              help="trees to measure (repeatable; default: all three)")
@click.option("--repeats", type=click.IntRange(1), default=3, show_default=True,
              help="runs of the whole workload, interleaved (the median of each figure is reported)")
@json_option
def bench_crowd(sizes: tuple[int, ...], names: tuple[str, ...], repeats: int, json_path: str | None) -> None:
    """Per-op cost of a store and of a removal when many ranks share one prefix, and its growth, beside Dynamo.

    Ratios and exponents are by CPU time (this process); wall time is shown beside it.
    """
    from .stateful_tests.tree import crowd

    if any(n < 2 for n in sizes) or len(set(sizes)) == 1:
        raise click.BadParameter("give at least two different sizes, each at least 2", param_hint="--ranks")
    report = crowd.run_crowd(tuple(sorted(set(sizes))) or crowd.SIZES, names, repeats)
    for name, why in report.missing.items():
        click.echo(f"bench crowd: {name} left out: {why}")
    click.echo(f"workload: n workers each store the same {crowd.PREFIX_BLOCKS}-block prefix (one node, n holders), "
               f"then each is removed; per op = the phase's time / n; the median of {repeats} runs")
    out.print_table(crowd.HEADERS, report.table(), numeric=(1, 2, 3, 4, 5, 6, 7))
    for line in report.goal_lines():
        click.echo(line)
    if json_path:
        out.write_json(json_path, "bench-crowd", report.to_json())
    sys.exit(EXIT_PASS)


@bench.command("ttd")
@click.option("--profile", type=click.Choice(["quick", "ci"]), default="quick", show_default=True,
              help="the gate profile the broken changes are checked under")
@click.option("--order", "orders", type=click.Choice(["declared", "cheapest"]), multiple=True,
              help="the row orders to time (repeatable; default both)")
@json_option
def bench_ttd(profile: str, orders: tuple[str, ...], json_path: str | None) -> None:
    """Time to detection: how long the gate takes, stopping at its first failing row, to report each of its own broken
    changes (the gate's controls), rows as declared and cheapest first (``check --fail-fast``); median and p90."""
    from .gate.ttd import ORDERS, detect, distinct_controls, healthy_seconds, summary

    chosen = orders or ORDERS
    seconds = healthy_seconds(profile) if "cheapest" in chosen else {}
    if seconds:
        click.echo(f"bench ttd: the healthy embedded implementation's {len(seconds)} rows took {sum(seconds.values()):.1f} s")
    detections = []
    for control in distinct_controls():
        for order in chosen:  # one line per broken change as it is done: a long run shows its progress
            d = detect(control, profile, order, seconds)
            detections.append(d)
            click.echo(f"  {d.control[:60]:<60} {d.order:<9} {d.wall_s:6.1f} s wall {d.cpu_s:6.1f} s CPU  "
                       f"{d.rows_run:2d} rows  first failing: {d.first_failing or 'NONE'}")
    for order in chosen:
        click.echo(f"bench ttd: profile={profile} {summary(detections, order)}")
    if json_path:
        out.write_json(json_path, "bench-ttd", {"profile": profile, "detections": [d.to_json() for d in detections]})
    sys.exit(EXIT_FAIL if any(d.first_failing is None for d in detections) else EXIT_PASS)


@bench.command("memory")
@click.option("--family", type=click.Choice(["tree", "sequences"]), default="tree", show_default=True,
              help="the trees (bytes per cached block) or the slot trackers (bytes per active request block)")
@click.option("--requests", type=int, default=12031, show_default=True, help="requests served (the Mooncake trace has 12,031 in its hour)")
@seed_option()
@click.option("--workers", type=int, default=8, show_default=True, help="workers in the fleet (one or two dp ranks each)")
@click.option("--capacity", type=int, default=10**9, show_default=True, help="blocks per rank before LRU eviction (default: none)")
@click.option("--trace", type=click.Path(dir_okay=False), default=None,
              help="a Mooncake-format trace (default: the project's copy if present, else synthetic chat traffic)")
@click.option("--synthetic", is_flag=True, help="use synthetic chat traffic even when the trace is present")
@click.option("--trees", default=None, help="comma-separated subset of: reference, impl (1 lane), impl (3 lanes), pool x4, dynamo")
@json_option
def bench_memory(family: str, requests: int, seed: int, workers: int, capacity: int, trace: str | None, synthetic: bool,
                 trees: str | None, json_path: str | None) -> None:
    """Bytes per cached (rank, block) pair of every tree, by tracemalloc and by RSS, each tree in a fresh child process.

    With --family sequences: bytes per active request block of the reference and the concurrent slot tracker.
    """
    if family == "sequences":
        from .stateful_tests.sequences.memory import HEADERS as TRACKER_HEADERS
        from .stateful_tests.sequences.memory import run_tracker_memory_bench

        tracked = run_tracker_memory_bench(requests, seed, workers)
        click.echo(tracked.headline())
        out.print_table(TRACKER_HEADERS, tracked.table_rows(), numeric=(1, 2, 3))
        if json_path:
            out.write_json(json_path, "bench-memory-sequences", tracked.to_json())
        sys.exit(EXIT_PASS)
    from .stateful_tests.tree.memory import HEADERS, TREES, run_memory_bench
    from .stateful_tests.tree.traffic import MOONCAKE_TRACE

    names = tuple(TREES) if trees is None else tuple(t.strip() for t in trees.split(",") if t.strip())
    unknown = [n for n in names if n not in TREES]
    if unknown:
        raise click.BadParameter(f"unknown trees {unknown}: choose from {', '.join(TREES)}", param_hint="--trees")
    chosen = None if synthetic else Path(trace) if trace else MOONCAKE_TRACE
    result = run_memory_bench(requests, seed, workers, capacity, chosen, names)
    click.echo(result.headline())
    out.print_table(HEADERS, result.table_rows(), numeric=(1, 2, 3))
    for line in result.ratio_lines():
        click.echo(line)
    if json_path:
        out.write_json(json_path, "bench-memory", result.to_json())
    sys.exit(EXIT_PASS)


@bench.command("explore")
@click.option("--schedules", type=int, default=3000, show_default=True, help="schedules of the toy program per strategy")
@click.option("--histories", type=int, default=200, show_default=True, help="50-call histories for the checker")
@seed_option()
@json_option
def bench_explore(schedules: int, histories: int, seed: int, json_path: str | None) -> None:
    """Schedules per second (3 threads x 10 yield points, one core) and milliseconds per 50-call linearizability check."""
    from dataclasses import asdict

    from .stateful_tests.explore.bench import HEADERS, run_bench_explore, table_rows

    result = run_bench_explore(schedules, histories, seed)
    out.print_table(HEADERS, table_rows(result), numeric=(1, 2))
    for line in result.lines():
        click.echo(line)
    if json_path:
        out.write_json(json_path, "bench-explore", asdict(result))
    sys.exit(EXIT_PASS)


@bench.command("roundtrip")
@click.option("--backends", default="numpy,torch,cuda,cupy", show_default=True, help="comma-separated subset of numpy,torch,cuda,cupy")
@click.option("--repeats", type=int, default=41, show_default=True, help="timed repeats per operation (median reported)")
@click.option("--warmup", type=int, default=3, show_default=True, help="untimed runs of each operation first")
@click.option("--row-bytes", type=int, default=1024, show_default=True, help="bytes per ring row")
@click.option("--stored-layers", type=int, default=40, show_default=True, help="stored SWA rings of the bench layout (each R = 134 rows)")
@click.option("--dropped-layers", type=int, default=20, show_default=True, help="dropped rings of the bench layout")
@click.option("--torch-threads", type=int, default=1, show_default=True,
              help="torch intra-op threads on CPU (1: on a shared 2-core machine torch's parallel copy collapses; 0: torch's default)")
@json_option
def bench_roundtrip(backends: str, repeats: int, warmup: int, row_bytes: int, stored_layers: int, dropped_layers: int,
                    torch_threads: int, json_path: str | None) -> None:
    """select/load GB/s of the state round trip against a plain copy of the same bytes, per backend."""
    from .stateful_tests.deepinfer.bench import HEADERS, run_bench_roundtrip, table_rows

    names = [b.strip() for b in backends.split(",") if b.strip()]
    try:
        result = run_bench_roundtrip(names, repeats, warmup, row_bytes, stored_layers, dropped_layers, torch_threads)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--backends") from None
    click.echo(f"$ {result.command}")
    out.print_table(HEADERS, table_rows(result.rows), numeric=(2, 3, 4, 5))
    click.echo("machine: " + ", ".join(f"{k}={v}" for k, v in result.machine.items()))
    if json_path:
        out.write_json(json_path, "bench-roundtrip", result.to_json())
    sys.exit(EXIT_PASS)


# ----------------------------------------------------------------------------- deepinfer


@main.command()
@click.option("--backend", type=click.Choice(["numpy", "torch", "cuda", "cupy"]), default="numpy", show_default=True,
              help="the arrays the round trip runs on (cuda and cupy need a GPU)")
@seed_option()
@click.option("--count", type=int, default=60, show_default=True, help="cases (the fixed ones first, then random)")
@click.option("--case", type=int, default=None, help="replay one case of the run")
@click.option("--controls", is_flag=True, help="also run the negative controls with catch rates")
@json_option
@allow_skip_option
def roundtrip(backend: str, seed: int, count: int, case: int | None, controls: bool, json_path: str | None, allow_skip: bool) -> None:
    """The state round-trip laws on one array backend, as a pass/fail table."""
    from .stateful_tests.deepinfer.mutants import ControlResult, run_controls
    from .stateful_tests.deepinfer.roundtrip_laws import SuiteReport, run_suite

    result = run_suite(backend, seed=seed, count=count, only_case=case)
    click.echo(f"kvproof roundtrip: backend={backend} seed={seed} cases={result.cases}" + (f" (case {case} only)" if case is not None else ""))
    out.print_table(SuiteReport.HEADERS, result.table_rows(), numeric=(2, 3))
    for law_result in result.failed:
        for c, message in law_result.problems[:3]:
            click.echo(f"\nFAIL {law_result.law.name} ({law_result.law.title}) case {c.index} [{c.name}]\n  {message}")
            click.echo(f"  replay: {result.replay(c)} --count {count}")
    control_results: list[ControlResult] = []
    if controls and not result.skipped:
        backends = ("numpy", backend) if backend != "numpy" else ("numpy", "torch")
        control_results = run_controls(seed=seed, count=count, backends=backends, rates=True)
        click.echo(f"\nnegative controls (seed {seed}, {count} cases; caught = cases where a listed law fails)")
        for control in control_results:
            rate = f"{control.caught_cases:>3}/{control.cases:<3}" if control.cases else "   -   "
            click.echo(f"  {'pass' if control.ok else 'SKIP' if control.skipped else 'FAIL'}  {rate}  {control.name}: {control.detail}")
    if json_path:
        out.write_json(json_path, "roundtrip", {
            "backend": backend, "seed": seed, "cases": result.cases, "skipped": result.skipped,
            "laws": [{"law": r.law.name, "title": r.law.title, "cases": r.cases, "checks": r.checks,
                      "result": "pass" if r.passed else "FAIL", "problems": [f"case {c.index}: {m}" for c, m in r.problems[:5]]}
                     for r in result.results],
            "controls": [c.__dict__ for c in control_results],
        })
    failed = len(result.failed) + sum(not c.ok and not c.skipped for c in control_results)
    if result.skipped:
        click.echo(f"\nkvproof roundtrip: SKIP backend={backend}: {result.skipped}")
        if allow_skip:
            sys.exit(EXIT_PASS)
        click.echo("kvproof roundtrip: a skipped backend is not a pass; pass --allow-skip to accept it")
        sys.exit(EXIT_SKIPPED)
    passed = len(result.results) - len(result.failed)
    click.echo(f"\nkvproof roundtrip: {passed} laws passed, {len(result.failed)} failed, {result.checks} checks "
               f"(backend={backend} seed={seed} cases={result.cases})")
    if failed:
        sys.exit(EXIT_FAIL)
    skipped_controls = [c for c in control_results if c.skipped]
    if skipped_controls:
        click.echo(f"kvproof roundtrip: {len(skipped_controls)} controls skipped: {skipped_controls[0].skipped}")
        if not allow_skip:
            click.echo("kvproof roundtrip: a skipped control is not a pass; pass --allow-skip to accept it")
            sys.exit(EXIT_SKIPPED)
    sys.exit(EXIT_PASS)


@main.command("deepinfer-labs")
def deepinfer_labs() -> None:
    """The DeepInfer chapter 11 lab outputs as the spec computes them, line by line against the book."""
    from .stateful_tests.deepinfer.golden import GOLDENS, golden_problems

    bad = 0
    for golden in GOLDENS:
        compared, problems = golden_problems(golden)
        bad += len(problems)
        click.echo(f"== {golden.name} ({golden.source}): {compared} lines, {len(problems)} differ")
        for line in golden.render():
            click.echo(f"   {line}")
        for p in problems:
            click.echo(f"   DIFFERS: {p}")
    sys.exit(EXIT_FAIL if bad else EXIT_PASS)


# ----------------------------------------------------------------------------- mutate


def _layers(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    from .stateful_tests.mutation.profiles import LAYERS

    chosen = [part.strip().strip("/") for v in value for part in v.replace(",", " ").split()]
    unknown = [c for c in chosen if c.split("/", 1)[0] not in LAYERS or ("/" in c and not c.endswith(".py"))]
    if unknown:
        raise click.BadParameter(f"{unknown[0]!r}: choose from {', '.join(LAYERS)}, or a module of one (reference/sequences.py)")
    return tuple(dict.fromkeys(chosen)) or LAYERS


@main.command()
@click.option("--paths", "layers", multiple=True, callback=_layers, metavar="LAYERS",
              help="mutate only these layers (spec, reference, impl) or modules (reference/sequences.py); repeat, "
                   "or comma-separate; default: all three layers")
@click.option("--profile", type=click.Choice(["quick", "ci"]), default="quick", show_default=True,
              help="quick: a few spec modules with the tests written for them; ci: every module of the layers, "
                   "judged by the tree, sequences and deepinfer tests without their slow campaigns")
@click.option("--shard", callback=_parse_shard, default=None, metavar="K/N",
              help="run only shard K of N: the mutants, sorted by name, numbered i with i % N == K-1")
@click.option("--max-children", type=click.IntRange(1), default=1, show_default=True, help="mutmut's parallel test workers")
@click.option("--timeout", type=click.FloatRange(1), default=None, help="stop mutmut (and fail) after this many seconds")
@click.option("--equivalents", "equivalents_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="the reviewed equivalent mutants (default: docs/mutation-equivalents.toml)")
@click.option("--merge", "merge_paths", multiple=True, type=click.Path(exists=True, dir_okay=False), metavar="JSON",
              help="run nothing: merge the --json reports of every shard K/N of one run, or of whole runs that split "
                   "whole layers by module (repeat), and judge the union")
@click.option("--rejudge", "rejudge_path", type=click.Path(exists=True, dir_okay=False), default=None, metavar="JSON",
              help="judge again only what this earlier --json report (same profile and shard; its modules or some of them) left unsettled: "
                   "its survivors, gaps, unchecked mutants and every mutant of an edited function; carry its kills")
@click.option("--gate-ttd", "gate_sample", type=click.IntRange(0), default=None,
              help="after the run, switch on this many of its killed mutants (every k-th by name) one at a time and time "
                   "`kvproof check --profile PROFILE --fail-fast` until it fails; default: 10 for quick, 0 for ci")
@json_option
def mutate(layers: tuple[str, ...], profile: str, shard: Any, max_children: int, timeout: float | None,
           equivalents_path: str | None, merge_paths: tuple[str, ...], rejudge_path: str | None, gate_sample: int | None,
           json_path: str | None) -> None:
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
    if merge_paths:
        _merge_mutate(merge_paths, json_path)
        return
    from .stateful_tests.mutation.driver import MutateError, mutmut_unavailable, rejudge, run_groups
    from .stateful_tests.mutation.equivalents import EquivalentsError, load_equivalents
    from .stateful_tests.mutation.profiles import MutateProfileError, rejudge_refusal, targets_for
    from .stateful_tests.mutation.scores import MergeError, read_shard_run
    from .stateful_tests.mutation.workspace import WORK_ROOT

    root = Path(__file__).resolve().parent.parent
    if not (root / "pyproject.toml").is_file() or not (root / "spec").is_dir():
        click.echo(f"kvproof mutate: needs a checkout (spec/, pyproject.toml); {root} is not one")
        sys.exit(EXIT_USAGE)
    why = mutmut_unavailable()
    if why:
        click.echo(f"kvproof mutate: {why}")
        sys.exit(EXIT_USAGE)
    try:
        targets = targets_for(profile, root, layers)
        equivalents = load_equivalents(root, Path(equivalents_path) if equivalents_path else None)
    except (MutateProfileError, EquivalentsError) as exc:
        raise click.UsageError(str(exc)) from None
    if not targets:
        raise click.UsageError(f"profile {profile} has no modules in {', '.join(layers)}")
    earlier = None
    if rejudge_path:
        try:
            earlier = read_shard_run(rejudge_path)
        except MergeError as exc:
            raise click.UsageError(str(exc)) from None
        refusal = rejudge_refusal(earlier.profile, earlier.layers, earlier.shard, profile, targets, shard)
        if refusal:
            raise click.UsageError(f"--rejudge {rejudge_path} {refusal}")
    click.echo(f"kvproof mutate: profile={profile} layers={','.join(layers)} modules={len(targets)} shard={shard} "
               f"max-children={max_children}" + (f" rejudge={rejudge_path}" if rejudge_path else ""))
    say = lambda line: click.echo(f"  {line}", err=True)
    try:
        # one workspace per profile and shard, so the shards of a matrix can run side by side on one machine
        work = root / WORK_ROOT / f"{profile}-{shard.index}-of-{shard.count}"
        if earlier is not None:
            run = rejudge(root, targets, earlier.report, shard, max_children, equivalents, timeout, work, say)
        else:
            run = run_groups(root, targets, shard, max_children, equivalents, timeout, work=work, say=say)
    except MutateError as exc:
        click.echo(f"kvproof mutate: FAILED: {exc}")
        sys.exit(EXIT_FAIL)
    if earlier is not None:
        click.echo(f"kvproof mutate: {run.carried} verdicts carried from {rejudge_path}, "
                   f"{len(run.report.mutants) - run.carried} judged now")
    extra = {"profile": profile, "paths": list(layers), "shard": str(shard), "seconds": round(run.seconds, 2),
             "max_children": max_children, "carried": run.carried, "rejudged_from": rejudge_path}
    from .stateful_tests.mutation import gate_ttd

    sample = gate_ttd.SAMPLE[profile] if gate_sample is None else gate_sample
    if sample:
        click.echo(f"kvproof mutate: timing the gate on {sample} of the killed mutants (kvproof check --fail-fast each)")
        workspaces = [r.workspace.path for r in getattr(run, "runs", [run])]
        found = gate_ttd.run_gate_ttd(workspaces, run.report.mutants, sample, profile, root, say=say)
        extra["gate_ttd"] = [d.to_json() for d in found]
        extra["gate_ttd_line"] = gate_ttd.summary(found, profile)
    _show_mutate(run.report, run.seconds, "" if shard.whole else f" shard={shard}", json_path, extra)


def _merge_mutate(paths: tuple[str, ...], json_path: str | None) -> None:
    """``kvproof mutate --merge``: the union of a run's shard reports, or of whole runs by module, judged as one run."""
    from .stateful_tests.mutation.profiles import MutateProfileError, targets_for
    from .stateful_tests.mutation.scores import MergeError, layer_of, merge_module_runs, merge_shard_runs, read_shard_run

    try:
        runs = [read_shard_run(p) for p in paths]
        by_module = len(runs) > 1 and all(r.shard.whole for r in runs)
        if by_module:
            root = Path(__file__).resolve().parent.parent
            touched = sorted({p.split("/", 1)[0] for r in runs for p in r.layers} | {layer_of(m.module) for r in runs for m in r.report.mutants})
            layer_modules = {layer: [t.module for t in targets_for(runs[0].profile, root, (layer,))] for layer in touched}
            report = merge_module_runs(runs, layer_modules)
        else:
            report = merge_shard_runs(runs)
    except (MergeError, MutateProfileError) as exc:
        click.echo(f"kvproof mutate --merge: {exc}")
        sys.exit(EXIT_USAGE)
    seconds = sum(r.seconds for r in runs)
    if by_module:
        layers = sorted({p for r in runs for p in r.layers})
        click.echo(f"kvproof mutate: merged {len(runs)} whole runs of profile={runs[0].profile} by module: "
                   + ", ".join(f"{','.join(r.layers)} ({len(r.report.mutants)} mutants, {r.seconds:.0f} s)" for r in runs))
    else:
        runs.sort(key=lambda r: r.shard)
        layers = list(runs[0].layers)
        click.echo(f"kvproof mutate: merged {len(runs)} shards of profile={runs[0].profile} layers={','.join(layers)}: "
                   + ", ".join(f"{r.shard} ({len(r.report.mutants)} mutants, {r.seconds:.0f} s)" for r in runs))
    extra = {"profile": runs[0].profile, "paths": layers, "shard": "1/1", "seconds": round(seconds, 2),
             "merged": [{"shard": str(r.shard), "paths": list(r.layers), "file": r.path, "mutants": len(r.report.mutants)}
                        for r in runs]}
    _show_mutate(report, seconds, f" merged={len(runs)}", json_path, extra)


GAPS_SHOWN = 20  # a report prints this many gaps with their diffs; the JSON lists every one


def _show_mutate(report: Any, seconds: float, suffix: str, json_path: str | None, extra: dict[str, Any]) -> None:
    """Print a mutation report (table, survivors, gaps, time to detection, goals), write its JSON, exit by the goals."""
    from .stateful_tests.mutation.scores import HEADERS, median_ttd, p90_ttd

    out.print_table(HEADERS, report.table_rows(), numeric=tuple(range(1, len(HEADERS))))
    for m in report.of("survived"):
        click.echo(f"\nSURVIVED {m.name} (function hash {m.function_hash})\n{m.diff or '  (no diff)'}")
    for entry in report.stale:
        click.echo(f"stale equivalent (its function changed; review again): {entry.mutant}")
    gaps = report.of("no tests")
    if gaps:
        shown = gaps[:GAPS_SHOWN]
        click.echo(f"\ngap: {len(gaps)} mutants reached by no selected test (not counted as killed)"
                   + (f"; the first {GAPS_SHOWN}:" if len(gaps) > GAPS_SHOWN else ":"))
        for m in shown:
            click.echo(f"GAP {m.name}\n{m.diff or '  (no diff)'}")
    ttd, p90 = median_ttd(report.mutants), p90_ttd(report.mutants)
    timed = sum(m.ttd_s is not None for m in report.of("killed"))
    click.echo(f"median time to detection: {'-' if ttd is None else f'{ttd:.3f} s'}, 90th percentile "
               f"{'-' if p90 is None else f'{p90:.3f} s'}, over {timed} killed mutants (pytest -x in mutmut's sessions); "
               f"{len(report.mutants)} mutants in {seconds:.1f} s")
    if extra.get("gate_ttd_line"):
        click.echo(extra["gate_ttd_line"])
    if json_path:
        out.write_json(json_path, "mutate", report.to_json(extra))
    failures = report.failures()
    for line in failures:
        click.echo(f"GOAL NOT MET: {line}")
    click.echo(f"mutate: {'FAIL' if failures else 'pass'} mutants={len(report.mutants)} "
               + " ".join(f"{t.name}={'-' if t.score is None else f'{100 * t.score:.1f}%'}" for t in report.layers)
               + suffix)
    sys.exit(EXIT_FAIL if failures else EXIT_PASS)


# ----------------------------------------------------------------------------- prove


@main.command()
@profile_option("the proof budgets: quick, ci (default) or deep (longer solver and CrossHair budgets)")
@json_option
@click.option("--no-crosshair", is_flag=True, help="Z3 proofs only")
@click.option("--write-readme", is_flag=True, help="regenerate proofs/README.md from the table (in a checkout)")
@click.option("-v", "--verbose", is_flag=True, help="also print each claim in full with its counterexample")
def prove(profile: str | None, json_path: str | None, no_crosshair: bool, write_readme: bool, verbose: bool) -> None:
    """Every Z3 proof and CrossHair check, each with its negative control."""
    from dataclasses import asdict

    from . import docs
    from .gate.proofs import budget_of
    from .proofs.registry import HEADERS, run_all, summary_line, table_rows
    from .stateful_tests.harness.profiles import profile_named

    rows = run_all(budget_of(profile_named(profile)), crosshair=not no_crosshair)
    out.print_table(HEADERS, table_rows(rows), numeric=(4,))
    click.echo(summary_line(rows))
    if verbose:
        for r in rows:
            click.echo(f"\n{r.property}\n  {r.method} on {r.function}; bounds: {r.bounds}\n  {r.result}; control {r.control}: {r.counterexample}")
    if json_path:
        out.write_json(json_path, "prove", {"rows": [asdict(r) | {"ok": r.ok} for r in rows]})
    if write_readme:
        path = docs.proofs_readme_path()
        path.write_text(docs.proofs_readme(rows))
        click.echo(f"wrote {path}")
    failed = [r for r in rows if not r.ok]
    for r in failed:
        click.echo(f"FAILED: {r.property} ({r.method}): {r.result}; control {r.control}; {r.counterexample}")
    sys.exit(EXIT_FAIL if failed else EXIT_PASS)


@main.command("docs")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="where to build: DIR/html is the site (default: build/docs in the checkout)")
@click.option("--check-browser", is_flag=True, help="then open every page in headless Chromium (/usr/bin/chromium): "
              "pictures rendered, no console errors, no failed requests; screenshots saved")
@click.option("--screenshots", "screenshots_dir", type=click.Path(file_okay=False), default=None,
              help="where --check-browser saves one PNG per page (default: build/docs-screenshots in the checkout)")
@click.option("--no-doctest", is_flag=True, help="skip Sphinx's doctest builder (the worked examples)")
def docs_command(out_dir: str | None, check_browser: bool, screenshots_dir: str | None, no_doctest: bool) -> None:
    """Build the reference site from the code: Sphinx, warnings as errors, the examples as doctests, the links checked.

    One page per rule family (tree, sequences, DeepInfer) with each rule's docstring, its source,
    its worked example (a doctest), pictures drawn from the rules at build time, the variants and
    releases, the Z3 theorems (proved again while building) and the laws and gate rows that
    check it; plus the findings and release pages of docs/. Needs the docs extra
    (pip install -e '.[docs]') and a checkout. Exit 0 built (and, with --check-browser, every page
    rendered clean), 1 a warning, a failing example, a broken link or a page with a problem,
    2 it cannot build here.
    """
    from .docs_site import browser
    from .docs_site.build import DocsError, build_site, checkout_root

    try:
        built = build_site(Path(out_dir) if out_dir else None, doctest=not no_doctest)
    except DocsError as exc:
        click.echo(f"kvproof docs: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    for step in built.steps:
        for line in step.messages if not step.ok else []:
            click.echo(f"  {step.name}: {line}")
    click.echo(built.summary())
    if not built.ok:
        sys.exit(EXIT_FAIL)
    if check_browser:
        why = browser.unavailable()
        if why:
            click.echo(f"kvproof docs --check-browser: {why}", err=True)
            sys.exit(EXIT_USAGE)
        shots = Path(screenshots_dir) if screenshots_dir else checkout_root() / "build" / "docs-screenshots"
        started = time.perf_counter()
        checks = browser.check_pages(built.html, browser.site_pages(built.html), shots)
        bad = [c for c in checks if c.problems]
        for c in bad:
            for problem in c.problems:
                click.echo(f"  {c.page}: {problem}")
        click.echo(f"browser: pages={len(checks)} pictures={sum(c.images for c in checks)} problems={sum(len(c.problems) for c in bad)} "
                   f"screenshots={shots} ({time.perf_counter() - started:.1f} s)")
        sys.exit(EXIT_FAIL if bad else EXIT_PASS)
    sys.exit(EXIT_PASS)


if __name__ == "__main__":
    main()

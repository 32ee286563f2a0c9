"""``kvproof check`` as a library call: plan the rows, run them here, in a pool or as shards, and report.

``run_check`` takes the command's options and returns a ``CheckRun`` (the ``report.CommandReport`` shape): the
gate's rows as a table, the left-out and known notes, the failures with their replay lines, the summary line.
It prints a progress line per row as the rows finish (``say``), so a long gate shows where it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..stateful_tests.harness.errors import CampaignInputError
from ..stateful_tests.harness.shards import Shard, processes_choice
from . import FAMILIES, GateReport, GateSelection, GateTask, Result, Row, plan

Say = Callable[[str], None]


@dataclass(frozen=True)
class CheckPlan:
    """What ``kvproof check`` was asked to run: which rows, how judged, where."""

    profile: str | None
    families: tuple[str, ...]
    seed: int | None
    only: str | None
    rules: str | None
    strict: bool
    strict_shape: bool
    shard: Shard
    processes: int | None
    executor: str
    fail_fast: bool
    trace: str | None = None


@dataclass
class CheckRun:
    """A finished gate: its rows, what was left out, and how long it took."""

    kind = "gate"
    report: GateReport
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.report.failed

    @property
    def skipped(self) -> str:
        return (
            "kvproof check: a skipped check is not a pass; install what it needs or pass --allow-skip"
            if self.report.skipped
            else ""
        )

    def render(self, say: Say, table: Callable[..., None]) -> None:
        say("")
        table(GateReport.HEADERS, self.report.table_rows(), numeric=(3, 4, 5))
        for row in self.report.rows:
            for line in row_notes(row):
                say(line)
        for line in left_out_lines(self.report.left_out):
            say(line)

    def summary_line(self) -> str:
        r = self.report
        return (
            f"\nkvproof check: {len(r.passed)} passed, {len(r.failed)} failed, {len(r.skipped)} skipped "
            f"in {self.seconds:.1f} s (target={r.target} profile={r.profile} seed={r.seed})"
        )

    def to_json(self) -> dict[str, Any]:
        return self.report.to_json()

    def junit(self) -> tuple[str, list[dict[str, Any]]]:
        """The JUnit suite's name and one case per row."""
        return (
            f"kvproof check --target {self.report.target}",
            [{"classname": f"kvproof.{r.family}.{r.layer}", **r.to_json()} for r in self.report.rows],
        )


def row_notes(row: Row) -> list[str]:
    """What a row says below the table: what it left out, the known findings it passed with, why it did not pass."""
    lines = []
    if row.left_out:
        lines.append(f"\n{row.family}/{row.layer}: {row.name}: " + "".join(f"\n  {n}" for n in row.left_out))
    if row.result is Result.PASS and row.known:
        said = row.notes or sorted(set(row.known))
        lines.append(f"\nknown {row.family}/{row.layer}: {row.name}: " + "".join(f"\n  {n}" for n in said))
    if row.result is not Result.PASS:
        lines.append(f"\n{row.result.value} {row.family}/{row.layer}: {row.name}\n  {row.detail}")
        if row.replay:
            lines.append(f"  replay: {row.replay}")
    return lines


def left_out_lines(left_out: list[tuple[str, str]]) -> list[str]:
    """The rows not run: each with its reason, except whole families not chosen, which are counted in one line."""
    if not left_out:
        return []
    lines = [""]
    unselected: dict[str, int] = {}
    for key, why in left_out:
        family = key.split(": ", 1)[0]
        if why.startswith("family "):
            unselected[family] = unselected.get(family, 0) + 1
        else:
            lines.append(f"left out {key}: {why}")
    if unselected:
        counts = ", ".join(f"{family} ({n} rows)" for family, n in unselected.items())
        lines.append(f"left out the families {counts}; --family all runs them")
    return lines


def run_check(target: Any, options: CheckPlan, say: Say) -> CheckRun:
    """Run the gate against ``target`` (a loaded ``harness.targets.Target``) as ``options`` say."""
    from ..stateful_tests.harness.profiles import profile_named
    from . import record_seconds, recorded_seconds

    chosen = profile_named(options.profile)
    factory = target.factory
    if target.name == "reference" and options.rules:  # the reference follows the rule set it is asked to
        from ..spec.rules import rule_set_named
        from ..stateful_tests.harness.targets import load_target

        factory = load_target("reference", rule_set_named(options.rules)).factory
    wanted = FAMILIES if "all" in options.families else options.families or None
    o = options
    ctx, selection = plan(
        target.name, factory, chosen, o.seed, o.only, wanted, o.rules, o.strict, o.strict_shape, o.shard, o.trace
    )
    say(
        f"kvproof check: target={target.name} profile={chosen.name} seed={ctx.seed} families={','.join(selection.families)}"
        + ("" if o.shard.whole else f" shard={o.shard} ({len(selection.checks)} rows)")
    )
    say(f"kvproof check: {ctx.rules_note}")
    if not selection.checks:
        raise CampaignInputError(f"no gate row matches --only {o.only!r} in families {', '.join(selection.families)}")
    if o.fail_fast and o.executor != "local":
        raise CampaignInputError("--fail-fast stops the local rows at the first failure: drop --executor ray")
    started = time.perf_counter()
    processes = processes_choice(o.processes)
    seconds = recorded_seconds(target.name, chosen.name)
    from .pool import TYPICAL_SECONDS

    typical = TYPICAL_SECONDS if chosen.name == "ci" else {}  # the figures are the ci profile's; the rows heavy in any
    progress = _progress_printer(selection, {**typical, **seconds}, set(TYPICAL_SECONDS), processes, started, say)
    task = GateTask(target.name, chosen.name, ctx.seed, o.only, wanted, o.rules, o.strict, o.strict_shape, o.trace)
    report = _run_rows(task, ctx, selection, o, processes, seconds, progress, say)
    if o.executor == "local":
        record_seconds(report)
    return CheckRun(report, time.perf_counter() - started)


def _run_rows(
    task: GateTask,
    ctx: Any,
    selection: GateSelection,
    o: CheckPlan,
    processes: int,
    seconds: dict[str, float],
    progress: Callable[[Row, int, int], None],
    say: Say,
) -> GateReport:
    """The rows run in a local pool of ``processes``, as shards of an executor, or one after another here."""
    from . import cheapest_first, merge_gate, run_gate

    left_out = [(c.key, why) for c, why in selection.left_out]
    if o.executor == "local" and processes > 1 and len(selection.checks) > 1:
        from .pool import run_rows

        say(
            f"kvproof check: {len(selection.checks)} rows as tasks of {processes} processes, "
            + ("cheapest first (--fail-fast)" if o.fail_fast else "slowest first")
        )
        rows, not_run = run_rows(task, selection.checks, processes, seconds, progress, o.fail_fast)
        return GateReport(
            task.target_name, task.profile, ctx.seed, selection.families, rows, left_out + not_run, ctx.rules.name, ctx.rules_note
        )
    if o.executor != "local":
        from ..stateful_tests.harness.shards import run_parts

        say(f"kvproof check: {len(selection.checks)} rows in {processes} parts ({o.executor})")
        report = merge_gate(run_parts(task, o.shard.split(processes), processes, o.executor), [c.key for c in selection.checks])
        report.left_out = left_out
        for done, row in enumerate(report.rows, 1):
            progress(row, done, len(report.rows))
        return report
    if o.fail_fast:
        selection.checks = cheapest_first(selection.checks, seconds)
    return run_gate(ctx, selection, progress, o.fail_fast)


def _progress_printer(
    selection: GateSelection, seconds: dict[str, float], heavy: set[str], processes: int, started: float, say: Say
) -> Callable[[Row, int, int], None]:
    """A progress callback: one line per finished row, with an estimate of the time left (``time_left``)."""
    finished: dict[str, float] = {}

    def progress(row: Row, done: int, total: int) -> None:
        elapsed = time.perf_counter() - started
        finished[f"{row.family}: {row.name}"] = row.seconds
        rest = [c.key for c in selection.checks if c.key not in finished]
        left = time_left(rest, seconds, {k: s for k, s in finished.items() if k not in heavy}, processes)
        say(
            f"  [{done}/{total}] {row.result.value:<4} {row.family}: {row.name} ({row.seconds:.1f} s; "
            f"elapsed {elapsed:.0f} s, about {left:.0f} s left)"
        )

    return progress


def time_left(rest: list[str], seconds: dict[str, float], light: dict[str, float], processes: int) -> float:
    """The seconds the rows ``rest`` will take over ``processes``: each by its figure in ``seconds`` (what it took here
    last time, else, in the ci profile, its typical figure, ``pool.TYPICAL_SECONDS``), else by the mean of the
    ``light`` rows finished so far (those with no typical figure; 2 s before any). A fresh clone runs its heaviest
    rows first, so the mean of every row so far would overstate the rest ("about 507 s left" of a 98 s run)."""
    other = sum(light.values()) / len(light) if light else 2.0
    return sum(seconds.get(k, other) for k in rest) / min(processes, len(rest) or 1)


@dataclass
class VectorsRun:
    """``kvproof vectors``: the gate's vectors row alone, with what it left out and its notes."""

    target: str
    row: Row
    scenarios: int
    kind = "vectors"

    @property
    def ok(self) -> bool:
        return self.row.result is not Result.FAIL

    @property
    def skipped(self) -> str:
        return "vectors: a skipped check is not a pass" if self.row.result is Result.SKIP else ""

    def render(self, say: Say, table: Callable[..., None]) -> None:
        for line in self.row.left_out + self.row.notes:
            say(line)
        if self.row.result is not Result.PASS:
            say(f"{self.row.result.value}: {self.row.detail}")

    def summary_line(self) -> str:
        return f"vectors: {self.scenarios} scenarios, {self.row.checks} steps, {self.row.result.value} (target={self.target})"

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "scenarios": self.scenarios, "row": self.row.to_json()}


def run_vectors(target: Any, say: Say) -> VectorsRun:
    """Replay the observed-behaviour vectors against ``target``, judged as the gate's vectors row judges them."""
    from ..stateful_tests.harness.profiles import profile_named
    from ..stateful_tests.tree.vectors import SCENARIOS
    from . import make_context
    from . import run_check as run_row
    from .tree import CHECKS

    ctx = make_context(target.name, target.factory, profile_named("quick"), 1)
    say(f"vectors: {ctx.rules_note}")
    row = run_row(next(c for c in CHECKS if c.layer == "vectors"), ctx)
    return VectorsRun(target.name, row, len(SCENARIOS))

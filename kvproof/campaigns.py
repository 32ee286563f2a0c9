"""The campaigns that span rooms, as library calls: each takes a command's options and returns a report.

The rooms may not import each other (``stateful_tests/tests/test_layering.py``), so a campaign that drives the tree
room's router simulation and the sequence room's trackers (``trace``), or the tree's and the fuzzer's campaigns side
by side (``bench shards``), or a sequence check on the tree room's traffic (``conform selection --trace``) is
composed here, one level up. Each returns a ``report.CommandReport``; a refusal is a ``harness.errors`` error.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .stateful_tests.harness.errors import CampaignInputError

Say = Callable[[str], None]
DrawTable = Callable[..., None]


# ----------------------------------------------------------------------------- trace


TRACE_TREES = ("reference", "impl", "impl-lanes", "impl-pool", "dynamo")
TRACE_TRACKERS = ("spec", "reference", "impl")


def trace_trees(names: tuple[str, ...], say: Say) -> dict[str, Any]:
    """The trees named, by target name; Dynamo is left out, with a note, when it is not installed here."""
    from .stateful_tests.harness.targets import load_target

    trees = {}
    for name in names:
        target = load_target(name)
        if target.factory is None:
            if name == "dynamo":
                say(f"dynamo left out: {target.reason}")
                continue
            raise CampaignInputError(f"{name!r} is unavailable: {target.reason}", param="--tree")
        trees[name] = target.factory
    return trees


@dataclass(frozen=True)
class TracePlan:
    """What ``kvproof trace`` was asked: the trace and its first requests, the fleet, the routing, what else runs."""

    path: Path
    limit: int | None
    router: Any  # tree.router.RouterPlan
    oracle: str | None
    stress_writers: int
    real_speedup: float
    plot_path: str | None


@dataclass
class TraceRun:
    """A trace through every layer: the routing figures, each tree's and tracker's verdict, the stress, the plot."""

    plan: TracePlan
    report: Any  # tree.trace_check.TraceReport
    seconds: float
    said: list[str] = field(default_factory=list)  # the plot's line
    kind = "trace"
    skipped = ""

    @property
    def ok(self) -> bool:
        return bool(self.report.ok)

    def render(self, say: Say, table: DrawTable) -> None:
        s, r = self.report.stats, self.report
        say(
            f"requests {s.requests}; events: stored {s.events['stored']} ({s.events['stored_blocks']} blocks), removed "
            f"{s.events['removed']} ({s.events['removed_blocks']} blocks); hit rate {s.hit_rate:.1%} "
            f"({s.cached_blocks} of {s.prompt_blocks} prompt blocks cached where routed)"
        )
        table(
            ["rank", "requests", "peak active"],
            [(f"{w}.{dp}", s.routed[(w, dp)], s.peak[(w, dp)]) for w, dp in sorted(s.routed | s.peak)],
            numeric=(1, 2),
        )
        if r.trees:
            table(
                ["tree", "queries", "mismatches", "over-credits", "tolerated", "first failure"],
                [
                    (
                        t.name + (" (oracle)" if t.name == r.oracle else ""),
                        t.queries,
                        t.mismatches,
                        t.overcredits,
                        t.tolerated,
                        t.first or "-",
                    )
                    for t in r.trees
                ],
                numeric=(1, 2, 3, 4),
            )
        if r.trackers:
            table(
                ["tracker", "calls", "reads", "mismatches", "first failure"],
                [(t.name, t.calls, t.reads, t.mismatches, t.first or "-") for t in r.trackers],
                numeric=(1, 2, 3),
            )
        if r.stress:
            say(r.stress.summary_line() + "".join(f"\n  {p}" for p in r.stress.problems))
        for line in self.said:
            say(line)

    def summary_line(self) -> str:
        return f"{self.report.summary_line()} ({self.seconds:.1f} s)"

    def to_json(self) -> dict[str, Any]:
        return dict(self.report.to_json()) | {"trace": str(self.plan.path)}


def run_trace(
    plan: TracePlan,
    trees: dict[str, Any],
    trackers: dict[str, Any],
    say: Say,
    plot: Callable[[Any, str, str], str | None] | None = None,
) -> TraceRun:
    """Replay the plan's trace through the router simulation, every tree and tracker (``kvproof trace``); then, as
    asked, the tracker calls on the real slot tracker, the events on writer threads, and the load plot."""
    from .stateful_tests.tree.trace_check import check_trace
    from .stateful_tests.tree.traffic import TraceFormatError, mooncake_requests, read_trace

    started = time.perf_counter()
    try:
        read_trace(plan.path, plan.limit)  # a bad line fails here, named, before anything runs
    except TraceFormatError as exc:
        raise CampaignInputError(f"error: {exc}") from None
    if plan.oracle is not None and plan.oracle not in trees:
        raise CampaignInputError(
            f"{plan.oracle!r} is not one of the trees compared ({', '.join(trees) or 'none'})", param="--oracle"
        )
    r = plan.router
    if r.policy == "tree" and not trees:
        raise CampaignInputError("the tree policy routes by a tree's scores: compare at least one tree", param="--policy")
    say(f"trace {plan.path}: workers={r.workers} dp_ranks={r.dp_ranks} capacity={r.capacity} policy={r.policy}")
    report = check_trace(
        mooncake_requests(plan.path, limit=plan.limit), r, trees, trackers, plan.oracle, keep_calls=bool(plan.real_speedup)
    )
    if plan.real_speedup:
        _real_tracker(report, plan.real_speedup, say)
    if plan.stress_writers:
        from .stateful_tests.tree.trace_stress import run_trace_stress

        report.stress = run_trace_stress(mooncake_requests(plan.path, limit=plan.limit), r, writers=plan.stress_writers)
    run = TraceRun(plan, report, 0.0)
    if plan.plot_path and plot is not None:
        title = f"{plan.path.name}: {r.workers} workers x {r.dp_ranks} dp, capacity {r.capacity}, {r.policy}"
        why = plot(report.stats.samples, plan.plot_path, title)
        run.said.append(f"plot skipped: {why}" if why else f"wrote {plan.plot_path}")
    run.seconds = time.perf_counter() - started
    return run


def _real_tracker(report: Any, speedup: float, say: Say) -> None:
    """Replay the trace's tracker calls on the real slot tracker; add its verdict as a tracker row (or say why not)."""
    from .stateful_tests.sequences.oracle import OracleStartError, oracle_unavailable, replay_calls
    from .stateful_tests.tree.trace_check import TrackerVerdict

    why = oracle_unavailable()
    if why:
        say(f"real slot tracker skipped: {why}")
        return
    try:
        result = replay_calls(report.calls, speedup)
    except OracleStartError as exc:
        say(f"real slot tracker skipped: it did not start ({exc})")
        return
    verdict = TrackerVerdict(f"dynamo.slot_tracker (x{speedup:g})", calls=result.writes, reads=result.reads)
    for m in result.mismatches:
        verdict.fail(f"step {m.step} {m.op}: {m.detail}")
    if result.unexpressible:
        verdict.fail(f"cut short: {result.unexpressible}")
    report.trackers.append(verdict)
    report.calls = []


# ----------------------------------------------------------------------------- bench shards


@dataclass
class ShardBench:
    """``kvproof bench shards``: each campaign whole in one process, then split; the speed-up, and equal counts."""

    processes: int
    executor: str
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    body: list[dict[str, Any]] = field(default_factory=list)
    kind = "bench-shards"
    skipped = ""

    @property
    def ok(self) -> bool:
        return all(b["same_counts"] for b in self.body)

    def render(self, say: Say, table: DrawTable) -> None:
        say(f"machine: {os.cpu_count()} cores; parallel: {self.processes} processes ({self.executor}; the suite: pytest-xdist)")
        table(
            ("campaign", "1 process (s)", f"{self.processes} processes (s)", "speed-up", "same counts"),
            self.rows,
            numeric=(1, 2, 3),
        )

    def summary_line(self) -> str:
        return f"bench shards: campaigns={len(self.rows)} processes={self.processes} same_counts={'yes' if self.ok else 'NO'}"

    def to_json(self) -> dict[str, Any]:
        return {"processes": self.processes, "executor": self.executor, "rows": self.body}


def checkout_root() -> Path:
    """The checkout this kvproof runs from (the folder holding ``kvproof/`` and the layers' folders)."""
    return Path(__file__).resolve().parent.parent


def run_bench_shards(streams: int, inputs: int, processes: int, executor: str, suite: tuple[str, ...], say: Say) -> ShardBench:
    """Conformance and fuzz whole in one process, then over ``processes``; then the test folders ``suite`` by pytest
    alone and over pytest-xdist workers: wall seconds, the speed-up, and whether both counted alike."""
    from .stateful_tests.fuzz.campaign import FuzzTask, fuzz_sharded
    from .stateful_tests.harness.shards import WHOLE, run_suite
    from .stateful_tests.tree.conformance import ConformTask, conform_sharded

    conform_task = ConformTask("impl", "reference", "dynamo-1.6", streams, 1)
    fuzz_task = FuzzTask(inputs, 1, ("reference", "impl"), None)
    campaigns: list[tuple[str, Callable[[int], Any], Callable[[Any], Any]]] = [
        (
            "conform tree",
            lambda p: conform_sharded(conform_task, WHOLE, p, executor if p > 1 else "local"),
            lambda r: (r.streams, r.events, r.queries, r.kinds.counts, len(r.mismatches)),
        ),
        (
            "fuzz",
            lambda p: fuzz_sharded(fuzz_task, WHOLE, p, executor if p > 1 else "local"),
            lambda r: (r.inputs, r.outcomes, r.known, len(r.problems)),
        ),
    ]
    root = checkout_root()
    if suite:
        missing = [f for f in suite if not (root / f).is_dir()]
        if missing:
            raise CampaignInputError(f"{', '.join(missing)} is not a test folder of the checkout at {root}", param="--suite")
        campaigns.append((f"pytest {' '.join(suite)}", lambda p: run_suite(root, list(suite), p), lambda r: r.counts))
    bench = ShardBench(processes, executor)
    for name, run, counts in campaigns:
        _time_campaign(bench, name, run, counts, say)  # a suite pytest did not run is SuiteRunError: a failed run
    return bench


def _time_campaign(bench: ShardBench, name: str, run: Callable[[int], Any], counts: Callable[[Any], Any], say: Say) -> None:
    """One campaign in one process and in ``bench.processes``: its row, and a line when the two count differently."""
    timed = []
    for p in (1, bench.processes):
        started = time.perf_counter()
        result = run(p)
        timed.append((time.perf_counter() - started, counts(result)))
    (one, a), (many, b) = timed
    bench.rows.append((name, f"{one:.1f}", f"{many:.1f}", f"{one / many:.2f}x", "yes" if a == b else "NO"))
    bench.body.append(
        {
            "campaign": name,
            "serial_s": one,
            "parallel_s": many,
            "speedup": one / many,
            "same_counts": a == b,
            "serial_counts": repr(a),
            "parallel_counts": repr(b),
        }
    )
    if a != b:
        say(f"{name}: counts differ: 1 process {a!r}, {bench.processes} processes {b!r}")


# ----------------------------------------------------------------------------- conform selection


@dataclass
class SelectionConformRun:
    """``kvproof conform selection``: the scenarios' report and, when asked, the trace's; what the surface left out."""

    report: Any  # sequences.selection_oracle's report
    trace: Any = None
    kind = "conform-selection"
    skipped = ""

    @property
    def ok(self) -> bool:
        return not self.report.mismatches and not (self.trace is not None and self.trace.mismatches)

    def render(self, say: Say, table: DrawTable) -> None:
        for line in self.report.left_out.lines():
            say(line)

    def summary_line(self) -> str:
        return str(self.report.summary_line())

    def to_json(self) -> dict[str, Any]:
        return {"scenarios": self.report.to_json(), "trace": self.trace.to_json() if self.trace is not None else None}


def run_conform_selection(
    scenarios: int, seed: int, scenario: int | None, trace_requests: int | None, factory: Callable[[], Any], say: Say
) -> SelectionConformRun:
    """A tracker against the ActiveSequences inside Dynamo's selection service; then, with ``trace_requests``, on the
    tracker calls a router makes on that many requests of the shipped Mooncake slice. No service: ``Unavailable``."""
    from .gate.sequences import trace_calls
    from .stateful_tests.harness.errors import Unavailable
    from .stateful_tests.sequences.selection_oracle import conform_selection, conform_selection_trace, unavailable

    reason = unavailable()
    if reason:
        raise Unavailable(f"the selection service is unavailable: {reason}")
    run = SelectionConformRun(
        conform_selection(scenarios, seed, scenario, model_factory=factory, on_mismatch=lambda m: say(m.report(seed, scenarios)))
    )
    if trace_requests:
        run.trace = conform_selection_trace(trace_calls(trace_requests), factory)
        for m in run.trace.mismatches:
            say(m.report(seed, scenarios, trace=True))
        say(f"trace: {run.trace.summary_line()}")
        run.report.left_out.merge(run.trace.left_out)
    return run

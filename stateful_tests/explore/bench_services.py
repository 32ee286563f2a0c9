"""What Dynamo's trees sustain through the doors kvproof reaches them by, side by side in one run.

For each target (the ``RadixTree`` binding, the standalone indexer at 1 and N threads, the selection
service at 1 and N threads) on the same generated streams (``streams.generate``, seed 1):

- **deterministic**: every stream's events applied to a fresh tree (the binding: a call each; the
  indexer: one event behind the ``/metrics`` fence at a time; the selection service: queued and
  applied by one peer-recovery call for all streams, lanes pinned), then every stream's queries
  asked of its final tree (``find_matches_many`` where the target pipelines them);
- **concurrent** (the targets that take events at once): production mode (``explore.production``),
  rounds of events of different workers at once with reads racing them.

Each figure is per second of wall time and per CPU time: this process's (``time.process_time``,
every thread, the binding's and the in-process selection service's included) plus, for the
standalone indexer, its own process's (``/proc/PID/stat``). Ratios are to the binding in the same run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..harness import lockstep, targets
from ..tree.streams import EventOp, apply_op, generate, not_carried

DEFAULT_TARGETS = ("dynamo", "dynamo-indexer@1", "dynamo-indexer", "dynamo-selection@1", "dynamo-selection")


@dataclass
class ServiceRow:
    target: str
    mode: str
    events: int
    queries: int
    event_wall: float
    event_cpu: float
    query_wall: float
    query_cpu: float

    def per_second(self, n: int, seconds: float) -> float:
        return n / seconds if seconds > 0 else float("inf")

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "mode": self.mode,
            "events": self.events,
            "queries": self.queries,
            "events_per_s": round(self.per_second(self.events, self.event_wall), 1),
            "cpu_us_per_event": round(1e6 * self.event_cpu / max(self.events, 1), 1),
            "queries_per_s": round(self.per_second(self.queries, self.query_wall), 1) if self.queries else None,
            "cpu_us_per_query": round(1e6 * self.query_cpu / max(self.queries, 1), 1) if self.queries else None,
        }


def _child_cpu(tree: Any) -> float:
    """CPU seconds (user + system) of the process behind a tree, if it has one of its own (the standalone indexer)."""
    proc = getattr(getattr(tree, "process", None), "proc", None)
    if proc is None:
        return 0.0
    try:
        with open(f"/proc/{proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Clock:
    def __init__(self, probe: Any) -> None:
        self.probe = probe
        self.wall, self.cpu = time.perf_counter(), time.process_time() + _child_cpu(probe)

    def lap(self) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time() + _child_cpu(self.probe)
        out = (wall - self.wall, cpu - self.cpu)
        self.wall, self.cpu = wall, cpu
        return out


def deterministic(name: str, factory: Callable[[], Any], streams: int) -> ServiceRow:
    """Apply each stream to a fresh tree (all at once in lockstep), then ask its queries of the final trees."""
    work = [generate(1, i) for i in range(streams)]
    trees = [factory() for _ in work]
    try:
        clock = _Clock(trees[0])
        events = sum(lockstep.run_each(lambda pair: _apply(pair[0], pair[1].ops), list(zip(trees, work))))
        for tree in trees:  # a tree that queues events (the selection service) applies them here, all in one call
            targets.scores_many(tree, [[0]])
        event_wall, event_cpu = clock.lap()
        asked = [[q for qs in s.queries for q in qs] for s in work]
        queries = sum(len(targets.scores_many(t, qs)) for t, qs in zip(trees, asked))
        query_wall, query_cpu = clock.lap()
    finally:
        for tree in trees:
            targets.dispose(tree)
    return ServiceRow(name, "deterministic", events, queries, event_wall, event_cpu, query_wall, query_cpu)


def _apply(tree: Any, ops: list[Any]) -> int:
    applied = 0
    for op in ops:
        if not_carried(tree, op) is None:
            apply_op(tree, op)
            applied += isinstance(op, EventOp)
    return applied


def concurrent(name: str, streams: int) -> ServiceRow | None:
    """Production mode over ``streams`` streams (None: the target takes one event at a time)."""
    from ...spec.rules import DEFAULT_RULES
    from .production import feed, feeds_concurrently

    factory = targets.production_factory(name)
    if factory is None:
        return None
    probe = factory()
    try:
        if not feeds_concurrently(probe):
            return None
        clock = _Clock(probe)
        report = feed(factory, name, targets.rules_of_target(name) or DEFAULT_RULES, streams, 1)
        wall, cpu = clock.lap()
    finally:
        targets.dispose(probe)
    return ServiceRow(name, "concurrent", report.events, report.reads, wall, cpu, wall, cpu)


def bench_services(names: tuple[str, ...] = DEFAULT_TARGETS, streams: int = 20) -> tuple[list[ServiceRow], dict[str, str]]:
    """Every available target in both modes; returns the rows and, per unavailable target, why."""
    rows: list[ServiceRow] = []
    missing: dict[str, str] = {}
    for name in names:
        target = targets.load_target(name)
        if target.factory is None:
            missing[name] = target.reason
            continue
        rows.append(deterministic(name, target.factory, streams))
        row = concurrent(name, streams)
        if row is not None:
            rows.append(row)
    return rows, missing


def table(rows: list[ServiceRow]) -> list[tuple[Any, ...]]:
    """Rows for printing: figures per second and CPU per call, and ratios to the binding's deterministic row by CPU."""
    base = next((r for r in rows if r.target == "dynamo" and r.mode == "deterministic"), None)

    def ratio(cpu: float, n: int, base_cpu: float, base_n: int) -> str:
        if base is None or not n or not base_n or cpu <= 0:
            return "-"
        return f"{(base_cpu / base_n) / (cpu / n):.3f}x"

    out = []
    for r in rows:
        j = r.to_json()
        out.append(
            (
                r.target,
                r.mode,
                r.events,
                j["events_per_s"],
                j["cpu_us_per_event"],
                ratio(r.event_cpu, r.events, base.event_cpu if base else 0, base.events if base else 0),
                r.queries,
                j["queries_per_s"] or "-",
                j["cpu_us_per_query"] or "-",
                ratio(r.query_cpu, r.queries, base.query_cpu if base else 0, base.queries if base else 0)
                if r.mode == "deterministic"
                else "-",
            )
        )
    return out


HEADERS = (
    "target",
    "mode",
    "events",
    "events/s",
    "CPU us/event",
    "CPU vs binding",
    "queries",
    "queries/s",
    "CPU us/query",
    "CPU vs binding",
)


@dataclass
class ServicesBench:
    """``kvproof bench services``: each Dynamo door's rates beside the binding, and the doors left out (with why)."""

    streams: int
    rows: list[ServiceRow]
    missing: dict[str, str]
    kind = "bench-services"
    ok = True  # a benchmark measures; it never fails
    skipped = ""

    def render(self, say: Callable[[str], None], draw: Callable[..., None]) -> None:
        draw(HEADERS, table(self.rows), numeric=(2, 3, 4, 6, 7, 8))

    def summary_line(self) -> str:
        return f"bench services: doors={len(self.rows)} streams={self.streams} left_out={len(self.missing)}"

    def to_json(self) -> dict[str, Any]:
        return {"streams": self.streams, "rows": [r.to_json() for r in self.rows], "missing": self.missing}


def run_bench_services(names: tuple[str, ...], streams: int, say: Callable[[str], None]) -> ServicesBench:
    """The doors named (default: every Dynamo door), each left out with its reason when it cannot run here; none at
    all is ``harness.errors.Unavailable`` (exit 2)."""
    from ..harness.errors import Unavailable

    rows, missing = bench_services(names or DEFAULT_TARGETS, streams)
    for name, why in missing.items():
        say(f"bench services: {name} left out: {why}")
    if not rows:
        raise Unavailable("bench services: no target available")
    return ServicesBench(streams, rows, missing)

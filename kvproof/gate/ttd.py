"""Time to detection: how long ``kvproof check`` takes to report a broken change, over the gate's own broken twins.

Each control of ``gate.controls`` is a broken change the gate must catch (a broken tree, a
patched rule). For each, the gate runs under the profile with ``--fail-fast`` semantics (stop at
the first failing row) in two orders: the rows as declared, and cheapest first by what each row
took on the healthy embedded implementation in the same run (what ``kvproof check --fail-fast``
does with the seconds it recorded on this machine). The figure is the time from the start of the
run to its first failing row, by wall and by CPU; a control no row catches is reported as such (a
defect of the gate, never hidden). A benchmark, never a test (kvproof issue 32, "time to
detection in the product").
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest import MonkeyPatch

from ..stateful_tests.harness.profiles import profile_named
from ..stateful_tests.harness.targets import load_target
from ..stateful_tests.mutation.scores import p90_of as p90
from . import Result, cheapest_first, plan, run_gate
from .controls import CONTROLS, RowControl

ORDERS = ("declared", "cheapest")


@dataclass(frozen=True)
class Detection:
    """One broken change under one order: the row that reported it first, and when."""

    control: str
    order: str
    first_failing: str | None  # None: no row failed (the gate missed it)
    wall_s: float
    cpu_s: float
    rows_run: int

    def to_json(self) -> dict:
        return self.__dict__.copy()


def distinct_controls() -> list[RowControl]:
    """One control per broken change (several rows may share one broken target)."""
    seen: set[tuple[str, object]] = set()
    out = []
    for control in CONTROLS:
        key = (control.target, control.breaks)
        if key not in seen:
            seen.add(key)
            out.append(control)
    return out


def healthy_seconds(profile: str) -> dict[str, float]:
    """What each row takes on the healthy embedded implementation (one full run of every family)."""
    target = load_target("impl")
    assert target.factory is not None
    ctx, selection = plan(
        "impl", target.factory, profile_named(profile), 1, families=("tree", "sequences", "deepinfer", "proofs")
    )
    return {f"{r.family}: {r.name}": r.seconds for r in run_gate(ctx, selection).rows}


def detect(control: RowControl, profile: str, order: str, seconds: dict[str, float]) -> Detection:
    """Run the gate against ``control``'s broken change, stopping at the first failing row."""
    with MonkeyPatch.context() as patch:
        if control.breaks is not None:
            control.breaks(patch)
        target = load_target(control.target)
        assert target.factory is not None, target.reason
        families = ("tree", "sequences", "deepinfer", "proofs") if control.target == "impl" else None
        ctx, selection = plan(control.target, target.factory, profile_named(profile), 1, families=families)
        if order == "cheapest":
            selection.checks = cheapest_first(selection.checks, seconds)
        cpu, wall = time.process_time(), time.perf_counter()
        report = run_gate(ctx, selection, fail_fast=True)
        wall_s, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
    failed = next((f"{r.family}: {r.name}" for r in report.rows if r.result is Result.FAIL), None)
    name = control.describe() if control.target == "impl" else control.target.rpartition(":")[2]
    return Detection(name, order, failed, wall_s, cpu_s, len(report.rows))


def summary(detections: list[Detection], order: str) -> str:
    mine = [d for d in detections if d.order == order]
    caught = [d for d in mine if d.first_failing is not None]
    if not caught:
        return f"{order}: no control caught"
    walls = [d.wall_s for d in caught]
    cpus = [d.cpu_s for d in caught]
    return (
        f"{order}: {len(caught)} of {len(mine)} broken changes reported; time to the first failing row: median "
        f"{statistics.median(walls):.1f} s wall / {statistics.median(cpus):.1f} s CPU, 90th percentile "
        f"{p90(walls):.1f} s / {p90(cpus):.1f} s"
    )


@dataclass
class TtdBench:
    """``kvproof bench ttd``: each broken change's detection (said as it is timed), then each order's median and p90."""

    profile: str
    orders: tuple[str, ...]
    detections: list[Detection]
    kind = "bench-ttd"
    skipped = ""

    @property
    def ok(self) -> bool:
        """Every broken change was detected by some row."""
        return all(d.first_failing is not None for d in self.detections)

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        for order in self.orders[:-1]:
            say(f"bench ttd: profile={self.profile} {summary(self.detections, order)}")

    def summary_line(self) -> str:
        return f"bench ttd: profile={self.profile} {summary(self.detections, self.orders[-1])}"

    def to_json(self) -> dict[str, Any]:
        return {"profile": self.profile, "detections": [d.to_json() for d in self.detections]}


def run_ttd_bench(profile: str, orders: tuple[str, ...], say: Callable[[str], None]) -> TtdBench:
    """Time how long the gate takes to report each of its own broken changes, in each row order (default both)."""
    chosen = orders or ORDERS
    seconds = healthy_seconds(profile) if "cheapest" in chosen else {}
    if seconds:
        say(f"bench ttd: the healthy embedded implementation's {len(seconds)} rows took {sum(seconds.values()):.1f} s")
    bench = TtdBench(profile, chosen, [])
    for control in distinct_controls():
        for order in chosen:  # one line per broken change as it is done: a long run shows its progress
            d = detect(control, profile, order, seconds)
            bench.detections.append(d)
            say(
                f"  {d.control[:60]:<60} {d.order:<9} {d.wall_s:6.1f} s wall {d.cpu_s:6.1f} s CPU  "
                f"{d.rows_run:2d} rows  first failing: {d.first_failing or 'NONE'}"
            )
    return bench

"""``kvproof bench explore``: how fast the explorer runs schedules and the checker judges histories.

- schedules per second of ``toys.YieldPoints(3, 10)`` (3 threads, 10 yield points each) under each
  strategy, on one core (the goal is at least 2,000);
- schedules per second of a real scenario (``fanout-vs-split``), with its linearizability check;
- milliseconds per linearizability check of 50-call histories of the concurrent tree (random
  workloads on 3 lanes and a reader, under random schedules).
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .dfs import DFS
from .pct import PCT
from .random_walk import RandomWalk
from .scheduler import Scheduler
from .toys import YieldPoints

HEADERS = ("measure", "value", "runs")


@dataclass
class BenchExplore:
    """``kvproof bench explore``: schedules per second of each strategy on a toy, and the checker's milliseconds."""

    rows: list[tuple[str, float, int]] = field(default_factory=list)
    kind = "bench-explore"
    ok = True  # a benchmark measures; it never fails
    skipped = ""

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        table(HEADERS, table_rows(self), numeric=(1, 2))

    def summary_line(self) -> str:
        lines = self.lines()
        return lines[-1] if lines else f"bench explore: measures={len(self.rows)}"

    def to_json(self) -> dict[str, Any]:
        return {"rows": [list(r) for r in self.rows]}

    def lines(self) -> list[str]:
        toy = [v for name, v, _ in self.rows if name.startswith("toy")]
        return [f"slowest toy strategy: {min(toy):,.0f} schedules/s (goal >= 2,000 on one core)"] if toy else []


def table_rows(result: BenchExplore) -> list[tuple[str, str, int]]:
    return [(name, f"{value:,.2f}", runs) for name, value, runs in result.rows]


def _rate(program: Any, strategy: Any, schedules: int) -> float:
    start = time.perf_counter()
    ran = 0
    while ran < schedules and not strategy.exhausted():
        Scheduler(strategy).run(program)
        ran += 1
    return ran / (time.perf_counter() - start)


def _unchecked() -> type:
    from .tree_scenarios import TreeProgram

    class Unchecked(TreeProgram):
        """A tree program that records its history but leaves the check to the benchmark."""

        def finish(self) -> list[str]:
            for step in self.final:
                self._do("final", "final", step)
            return []

    return Unchecked


def run_bench_explore(schedules: int = 3000, histories: int = 200, seed: int = 1) -> BenchExplore:
    from ...impl.radix_tree import ConcurrentRadixTree
    from . import linearizability
    from .campaign import SCENARIOS
    from .tree_scenarios import random_layout

    _Unchecked = _unchecked()

    result = BenchExplore()
    toy = YieldPoints(3, 10)
    for label, strategy in (("random", RandomWalk(seed)), ("pct d=3", PCT(seed, 3)), ("dfs p=2", DFS(2))):
        result.rows.append((f"toy 3x10 schedules/s, {label}", _rate(toy, strategy, schedules), schedules))
    make = functools.partial(ConcurrentRadixTree, lanes=3)
    real = SCENARIOS["fanout-vs-split"].build(make)
    result.rows.append(
        ("fanout-vs-split schedules/s (with its check)", _rate(real, RandomWalk(seed), schedules // 10), schedules // 10)
    )
    times, sizes = [], []
    for k in range(histories):
        setup, threads, final = random_layout(seed * 100_003 + k, calls_per_thread=16)
        program = _Unchecked(make, setup, threads, final)
        Scheduler(RandomWalk(seed + k)).run(program)
        calls = program.calls
        start = time.perf_counter()
        linearizability.check(program.spec(), calls)
        times.append((time.perf_counter() - start) * 1000)
        sizes.append(len(calls))
    result.rows.append(
        (
            f"ms per linearizability check ({statistics.median(sizes):.0f}-call histories, median)",
            statistics.median(times),
            histories,
        )
    )
    result.rows.append(("ms per linearizability check (90th percentile)", sorted(times)[int(0.9 * len(times))], histories))
    return result

"""Cost per operation when many ranks share one prefix (kvproof issue 31, section 4).

Routers with thousands of dp ranks over one system prompt are the normal case: every rank's
store of the prompt lands on the same node, and so does every rank's removal. The law: a store
or a removal by one rank costs O(its blocks), not O(the ranks on the node), so building a crowd
of ``n`` ranks and removing it again costs O(n) in all.

Two measures of it:

- **time** (``measure_crowd``, the ``kvproof bench crowd`` table): per-operation wall and CPU
  time of the stores that build the crowd and of the removals that take it apart, at several
  crowd sizes, beside the Dynamo binding in the same run, and the **growth exponent**: the
  slope of log(total CPU time) over log(n) between the smallest and the largest crowd (1: linear
  in all, flat per operation; 2: each operation pays for the whole crowd). A benchmark, never a
  test.
- **work** (``crowd_work``): the Python lines executed (``sys.settrace``) and the bytes allocated
  (``tracemalloc``) by the same operations. Copying a set of ``n`` ranks costs no lines but
  allocates O(n) bytes; scanning every rank for a worker's allocates nothing but executes O(n)
  lines; so the two counts together see either kind of per-rank work. The suite holds their
  growth exponents near 1 (``tests/test_crowd.py``): a law on counts, not a timed test.

The workload: ``n`` workers, each storing the same ``PREFIX_BLOCKS``-block prefix in one event
(one node, ``n`` holders), then each removed with ``remove_worker``, first stored first removed.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ...spec.events import KvCacheEvent, Stored, encode_event
from ...spec.primitives import Block
from ..harness import targets

PREFIX_BLOCKS = 8
"""Blocks in the shared prefix (a system prompt of 8 blocks)."""

SIZES = (100, 1_000, 10_000)
"""Crowd sizes the bench measures by default."""

GOALS = {"exponent": 1.2, "x_dynamo": 2.0}
"""The issue's goals: a growth exponent of at most 1.2 and, at the largest crowd, at most 2x Dynamo's CPU per op."""

HEADERS = [
    "tree",
    "ranks",
    "store us/op (cpu)",
    "store us/op (wall)",
    "remove us/op (cpu)",
    "remove us/op (wall)",
    "store x dynamo (cpu)",
    "remove x dynamo (cpu)",
]


def prefix_event() -> bytes:
    """The one store every rank sends: the shared prefix from the root, local hashes 1.., external 1001.."""
    blocks = tuple(Block(i, 1000 + i) for i in range(1, PREFIX_BLOCKS + 1))
    return encode_event(KvCacheEvent(1, Stored(None, blocks)))


@dataclass(frozen=True)
class CrowdPoint:
    """One tree at one crowd size: per-operation CPU and wall seconds of the stores and of the removals."""

    tree: str
    ranks: int
    store_cpu: float
    store_wall: float
    remove_cpu: float
    remove_wall: float

    def to_json(self) -> dict[str, Any]:
        return {
            "tree": self.tree,
            "ranks": self.ranks,
            "store_cpu_s": self.store_cpu,
            "store_wall_s": self.store_wall,
            "remove_cpu_s": self.remove_cpu,
            "remove_wall_s": self.remove_wall,
        }


def build_and_remove(tree: Any, ranks: int, payload: bytes | None = None) -> None:
    """The workload, untimed: every rank stores the prefix, then every rank is removed."""
    payload = payload or prefix_event()
    for worker in range(1, ranks + 1):
        tree.apply_event(worker, payload)
    for worker in range(1, ranks + 1):
        tree.remove_worker(worker)


def measure_crowd(name: str, factory: Callable[[], Any], ranks: int) -> CrowdPoint:
    """Time the workload on a fresh tree: the stores, then the removals, each per operation."""
    payload, tree = prefix_event(), factory()
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        for worker in range(1, ranks + 1):
            tree.apply_event(worker, payload)
        store_cpu, store_wall = time.process_time() - cpu, time.perf_counter() - wall
        if tree.find_matches(list(range(1, PREFIX_BLOCKS + 1))).scores.get((ranks, 0)) != PREFIX_BLOCKS:
            raise AssertionError(f"{name}: the last rank of the crowd is not credited with the prefix")
        cpu, wall = time.process_time(), time.perf_counter()
        for worker in range(1, ranks + 1):
            tree.remove_worker(worker)
        remove_cpu, remove_wall = time.process_time() - cpu, time.perf_counter() - wall
        if tree.find_matches(list(range(1, PREFIX_BLOCKS + 1))).scores:
            raise AssertionError(f"{name}: a removed rank is still credited")
    finally:
        targets.dispose(tree)
    return CrowdPoint(name, ranks, store_cpu / ranks, store_wall / ranks, remove_cpu / ranks, remove_wall / ranks)


def growth_exponent(points: list[tuple[int, float]]) -> float:
    """The slope of log(total) over log(ranks) between the smallest and the largest crowd, from (ranks, per-op cost)."""
    (n0, c0), (n1, c1) = min(points), max(points)
    return math.log((c1 * n1) / (c0 * n0)) / math.log(n1 / n0)


def crowd_trees() -> list[tuple[str, Callable[[], Any] | None, str]]:
    """(name, factory or None, why it is left out) for the reference, the concurrent tree and the Dynamo binding."""
    from ...impl.radix_tree import ConcurrentRadixTree
    from ...reference.radix_tree import RadixTree

    dynamo, reason = targets.dynamo_tree_factory()
    return [("reference", RadixTree, ""), ("impl", ConcurrentRadixTree, ""), ("dynamo", dynamo, reason)]


@dataclass
class CrowdReport:
    points: list[CrowdPoint]
    missing: dict[str, str]

    def exponents(self, tree: str) -> tuple[float, float]:
        """(store, removal) growth exponents of ``tree`` by CPU time."""
        mine = [p for p in self.points if p.tree == tree]
        return (growth_exponent([(p.ranks, p.store_cpu) for p in mine]), growth_exponent([(p.ranks, p.remove_cpu) for p in mine]))

    def table(self) -> list[list[str]]:
        base = {p.ranks: p for p in self.points if p.tree == "dynamo"}

        def ratio(mine: float, theirs: float | None) -> str:
            return f"{mine / theirs:.2f}x" if theirs else "-"

        rows = []
        for p in self.points:
            d = base.get(p.ranks)
            rows.append(
                [
                    p.tree,
                    f"{p.ranks:,}",
                    f"{p.store_cpu * 1e6:.1f}",
                    f"{p.store_wall * 1e6:.1f}",
                    f"{p.remove_cpu * 1e6:.1f}",
                    f"{p.remove_wall * 1e6:.1f}",
                    ratio(p.store_cpu, d.store_cpu if d else None),
                    ratio(p.remove_cpu, d.remove_cpu if d else None),
                ]
            )
        return rows

    def goal_lines(self) -> list[str]:
        """One line per kvproof tree: its exponents and its ratios at the largest crowd, each against its goal."""
        largest = max(p.ranks for p in self.points)
        base = next((p for p in self.points if p.tree == "dynamo" and p.ranks == largest), None)
        lines = []
        for tree in dict.fromkeys(p.tree for p in self.points):
            store, remove = self.exponents(tree)
            line = f"{tree}: growth exponent store {store:.2f}, removal {remove:.2f} (goal <= {GOALS['exponent']})"
            met = max(store, remove) <= GOALS["exponent"]
            mine = next(p for p in self.points if p.tree == tree and p.ranks == largest)
            if base is not None and tree != "dynamo":
                s_x, r_x = mine.store_cpu / base.store_cpu, mine.remove_cpu / base.remove_cpu
                line += f"; at {largest:,} ranks {s_x:.2f}x / {r_x:.2f}x Dynamo's CPU per op (goal <= {GOALS['x_dynamo']}x)"
                met = met and max(s_x, r_x) <= GOALS["x_dynamo"]
            lines.append(line + ("" if tree == "dynamo" else ": met" if met else ": NOT met"))
        return lines

    def to_json(self) -> dict[str, Any]:
        trees = sorted({p.tree for p in self.points})
        return {
            "points": [p.to_json() for p in self.points],
            "missing": self.missing,
            "exponents": {t: dict(zip(("store", "remove"), self.exponents(t))) for t in trees},
        }


def run_crowd(sizes: tuple[int, ...] = SIZES, names: tuple[str, ...] = (), repeats: int = 3) -> CrowdReport:
    """Every tree at every size, ``repeats`` times, sizes and trees interleaved so a noisy moment hits all trees alike;
    each figure is the median of its repeats (Dynamo's own per-op CPU moved from 4.5 to 35 us between single runs on
    a shared machine: its runtime thread's cost depends on the machine's load)."""
    trees = [t for t in crowd_trees() if not names or t[0] in names]
    missing = {name: why for name, factory, why in trees if factory is None}
    runs = [
        measure_crowd(name, factory, n)
        for _ in range(repeats)
        for n in sizes
        for name, factory, _ in trees
        if factory is not None
    ]
    return CrowdReport(
        [median_point([p for p in runs if (p.tree, p.ranks) == key]) for key in dict.fromkeys((p.tree, p.ranks) for p in runs)],
        missing,
    )


def median_point(points: list[CrowdPoint]) -> CrowdPoint:
    """One tree at one size: the median of each figure over its repeats."""
    first = points[0]
    return CrowdPoint(
        first.tree,
        first.ranks,
        *(statistics.median(getattr(p, f) for p in points) for f in ("store_cpu", "store_wall", "remove_cpu", "remove_wall")),
    )


# ----------------------------------------------------------------------------- work counts


@dataclass(frozen=True)
class Work:
    """Python lines executed and bytes allocated by a piece of work."""

    lines: int
    allocated: int


@contextmanager
def _counting() -> Iterator[list[int]]:
    """Count line events of every frame while the block runs (``counted[0]``)."""
    counted = [0]

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            counted[0] += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield counted
    finally:
        sys.settrace(previous)


def crowd_work(factory: Callable[[], Any], ranks: int) -> tuple[Work, Work]:
    """The work of building a crowd of ``ranks`` on a fresh tree and of removing it: (stores, removals).

    Allocation is measured as the peak above the start of each operation, summed over operations, so a
    copy of the crowd's set per operation counts ``ranks`` times even though each copy is freed."""
    payload, tree = prefix_event(), factory()
    stores = _per_op(lambda w: tree.apply_event(w, payload), ranks)
    removals = _per_op(tree.remove_worker, ranks)
    return stores, removals


def _per_op(op: Callable[[int], None], ranks: int) -> Work:
    lines = allocated = 0
    tracemalloc.start()
    try:
        for worker in range(1, ranks + 1):
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            with _counting() as counted:
                op(worker)
            lines += counted[0]
            allocated += max(tracemalloc.get_traced_memory()[1] - before, 0)
    finally:
        tracemalloc.stop()
    return Work(lines, allocated)


@dataclass
class CrowdRun:
    """``kvproof bench crowd``: the per-op cost at each crowd size, beside Dynamo, and the growth goal."""

    report: CrowdReport
    repeats: int
    kind = "bench-crowd"
    ok = True  # a benchmark measures; it never fails
    skipped = ""

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        say(
            f"workload: n workers each store the same {PREFIX_BLOCKS}-block prefix (one node, n holders), "
            f"then each is removed; per op = the phase's time / n; the median of {self.repeats} runs"
        )
        table(HEADERS, self.report.table(), numeric=(1, 2, 3, 4, 5, 6, 7))
        for line in self.report.goal_lines()[:-1]:
            say(line)

    def summary_line(self) -> str:
        lines = self.report.goal_lines()
        return lines[-1] if lines else f"bench crowd: points={len(self.report.points)}"

    def to_json(self) -> dict[str, Any]:
        return self.report.to_json()


def run_crowd_command(sizes: tuple[int, ...], names: tuple[str, ...], repeats: int, say: Callable[[str], None]) -> CrowdRun:
    """``kvproof bench crowd``: the sizes given (at least two different, each at least 2; default ``SIZES``)."""
    from ..harness.errors import CampaignInputError

    if any(n < 2 for n in sizes) or len(set(sizes)) == 1:
        raise CampaignInputError("give at least two different sizes, each at least 2", param="--ranks")
    report = run_crowd(tuple(sorted(set(sizes))) or SIZES, names, repeats)
    for name, why in report.missing.items():
        say(f"bench crowd: {name} left out: {why}")
    return CrowdRun(report, repeats)

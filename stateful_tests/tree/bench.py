"""Throughput of the trees on one workload, measured side by side in one run.

The workload is ``streams`` generated event streams (``streams.generate``) concatenated,
each stream's workers renumbered so they do not collide, pre-encoded to the JSON bytes every
target decodes itself. For each tree: **events/s** applying the whole workload to a fresh
tree, and **find_matches/s** answering every query of the workload on the final tree. Each
figure is the median of ``repeats`` runs; the ratios are taken within the run, so a noisy
machine moves all columns together. Targets: the reference, the concurrent tree on one lane,
the thread-pool indexer with 1 and with 4 event threads (events pipelined with ``submit`` and
one ``flush``), and the Dynamo binding.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...spec.events import encode_event
from ..harness import targets
from .streams import ClearAllBlocksOp, EventOp, RemoveWorkerOp, generate


@dataclass
class BenchRow:
    name: str
    events_per_s: float | None = None
    finds_per_s: float | None = None
    note: str = ""


@dataclass
class BenchReport:
    events: int
    queries: int
    repeats: int
    rows: list[BenchRow] = field(default_factory=list)

    def row(self, name: str) -> BenchRow | None:
        return next((r for r in self.rows if r.name == name), None)

    def ratio(self, a: str, b: str, column: str) -> float | None:
        x, y = self.row(a), self.row(b)
        if x is None or y is None or getattr(x, column) is None or getattr(y, column) is None:
            return None
        return getattr(x, column) / getattr(y, column)

    HEADERS = ("tree", "events/s", "find_matches/s", "note")
    RATIOS = (("impl (1 lane)", "reference"), ("pool x1", "reference"), ("pool x4", "pool x1"),
              ("impl (1 lane)", "dynamo"), ("reference", "dynamo"))

    def table_rows(self) -> list[tuple[str, str, str, str]]:
        def rate(x: float | None) -> str:
            return "-" if x is None else f"{x:,.0f}"

        return [(r.name, rate(r.events_per_s), rate(r.finds_per_s), r.note) for r in self.rows]

    def ratio_lines(self) -> list[str]:
        lines = []
        for a, b in self.RATIOS:
            e, f = self.ratio(a, b, "events_per_s"), self.ratio(a, b, "finds_per_s")
            if e is not None and f is not None:
                lines.append(f"ratio {a} / {b}: events {e:.2f}x, find_matches {f:.2f}x")
        return lines


def workload(streams: int, seed: int) -> tuple[list[tuple[str, int, Any]], list[list[int]]]:
    ops: list[tuple[str, int, Any]] = []  # (method, worker id, encoded event or None)
    queries: list[list[int]] = []
    for index in range(streams):
        stream = generate(seed, index)
        base = 100 * (index + 1)
        for op in stream.ops:
            if isinstance(op, EventOp):
                ops.append(("event", base + op.worker_id, encode_event(op.event)))
            elif isinstance(op, RemoveWorkerOp):
                ops.append(("remove_worker", base + op.worker_id, None))
            else:
                assert isinstance(op, ClearAllBlocksOp), op  # the bench's streams never remove single ranks
                ops.append(("clear_all_blocks", base + op.worker_id, None))
        queries.extend(q for qs in stream.queries[-3:] for q in qs)
    return ops, queries


def _apply_all(tree: Any, ops: list) -> None:
    submit = getattr(tree, "submit", None)
    for kind, worker, payload in ops:
        if kind != "event":
            getattr(tree, kind)(worker)
        elif submit is not None:
            submit(worker, payload)  # pipelined; errors stay in the acknowledgement
        else:
            try:
                tree.apply_event(worker, payload)
            except Exception:
                pass  # rejected events are part of the workload
    flush = getattr(tree, "flush", None)
    if flush is not None:
        flush()


def measure(factory: Callable[[], Any], ops: list, queries: list[list[int]], repeats: int) -> tuple[float, float]:
    event_rates, find_rates = [], []
    for _ in range(repeats):
        tree = factory()
        try:
            started = time.perf_counter()
            _apply_all(tree, ops)
            event_rates.append(len(ops) / (time.perf_counter() - started))
            started = time.perf_counter()
            for q in queries:
                tree.find_matches(q)
            find_rates.append(len(queries) / (time.perf_counter() - started))
        finally:
            targets.dispose(tree)
    return statistics.median(event_rates), statistics.median(find_rates)


def run_bench(streams: int = 60, seed: int = 1, repeats: int = 3) -> BenchReport:
    from ...impl.indexer import ThreadPoolIndexer
    from ...impl.radix_tree import ConcurrentRadixTree
    from ...reference import RadixTree

    ops, queries = workload(streams, seed)
    report = BenchReport(len(ops), len(queries), repeats)
    trees: list[tuple[str, Callable[[], Any] | None, str]] = [
        ("reference", RadixTree, ""),
        ("impl (1 lane)", ConcurrentRadixTree, ""),
        ("pool x1", lambda: ThreadPoolIndexer(threads=1), "events pipelined, one flush"),
        ("pool x4", lambda: ThreadPoolIndexer(threads=4), "events pipelined, one flush"),
    ]
    dynamo, reason = targets.dynamo_tree_factory()
    trees.append(("dynamo", dynamo, "" if dynamo else f"skipped: {reason}"))
    for name, factory, note in trees:
        if factory is None:
            report.rows.append(BenchRow(name, note=note))
            continue
        events, finds = measure(factory, ops, queries, repeats)
        report.rows.append(BenchRow(name, events, finds, note))
    return report

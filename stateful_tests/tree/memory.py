"""Memory per cached block of every tree, built from the same events, side by side (a benchmark, never a test).

The workload is ``traffic.Fleet`` serving requests (the Mooncake conversation trace when it is
there, else ``traffic.synthetic_requests``): many workers' prompts sharing prefixes, each
routed to the rank holding its longest prefix, stored below what the rank holds, with the
response's blocks as a decode extension. It is generated once, pre-encoded to the JSON bytes
every tree decodes itself, and written to a file; each tree is then built in a **fresh child
process** per measurement, so no tree's figure is polluted by another's:

- **tracemalloc**: the bytes allocated while building and still alive after it (``gc`` run),
  the tree's retained size as Python sees it. It cannot see Rust, so the Dynamo binding has none;
- **RSS**: the growth of the child's resident set (``VmRSS`` of ``/proc/self/status``) across
  the build, in a child without tracemalloc. It includes the allocator's slack and is what a
  router's host pays.

Both are divided by the number of cached blocks: the (rank, block) pairs the engines hold at
the end (``traffic.Fleet.live``), the same for every tree. Ratios are to the Dynamo binding's
RSS figure, measured in the same run.

Source: docs/sources.md#kvproof-robustness ("Resources": memory per cached block, tracemalloc and RSS).
"""

from __future__ import annotations

import gc
import json
import pickle
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from ..harness import measure, targets
from .streams import encode_op
from .traffic import MOONCAKE_TRACE, NO_CHURN, Fleet, mooncake_requests, synthetic_requests

HEADERS = ("tree", "bytes/block (tracemalloc)", "bytes/block (RSS)", "RSS / dynamo", "note")


def _pool() -> Any:
    from ...impl.indexer import ThreadPoolIndexer

    return ThreadPoolIndexer(threads=4)


def _lanes() -> Any:
    from ...impl.radix_tree import ConcurrentRadixTree

    return targets.RoutedImpl(ConcurrentRadixTree(lanes=3), 3)


def _impl() -> Any:
    from ...impl.radix_tree import ConcurrentRadixTree

    return ConcurrentRadixTree()


def _reference() -> Any:
    from ...reference import RadixTree

    return RadixTree()


def _dynamo() -> Any:
    factory, reason = targets.dynamo_tree_factory()
    if factory is None:
        raise RuntimeError(reason)
    return factory()


TREES: dict[str, tuple[Callable[[], Any], bool]] = {
    "reference": (_reference, True),
    "impl (1 lane)": (_impl, True),
    "impl (3 lanes)": (_lanes, True),
    "pool x4": (_pool, True),
    "dynamo": (_dynamo, False),  # Rust: tracemalloc sees nothing of it
}
"""Each tree the bench builds: its factory, and whether tracemalloc can see its memory."""


@dataclass
class MemoryWorkload:
    source: str
    requests: int
    ops: list[tuple[str, int, Any]]
    pairs: int
    blocks: int
    ranks: int


def workload(requests: int, seed: int, workers: int, capacity: int, trace: Path | None) -> MemoryWorkload:
    """Serve ``requests`` requests through a fleet without churn; the operations pre-encoded, and what the engines hold."""
    if trace is not None and trace.exists():
        source, stream = f"mooncake trace {trace.name}", mooncake_requests(trace, loops=max(1, -(-requests // 12031)))
    else:
        source, stream = "synthetic chat traffic", synthetic_requests(seed)
    fleet = Fleet(seed, workers, capacity, NO_CHURN)
    ops: list[tuple[str, int, Any]] = []
    served = 0
    for request in islice(stream, requests):
        served += 1
        ops.extend(encode_op(op) for op in fleet.serve(request))
    live = fleet.live()
    return MemoryWorkload(source, served, ops, live.pairs, live.blocks, live.ranks)


def build(tree: Any, ops: list[tuple[str, int, Any]]) -> None:
    """Apply every operation (a rejected event is part of the workload), then wait for a pool to drain."""
    for kind, worker, payload in ops:
        try:
            if kind == "event":
                tree.apply_event(worker, payload)
            elif kind == "remove_worker_dp_rank":
                tree.remove_worker_dp_rank(worker, payload)
            else:
                getattr(tree, kind)(worker)
        except Exception:
            pass
    flush = getattr(tree, "flush", None)
    if flush is not None:
        flush()


def measure_here(name: str, mode: str, ops: list[tuple[str, int, Any]]) -> int:
    """Build tree ``name`` here and return the bytes it retained by ``mode`` (``tracemalloc`` or ``rss``)."""
    factory, _ = TREES[name]
    gc.collect()
    if mode == "tracemalloc":
        tracemalloc.start(1)
        before = tracemalloc.get_traced_memory()[0]
    else:
        before = measure.rss_bytes()
    tree = factory()
    build(tree, ops)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0] if mode == "tracemalloc" else measure.rss_bytes()
    if mode == "tracemalloc":
        tracemalloc.stop()
    retained = after - before
    targets.dispose(tree)
    return retained


@dataclass
class MemoryRow:
    name: str
    traced_per_block: float | None = None
    rss_per_block: float | None = None
    note: str = ""


@dataclass
class MemoryReport:
    """``kvproof bench memory``: bytes per cached (rank, block) pair of every tree, with ratios to Dynamo."""

    kind = "bench-memory"
    ok = True  # a benchmark measures; it never fails
    skipped = ""

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        say(self.headline())
        table(HEADERS, self.table_rows(), numeric=(1, 2, 3))
        for line in self.ratio_lines():
            say(line)

    def summary_line(self) -> str:
        return f"bench memory: family=tree trees={len(self.table_rows())}"

    source: str
    requests: int
    events: int
    pairs: int
    blocks: int
    ranks: int
    rows: list[MemoryRow] = field(default_factory=list)

    def row(self, name: str) -> MemoryRow | None:
        return next((r for r in self.rows if r.name == name), None)

    def rss_ratio(self, name: str, to: str = "dynamo") -> float | None:
        a, b = self.row(name), self.row(to)
        if a is None or b is None or a.rss_per_block is None or not b.rss_per_block:
            return None
        return a.rss_per_block / b.rss_per_block

    def table_rows(self) -> list[tuple[str, str, str, str, str]]:
        def figure(x: float | None) -> str:
            return "-" if x is None else f"{x:,.0f}"

        out = []
        for r in self.rows:
            ratio = self.rss_ratio(r.name)
            out.append(
                (r.name, figure(r.traced_per_block), figure(r.rss_per_block), "-" if ratio is None else f"{ratio:.2f}x", r.note)
            )
        return out

    def headline(self) -> str:
        return (
            f"workload: {self.source}, {self.requests} requests, {self.events} operations; cached: {self.pairs} "
            f"(rank, block) pairs over {self.blocks} distinct blocks on {self.ranks} ranks"
        )

    def ratio_lines(self) -> list[str]:
        ref, impl = self.row("reference"), self.row("impl (1 lane)")
        lines = []
        if ref and impl and ref.traced_per_block and impl.traced_per_block:
            lines.append(
                f"ratio impl (1 lane) / reference: tracemalloc {impl.traced_per_block / ref.traced_per_block:.2f}x"
                + (f", RSS {impl.rss_per_block / ref.rss_per_block:.2f}x" if impl.rss_per_block and ref.rss_per_block else "")
            )
        return lines

    def to_json(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {
            "source": self.source,
            "requests": self.requests,
            "events": self.events,
            "pairs": self.pairs,
            "blocks": self.blocks,
            "ranks": self.ranks,
            "rows": [asdict(r) | {"rss_ratio_to_dynamo": self.rss_ratio(r.name)} for r in self.rows],
        }


def measure_workload(
    ops: list[tuple[str, int, Any]], pairs: int, trees: tuple[str, ...] = tuple(TREES), traced: bool = True
) -> list[MemoryRow]:
    """Build every tree in ``trees`` from ``ops``, each measurement in its own child process; bytes per held pair.

    RSS always; tracemalloc too when ``traced`` and the tree is Python.
    """
    rows = []
    with tempfile.TemporaryDirectory(prefix="kvproof-memory-") as tmp:
        ops_file = Path(tmp) / "ops.pickle"
        ops_file.write_bytes(pickle.dumps(ops, protocol=pickle.HIGHEST_PROTOCOL))
        for name in trees:
            _, traceable = TREES[name]
            row = MemoryRow(name)
            rss, why = measure.measure_in_child(__name__, name, "rss", str(ops_file))
            if rss is None:
                row.note = f"skipped: {why}"
                rows.append(row)
                continue
            row.rss_per_block = rss / max(pairs, 1)
            if traceable and traced:
                measured, why = measure.measure_in_child(__name__, name, "tracemalloc", str(ops_file))
                row.traced_per_block = None if measured is None else measured / max(pairs, 1)
                row.note = why
            elif not traceable:
                row.note = "Rust: RSS only"
            rows.append(row)
    return rows


def run_memory_bench(
    requests: int = 12031,
    seed: int = 1,
    workers: int = 8,
    capacity: int = 10**9,
    trace: Path | None = MOONCAKE_TRACE,
    trees: tuple[str, ...] = tuple(TREES),
) -> MemoryReport:
    """Build every tree in ``trees`` from one workload, each measurement in its own child process."""
    load = workload(requests, seed, workers, capacity, trace)
    report = MemoryReport(load.source, load.requests, len(load.ops), load.pairs, load.blocks, load.ranks)
    report.rows.extend(measure_workload(load.ops, load.pairs, trees))
    return report


def _child(argv: list[str]) -> None:
    name, mode, ops_file = argv
    ops = pickle.loads(Path(ops_file).read_bytes())
    print(json.dumps({"bytes": measure_here(name, mode, ops)}))


if __name__ == "__main__":
    _child(sys.argv[1:])


def run_memory_command(
    requests: int, seed: int, workers: int, capacity: int, trace: str | None, synthetic: bool, names: tuple[str, ...]
) -> MemoryReport:
    """``kvproof bench memory``: the trees named (default: every one of ``TREES``) on the trace (default: the project's
    copy when present), or on synthetic chat traffic; an unknown tree is refused."""
    from ..harness.errors import CampaignInputError

    chosen = names or tuple(TREES)
    unknown = [n for n in chosen if n not in TREES]
    if unknown:
        raise CampaignInputError(f"unknown trees {unknown}: choose from {', '.join(TREES)}", param="--tree")
    path = None if synthetic else Path(trace) if trace else MOONCAKE_TRACE
    return run_memory_bench(requests, seed, workers, capacity, path, chosen)

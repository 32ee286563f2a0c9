"""Memory per active request block of the slot trackers, side by side (a benchmark, never a test).

The workload: ``workers`` workers (one or two dp ranks each) registered, then ``requests``
requests added one millisecond apart (all inside the expiry) and never freed, each with a
prompt of a shared system prefix and fresh blocks, a prefill hint and an expected output. Each
tracker is built in a fresh child process per measurement (``harness.measure``): the bytes
retained by tracemalloc, and the growth of the resident set in a child without tracemalloc,
each divided by the active request blocks (the blocks of every booked request, summed).

The real slot tracker runs as a service (``python -m dynamo.slot_tracker``), not in-process,
so it has no row here.

Source: docs/sources.md#kvproof-robustness ("Resources": memory per active request block, optional).
"""

from __future__ import annotations

import gc
import json
import random
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ...impl.slot_tracker import ConcurrentSlotTracker
from ...reference.sequences import SlotTracker as ReferenceSlotTracker
from ...spec.primitives import WorkerWithDpRank
from ...spec.sequence_inputs import PrefillLoadHint, SequenceRequest
from ..harness import measure

HEADERS = ("tracker", "bytes/block (tracemalloc)", "bytes/block (RSS)", "bytes/request (tracemalloc)")
TRACKERS: dict[str, Callable[[], Any]] = {"reference": ReferenceSlotTracker, "impl": ConcurrentSlotTracker}
NANOS_PER_MS = 1_000_000


def workload(requests: int, seed: int, workers: int) -> tuple[dict[int, int], list[SequenceRequest]]:
    """The workers (id -> dp size) and the requests, a pure function of the arguments."""
    rng = random.Random(f"kvproof-tracker-memory:{seed}")
    dp = {w: rng.randint(1, 2) for w in range(1, workers + 1)}
    ranks = [WorkerWithDpRank(w, r) for w, n in dp.items() for r in range(n)]
    systems = [tuple(rng.getrandbits(40) for _ in range(rng.randint(2, 6))) for _ in range(4)]
    out = []
    for i in range(requests):
        blocks = rng.choice(systems) + tuple(rng.getrandbits(40) for _ in range(rng.randint(1, 12)))
        hint = PrefillLoadHint(rng.randint(100, 4000), rng.randint(50, 2000) * NANOS_PER_MS)
        out.append(SequenceRequest(f"r{i}", rng.choice(ranks), blocks, True, rng.randint(16, 512), hint))
    return dp, out


def build(tracker: Any, dp: dict[int, int], requests: list[SequenceRequest]) -> None:
    for worker, size in dp.items():
        tracker.register_worker(worker, 0, size, 0)
    for i, request in enumerate(requests, start=1):
        tracker.add_request(request, i * NANOS_PER_MS)


def measure_here(name: str, mode: str, requests: int, seed: int, workers: int) -> int:
    """Build tracker ``name`` here and return the bytes it retained by ``mode`` (``tracemalloc`` or ``rss``)."""
    dp, load = workload(requests, seed, workers)
    gc.collect()
    if mode == "tracemalloc":
        tracemalloc.start(1)
    before = tracemalloc.get_traced_memory()[0] if mode == "tracemalloc" else measure.rss_bytes()
    tracker = TRACKERS[name]()
    build(tracker, dp, load)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0] if mode == "tracemalloc" else measure.rss_bytes()
    return after - before


@dataclass
class TrackerMemoryRow:
    name: str
    traced_per_block: float | None = None
    rss_per_block: float | None = None
    traced_per_request: float | None = None
    note: str = ""


@dataclass
class TrackerMemoryReport:
    """``kvproof bench memory --family sequences``: bytes per active request block of each slot tracker."""

    kind = "bench-memory-sequences"
    ok = True  # a benchmark measures; it never fails
    skipped = ""

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        say(self.headline())
        table(HEADERS, self.table_rows(), numeric=(1, 2, 3))

    def summary_line(self) -> str:
        return f"bench memory: family=sequences trackers={len(self.rows)}"

    requests: int
    blocks: int
    ranks: int
    rows: list[TrackerMemoryRow] = field(default_factory=list)

    def headline(self) -> str:
        return (
            f"workload: {self.requests} active requests, {self.blocks} active request blocks on {self.ranks} "
            f"ranks (never freed, inside the expiry)"
        )

    def table_rows(self) -> list[tuple[str, str, str, str]]:
        def figure(x: float | None) -> str:
            return "-" if x is None else f"{x:,.0f}"

        return [(r.name, figure(r.traced_per_block), figure(r.rss_per_block), figure(r.traced_per_request)) for r in self.rows]

    def to_json(self) -> dict[str, Any]:
        return {"requests": self.requests, "blocks": self.blocks, "ranks": self.ranks, "rows": [asdict(r) for r in self.rows]}


def run_tracker_memory_bench(requests: int = 20000, seed: int = 1, workers: int = 8) -> TrackerMemoryReport:
    dp, load = workload(requests, seed, workers)
    blocks = sum(len(r.token_sequence or ()) for r in load)
    report = TrackerMemoryReport(requests, blocks, sum(dp.values()))
    for name in TRACKERS:
        row = TrackerMemoryRow(name)
        args = (name, str(requests), str(seed), str(workers))
        traced, why = measure.measure_in_child(__name__, args[0], "tracemalloc", *args[1:])
        rss, why_rss = measure.measure_in_child(__name__, args[0], "rss", *args[1:])
        row.traced_per_block = None if traced is None else traced / max(blocks, 1)
        row.traced_per_request = None if traced is None else traced / max(requests, 1)
        row.rss_per_block = None if rss is None else rss / max(blocks, 1)
        row.note = why or why_rss
        report.rows.append(row)
    return report


if __name__ == "__main__":
    name, mode, n, seed, workers = sys.argv[1:]
    print(json.dumps({"bytes": measure_here(name, mode, int(n), int(seed), int(workers))}))

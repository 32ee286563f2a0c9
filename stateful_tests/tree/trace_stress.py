"""The trace under real threads: a router simulation's events applied by concurrent writers, read the whole time.

``run_trace_stress`` takes the tree operations of ``router.RouterSim`` on a trace and splits
them by worker: writer ``k`` owns the workers ``w`` with ``(w - 1) % writers == k`` and applies
their events, in the trace's order, through lane ``k`` of one ``ConcurrentRadixTree``; as in
Dynamo, each worker's events stay in order while different workers race. Readers ask the
trace's routing queries (and their prefixes, with and without ``early_exit``) the whole time.
The interpreter's switch interval is cut to a microsecond (``stress.run_stress`` does the same).

**Every read is checked** against what each rank held during the read: a writer opens a
block's holding interval (``stress.Holdings``) on the shared clock before its store reaches
the tree and closes it after the removal has left it, so a read between ticks ``t0`` and
``t1`` may credit a rank only with query blocks it held at some instant of ``[t0, t1]``; more
is an overcount.

**At the end** (every writer joined) the tree must equal the reference fed the same events in
the trace's order: every event accepted, the same snapshot, ``check()`` clean, the same plain
scores for every routing query of the trace, and early-exit scores that obey the early-exit law
(``spec.match.early_exit_agrees``; where the walk cuts depends on the edges the race built, F7).

Source: docs/sources.md#kvproof-traffic ("Real traffic": the stress on the trace); docs/sources.md#crtc-10 "Soak".
"""

from __future__ import annotations

import functools
import itertools
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...impl import _sync
from ...impl.radix_tree import ConcurrentRadixTree
from ...reference import RadixTree
from ...spec.events import Removed, Stored
from ...spec.match import early_exit_agrees
from ...spec.primitives import Rank
from .router import Ask, RouterPlan, RouterSim
from .streams import EventOp, apply_op
from .stress import Holdings, ReadWindows, racing
from .traffic import Request


@dataclass
class TraceStressReport:
    writers: int
    readers: int
    ops: int = 0
    reads: int = 0
    overcounts: int = 0
    parity_breaks: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.overcounts or self.parity_breaks)

    def summary_line(self) -> str:
        return (
            f"trace stress: writers={self.writers} readers={self.readers} ops={self.ops} reads={self.reads} "
            f"overcounts={self.overcounts} parity_breaks={self.parity_breaks}"
        )


def split_by_writer(ops: Iterable[EventOp], writers: int) -> list[list[EventOp]]:
    """Each writer's events: those of its workers (``(worker - 1) % writers``), in their order."""
    lanes: list[list[EventOp]] = [[] for _ in range(writers)]
    for op in ops:
        lanes[(op.worker_id - 1) % writers].append(op)
    return lanes


def run_trace_stress(
    requests: Iterable[Request],
    plan: RouterPlan,
    writers: int = 4,
    readers: int = 2,
    seed: int = 1,
    tree_factory: Callable[[int], Any] = ConcurrentRadixTree,
    switch_interval: float = 1e-6,
    yield_sleep: float = 0.02,
    min_reads: int = 20,
) -> TraceStressReport:
    """Replay the trace's events on ``writers`` threads with ``readers`` reading (see the module docstring).

    Each reader reads at least ``min_reads`` times (after the writers are done if it has to), so a run
    whose writers finish first still checks reads.
    """
    sim = RouterSim(plan)
    ops: list[EventOp] = []
    queries: list[list[int]] = []
    for step in sim.steps(requests):
        if isinstance(step, EventOp):
            ops.append(step)
        elif isinstance(step, Ask) and step.query:
            queries.append(list(step.query))
    report = TraceStressReport(writers, readers)
    tree = tree_factory(writers)
    clock = itertools.count(1)
    windows = ReadWindows(readers)
    holdings = [Holdings(windows) for _ in range(writers)]
    outcomes: list[list[str]] = [[] for _ in range(writers)]
    overcounts: list[str] = []
    crashes: list[str] = []
    stop_reading = _sync.Event()
    read_counts = [0] * readers

    def write(k: int, mine: list[EventOp]) -> None:
        lane, held = tree.lane(k), holdings[k]
        try:
            for op in mine:
                rank, data = Rank(op.worker_id, op.event.dp_rank), op.event.data
                if isinstance(data, Stored):
                    held.open(rank, [(b.ext, (b.ext,)) for b in data.blocks], next(clock))  # before the tree can show them
                outcomes[k].append(apply_op(lane, op))
                if isinstance(data, Removed):
                    held.close(rank, list(data.block_hashes), next(clock))  # after they left the tree
        except BaseException as exc:  # a crash of the tree is a finding
            crashes.append(f"writer {k}: {type(exc).__name__}: {exc}")

    def read(k: int) -> None:
        rng = random.Random(f"trace-stress-reader:{seed}:{k}")
        try:
            while queries and (not stop_reading.is_set() or read_counts[k] < min_reads):
                query = rng.choice(queries)
                query = query[: rng.randint(1, len(query))]
                early = rng.random() < 0.25
                windows.starts[k] = 0  # block pruning while the start tick is taken
                t0 = next(clock)
                windows.starts[k] = t0
                scores = tree.find_matches(query, early).scores
                t1 = next(clock)
                read_counts[k] += 1
                for rank, score in scores.items():
                    bound = holdings[(rank[0] - 1) % writers].bound(Rank(*rank), query, t0, t1)
                    if score > bound:
                        overcounts.append(
                            f"{tuple(rank)} scored {score} (early_exit={early}) but held at most {bound} during the read"
                        )
                windows.starts[k] = None
        except Exception as exc:  # a tree a writer's crash poisoned refuses reads: the crash is the finding
            crashes.append(f"reader {k}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")

    started = time.perf_counter()
    with racing(switch_interval, yield_sleep):
        reading = [_sync.Thread(functools.partial(read, k), f"trace-reader-{k}") for k in range(readers)]
        writing = [
            _sync.Thread(functools.partial(write, k, mine), f"trace-writer-{k}")
            for k, mine in enumerate(split_by_writer(ops, writers))
        ]
        for t in writing:
            t.join()
        stop_reading.set()
        for t in reading:
            t.join()
    report.seconds = time.perf_counter() - started
    report.ops = sum(len(o) for o in outcomes)
    report.reads = sum(read_counts)
    report.overcounts = len(overcounts)
    problems = crashes + end_parity(tree, ops, queries, [o for lane in outcomes for o in lane])
    report.parity_breaks = len(crashes) + bool(problems[len(crashes) :])
    report.problems = problems[:5] + overcounts[:3]
    return report


def end_parity(tree: Any, ops: list[EventOp], queries: list[list[int]], outcomes: list[str]) -> list[str]:
    """What differs, at quiescence, between ``tree`` and the reference fed ``ops`` in order (empty: nothing)."""
    problems = [
        f"{n} events refused ({sorted(set(o for o in outcomes if o != 'ok'))})" for n in [sum(o != "ok" for o in outcomes)] if n
    ]
    reference = RadixTree()
    for op in ops:
        apply_op(reference, op)
    if tree.snapshot() != reference.snapshot():
        problems.append("the snapshot differs from the reference's")
    try:
        tree.check()
    except AssertionError as exc:
        problems.append(f"check() failed: {str(exc)[:200]}")
    for q in queries:
        got, want = dict(tree.find_matches(q).scores), dict(reference.find_matches(q).scores)
        early = dict(tree.find_matches(q, True).scores)
        if got != want:
            problems.append(f"find_matches = {got}, reference {want}")
            return problems
        if not early_exit_agrees(got, early):
            problems.append(f"find_matches(early_exit=True) = {early} breaks the early-exit law against {got}")
            return problems
    return problems

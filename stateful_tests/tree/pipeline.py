"""The thread-pool indexer used the way a router uses it: events pipelined, then one flush.

``ThreadPoolIndexer.submit`` queues an event on its worker's event thread and returns at once;
``flush`` waits until everything queued before it is applied. Two rules make that safe, and
this check holds a pool to both:

- **sticky routing**: every event of a worker goes to the same event thread, so one worker's
  events apply in the order they were sent (crtc.md §7 "Event routing");
- **flush is a barrier**: after ``flush`` returns, every queued event is visible to reads.

Each stream is cut into runs of consecutive events of one worker. A run is submitted without
waiting (so a pool that routes one worker's events to several threads reorders them), and the
pool is flushed before the next run, before every ``remove_worker`` / ``clear_all_blocks`` and at
the end (so a flush that does not wait lets the next run, or the final reads, see a partial
state). Within those bounds the pool applies the operations in stream order, so it must agree
exactly with the sequential reference: every event's outcome (from its acknowledgement), the
final scores of every query of the stream and the abstract index (``snapshot``).

Why runs and not the whole stream at once: events of *different* workers do not commute. Whether
a store is accepted depends on whether its parent is still reachable for the rank, and that
depends on other workers still holding the node a stale lookup entry names (``spec.contract``,
finding F3). Pipelining two workers at once makes the outcome depend on the interleaving, which
a comparison with one sequential order would misreport as a bug.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...reference import RadixTree
from ...spec.events import encode_event
from ..harness import targets
from .streams import EventOp, Op, Stream, apply_op


def is_pool(tree: Any) -> bool:
    """Whether ``tree`` pipelines events (``submit`` and ``flush``), as the thread-pool indexer does."""
    return callable(getattr(tree, "submit", None)) and callable(getattr(tree, "flush", None))


def runs(stream: Stream) -> list[list[tuple[int, Op]]]:
    """Cut the stream into runs: consecutive events of one worker, and each other operation alone."""
    out: list[list[tuple[int, Op]]] = []
    for i, op in enumerate(stream.ops):
        same = (
            out and isinstance(op, EventOp) and isinstance(out[-1][-1][1], EventOp) and out[-1][-1][1].worker_id == op.worker_id
        )
        if same:
            out[-1].append((i, op))
        else:
            out.append([(i, op)])
    return out


def check_pipelined(factory: Callable[[], Any], stream: Stream) -> list[str]:
    """Submit ``stream`` run by run to a fresh pool, flushing between runs, and compare with the reference."""
    pool, reference = factory(), RadixTree()
    try:
        problems: list[str] = []
        pending: list[tuple[int, Any, str]] = []  # waited for only at the end: flush alone is the barrier
        for run in runs(stream):
            for i, op in run:
                expected = apply_op(reference, op)
                if isinstance(op, EventOp):
                    pending.append((i, pool.submit(op.worker_id, encode_event(op.event)), expected))
                else:
                    got = apply_op(pool, op)
                    if got != expected:
                        problems.append(f"op {i} {op!r}: {got}, the reference says {expected}")
            pool.flush()
        for query in sorted({tuple(q) for qs in stream.queries for q in qs}):
            got_scores, want = targets.scores(pool, list(query)), targets.scores(reference, list(query))
            if got_scores != want:
                problems.append(f"after flush, find_matches({list(query)}): {got_scores}, the reference says {want}")
        for i, ack, expected in pending:
            try:
                ack.wait()
                got = targets.OK
            except Exception as exc:
                got = targets.outcome_of(exc)
            if got != expected:
                problems.append(f"op {i} {stream.ops[i]!r}: {got}, the reference says {expected}")
        if not problems and pool.snapshot() != reference.snapshot():
            problems.append("after flush, the snapshot differs from the reference's")
        return problems
    finally:
        targets.dispose(pool)

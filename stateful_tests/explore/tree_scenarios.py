"""The tree's races, as explorable programs: the interleavings real routers have broken before.

Blocks follow Dynamo's test convention (local hash ``x``, block hash ``100 * x``). Threads named
``lane0`` .. ``lane2`` are event threads of one concurrent tree (``tree.lane(i)``: each worker's
events on one lane, as the pool routes them); ``reader`` calls ``find_matches`` with no lane;
``caller0`` .. are callers of a thread-pool indexer. The final reads are quiescent, so exact.

Each scenario names the race and the bug it is there for (``impl_mutants`` has each bug).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...spec.events import KvCacheEvent, Removed, Stored
from ...spec.primitives import Block
from .programs import HistoryProgram, Step
from .specs import TREE_ERRORS, TreeSpec, index_of, scores_of


def stored(parent_local: int | None, *locals_: int) -> KvCacheEvent:
    """A store of ``locals_`` below the block of local hash ``parent_local`` (None: the root)."""
    parent = None if parent_local is None else 100 * parent_local
    return KvCacheEvent(0, Stored(parent, tuple(Block(x, 100 * x) for x in locals_)))


def removed(*locals_: int) -> KvCacheEvent:
    return KvCacheEvent(0, Removed(tuple(100 * x for x in locals_)))


def store(worker: int, parent: int | None, *locals_: int) -> Step:
    return Step("event", (worker, stored(parent, *locals_)))


def remove(worker: int, *locals_: int) -> Step:
    return Step("event", (worker, removed(*locals_)))


def find(*locals_: int) -> Step:
    return Step("find_matches", (tuple(locals_),), read=True)


SNAPSHOT = Step("snapshot", (), read=True)


class TreeProgram(HistoryProgram):
    """Lanes of one concurrent tree (``make()`` returns a tree with at least 3 lanes)."""

    typed = TREE_ERRORS

    def perform(self, lane: str, step: Step) -> Any:
        tree = self.subject
        if step.op == "find_matches":
            return tree.find_matches(*step.args)
        if step.op == "snapshot":
            return tree.snapshot()
        handle = tree.lane(int(lane.removeprefix("lane")))
        return getattr(handle, "apply_event" if step.op == "event" else step.op)(*step.args)

    def normalize(self, step: Step) -> Callable[[Any], Any]:
        if step.op == "find_matches":
            return scores_of
        if step.op == "snapshot":
            return index_of
        return lambda v: None

    def spec(self) -> TreeSpec:
        return TreeSpec()


class PoolProgram(TreeProgram):
    """Callers of a thread-pool indexer (``make()`` returns a pool; its event threads start in setup)."""

    def perform(self, lane: str, step: Step) -> Any:
        pool = self.subject
        if step.op == "batch":
            worker, events = step.args
            try:
                acks = [pool.submit(worker, e) for e in events]
            finally:  # a submit that fails leaves the earlier ones queued: the batch still waits for them (a prefix)
                pool.flush()
            # flush promises every event queued before it has been applied: one still pending is a broken promise
            return tuple(
                ("pending", None)
                if not ack._done.is_set()
                else (("error", type(ack.error).__name__) if ack.error is not None else ("ok", None))
                for ack in acks
            )
        if step.op == "event":
            return pool.apply_event(*step.args)
        if step.op in ("remove_worker", "clear_all_blocks"):
            return getattr(pool, step.op)(*step.args)
        if step.op == "find_matches":
            return pool.find_matches(*step.args)
        if step.op == "snapshot":
            return pool.snapshot()
        raise ValueError(f"PoolProgram: unknown step {step.op!r}")

    def normalize(self, step: Step) -> Callable[[Any], Any]:
        if step.op == "batch":
            return lambda v: v
        return super().normalize(step)

    def stop(self) -> None:
        self.subject.close()


def batch(worker: int, *events: KvCacheEvent) -> Step:
    return Step("batch", (worker, tuple(events)))


# ----------------------------------------------------------------------------- the scenarios
# Each returns (setup steps, threads, final reads); tree_scenario wraps them in a program.

Threads = list[tuple[str, list[Step]]]
Layout = tuple[list[tuple[str, Step]], Threads, list[Step]]


def fanout_vs_split() -> Layout:
    """Prefill fanout under an internal parent ([1 2], children 3 and 4) on lane 1 while lane 2 splits the
    parent at 1: the new child must end up below the suffix [2], never below the prefix [1]."""
    setup = [
        ("lane0", store(1, None, 1, 2, 3)),
        ("lane0", store(2, None, 1, 2, 4)),
        ("lane1", store(3, None, 1, 2)),
        ("lane2", store(4, None, 1)),
    ]
    threads = [("lane1", [store(3, 2, 6)]), ("lane2", [store(4, 1, 7), store(4, 7, 8)]), ("reader", [find(1, 2, 6)])]
    return setup, threads, [find(1, 2, 6), find(1, 7, 8), find(1, 2, 3), SNAPSHOT]


def reuse_extend_vs_extend() -> Layout:
    """Worker 2 (a cutoff at [1 2] of the leaf [1 2 3]) plans reuse-and-extend with [3 8] while worker 3 extends
    the leaf to [1 2 3 4]: a plan made on the old leaf must be retried, never committed."""
    setup = [("lane0", store(1, None, 1, 2, 3)), ("lane1", store(3, None, 1, 2, 3)), ("lane0", store(2, None, 1, 2))]
    threads = [("lane0", [store(2, 2, 3, 8)]), ("lane1", [store(3, 3, 4)]), ("reader", [find(1, 2, 3, 4)])]
    return setup, threads, [find(1, 2, 3, 4), find(1, 2, 3, 8), SNAPSHOT]


def extend_vs_child_insert() -> Layout:
    """Decode extension of the leaf [1 2 3] by worker 1 races worker 2's child insert below it: once the leaf has
    a child it is internal (sticky) and must never be extended in place."""
    setup = [("lane0", store(1, None, 1, 2, 3)), ("lane1", store(2, None, 1, 2, 3))]
    threads = [("lane0", [store(1, 3, 4), store(1, 4, 9)]), ("lane1", [store(2, 3, 5)]), ("reader", [find(1, 2, 3, 4, 9)])]
    return setup, threads, [find(1, 2, 3, 4, 9), find(1, 2, 3, 5), SNAPSHOT]


def removal_vs_split() -> Layout:
    """Worker 1 removes [3 4] as one batch on lane 0 while worker 2's store on lane 1 splits [1 2 3 4] at 2,
    leaving lane 0's lookups naming the prefix: the removal must follow the split (repair toward the head)."""
    setup = [("lane0", store(1, None, 1, 2, 3, 4))]
    threads = [("lane0", [remove(1, 3, 4), store(1, 2, 6)]), ("lane1", [store(2, None, 1, 2, 5)]), ("reader", [find(1, 2, 3, 4)])]
    return setup, threads, [find(1, 2, 3, 4), find(1, 2, 6), find(1, 2, 5), SNAPSHOT]


def repair_vs_removal() -> Layout:
    """Lane 0's lookups go stale under lane 1's split; lane 0 repairs them (a store below 3) while lane 1 removes
    another worker's blocks of the same node. A repair rewrites only entries that still name the stale node:
    worker 1 removed 4 first, so a store below 4 must stay rejected."""
    setup = [("lane0", store(1, None, 1, 2, 3, 4)), ("lane1", store(3, None, 1, 2, 3, 4))]
    threads = [
        ("lane0", [remove(1, 4), store(1, 3, 6), store(1, 4, 7)]),
        ("lane1", [store(2, None, 1, 2, 5), remove(3, 3, 4)]),
        ("reader", [find(1, 2, 3, 4, 7)]),
    ]
    return setup, threads, [find(1, 2, 3, 4, 7), find(1, 2, 3, 6), SNAPSHOT]


def drop_vs_split() -> Layout:
    """clear_all_blocks and remove_worker of worker 1 on lane 0 race stores on lane 1 that split worker 1's nodes:
    no coverage of worker 1 may survive on a suffix split off while it was being dropped."""
    setup = [("lane0", store(1, None, 1, 2, 3, 4)), ("lane0", store(5, None, 1, 2, 3, 4))]
    threads = [
        ("lane0", [Step("clear_all_blocks", (1,)), store(1, None, 1, 2, 3), Step("remove_worker", (5,))]),
        ("lane1", [store(2, None, 1, 2, 6), store(2, None, 1, 8)]),
        ("reader", [find(1, 2, 3, 4)]),
    ]
    return setup, threads, [find(1, 2, 3, 4), find(1, 2, 6), find(1, 8), SNAPSHOT]


def find_during_split() -> Layout:
    """find_matches walks [1 2 3 4] while worker 2's store splits it at 2 (and hangs [5] below the prefix): the read
    may stop early, but must never credit a rank past what it held at some moment of the read."""
    setup = [("lane0", store(1, None, 1, 2, 3, 4))]
    threads = [("lane1", [store(2, None, 1, 2, 5), store(2, 2, 3)]), ("reader", [find(1, 2, 3, 4, 3, 4), find(1, 2, 3, 4)])]
    return setup, threads, [find(1, 2, 3, 4, 3, 4), find(1, 2, 5), SNAPSHOT]


def store_vs_dead_release() -> Layout:
    """Worker 1 stores [1] below the root, where it finds worker 2's node [1 2], while worker 2 removes all of it and
    stores [1 3], which releases the node nobody holds and builds a fresh one: worker 1's coverage must land on a
    node that stays in the tree (the race the explorer found in kvproof's own tree)."""
    setup = [("lane1", store(2, None, 1, 2))]
    threads = [("lane0", [store(1, None, 1)]), ("lane1", [remove(2, 2, 1), store(2, None, 1, 3)]), ("reader", [find(1, 3)])]
    return setup, threads, [find(1, 2), find(1, 3), SNAPSHOT]


def eviction_release_vs_store() -> Layout:
    """Worker 1 evicts its leaf [3] below the shared [1 2], which releases the leaf nobody holds then (issue 12's
    soak fix), while worker 3 stores [1 2 3] through it and worker 2 splits the parent: the release must give up on a
    leaf a store covered meanwhile, or the store must land on a fresh node; no coverage may end on a released node."""
    setup = [("lane1", store(1, None, 1, 2, 3)), ("lane2", store(2, None, 1, 2, 4))]
    threads = [
        ("lane1", [remove(1, 3), remove(1, 2)]),
        ("lane0", [store(3, None, 1, 2, 3)]),
        ("lane2", [store(2, None, 1, 5)]),
        ("reader", [find(1, 2, 3)]),
    ]
    return setup, threads, [find(1, 2, 3), find(1, 2, 4), find(1, 5), SNAPSHOT]


def cold_remove_vs_store() -> Layout:
    """A thread-pool indexer: a remove_worker of a worker no lane has seen (cold) on one caller races another
    caller's stores; a third submits two dependent events and flushes. Each worker's events apply in order on
    one lane, flush means applied, and a cold removal changes nothing."""
    setup = [("caller0", Step("event", (1, stored(None, 1, 2, 3))))]
    threads = [
        ("caller0", [Step("remove_worker", (9,)), Step("event", (1, stored(3, 4)))]),
        ("caller1", [batch(2, stored(None, 1, 2), stored(2, 5)), find(1, 2, 5)]),
        ("caller2", [batch(3, stored(None, 1, 6), stored(6, 7)), find(1, 6, 7)]),
    ]
    return setup, threads, [find(1, 2, 3, 4), find(1, 2, 5), find(1, 6, 7), SNAPSHOT]


def remove_vs_own_events() -> Layout:
    """A thread-pool indexer (two event threads): worker 4 shares lane 0 with worker 1. One caller stores for worker 4
    twice while another removes worker 4 twice. An event of worker 4 may land before or after a removal, but the
    worker must never end on two lanes: after the last removal, whatever worker 4 still holds was stored after it
    (the pool of kvproof issue 31 kept crediting a store that waited behind the first removal)."""
    setup = [
        ("caller0", Step("event", (1, stored(None, 1, 2)))),
        ("caller0", Step("event", (2, stored(None, 3)))),
        ("caller0", Step("event", (4, stored(None, 1, 5)))),
    ]
    threads = [
        ("caller0", [Step("event", (4, stored(None, 6))), Step("event", (4, stored(None, 7)))]),
        ("caller1", [Step("remove_worker", (4,)), Step("remove_worker", (4,))]),
    ]
    return setup, threads, [find(1, 5), find(6), find(7), SNAPSHOT]


LAYOUTS: dict[str, tuple[Callable[[], Layout], str]] = {
    "fanout-vs-split": (fanout_vs_split, "lanes"),
    "reuse-extend-vs-extend": (reuse_extend_vs_extend, "lanes"),
    "extend-vs-child-insert": (extend_vs_child_insert, "lanes"),
    "removal-vs-split": (removal_vs_split, "lanes"),
    "repair-vs-removal": (repair_vs_removal, "lanes"),
    "drop-vs-split": (drop_vs_split, "lanes"),
    "find-during-split": (find_during_split, "lanes"),
    "store-vs-dead-release": (store_vs_dead_release, "lanes"),
    "eviction-release-vs-store": (eviction_release_vs_store, "lanes"),
    "cold-remove-vs-store": (cold_remove_vs_store, "pool"),
    "remove-vs-own-events": (remove_vs_own_events, "pool"),
}


def tree_program(name: str, make: Callable[[], Any]) -> TreeProgram:
    layout, kind = LAYOUTS[name]
    setup, threads, final = layout()
    cls = PoolProgram if kind == "pool" else TreeProgram
    return cls(make, setup, threads, final)


# ----------------------------------------------------------------------------- workloads (random, or drawn by Hypothesis)
# A workload is plain data, so a schedule file can carry it: a tuple of threads, each a name and a tuple of
# ops: ("store", worker, base path, tail) stores the tail's blocks below the block of the base path (the root
# when it is empty); ("remove", worker, path) removes the block of a path and what the worker holds below it;
# ("clear", worker); ("find", path).
# Block hashes are derived from the whole local prefix (harness.paths), as an engine's are, so equal prefixes
# name equal blocks and no two prefixes collide. Lanes lane0-lane2 (worker k on lane k-1), then the reader.

Workload = tuple[tuple[str, tuple[tuple, ...]], ...]


def _steps(ops: tuple[tuple, ...]) -> list[Step]:
    """One lane's ops as steps. A removal takes the block of its path *and every block below it the worker holds*,
    so a workload never leaves a hole (a held block whose chain was cut): the history's writes are then exact per
    worker (spec/contract.py law 3), which is what lets the checker partition by worker."""
    from ..harness.paths import ext

    held: dict[int, set[tuple[int, ...]]] = {}
    out = []
    for op in ops:
        kind, worker = op[0], op[1]
        mine = held.setdefault(worker, set())
        if kind == "store":
            base, tail = tuple(op[2]), tuple(op[3])
            blocks = tuple(Block(x, ext(base + tail[: i + 1])) for i, x in enumerate(tail))
            out.append(Step("event", (worker, KvCacheEvent(0, Stored(ext(base) if base else None, blocks)))))
            if not base or base in mine:  # accepted: below a held parent, or from the root
                mine.update(base + tail[: i + 1] for i in range(len(tail)))
        elif kind == "remove":
            path = tuple(op[2])
            gone = sorted((p for p in mine if p[: len(path)] == path), key=len, reverse=True) or [path]
            out.append(Step("event", (worker, KvCacheEvent(0, Removed(tuple(ext(p) for p in gone))))))
            mine.difference_update(gone)
        elif kind == "clear":
            out.append(Step("clear_all_blocks", (worker,)))
            mine.clear()
        elif kind == "find":
            out.append(find(*op[1]))
        else:
            raise ValueError(f"unknown workload op {op!r}")
    return out


QUERIES = ((1, 2, 3, 4), (1, 3, 2, 5), (1, 4, 5), (1, 2, 5, 3))


def workload_layout(workload: Workload) -> Layout:
    """The program of a workload: its threads' ops as steps, and every query again at the end (quiescent)."""
    threads: Threads = [(name, _steps(tuple(tuple(op) for op in ops))) for name, ops in workload]
    return [], threads, [*(find(*q) for q in QUERIES), SNAPSHOT]


def random_workload(seed: int, calls_per_thread: int = 6) -> Workload:
    """A random workload: each lane's worker stores along chains over a few local hashes below ``1`` (so lanes
    split each other's nodes) and removes some of what it stored; the reader queries."""
    import random

    rng = random.Random(seed)
    threads = []
    for lane in range(3):
        worker = lane + 1
        held: list[tuple[int, ...]] = []
        ops: list[tuple] = []
        for _ in range(calls_per_thread):
            if held and rng.random() < 0.25:
                path = rng.choice(held)
                ops.append(("remove", worker, path))
                held = [p for p in held if p[: len(path)] != path]
                continue
            base = rng.choice(held) if held and rng.random() < 0.6 else ()
            tail = tuple(rng.randrange(2, 6) for _ in range(rng.randrange(1, 3)))
            tail = tail if base else (1, *tail)
            ops.append(("store", worker, base, tail))
            held.extend((base + tail)[: len(base) + i + 1] for i in range(len(tail)))
        threads.append((f"lane{lane}", tuple(ops)))
    threads.append(("reader", tuple(("find", q) for q in QUERIES[: max(1, calls_per_thread // 3)])))
    return tuple(threads)


def random_layout(seed: int, calls_per_thread: int = 6) -> Layout:
    return workload_layout(random_workload(seed, calls_per_thread))


def workloads() -> Any:
    """A Hypothesis strategy of small workloads (two lanes and a reader), shrinking toward fewer, shorter ops."""
    from hypothesis import strategies as st

    path = st.lists(st.integers(2, 5), min_size=0, max_size=2).map(lambda xs: (1, *xs))
    tail = st.lists(st.integers(2, 5), min_size=1, max_size=2).map(tuple)

    def lane_ops(worker: int) -> Any:
        from_root = st.tuples(st.just("store"), st.just(worker), st.just(()), path)
        below = st.tuples(st.just("store"), st.just(worker), path, tail)
        remove_op = st.tuples(st.just("remove"), st.just(worker), path)
        return st.lists(st.one_of(from_root, below, remove_op, st.just(("clear", worker))), min_size=1, max_size=3).map(tuple)

    reads = st.lists(st.sampled_from(QUERIES).map(lambda q: ("find", q)), min_size=1, max_size=2).map(tuple)
    return st.tuples(
        st.tuples(st.just("lane0"), lane_ops(1)), st.tuples(st.just("lane1"), lane_ops(2)), st.tuples(st.just("reader"), reads)
    )


def workload_program(make: Callable[[], Any], workload: Workload) -> TreeProgram:
    setup, threads, final = workload_layout(workload)
    return TreeProgram(make, setup, threads, final)

"""The thread-pool indexer under real threads: removers racing the writers of the same workers.

Writers store chains for a handful of workers through the pool (``apply_event``), removers call
``remove_worker`` on those same workers at random, readers ask ``find_matches`` throughout, all at
once on real threads. A removal and a racing event of its worker may land in either order, so
nothing is asserted mid-run; at the end every worker is removed once more, and then **no worker may
be credited with anything** (every query scores empty) and the tree's ``check()`` holds. A pool that
lets a worker's event land on a lane its later removal does not reach leaves blocks credited to a
removed worker forever: a *ghost*, counted as (rank, block) pairs (the twin
``ForgetsRouteWithEventsInFlight`` does; kvproof issue 31).

Rounds are seeded (the workload) and repeatable in what they do, not in how the threads interleave;
a failing round prints its seed and the command that runs it again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...impl import _sync
from ...spec.events import KvCacheEvent, Stored
from ...spec.primitives import Block
from ..harness import targets
from ..harness.paths import ext


@dataclass
class PoolStressReport:
    rounds: int = 0
    ops: int = 0
    ghosts: int = 0  # (rank, block) pairs still credited after every worker was removed
    failed_rounds: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.failed_rounds)

    def summary_line(self) -> str:
        return f"pool stress: rounds={self.rounds} ops={self.ops} ghosts={self.ghosts} failed_rounds={len(self.failed_rounds)}"


def _store(rng: random.Random) -> tuple[tuple[int, ...], KvCacheEvent]:
    path = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 6)))
    blocks = tuple(Block(x, ext(path[: i + 1])) for i, x in enumerate(path))
    return path, KvCacheEvent(0, Stored(None, blocks))


def run_round(
    make: Callable[[], Any], seed: int, ops: int = 300, writers: int = 3, removers: int = 2, readers: int = 2, workers: int = 4
) -> list[str]:
    """One round; return its problems (empty: it passed)."""
    pool = make()
    paths: set[tuple[int, ...]] = set()
    errors: list[str] = []
    done = [0]

    def writer(k: int) -> None:
        rng = random.Random(f"pool-stress/{seed}/w{k}")
        for _ in range(ops):
            path, event = _store(rng)
            paths.add(path)
            pool.apply_event(rng.randint(1, workers), event)
            done[0] += 1
            if rng.random() < 0.3:
                time.sleep(0)

    def remover(k: int) -> None:
        rng = random.Random(f"pool-stress/{seed}/r{k}")
        for _ in range(ops // 5):
            pool.remove_worker(rng.randint(1, workers))
            done[0] += 1

    def reader(k: int) -> None:
        rng = random.Random(f"pool-stress/{seed}/q{k}")
        for _ in range(ops // 3):
            pool.find_matches([rng.randint(1, 4) for _ in range(3)])
            done[0] += 1

    def guarded(fn: Callable[[int], None], k: int) -> Callable[[], None]:
        def run() -> None:
            try:
                fn(k)
            except Exception as exc:  # reported with the round, never lost in a thread
                errors.append(f"{fn.__name__} {k}: {type(exc).__name__}: {exc}")

        return run

    threads = (
        [_sync.Thread(guarded(writer, k), f"writer{k}") for k in range(writers)]
        + [_sync.Thread(guarded(remover, k), f"remover{k}") for k in range(removers)]
        + [_sync.Thread(guarded(reader, k), f"reader{k}") for k in range(readers)]
    )
    for thread in threads:
        thread.join()
    try:
        for worker in range(1, workers + 1):
            pool.remove_worker(worker)
        ghosts = []
        for path in sorted(paths):
            credited = targets.scores(pool, list(path))
            ghosts += [f"{rank} still credited {score} of {list(path)}" for rank, score in sorted(credited.items())]
        check = getattr(pool, "check", None)
        if check is not None:
            try:
                check()
            except AssertionError as exc:
                errors.append(f"check() after every worker was removed: {exc}")
        errors += ghosts
    finally:
        targets.dispose(pool)
    return errors


def run_pool_stress(make: Callable[[], Any], rounds: int, seed: int, ops: int = 300) -> PoolStressReport:
    report = PoolStressReport()
    for r in range(rounds):
        problems = run_round(make, seed + r, ops)
        report.rounds += 1
        report.ops += ops * 3 + ops // 5 * 2 + ops // 3 * 2
        if problems:
            report.failed_rounds.append(seed + r)
            report.ghosts += sum("still credited" in p for p in problems)
            report.problems += problems[:3]
    return report

"""PCT, probabilistic concurrency testing with bug depth ``d`` (Burckhardt, Kothari, Musuvathi, Nagarakatte,
ASPLOS 2010).

Each schedule gives every thread a random priority when it first appears (all at least ``d``) and
draws ``d - 1`` change points among decisions 2 to ``k``; the highest-priority runnable thread
always runs, and at a change point the thread that ran last (runnable or not) drops below every
initial priority *and below every earlier drop*: the ``i``-th change point (counting from 0)
gives it ``d - 1 - i``, so a later demotion ranks lower (as Shuttle's ``next_priority`` does).
``k`` is learned: the most decisions any schedule of this strategy has made so far (the first
schedule guesses 50), as Shuttle's PCT does.

**The guarantee.** For a program with ``n`` threads and ``k`` decisions, one schedule finds a
given bug of depth ``d`` (one that needs ``d`` ordering constraints to show) with probability at
least ``p = 1 / (n * k**(d - 1))``. ``budget_for`` turns that into the number of schedules that
find it with a chosen confidence: ``ceil(ln(1 - confidence) / ln(1 - p))``.

Source: docs/sources.md#tooling-3-2 "PCT theory"; Shuttle ``PctScheduler``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from .scheduler import RunResult


def depth_bound(threads: int, decisions: int, depth: int) -> float:
    """Return PCT's lower bound on one schedule's chance of finding a depth-``depth`` bug."""
    return 1.0 / (threads * max(1, decisions) ** (depth - 1))


def budget_for(threads: int, decisions: int, depth: int, confidence: float = 0.95) -> int:
    """Return how many PCT schedules find a depth-``depth`` bug with probability at least ``confidence``."""
    p = depth_bound(threads, decisions, depth)
    if p >= 1.0:
        return 1
    return math.ceil(math.log(1.0 - confidence) / math.log(1.0 - p))


class PCT:
    def __init__(self, seed: int, depth: int = 3, k: int = 50) -> None:
        if depth < 1:
            raise ValueError(f"PCT depth must be at least 1, not {depth}")
        self.seed, self.depth, self.k = seed, depth, k
        self.index = -1
        self.name = f"pct.d{depth}.s{seed}"
        self._rng = random.Random()
        self._priority: dict[int, float] = {}
        self._changes: list[int] = []
        self._step = 0
        self._last: int | None = None

    def begin(self) -> None:
        self.index += 1
        self._rng = random.Random(f"{self.seed}/{self.index}")
        self._priority = {}
        candidates = range(2, max(2, self.k) + 1)  # the first decision has no thread that ran before it
        self._changes = sorted(self._rng.sample(candidates, min(self.depth - 1, len(candidates))))
        self._step = 0
        self._last = None

    def _of(self, thread: int) -> float:
        p = self._priority.get(thread)
        if p is None:
            p = self._priority[thread] = self.depth + self._rng.random()
        return p

    def choose(self, runnable: Sequence[int], current: int | None) -> int:
        self._step += 1
        demoted = current if current is not None else self._last
        if demoted is not None and self._step in self._changes:
            self._of(demoted)
            self._priority[demoted] = self.depth - 1 - self._changes.index(self._step)  # later drops rank lower
        pick = max(runnable, key=self._of)
        self._last = pick
        return pick

    def end(self, result: RunResult) -> None:
        self.k = max(self.k if self.index else 1, len(result.decisions))

    def exhausted(self) -> bool:
        return False

"""Random walk: at every decision, any runnable thread with equal probability.

Schedule ``i`` of seed ``s`` draws from ``Random(f"{s}/{i}")``, so a campaign's schedules do not
depend on how many ran before (a token still carries the decisions themselves).

Source: Shuttle's ``RandomScheduler`` (docs/sources.md#tooling-3-2).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from .scheduler import RunResult


class RandomWalk:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.index = -1
        self.name = f"random.s{seed}"
        self._rng = random.Random()

    def begin(self) -> None:
        self.index += 1
        self._rng = random.Random(f"{self.seed}/{self.index}")

    def choose(self, runnable: Sequence[int], current: int | None) -> int:
        return runnable[self._rng.randrange(len(runnable))]

    def end(self, result: RunResult) -> None:
        pass

    def exhausted(self) -> bool:
        return False

"""Replay: the recorded decisions, in order; past their end, no preemption (the running thread, else the lowest id).

Because the default past the end never preempts, a shorter prefix of a failing schedule is itself
a schedule, which is how ``shrink.shrink_schedule`` cuts tokens down. A recorded thread that is
not runnable at its decision means the code under test changed since the schedule was recorded
(``Divergence``).

Source: Shuttle ``replay`` / ``ReplayScheduler`` (docs/sources.md#tooling-3-2).
"""

from __future__ import annotations

from collections.abc import Sequence

from .scheduler import RunResult


class Divergence(AssertionError):
    """A replayed schedule asked for a thread that was not runnable: it was recorded on other code."""


class Replay:
    def __init__(self, decisions: Sequence[int], name: str = "replay") -> None:
        self.decisions = list(decisions)
        self.name = name
        self._next = 0

    def begin(self) -> None:
        self._next = 0

    def choose(self, runnable: Sequence[int], current: int | None) -> int:
        k = self._next
        self._next += 1
        if k < len(self.decisions):
            pick = self.decisions[k]
            if pick not in runnable:
                raise Divergence(f"decision {k} names thread {pick}, but only {list(runnable)} can run")
            return pick
        return current if current is not None else runnable[0]

    def end(self, result: RunResult) -> None:
        pass

    def exhausted(self) -> bool:
        return False

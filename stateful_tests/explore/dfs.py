"""Exhaustive search with a preemption bound: every schedule with at most ``bound`` preemptions, once each.

A *preemption* is a decision that switches away from a thread that could have gone on; a switch
when the running thread blocks or finishes is free. The search is stateless (CHESS, Loom): each
schedule replays the choices on the stack, extends it with the first option at every new
decision (the running thread first, then the others by id), and backtracking advances the
deepest decision that has an option left. ``bound=None`` explores every interleaving.

The self-test (``tests/test_dfs.py``) counts the schedules of small programs and compares them
with hand-computed numbers: ``n`` threads of ``k`` yield points have ``((k+1)n)! / ((k+1)!)^n``
schedules, ``n!`` with no preemption, and for two threads ``2 + 2k`` with at most one.

Source: Musuvathi and Qadeer, "Iterative context bounding" (PLDI 2007); Loom ``LOOM_MAX_PREEMPTIONS``
(docs/sources.md#tooling-3-2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .scheduler import RunResult


class Nondeterminism(AssertionError):
    """A replayed prefix offered other choices than when it was first explored: the program is not deterministic."""


@dataclass
class _Choice:
    options: list[int]
    index: int = 0


class DFS:
    def __init__(self, bound: int | None = 2) -> None:
        self.bound = bound
        self.name = f"dfs.p{'all' if bound is None else bound}"
        self.stack: list[_Choice] = []
        self.schedules = 0
        self._depth = 0
        self._preemptions = 0
        self._done = False

    def begin(self) -> None:
        self._depth = 0
        self._preemptions = 0

    def _options(self, runnable: Sequence[int], current: int | None) -> list[int]:
        if current is None:
            return list(runnable)
        if self.bound is not None and self._preemptions >= self.bound:
            return [current]
        return [current, *(t for t in runnable if t != current)]

    def choose(self, runnable: Sequence[int], current: int | None) -> int:
        options = self._options(runnable, current)
        if self._depth < len(self.stack):
            choice = self.stack[self._depth]
            if choice.options != options:
                raise Nondeterminism(f"decision {self._depth}: options {options}, first explored as {choice.options}")
        else:
            choice = _Choice(options)
            self.stack.append(choice)
        self._depth += 1
        pick = choice.options[choice.index]
        if current is not None and pick != current:
            self._preemptions += 1
        return pick

    def end(self, result: RunResult) -> None:
        self.schedules += 1
        del self.stack[self._depth :]
        while self.stack and self.stack[-1].index + 1 >= len(self.stack[-1].options):
            self.stack.pop()
        if self.stack:
            self.stack[-1].index += 1
        else:
            self._done = True

    def exhausted(self) -> bool:
        return self._done

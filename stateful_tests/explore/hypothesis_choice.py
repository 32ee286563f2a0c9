"""Hypothesis draws every decision, so a failing workload and its schedule shrink together.

The options are ordered with the running thread first, so index 0 means "no preemption" and
Hypothesis's shrinking toward 0 minimises the number of preemptions (the aim of ploom's trace
minimisation); the workload drawn beside it shrinks as usual.

Source: docs/sources.md#tooling-3-3 "Why HypothesisChoice matters".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from .scheduler import RunResult


class HypothesisChoice:
    def __init__(self, data: Any) -> None:
        self.data = data
        self.name = "hypothesis"

    def begin(self) -> None:
        pass

    def choose(self, runnable: Sequence[int], current: int | None) -> int:
        options = list(runnable) if current is None else [current, *(t for t in runnable if t != current)]
        return options[self.data.draw(st.integers(0, len(options) - 1), label="thread")]

    def end(self, result: RunResult) -> None:
        pass

    def exhausted(self) -> bool:
        return False

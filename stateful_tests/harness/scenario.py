"""The scenario format shared by the tree vectors and the sequence values.

A ``Scenario`` is a named, sourced list of steps, each with its expected outcome. A family
defines its step types and one ``run_step`` that applies or checks a step and returns a
description of the mismatch (or None); ``mismatches`` replays the steps in order and returns
one line per step that differs, so the same data gates every target of the family.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

OK = "ok"
"""The outcome of a step that was accepted."""


@dataclass(frozen=True)
class Scenario:
    """A named list of steps; ``source`` says where the expected outcomes come from."""

    name: str
    source: str
    steps: list[Any] = field(default_factory=list)


def mismatches(steps: Sequence[Any], run_step: Callable[[int, Any], str | None]) -> list[str]:
    """Run ``run_step(i, step)`` over ``steps``; return ``"step i: <problem>"`` for each that differs."""
    failures = []
    for i, step in enumerate(steps):
        problem = run_step(i, step)
        if problem:
            failures.append(f"step {i}: {problem}")
    return failures

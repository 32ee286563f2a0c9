"""Directed: one chosen interleaving, named by a decision point instead of by its place in a schedule.

``Directed(point, first, then)``: the thread named ``first`` runs alone until it is about to pass the
decision named ``point`` (its ``occurrence``-th time there); then the thread named ``then`` runs until
it finishes or must wait; then every thread runs without preemption, lowest id first. It is the
controlled scheduler's counterpart of ``harness.interleave.race``, which parks a real thread at a named
``yield_point``: under the scheduler every gate and lock acquisition is a decision too
(``node7.shape_gate.exclusive``), so a window that has no yield point of its own, such as the one
between a plan and the exclusive gate that commits it, is reached exactly, every run.

``reached`` says whether the switch happened; a law that directs a race asserts it, so a renamed
point or a path that no longer passes it fails instead of running some other interleaving. ``trail``
lists every decision each thread passed, by name, in order: a law can name the points a path must
go through.

Source: docs/sources.md#tooling-3-2 (Shuttle's and Loom's schedulers take directed schedules as well as searches).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .scheduler import Program, RunResult, Scheduler


class Directed:
    def __init__(self, point: str, first: str, then: str, occurrence: int = 1) -> None:
        self.point, self.first, self.then, self.occurrence = point, first, then, occurrence
        self.name = f"directed.{first}@{point}#{occurrence}->{then}"
        self.scheduler: Scheduler | None = None
        self.trail: list[tuple[str, str]] = []  # (thread name, decision point), every decision of the run
        self.reached = False
        self._seen = 0

    def begin(self) -> None:
        self.reached, self._seen, self.trail = False, 0, []

    def _id(self, name: str) -> int:
        assert self.scheduler is not None, "run a directed schedule with Directed.run"
        return next(t.id for t in self.scheduler.threads if t.name == name)

    def choose(self, runnable: Sequence[int], current: int | None) -> int:
        assert self.scheduler is not None, "run a directed schedule with Directed.run"
        first, then = self._id(self.first), self._id(self.then)
        if not self.reached and first in runnable:
            if self.scheduler.threads[first].position == self.point:
                self._seen += 1
                self.reached = self._seen == self.occurrence
            if not self.reached:
                return first
        if self.reached and then in runnable:
            return then
        return current if current is not None else runnable[0]

    def end(self, result: RunResult) -> None:
        pass

    def exhausted(self) -> bool:
        return False

    def run(self, program: Program) -> RunResult:
        """Run ``program`` once under this schedule."""
        self.scheduler = _Tracing(self)
        return self.scheduler.run(program)


class _Tracing(Scheduler):
    """The scheduler, with every decision's thread and name written to the strategy's trail."""

    strategy: Directed

    def yield_point(self, name: str) -> None:
        if self.running is not None:
            self.strategy.trail.append((self.running.name, name))
        super().yield_point(name)


@dataclass
class Raced:
    """What ``race`` ran: the subject, what each thread raised (by name), the run, and whether the switch happened."""

    subject: Any = None
    errors: dict[str, BaseException] = field(default_factory=dict)
    result: RunResult | None = None
    reached: bool = False
    trail: list[tuple[str, str]] = field(default_factory=list)

    def passed(self, thread: str) -> list[str]:
        """The decision points ``thread`` (``paused`` or ``meanwhile``) passed, in order."""
        return [point for who, point in self.trail if who == thread]


def race(
    point: str | Callable[[Any], str],
    make: Callable[[], Any],
    paused: Callable[[Any], object],
    meanwhile: Callable[[Any], object],
    occurrence: int = 1,
) -> Raced:
    """Run ``paused(subject)`` until its ``occurrence``-th decision named ``point``, all of ``meanwhile(subject)``, then the rest.

    ``make()`` builds the subject under the scheduler (so its gates and locks are the scheduler's);
    ``point`` may be a function of the subject, for names known only once it is built
    (``lambda tree: f"node{tree.root.children[1].id}.shape_gate.exclusive"``). Exceptions of the
    two calls are handed back in ``errors``, not reported as problems: the caller judges them.
    """
    raced = Raced()

    def call(name: str, body: Callable[[Any], object]) -> Callable[[], None]:
        def run() -> None:
            try:
                body(raced.subject)
            except Exception as exc:  # handed back to the caller
                raced.errors[name] = exc

        return run

    strategy = Directed(point if isinstance(point, str) else "", "paused", "meanwhile", occurrence)

    class _Program:
        def setup(self) -> None:
            raced.subject = make()

        def threads(self) -> list[tuple[str, Callable[[], None]]]:
            if not isinstance(point, str):
                strategy.point = point(raced.subject)
            return [("paused", call("paused", paused)), ("meanwhile", call("meanwhile", meanwhile))]

        def finish(self) -> list[str]:
            return []

    raced.result = strategy.run(_Program())
    raced.reached, raced.trail = strategy.reached, strategy.trail
    return raced

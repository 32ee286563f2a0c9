"""Faults mid-operation: raise at each yield point of each write path, then judge what is left.

For a scenario, one run without preemption counts the decisions each program thread reaches
(its yield points and acquires). Then, for every thread and every one of those points, the
scenario runs again with an ``InjectedFault`` raised in that thread at that point. The thread's
call records ``("error", "InjectedFault")`` and the thread goes on with its next call. The pair is

- **clean** when the structure's ``check()`` holds at the end and the history is linearizable
  with the faulted call either applied whole or not at all (``linearizability`` treats a
  faulted write as optional, and a faulted read as returning nothing);
- **broken** otherwise: the fault left a torn state that check() or a later call exposes.

(A structure that marks itself poisoned and says so on every later call would be a third
outcome; none does yet, so none is reported.) Issue 12 asks for 0 broken pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .campaign import Subject, scenario_named, subject_for
from .programs import HistoryProgram
from .replay import Replay
from .scheduler import Scheduler, Strategy


class InjectedFault(Exception):
    """Raised by the fault injector at a chosen yield point (never by the code under test)."""


FAULT = ("error", "InjectedFault")


class FaultingScheduler(Scheduler):
    """A scheduler that raises ``InjectedFault`` in ``thread`` at its ``at``-th decision (1-based)."""

    def __init__(self, strategy: Strategy, thread: str | None = None, at: int = 0) -> None:
        super().__init__(strategy)
        self.fault_thread, self.fault_at = thread, at
        self.points: dict[str, list[str]] = {}  # thread -> the decision points it passed, in order
        self.injected: str | None = None

    def yield_point(self, name: str) -> None:
        thread = self.running
        if thread is not None and thread.program and thread.name not in ("setup", "finish") and not self._stopping:
            passed = self.points.setdefault(thread.name, [])
            passed.append(name)
            if thread.name == self.fault_thread and len(passed) == self.fault_at and self.injected is None:
                self.injected = name
                raise InjectedFault(f"injected at {name} (decision {self.fault_at} of {thread.name})")
        super().yield_point(name)


@dataclass
class FaultReport:
    scenario: str
    target: str
    pairs: int = 0
    clean: int = 0
    broken: list[tuple[str, int, str, str]] = field(default_factory=list)  # (thread, decision, point, first problem)


def _with_faults(program: HistoryProgram) -> HistoryProgram:
    program.typed = (*program.typed, InjectedFault)
    return program


def explore_faults(scenario: str, target: str | Subject = "impl") -> FaultReport:
    """Every (thread, decision) pair of ``scenario`` on ``target``, faulted once each."""
    sc = scenario_named(scenario)
    subject = target if isinstance(target, Subject) else subject_for(target)
    make = subject.maker(sc.family)
    report = FaultReport(scenario, subject.name)
    if make is None:
        return report
    counter = FaultingScheduler(Replay([]))
    counter.run(_with_faults(sc.build(make)))
    for thread, points in counter.points.items():
        for at in range(1, len(points) + 1):
            program = _with_faults(sc.build(make))
            scheduler = FaultingScheduler(Replay([]), thread, at)
            result = scheduler.run(program)
            report.pairs += 1
            if result.failed:
                report.broken.append((thread, at, scheduler.injected or points[at - 1], result.problems[0].splitlines()[0]))
            else:
                report.clean += 1
    return report

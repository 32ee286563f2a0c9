"""Faults mid-operation: raise at each yield point of each write path, then judge what is left.

For a scenario, one run without preemption counts the decisions each program thread reaches
(its yield points and acquires). Then, for every thread and every one of those points, the
scenario runs again with an ``InjectedFault`` raised in that thread at that point. The thread's
call records ``("error", "InjectedFault")`` and the thread goes on with its next call. Each
(scenario, point) pair gets one of four outcomes (issue 12):

- **clean**: the structure's ``check()`` holds at the end and the history is linearizable with
  the faulted call applied whole or not at all (``linearizability`` treats a faulted write as
  optional, and a faulted read as returning nothing);
- **torn-but-consistent**: ``check()`` holds and the history is linearizable once the faulted
  call may also have applied a *part* of itself that is itself a legal call (a prefix of a
  store's chain, a subset of a removal's hashes: ``specs.TreeSpec.partials``);
- **poisoned**: the structure marked itself poisoned (``impl.poison``) and every call that began
  after the faulted one returned was refused with ``Poisoned``: the owner is told to rebuild;
- **broken**: anything else: a torn state that ``check()`` or a later call exposes, or a poisoned
  structure that still answered a call. Issue 12 asks for 0 broken pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import linearizability
from .campaign import Subject, families_of, scenario_named, subject_for
from .history import Call
from .programs import HistoryProgram, kind_of
from .replay import Replay
from .scheduler import Scheduler, Strategy
from .specs import TreeSpec


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


OUTCOMES = ("clean", "torn", "poisoned", "broken")


@dataclass
class FaultReport:
    scenario: str
    target: str
    pairs: int = 0
    clean: int = 0
    torn: int = 0
    poisoned: int = 0
    broken: list[tuple[str, int, str, str]] = field(default_factory=list)  # (thread, decision, point, first problem)

    def count(self, outcome: str) -> int:
        return len(self.broken) if outcome == "broken" else int(getattr(self, outcome))


def _with_faults(program: HistoryProgram) -> HistoryProgram:
    program.typed = (*program.typed, InjectedFault)
    return program


def poison_of(subject: Any) -> Any:
    """The ``Poisoned`` verdict a structure (or the tree inside a pool) holds, if any."""
    for candidate in (subject, getattr(subject, "tree", None)):
        verdict = getattr(candidate, "poisoned", None)
        if verdict is not None:
            return verdict
    return None


POISONED = ("error", "Poisoned")


def _refused_after(calls: list[Call]) -> str | None:
    """The first call that began after the faulted call returned and was not refused with ``Poisoned``, if any."""
    faulted = [c for c in calls if c.result == FAULT]
    if not faulted:
        return None
    end = faulted[0].ret
    for call in calls:
        if call.call > end and call.result != POISONED:
            return f"poisoned, yet {call.thread}'s {call.op} after the fault returned {call.result!r}"
    return None


def judge(program: HistoryProgram, problems: list[str], torn_spec: Any) -> tuple[str, str]:
    """Return (outcome, first problem) for one faulted run (see the module docstring)."""
    if poison_of(program.subject) is not None:
        answered = _refused_after(program.calls)
        return ("broken", answered) if answered else ("poisoned", str(poison_of(program.subject)))
    if not problems:
        return "clean", ""
    only_order = all(kind_of(p) == "not linearizable" for p in problems)
    if (
        only_order
        and torn_spec is not None
        and linearizability.check(torn_spec, program.calls, program.budget, minimize=False).ok
    ):
        return "torn", problems[0].splitlines()[0]
    return "broken", problems[0].splitlines()[0]


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
            spec = program.spec()
            torn_spec = type(spec)(torn=True) if isinstance(spec, TreeSpec) else None
            outcome, problem = judge(program, list(result.problems), torn_spec)
            if outcome == "broken":
                report.broken.append((thread, at, scheduler.injected or points[at - 1], problem))
            else:
                setattr(report, outcome, report.count(outcome) + 1)
    return report


def fault_sweep(subject: Subject, families: tuple[str, ...]) -> list[FaultReport]:
    """``explore_faults`` over every scenario of ``families`` that ``subject`` can run (the gate's fault rows)."""
    return [explore_faults(name, subject) for name in families_of(subject, families)]


def summary(reports: list[FaultReport]) -> str:
    """One line: the pairs tried and each outcome's count (``kvproof explore --faults`` ends with it)."""
    counts = " ".join(f"{o}={sum(r.count(o) for r in reports)}" for o in OUTCOMES)
    return f"faults: pairs={sum(r.pairs for r in reports)} {counts}"

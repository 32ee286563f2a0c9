"""What every explored scenario shares: threads of recorded calls, then checks of the final state and the history.

A ``Step`` is one call a thread makes, with its name, arguments, and whether it is a read.
``HistoryProgram`` runs each thread's steps through a ``history.HistoryRecorder``, and at finish:

1. stops what setup started and reads the final state (quiescent reads, recorded too);
2. runs the subject's own ``check()`` (its invariants);
3. checks the whole history, setup's calls included, for linearizability against the sequential
   spec (``specs``), and reports a non-linearizable part minimized.

Each problem starts with its *kind* (``invariant``, ``not linearizable``, ``undecided``, or
``raised``/``deadlock``/``livelock`` from the scheduler), which is what schedule shrinking keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import linearizability
from .history import Call, HistoryRecorder


@dataclass(frozen=True)
class Step:
    op: str
    args: tuple[Any, ...] = ()
    read: bool = False


def kind_of(problem: str) -> str:
    """The kind of a problem line (its first words, up to the colon)."""
    head = problem.split(":", 1)[0]
    for kind in ("livelock", "deadlock", "thread"):
        if head.startswith(kind):
            return "raised" if kind == "thread" else kind
    return head


class HistoryProgram:
    """Base of the scenario programs (subclasses: ``tree_scenarios.TreeProgram``, ``tracker_scenarios.TrackerProgram``)."""

    typed: tuple[type[BaseException], ...] = ()

    def __init__(
        self,
        make: Callable[[], Any],
        setup_steps: Sequence[tuple[str, Step]],
        threads: Sequence[tuple[str, Sequence[Step]]],
        final: Sequence[Step],
        budget: int = 50_000,
    ) -> None:
        self.make = make
        self.setup_steps = list(setup_steps)
        self.thread_steps = [(name, list(steps)) for name, steps in threads]
        self.final = list(final)
        self.budget = budget
        self.subject: Any = None
        self.recorder = HistoryRecorder(self.typed)
        self.report: linearizability.LinearizabilityReport | None = None

    # subclasses
    def perform(self, lane: str, step: Step) -> Any:
        raise NotImplementedError

    def normalize(self, step: Step) -> Callable[[Any], Any]:
        return lambda v: v

    def spec(self) -> linearizability.SequentialSpec:
        raise NotImplementedError

    def stop(self) -> None:
        """Stop what setup started (a pool's event threads)."""

    def invariants(self) -> list[str]:
        try:
            self.subject.check()
        except AssertionError as exc:
            return [f"invariant: {exc}"]
        return []

    # the Program protocol
    def setup(self) -> None:
        self.recorder = HistoryRecorder(self.typed)
        self.report = None
        self.subject = self.make()
        for lane, step in self.setup_steps:
            self._do("setup", lane, step)

    def _do(self, thread: str, lane: str, step: Step) -> None:
        self.recorder.call(thread, step.op, step.args, lambda: self.perform(lane, step), self.normalize(step), step.read)

    def threads(self) -> list[tuple[str, Callable[[], None]]]:
        def body(name: str, steps: list[Step]) -> Callable[[], None]:
            def run() -> None:
                for step in steps:
                    self._do(name, name, step)

            return run

        return [(name, body(name, steps)) for name, steps in self.thread_steps]

    def finish(self) -> list[str]:
        problems: list[str] = []
        try:
            for step in self.final:
                self._do("final", "final", step)
            problems += self.invariants()
        finally:
            self.stop()
        self.report = linearizability.check(self.spec(), self.recorder.calls, self.budget)
        if self.report.verdict is linearizability.LinearizabilityVerdict.NOT_LINEARIZABLE:
            problems.append(
                "not linearizable: no order of the reference explains these calls:\n    " + "\n    ".join(self.report.describe())
            )
        elif self.report.verdict is linearizability.LinearizabilityVerdict.UNKNOWN:
            problems.append(f"undecided: the linearizability search passed {self.budget} states")
        return problems

    @property
    def calls(self) -> list[Call]:
        return self.recorder.calls

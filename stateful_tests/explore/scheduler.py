"""The controlled scheduler: exactly one logical thread runs at a time, and a strategy picks who runs next.

A run takes the ``impl/_sync`` seam (``_sync.control``). Every logical thread is a greenlet
(``greenlet``, the coroutine library under gevent and SQLAlchemy): a switch costs about a
microsecond, so thousands of schedules run per second on one core, and the operating system's
scheduler never decides anything. A thread gives the turn back at every yield point and every
acquire (a *decision*), and when it must wait (``block_until``: a held lock, a gate, an empty
channel, an unset event, an unfinished thread), in which case it is not runnable until its
condition holds.

A run has three phases:

1. **setup** -- the program's ``setup()`` and every thread it starts (the pool's event threads),
   run until nothing is runnable, lowest thread id first: no decision, no preemption;
2. **program** -- the program's threads and the setup's threads, with the strategy deciding at
   every point where more than one thread is runnable; the phase ends when nothing is runnable;
3. **finish** -- the program's ``finish()`` (close the pool, read the final state), lowest id first.

The decisions of phase 2 (the chosen thread at each point with a choice) are the schedule: replayed
by ``replay.Replay`` they reproduce the run exactly. A run also ends with:

- **deadlock**: nothing is runnable but a program (or finish) thread has not finished; the
  report names each thread's position (its last decision or what it waits for);
- **livelock**: more than ``max_steps`` turns were handed out (a retry loop that never settles).

Source: docs/sources.md#tooling-3-3 (the controlled scheduler; Shuttle's and Loom's designs),
docs/sources.md#aesthetics.
"""

from __future__ import annotations

import enum
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import greenlet

from ...impl import _sync


class Strategy(Protocol):
    """Who runs next: one module per strategy (random_walk, pct, dfs, replay, hypothesis_choice)."""

    name: str

    def begin(self) -> None:
        """A new schedule starts."""

    def choose(self, runnable: Sequence[int], current: int | None) -> int:
        """Return one of ``runnable`` (sorted thread ids); ``current`` is the thread that just ran, if still runnable."""

    def end(self, result: RunResult) -> None:
        """The schedule ended (a strategy may use the result, e.g. to learn the number of decisions)."""

    def exhausted(self) -> bool:
        """True when the strategy has no schedule left to try (only an exhaustive search ever is)."""


class Program(Protocol):
    """A concurrent program to explore: what the scenarios implement."""

    def setup(self) -> None:
        """Build the structures (under the scheduler, so they use its primitives)."""

    def threads(self) -> list[tuple[str, Callable[[], None]]]:
        """Return the program's threads, by name, in a fixed order."""

    def finish(self) -> list[str]:
        """Stop what setup started and return the problems found in the final state (empty: sound)."""


class Outcome(enum.StrEnum):
    OK = "ok"
    FAILED = "failed"  # a thread raised, or finish() found problems
    DEADLOCK = "deadlock"
    LIVELOCK = "livelock"


@dataclass
class LogicalThread:
    id: int
    name: str
    glet: Any  # the greenlet (set right after the thread is made)
    program: bool  # a program or finish thread (must finish); setup's threads are services
    done: bool = False
    error: BaseException | None = None
    trace: str = ""
    waiting: tuple[Callable[[], bool], str] | None = None
    position: str = "start"
    exits: int = 0  # GreenletExit raised into it while the run stops


@dataclass
class RunResult:
    """One schedule's run: its decisions, how it ended, and what went wrong."""

    outcome: Outcome
    decisions: list[int]
    steps: int
    problems: list[str] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)  # every logical thread, setup and finish included
    positions: dict[str, str] = field(default_factory=dict)  # thread name -> where it stopped (deadlock, livelock)

    @property
    def failed(self) -> bool:
        return self.outcome is not Outcome.OK

    @property
    def contenders(self) -> int:
        """The threads that compete in the program phase: the program's and setup's services, not setup or finish."""
        return sum(1 for name in self.names.values() if name not in ("setup", "finish"))


_EXIT_ATTEMPTS = 10
_UNSTOPPABLE: list[Any] = []  # threads that would not unwind (see Scheduler._exit)


class _Local:
    """Per-logical-thread attributes (``_sync.local`` under the scheduler)."""

    def __init__(self, scheduler: Scheduler) -> None:
        object.__setattr__(self, "_scheduler", scheduler)
        object.__setattr__(self, "_values", {})

    def _mine(self) -> dict[str, Any]:
        values: dict[int, dict[str, Any]] = object.__getattribute__(self, "_values")
        return values.setdefault(object.__getattribute__(self, "_scheduler").current(), {})

    def __getattr__(self, name: str) -> Any:
        try:
            return self._mine()[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self._mine()[name] = value


class Scheduler:
    """The ``_sync.Controller`` of one run (see the module docstring)."""

    def __init__(self, strategy: Strategy, max_steps: int = 20_000) -> None:
        self.strategy = strategy
        self.max_steps = max_steps
        self.threads: list[LogicalThread] = []
        self.running: LogicalThread | None = None
        self.hub = greenlet.getcurrent()
        self.steps = 0
        self.decisions: list[int] = []
        self._spawn_as_program = False
        self._stopping = False

    # ------------------------------------------------------------------ the _sync.Controller protocol

    def yield_point(self, name: str) -> None:
        thread = self.running
        if thread is None or greenlet.getcurrent() is not thread.glet:
            return  # outside any logical thread (the hub, after the run): nothing to decide
        if self._stopping:
            self._exit(thread)
        thread.position = name
        self.hub.switch()

    def block_until(self, ready: Callable[[], bool], what: str) -> None:
        thread = self.running
        if thread is None or greenlet.getcurrent() is not thread.glet:
            if not ready():
                raise RuntimeError(f"{what}: would block outside the scheduler's threads")
            return
        if self._stopping:
            self._exit(thread)
        thread.waiting, thread.position = (ready, what), what
        self.hub.switch()

    def _exit(self, thread: LogicalThread) -> None:
        """While stopping: unwind the thread (``GreenletExit``); one that swallows it ten times is parked for good."""
        thread.exits += 1
        if thread.exits <= _EXIT_ATTEMPTS:
            raise greenlet.GreenletExit
        _UNSTOPPABLE.append(thread.glet)  # kept alive: collecting it would throw into it again
        self.hub.switch()

    def spawn(self, target: Callable[[], None], name: str) -> LogicalThread:
        thread = LogicalThread(len(self.threads), name, None, self._spawn_as_program)

        def body() -> None:
            try:
                target()
            except greenlet.GreenletExit:
                raise
            except BaseException as exc:  # reported with the thread's name; the run goes on
                thread.error = exc
                thread.trace = "".join(traceback.format_exception(exc, limit=-6))
            finally:
                thread.done = True

        thread.glet = greenlet.greenlet(body, parent=self.hub)
        self.threads.append(thread)
        return thread

    def current(self) -> int:
        thread = self.running
        return -1 if thread is None else thread.id

    def local(self) -> _Local:
        return _Local(self)

    # ------------------------------------------------------------------ running

    def _runnable(self) -> list[LogicalThread]:
        out = []
        for t in self.threads:
            if t.done:
                continue
            if t.waiting is None or t.waiting[0]():
                out.append(t)
        return out

    def _turn(self, thread: LogicalThread) -> None:
        thread.waiting = None
        self.running = thread
        self.steps += 1
        thread.glet.switch()
        self.running = None

    def _drive(self, decide: bool) -> bool:
        """Hand out turns until nothing is runnable; False if ``max_steps`` ran out (a livelock)."""
        last: LogicalThread | None = None
        while True:
            runnable = self._runnable()
            if not runnable:
                return True
            if self.steps >= self.max_steps:
                return False
            if len(runnable) == 1 or not decide:
                chosen = runnable[0]
            else:
                ids = [t.id for t in runnable]
                current = last.id if last is not None and last in runnable else None
                pick = self.strategy.choose(ids, current)
                chosen = self.threads[pick]
                self.decisions.append(pick)
            self._turn(chosen)
            last = chosen

    def _unfinished(self) -> list[LogicalThread]:
        return [t for t in self.threads if t.program and not t.done]

    def _positions(self) -> dict[str, str]:
        return {t.name: (f"waiting at {t.waiting[1]}" if t.waiting else f"at {t.position}") for t in self.threads if not t.done}

    def _stop_leftovers(self) -> list[str]:
        """Unwind every thread that has not finished (a service still waiting on its channel).

        While stopping, every yield point and wait raises ``GreenletExit`` again, so code that catches
        ``BaseException`` (the pool's event loop does, around each task) cannot park the thread again.
        """
        self._stopping = True
        unstoppable = []
        for t in self.threads:
            if t.done or t.glet is None or t.glet.dead:
                continue
            self.running = t
            try:
                t.glet.throw(greenlet.GreenletExit)
            except greenlet.GreenletExit:
                pass
            finally:
                self.running = None
            if not (t.done or t.glet.dead):
                unstoppable.append(t.name)
        return unstoppable

    def run(self, program: Program) -> RunResult:
        """Run ``program`` once under the strategy (see the module docstring)."""
        self.strategy.begin()
        problems: list[str] = []
        outcome = Outcome.OK
        positions: dict[str, str] = {}
        _sync.control(self)
        try:
            self._spawn_as_program = True
            self.spawn(program.setup, "setup")
            self._spawn_as_program = False
            phases: list[tuple[str, bool, Callable[[], None]]] = [
                ("setup", False, lambda: None),
                ("program", True, lambda: self._start(program.threads())),
                ("finish", False, lambda: self._start([("finish", lambda: problems.extend(program.finish()))])),
            ]
            for phase, decide, start in phases:
                start()
                if not self._drive(decide):
                    outcome, positions = Outcome.LIVELOCK, self._positions()
                    problems.append(f"livelock in {phase}: more than {self.max_steps} turns; " + _where(positions))
                    break
                errors = [t for t in self.threads if t.error is not None]
                if errors:  # first: a thread that raised may be why the others wait
                    outcome = Outcome.FAILED
                    problems.extend(f"thread {t.name} raised {type(t.error).__name__}: {t.error}\n{t.trace}" for t in errors)
                stuck = self._unfinished()
                if stuck:
                    positions = self._positions()
                    problems.append(f"deadlock in {phase}: " + _where(positions))
                    if not errors:
                        outcome = Outcome.DEADLOCK
                if errors or stuck:
                    break
            if outcome is Outcome.OK and problems:
                outcome = Outcome.FAILED
        finally:
            unstoppable = self._stop_leftovers()
            _sync.control(None)
        if unstoppable:
            problems.append(
                f"could not stop {', '.join(unstoppable)}: each swallowed GreenletExit {_EXIT_ATTEMPTS} times "
                f"(it catches BaseException around its waits); parked for good"
            )
            outcome = Outcome.FAILED if outcome is Outcome.OK else outcome
        result = RunResult(outcome, self.decisions, self.steps, problems, {t.id: t.name for t in self.threads}, positions)
        self.strategy.end(result)
        return result

    def _start(self, threads: list[tuple[str, Callable[[], None]]]) -> None:
        self._spawn_as_program = True
        for name, body in threads:
            self.spawn(body, name)
        self._spawn_as_program = False


def _where(positions: dict[str, str]) -> str:
    return "; ".join(f"{name} {where}" for name, where in positions.items()) or "no thread left"

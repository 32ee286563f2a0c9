"""The uncontrolled mode: a scenario's threads as real threads, its history checked the same way.

The controlled scheduler decides only at the yield points and acquires the code marks; real
threads switch wherever the interpreter lets them (``sys.setswitchinterval(1e-6)``), so this
mode catches races at points nobody instrumented. The threads start together (each waits for
one ``_sync.Event``), the recorder stamps each call from one shared counter (``next`` is
atomic under the interpreter lock, so the stamps respect real time), and at the end the same
``finish`` runs: the structure's ``check()`` and the linearizability check of the whole history.
A failure here replays only probabilistically (the schedule is the operating system's); it is
reported with the scenario, the target and the run's index.

Source: docs/sources.md#tooling-3-3 "Two modes, as in Lincheck".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ...impl import _sync
from .programs import HistoryProgram


@dataclass
class RealRuns:
    scenario: str
    runs: int = 0
    seconds: float = 0.0
    failures: list[tuple[int, list[str]]] = field(default_factory=list)  # (run index, problems)


def run_real(program: HistoryProgram, timeout: float = 10.0) -> list[str]:
    """Run ``program`` once on real threads; return its problems (a thread that raised, or finish()'s)."""
    if _sync._controller is not None:
        raise RuntimeError("real-thread runs need the seam free: a scheduler is in control")
    program.setup()
    go = _sync.Event()
    errors: list[str] = []
    threads = []
    for name, body in program.threads():

        def run(body: Callable[[], None] = body, name: str = name) -> None:
            go.wait()
            try:
                body()
            except Exception as exc:  # reported with the thread's name
                errors.append(f"thread {name} raised {type(exc).__name__}: {exc}")

        threads.append((name, _sync.Thread(run, f"kvproof-real-{name}")))
    go.set()
    deadline = time.monotonic() + timeout
    for _, thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    stuck = [name for name, thread in threads if thread.is_alive()]
    if stuck:
        return [f"deadlock (real threads): {', '.join(stuck)} still running after {timeout:g} s"]
    return errors or program.finish()


def explore_real(scenario: str, program: HistoryProgram, runs: int) -> RealRuns:
    report = RealRuns(scenario)
    previous = _sync.set_switch_interval(1e-6)
    start = time.perf_counter()
    try:
        for index in range(runs):
            problems = run_real(program)
            report.runs += 1
            if problems:
                report.failures.append((index, problems))
                break
    finally:
        _sync.set_switch_interval(previous)
    report.seconds = time.perf_counter() - start
    return report

"""The gate's rows spread over local processes, each row a task, so that every core works until the last row is done.

``--shard K/N --processes P`` splits the rows statically (row ``i`` to part ``i % P``), and one part can
hold the two slowest rows while the other idles. Here each row is a task of a process pool: the next row
goes to whichever process is free, the slowest rows first (what each took in this machine's last run,
``recorded_seconds``), so the run lasts about as long as the larger of the slowest row and the total over
the processes. Under ``--fail-fast`` the rows go cheapest first instead, and the first failing row stops
the run: the rows waiting are cancelled and the rows running are stopped, all listed as not run.

A row that mostly waits on a clock or a server (``Check.waits``: the slot-tracker conformance, whose
scenarios follow their timelines, uses a core for about a sixth of its time) runs beside the processes'
rows, in one more process, one such row at a time: it would otherwise hold a process whose core idles.

Every row runs with the same context as in one process (the run's seed and rule set, planned again in
each process by ``GateTask``), so a row's verdict does not depend on where it ran; the rows are reported in
their declared order. Each process starts fresh (``spawn``): nothing a row leaves behind reaches another.
"""

from __future__ import annotations

import multiprocessing
import shlex
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from . import Check, Context, GateTask, Result, Row, cheapest_first, run_check

_PLANNED: dict[GateTask, tuple[Context, dict[str, Check]]] = {}


def _row(task: GateTask, key: str) -> Row:
    """Run the row ``key`` of ``task`` in this process (the plan is made once per process, ``GateTask.plan``)."""
    if task not in _PLANNED:
        ctx, selection = task.plan()
        _PLANNED[task] = (ctx, {c.key: c for c in selection.checks})
    ctx, checks = _PLANNED[task]
    return run_check(checks[key], ctx)


TYPICAL_SECONDS = {
    "tree: differential vs Dynamo": 29,
    "proofs: CrossHair contracts and diffs": 12,
    "tree: interleavings: explorer + linearizability": 10,
    "tree: hostile input (fuzz)": 10,
    "tree: equals reference (3 lanes, lockstep)": 9,
    "sequences: three-way state machine": 8,
    "tree: real-thread stress, strict + chaos": 7,
    "sequences: rule laws": 7,
    "tree: state machine vs contract": 7,
}
"""The slowest rows' seconds in a ci-profile run on 2 cores (2026-12-06 23:42, after issue 32's third round): the order of
the rows a machine has never timed (a fresh clone, CI), so that the heaviest still start first. Only an order: a
stale figure costs time, not a verdict."""


def slowest_first(checks: list[Check], seconds: dict[str, float]) -> list[Check]:
    """The order that ends a pooled run soonest: rows never timed here first (they may be slow; the typically slowest
    of them first, ``TYPICAL_SECONDS``), then by what each took last time, slowest first (the
    longest-processing-time rule)."""
    untimed = sorted((c for c in checks if c.key not in seconds), key=lambda c: -TYPICAL_SECONDS.get(c.key, 0))
    return untimed + sorted((c for c in checks if c.key in seconds), key=lambda c: -seconds[c.key])


def run_rows(
    task: GateTask,
    checks: list[Check],
    processes: int,
    seconds: dict[str, float],
    progress: Callable[[Row, int, int], None] | None = None,
    fail_fast: bool = False,
) -> tuple[list[Row], list[tuple[str, str]]]:
    """Run ``checks`` as tasks of ``processes`` processes; return (their rows in declared order, rows not run with why).

    ``progress(row, done, total)`` is called here, in the order the rows finish. A process that dies breaks the
    pool and every row it held; each of those rows runs again alone in a fresh process, and the one that dies
    again is a FAIL naming the death (never a pass); the others still run.
    """
    order = cheapest_first(checks, seconds) if fail_fast else slowest_first(checks, seconds)
    rows: dict[str, Row] = {}
    not_run: list[tuple[str, str]] = []
    size = processes + any(c.waits for c in checks)  # one more process for the rows that wait
    pool = _pool(size)
    pending: dict[Future[Row], Check] = {}
    queue = list(order)
    stopped_at: str | None = None

    def finished(check: Check, row: Row) -> None:
        nonlocal stopped_at
        rows[check.key] = row
        if progress is not None:
            progress(row, len(rows), len(order))
        if fail_fast and row.result is Result.FAIL and stopped_at is None:
            stopped_at = check.key

    try:
        while (queue or pending) and stopped_at is None:
            while (check := admitted(queue, list(pending.values()), processes)) is not None:
                queue.remove(check)
                pending[pool.submit(_row, task, check.key)] = check
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            broken = []
            for future in done:
                check = pending.pop(future)
                try:
                    finished(check, future.result())
                except BrokenProcessPool:
                    broken.append(check)
            if broken:  # the pool is lost: the rows it held run again, each alone, then a fresh pool goes on
                broken += list(pending.values())
                pending.clear()
                _stop(pool)
                for check in broken:
                    if stopped_at is None:
                        finished(check, _alone(task, check))
                pool = _pool(size)
        if stopped_at is not None:
            not_run = [(c.key, f"not run: --fail-fast stopped at {stopped_at}") for c in queue + list(pending.values())]
    finally:
        _stop(pool)
    return [rows[c.key] for c in checks if c.key in rows], not_run


def admitted(queue: list[Check], running: list[Check], processes: int) -> Check | None:
    """The next row of ``queue`` (in its order) that may start beside ``running``: a row that waits while no other
    waiting row runs, any other row while fewer than ``processes`` of them run; None when no row may start."""
    busy = sum(not c.waits for c in running)
    waiting = any(c.waits for c in running)
    return next((c for c in queue if (not waiting if c.waits else busy < processes)), None)


def _pool(processes: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn"))


def _alone(task: GateTask, check: Check) -> Row:
    """Run one row in a process of its own: its row, or a FAIL saying that the process died."""
    pool = _pool(1)
    try:
        return pool.submit(_row, task, check.key).result()
    except BrokenProcessPool as exc:
        return Row(
            check.family,
            check.layer,
            check.name,
            result=Result.FAIL,
            detail=f"the process running this row died before it reported ({exc}); kvproof's own process "
            "crashed, not the target (a target runs in a host process of its own)",
            replay=f"kvproof check --target {shlex.quote(task.target_name)} --profile {task.profile} --seed {task.seed} "
            f"--processes 1 --only '{check.name}'",
        )
    finally:
        _stop(pool)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what waits and end the pool's processes now (a row still running is abandoned, with its children:
    ``process_guard`` gives each the parent-death signal)."""
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + 5
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()

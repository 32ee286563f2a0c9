"""Many independent jobs run in lockstep, so a target whose every round trip costs a fixed delay pays it once for all.

Dynamo's selection service takes events only through peer recovery, and each recovery call
sleeps one second before it fetches (``harness.dynamo_selection``). A differential stream that
asks queries after every event would pay that second per event. Run many streams at once
instead: each job is a greenlet (the coroutine library the explorer's scheduler also uses);
when a job needs the target brought up to date it calls ``wait_for_flush()``, which parks it;
once every unfinished job is parked, the hub calls each registered flusher once (one recovery
call carrying every job's pending events; flushers of different services at once, on threads)
and resumes them all. Outside ``run`` a
``wait_for_flush`` returns False at once and the caller flushes for itself.

Jobs never run at the same time (one thread, switches only at ``wait_for_flush``), so code
written for one tree at a time needs no change.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import greenlet

from ...impl import _sync

T = TypeVar("T")
I = TypeVar("I")

_HUB: list[Any] = []  # the running hub's greenlet (one at a time)
_FLUSHERS: dict[int, Callable[[], None]] = {}  # id -> flush, registered by the jobs' targets while parked


def active() -> bool:
    """Whether the caller runs inside ``run`` (as one of its jobs)."""
    return bool(_HUB) and greenlet.getcurrent() is not _HUB[0]


def wait_for_flush(key: int, flush: Callable[[], None]) -> bool:
    """Park the calling job until the hub has called ``flush`` (registered under ``key``, once per round).

    Returns False without waiting when not inside ``run``: the caller then flushes itself.
    """
    if not active():
        return False
    _FLUSHERS[key] = flush
    _HUB[0].switch(("parked",))
    return True


def run(jobs: Sequence[Callable[[], T]]) -> list[T]:
    """Run ``jobs`` in lockstep; return their results in order.

    A job's exception is re-raised (the first in job order) once every job that started has ended; after a job has
    raised, the jobs not yet started are not started, since their results would be dropped: a target that crashes or
    eats its memory limit is not started again for every stream left (the dump row started 20 such processes)."""
    if _HUB:
        raise RuntimeError("lockstep.run does not nest")
    hub = greenlet.getcurrent()
    _HUB.append(hub)
    results: list[Any] = [None] * len(jobs)  # each filled by its job
    errors: list[BaseException | None] = [None] * len(jobs)

    def body(i: int) -> Any:
        try:
            results[i] = jobs[i]()
        except BaseException as exc:  # kept for the caller, who re-raises it in order
            errors[i] = exc
        return ("done",)

    try:
        waiting = [greenlet.greenlet(lambda i=i: body(i), parent=hub) for i in range(len(jobs))]
        while waiting:
            parked = []
            for g in waiting:
                if not g and any(e is not None for e in errors):  # not started, and the run already failed
                    continue
                if g.switch() == ("parked",):
                    parked.append(g)
            if parked:
                flushers = list(_FLUSHERS.values())
                _FLUSHERS.clear()
                _flush_all(flushers)
            waiting = parked
    finally:
        _HUB.clear()
        _FLUSHERS.clear()
    for error in errors:
        if error is not None:
            raise error
    return results


def _flush_all(flushers: list[Callable[[], None]]) -> None:
    """Call every flusher; several (one per target service) at once, each on a thread, since each mostly waits."""
    if len(flushers) == 1:
        flushers[0]()
        return
    errors: list[BaseException] = []

    def guarded(flush: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                flush()
            except BaseException as exc:  # re-raised on the hub's thread below
                errors.append(exc)

        return run

    threads = [_sync.Thread(guarded(flush), "kvproof-flush") for flush in flushers]
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def run_each(job: Callable[[I], T], items: Iterable[I]) -> list[T]:
    """``run`` of ``job(item)`` for every item, in order."""
    return run([functools.partial(job, item) for item in items])

"""harness/lockstep.py: jobs that need a flush park until every job has, and one flush serves them all."""

import pytest

from kvproof.stateful_tests.harness import lockstep


class Batched:
    """A stand-in target: a read needs every pending write flushed, and each flush is counted."""

    def __init__(self) -> None:
        self.pending: list[int] = []
        self.applied: list[int] = []
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1
        self.applied += self.pending
        self.pending = []

    def read(self) -> list[int]:
        if self.pending and not lockstep.wait_for_flush(id(self), self.flush):
            self.flush()
        return list(self.applied)


def test_jobs_in_lockstep_share_each_flush():
    target = Batched()

    def job(k: int) -> list[int]:
        seen = []
        for step in range(3):
            target.pending.append(k * 10 + step)
            seen.append(len(target.read()))
        return seen

    results = lockstep.run([lambda k=k: job(k) for k in range(5)])
    assert target.flushes == 3  # one per step, for all five jobs (negative control below: one per read alone)
    assert results == [[5, 10, 15]] * 5


def test_outside_lockstep_a_reader_flushes_for_itself():
    target = Batched()
    for step in range(3):
        target.pending.append(step)
        target.read()
    assert target.flushes == 3 and not lockstep.active()
    alone = Batched()
    for k in range(5):
        for step in range(3):
            alone.pending.append(k * 10 + step)
            alone.read()
    assert alone.flushes == 15


def test_a_job_error_is_raised_after_every_started_job_ended_and_lockstep_does_not_nest():
    """The first job's error in order is raised once every job that started has ended (a parked job resumes and
    finishes); the jobs not started when one raised are never started (their results would be dropped)."""
    target, ran = Batched(), []

    def parks() -> None:
        target.pending.append(1)
        target.read()  # parks until the round's flush
        ran.append("parked, then finished")

    def bad() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        lockstep.run([parks, bad, lambda: ran.append("started after the failure")])
    assert ran == ["parked, then finished"] and target.flushes == 1
    # the negative control: without a failure every job runs
    assert lockstep.run([lambda: 1, lambda: 2, lambda: 3]) == [1, 2, 3]
    with pytest.raises(RuntimeError, match="does not nest"):
        lockstep.run([lambda: lockstep.run([])])

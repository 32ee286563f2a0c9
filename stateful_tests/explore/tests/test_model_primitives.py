"""The model primitives (impl/_sync.py under the scheduler) keep the native rules in every schedule: a gate's
exclusive side is alone, a non-reentrant gate deadlocks, only the owner releases; errors come before deadlocks;
nothing is left running; another OS thread keeps the standard library's primitives."""

import threading

from kvproof.impl import _sync
from kvproof.stateful_tests.explore.dfs import DFS
from kvproof.stateful_tests.explore.random_walk import RandomWalk
from kvproof.stateful_tests.explore.scheduler import Outcome, Scheduler


class Gate:
    """Two readers and a writer on one gate; finish() lists every moment the exclusion was broken."""

    def setup(self):
        self.gate, self.inside, self.bad = _sync.RWGate("g"), {"r": 0, "w": 0}, []

    def threads(self):
        def reader():
            with self.gate.shared():
                self.inside["r"] += 1
                if self.inside["w"]:
                    self.bad.append("a reader beside the writer")
                _sync.yield_point("r.in")
                self.inside["r"] -= 1

        def writer():
            with self.gate.exclusive():
                self.inside["w"] += 1
                if self.inside["r"] or self.inside["w"] > 1 or not self.gate.owns_exclusive():
                    self.bad.append("the writer not alone")
                _sync.yield_point("w.in")
                self.inside["w"] -= 1

        return [("r1", reader), ("w", writer), ("r2", reader)]

    def finish(self):
        return self.bad


def test_the_gates_exclusive_side_is_alone_in_every_schedule():
    strategy, results = DFS(None), []
    while not strategy.exhausted():
        results.append(Scheduler(strategy).run(Gate()))
    assert len(results) > 500 and not any(r.failed for r in results)


class PrimitivesProgram:
    def __init__(self, *threads, setup=lambda self: None):
        self._threads, self._setup = threads, setup

    def setup(self):
        self._setup(self)

    def threads(self):
        return [(f"t{i}", lambda body=body: body(self)) for i, body in enumerate(self._threads)]

    def finish(self):
        return []


def test_taking_the_exclusive_side_under_the_shared_side_deadlocks_as_in_rust():
    def reenters(p):
        with p.gate.shared(), p.gate.exclusive():
            pass

    result = Scheduler(DFS(None)).run(PrimitivesProgram(reenters, setup=lambda p: setattr(p, "gate", _sync.RWGate("g"))))
    assert result.outcome is Outcome.DEADLOCK and "waiting at g.exclusive" in result.problems[0]


def test_only_the_owner_releases_the_exclusive_side():
    def takes(p):
        p.gate.acquire_exclusive()
        _sync.yield_point("x")

    def steals(p):
        _sync.yield_point("y")
        p.gate.release_exclusive()

    result = Scheduler(Replay_first_then_second()).run(
        PrimitivesProgram(takes, steals, setup=lambda p: setattr(p, "gate", _sync.RWGate("g")))
    )
    assert any("does not hold it" in line for line in result.problems)


class Replay_first_then_second(RandomWalk):
    def __init__(self):
        super().__init__(0)

    def choose(self, runnable, current):
        return runnable[0]


def test_a_thread_that_raised_is_reported_before_the_deadlock_it_caused():
    def producer(p):
        raise ValueError("never sets the event")

    def consumer(p):
        p.event.wait()

    result = Scheduler(DFS(None)).run(PrimitivesProgram(producer, consumer, setup=lambda p: setattr(p, "event", _sync.Event())))
    assert result.outcome is Outcome.FAILED
    assert result.problems[0].startswith("thread t0 raised ValueError") and "deadlock in program" in result.problems[1]


def test_a_service_that_swallows_every_exception_is_parked_and_reported():
    threads = []

    def service_setup(p):
        p.channel = _sync.Channel()

        def serve():
            while True:
                try:
                    p.channel.get()
                except BaseException:  # as the pool's loop does around a task
                    continue

        threads.append(_sync.Thread(serve, "service"))

    result = Scheduler(RandomWalk(1)).run(PrimitivesProgram(lambda p: None, setup=service_setup))
    assert result.failed and "could not stop service" in result.problems[-1]


def test_the_pools_event_threads_are_unwound_at_the_end_of_every_run():
    from kvproof.impl.indexer import ThreadPoolIndexer

    def open_pool(p):
        p.pool = ThreadPoolIndexer(threads=2)  # never closed: its threads wait on their channels

    scheduler = Scheduler(RandomWalk(1))
    result = scheduler.run(PrimitivesProgram(lambda p: p.pool.find_matches([1]), setup=open_pool))
    assert not result.failed and all(t.done or t.glet.dead for t in scheduler.threads)


def test_another_os_thread_keeps_the_standard_librarys_primitives_during_a_run():
    seen = {}

    def body(p):
        worker = threading.Thread(target=lambda: seen.update(lock=_sync.Lock("x")._lock, me=_sync.current_thread_id()))
        worker.start()
        worker.join()
        seen["worker"] = worker.ident

    Scheduler(RandomWalk(1)).run(PrimitivesProgram(body))
    assert isinstance(seen["lock"], type(threading.Lock())) and seen["me"] == seen["worker"]

"""The threading seam (impl/_sync.py), primitive by primitive, natively and under the scheduler.

The laws: a lock excludes and is not reentrant; the gate's bookkeeping (who is inside, who waits and
where) matches what the threads are doing at every decision, and a waiting writer keeps new readers
out; an event wakes its waiter and stays set; a channel is FIFO; a join waits for its thread; a
thread-local namespace is one per thread. Every decision point and every wait carries its stable
dotted name (``<name>.acquire``, ``<name>.shared``, ``g.exclusive``, ``channel.get``, ``event.wait``,
``thread.join``): a schedule token and a deadlock report are read and replayed by those names.
Native threads are waited for by polling with a generous deadline, never by sleeping a fixed time.
"""

from __future__ import annotations

import sys
import threading
import time

import pytest

from kvproof.impl import _sync
from kvproof.stateful_tests.explore.dfs import DFS
from kvproof.stateful_tests.explore.random_walk import RandomWalk
from kvproof.stateful_tests.explore.scheduler import Outcome, Scheduler

DEADLINE_S = 20.0


def eventually(condition, what):
    """Poll ``condition`` until it holds; fail naming ``what`` after ``DEADLINE_S``."""
    end = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"never: {what}")
        time.sleep(0.001)


class SyncProgram:
    """Threads given as bodies taking the program; ``setup`` builds the shared objects."""

    def __init__(self, *bodies, setup=lambda p: None, finish=lambda p: []):
        self._bodies, self._setup, self._finish = bodies, setup, finish
        self.bad: list[str] = []

    def setup(self):
        self.bad = []
        self._setup(self)

    def threads(self):
        return [(f"t{i}", lambda body=body: body(self)) for i, body in enumerate(self._bodies)]

    def finish(self):
        return self.bad + list(self._finish(self))


def every_schedule(program, limit=20_000):
    """Run ``program`` under every schedule (DFS, no preemption bound); return the results."""
    strategy, results = DFS(None), []
    while not strategy.exhausted():
        results.append(Scheduler(strategy).run(program))
        assert len(results) < limit, "more schedules than this test means to explore"
    return results


def only_run(program, seed=1):
    return Scheduler(RandomWalk(seed)).run(program)


class SyncRecorder:
    """A controller that runs one thread and records every decision point and every wait, by name.

    A wait whose condition does not hold is an error here (nobody else could make it hold).
    """

    def __init__(self):
        self.points: list[str] = []
        self.waits: list[str] = []

    def yield_point(self, name):
        self.points.append(name)

    def block_until(self, ready, what):
        self.waits.append(what)
        assert ready(), f"{what}: would wait forever"

    def spawn(self, target, name):
        class Handle:
            done = False

        handle = Handle()
        target()
        handle.done = True
        return handle

    def current(self):
        return 7

    def local(self):
        return type("Namespace", (), {})()


@pytest.fixture
def recorder():
    rec = SyncRecorder()
    _sync.control(rec)
    try:
        yield rec
    finally:
        _sync.control(None)


# ----------------------------------------------------------------------- locks


def test_a_model_lock_excludes_in_every_schedule():
    """Two read-modify-write sections under one lock never lose an update, whatever the order."""

    def add(p):
        with p.lock:
            seen = p.n
            _sync.yield_point("inside")
            p.n = seen + 1

    def setup(p):
        p.lock, p.n = _sync.Lock("counter"), 0

    program = SyncProgram(add, add, setup=setup, finish=lambda p: [] if p.n == 2 else [f"lost an update: n={p.n}"])
    results = every_schedule(program)
    assert len(results) > 2 and not any(r.failed for r in results), [r.problems for r in results if r.failed][:1]


def test_without_the_lock_the_same_sections_lose_an_update():
    """The negative control of the law above: the explorer sees the lost update once the lock is gone."""

    def add(p):
        seen = p.n
        _sync.yield_point("inside")
        p.n = seen + 1

    program = SyncProgram(
        add, add, setup=lambda p: setattr(p, "n", 0), finish=lambda p: [] if p.n == 2 else [f"lost an update: n={p.n}"]
    )
    assert any(r.failed for r in every_schedule(program))


@pytest.mark.parametrize(("name", "point"), [(None, "lock.acquire"), ("slot", "slot.acquire")])
def test_a_model_lock_is_not_reentrant_and_the_deadlock_names_its_decision_point(name, point):
    def relocks(p):
        with p.lock, p.lock:
            pass

    made = (lambda p: setattr(p, "lock", _sync.Lock())) if name is None else (lambda p: setattr(p, "lock", _sync.Lock(name)))
    result = only_run(SyncProgram(relocks, setup=made))
    assert result.outcome is Outcome.DEADLOCK and result.positions == {"t0": f"waiting at {point}"}


def test_releasing_a_model_lock_nobody_holds_is_reported():
    result = only_run(
        SyncProgram(lambda p: p.lock.__exit__(None, None, None), setup=lambda p: setattr(p, "lock", _sync.Lock("x")))
    )
    assert result.outcome is Outcome.FAILED and "x.acquire: release of a lock nobody holds" in result.problems[0]


def test_every_model_lock_acquire_is_a_named_decision(recorder):
    lock = _sync.Lock("slot")
    assert lock.name == "slot" and _sync.Lock().name == "lock"
    with lock:
        pass
    with _sync.Lock():
        pass
    assert recorder.points == ["slot.acquire", "lock.acquire"] and recorder.waits == []


def test_lock_is_one_bare_lock_natively_and_named_locks_under_a_scheduler(recorder):
    _sync.control(None)
    bare = _sync.lock(lambda: "a")
    assert type(bare) is type(threading.Lock()) and _sync.lock(lambda: "b", like=bare) is bare
    _sync.control(recorder)
    first = _sync.lock(lambda: "node1.state")
    second = _sync.lock(lambda: "node1.children", like=first)
    assert (
        isinstance(first, _sync.Lock) and second is not first and (first.name, second.name) == ("node1.state", "node1.children")
    )
    with first, second:  # two locks under the scheduler: holding both is no deadlock
        pass
    assert recorder.points == ["node1.state.acquire", "node1.children.acquire"]


def test_a_native_lock_is_the_standard_librarys_and_excludes_real_threads():
    lock = _sync.Lock("native")
    assert type(lock._lock) is type(threading.Lock()) and lock.name == "native"
    totals = {"n": 0}

    def add():
        for _ in range(2000):
            with lock:
                totals["n"] += 1

    threads = [threading.Thread(target=add) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert totals["n"] == 6000


# ----------------------------------------------------------------------- the gate


class Audited:
    """Three threads on one gate; at every step each thread checks the gate's bookkeeping against the scheduler's view.

    The law: the gate's count of readers inside, readers waiting and writers waiting, its writer flag and
    its owner equal what the threads are doing (waiting at ``g.shared`` / ``g.exclusive``, inside in either
    mode), and every parked thread is at a named decision point.
    """

    NAMES = frozenset({"start", "g.shared", "g.exclusive", "inside.shared", "inside.exclusive"})

    def __init__(self, modes):
        self.modes, self.scheduler, self.bad = modes, None, []

    def setup(self):
        self.gate, self.inside, self.bad = _sync.RWGate("g"), {}, []

    def audit(self):
        threads = [t for t in self.scheduler.threads if t.name.startswith("t")]
        waiting = [t.waiting[1] for t in threads if t.waiting is not None and not t.done]
        readers = sum(1 for mode in self.inside.values() if mode == "shared")
        writers = [tid for tid, mode in self.inside.items() if mode == "exclusive"]
        gate = self.gate
        seen = (gate._readers, gate._readers_waiting, gate._writers_waiting, gate.held_exclusive(), gate._owner)
        want = (readers, waiting.count("g.shared"), waiting.count("g.exclusive"), bool(writers), writers[0] if writers else None)
        if seen != want:
            self.bad.append(f"gate (readers, readers waiting, writers waiting, writer, owner) = {seen}, threads say {want}")
        if gate.held_shared() is not (readers > 0):
            self.bad.append(f"held_shared() = {gate.held_shared()} with {readers} readers inside")
        for t in threads:
            if not t.done and t.position not in self.NAMES:
                self.bad.append(f"{t.name} parked at an unnamed point {t.position!r}")
        if writers and readers:
            self.bad.append("a reader beside the writer")

    def body(self, mode):
        def run():
            me = _sync.current_thread_id()
            hold = self.gate.shared() if mode == "shared" else self.gate.exclusive()
            with hold:
                self.inside[me] = mode
                if mode == "shared" and self.gate._writers_waiting:
                    self.bad.append("a reader let in while a writer waits")  # writer preference
                if mode == "exclusive" and not self.gate.owns_exclusive():
                    self.bad.append("the writer does not own the gate")
                self.audit()
                _sync.yield_point(f"inside.{mode}")
                self.audit()
                del self.inside[me]
            self.audit()

        return run

    def threads(self):
        return [(f"t{i}", self.body(mode)) for i, mode in enumerate(self.modes)]

    def finish(self):
        if self.gate.held_shared() or self.gate.held_exclusive() is not False:
            self.bad.append("the gate is still held after every thread left")
        return self.bad


@pytest.mark.parametrize(
    "modes",
    [("shared", "exclusive", "exclusive"), ("exclusive", "shared", "shared"), ("shared", "exclusive", "shared")],
    ids="-".join,
)
def test_the_gates_bookkeeping_matches_its_threads_in_every_schedule(modes):
    program, strategy, runs = Audited(modes), DFS(None), 0
    while not strategy.exhausted():
        scheduler = program.scheduler = Scheduler(strategy)
        result = scheduler.run(program)
        assert not result.failed, result.problems[:3]
        runs += 1
    assert runs > 20


def test_a_gate_without_a_name_decides_at_gate_shared_and_gate_exclusive(recorder):
    gate = _sync.RWGate()
    with gate.shared():
        pass
    with gate.exclusive():
        assert gate.owns_exclusive()
    assert recorder.points == ["gate.shared", "gate.exclusive"]


def test_the_gate_counts_its_acquisitions_by_mode():
    gate = _sync.RWGate("g")
    assert gate.statistics() == _sync.GateStatistics(0, 0)
    for _ in range(2):
        with gate.shared():
            pass
    gate.acquire_exclusive()
    gate.release_exclusive()
    gate.acquire_shared()
    gate.release_shared()
    assert gate.statistics() == _sync.GateStatistics(shared=3, exclusive=1)


def test_a_native_gate_says_who_holds_it():
    gate, holding, release = _sync.RWGate("g"), threading.Event(), threading.Event()
    assert gate.held_exclusive() is False and gate.held_shared() is False and gate.owns_exclusive() is False

    def hold():
        with gate.exclusive():
            assert gate.owns_exclusive()
            holding.set()
            release.wait(DEADLINE_S)

    other = threading.Thread(target=hold)
    other.start()
    assert holding.wait(DEADLINE_S)
    assert gate.held_exclusive() is True and gate.owns_exclusive() is False  # held, by another thread
    release.set()
    other.join()
    assert gate.held_exclusive() is False and gate.owns_exclusive() is False
    with gate.shared():
        assert gate.held_shared() is True and gate.held_exclusive() is False


def test_a_native_gate_parks_and_wakes_real_threads_in_writer_preference_order():
    """A reader holds the gate; a writer waits; a second reader arrives and waits behind the writer; the
    first reader leaves, the writer enters alone, leaves, and the second reader enters."""
    gate, log = _sync.RWGate("g"), []
    first_in, first_out, writer_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with gate.shared():
            first_in.set()
            first_out.wait(DEADLINE_S)
            log.append("r1 out")

    def writer():
        with gate.exclusive():
            log.append("w in")
            assert gate.owns_exclusive() and not gate.held_shared()
            writer_out.wait(DEADLINE_S)
            log.append("w out")

    def second():
        with gate.shared():
            log.append("r2 in")

    threads = [threading.Thread(target=body) for body in (first, writer, second)]
    threads[0].start()
    assert first_in.wait(DEADLINE_S)
    threads[1].start()
    eventually(lambda: gate._writers_waiting == 1, "the writer waits behind the reader")
    threads[2].start()
    eventually(lambda: gate._readers_waiting == 1, "the second reader waits behind the writer")
    assert log == []
    first_out.set()
    eventually(lambda: "w in" in log, "the writer enters once the reader has left")
    assert gate._readers_waiting == 1 and gate._writers_waiting == 0 and "r2 in" not in log
    writer_out.set()
    for t in threads:
        t.join(DEADLINE_S)
    assert log == ["r1 out", "w in", "w out", "r2 in"]
    assert (gate._readers, gate._readers_waiting, gate._writers_waiting, gate.held_exclusive()) == (0, 0, 0, False)


def test_two_native_writers_wait_and_both_get_in():
    gate, inside, release = _sync.RWGate("g"), threading.Event(), threading.Event()
    entered = []

    def reader():
        with gate.shared():
            inside.set()
            release.wait(DEADLINE_S)

    def writer(tag):
        with gate.exclusive():
            entered.append(tag)

    r = threading.Thread(target=reader)
    r.start()
    assert inside.wait(DEADLINE_S)
    writers = [threading.Thread(target=writer, args=(tag,)) for tag in "ab"]
    for w in writers:
        w.start()
    eventually(lambda: gate._writers_waiting == 2, "both writers wait behind the reader")
    release.set()
    for t in (r, *writers):
        t.join(DEADLINE_S)
    assert sorted(entered) == ["a", "b"] and gate._writers_waiting == 0


def test_releasing_a_side_nobody_holds_is_an_error():
    gate = _sync.RWGate("g")
    with pytest.raises(AssertionError, match="g: shared release without a shared hold"):
        gate.release_shared()
    with pytest.raises(AssertionError, match="g: exclusive release without an exclusive hold"):
        gate.release_exclusive()
    assert (gate._readers, gate.held_exclusive()) == (0, False)


# ----------------------------------------------------------------------- events, channels, threads, locals


def test_a_model_event_wakes_its_waiter_and_stays_set():
    def producer(p):
        _sync.yield_point("before_set")
        p.event.set()
        p.log.append("set")

    def consumer(p):
        if "set" not in p.log and p.event.is_set() is not False:
            p.bad.append(f"is_set() = {p.event.is_set()!r} before the set")
        woke = p.event.wait()
        if woke is not True or p.event.is_set() is not True:
            p.bad.append(f"wait() = {woke!r}, is_set() = {p.event.is_set()!r} after the wait")

    def setup(p):
        p.event, p.log = _sync.Event(), []

    results = every_schedule(SyncProgram(producer, consumer, setup=setup))
    assert len(results) >= 2 and not any(r.failed for r in results), [r.problems for r in results if r.failed][:1]


def test_waits_that_nobody_ends_are_reported_by_name():
    """A consumer alone: the deadlock report says where each thread waits (event.wait, channel.get, thread.join)."""

    def setup(p):
        p.event, p.channel = _sync.Event(), _sync.Channel()

    def joins(p):
        _sync.Thread(lambda: p.event.wait(), "child").join()

    result = only_run(SyncProgram(lambda p: p.event.wait(), lambda p: p.channel.get(), joins, setup=setup))
    assert result.outcome is Outcome.DEADLOCK
    assert result.positions == {
        "t0": "waiting at event.wait",
        "t1": "waiting at channel.get",
        "t2": "waiting at thread.join",
        "child": "waiting at event.wait",
    }


def test_a_native_event_times_out_unset_and_wakes_set():
    event = _sync.Event()
    assert event.is_set() is False and event.wait(0.01) is False
    threading.Timer(0.01, event.set).start()
    assert event.wait(DEADLINE_S) is True and event.is_set() is True


def test_a_model_channel_is_fifo_in_every_schedule():
    def producer(p):
        for item in ("a", "b", "c"):
            p.channel.put(item)
            _sync.yield_point("put")

    def consumer(p):
        got = [p.channel.get() for _ in range(3)]
        if got != ["a", "b", "c"]:
            p.bad.append(f"got {got}")

    results = every_schedule(SyncProgram(producer, consumer, setup=lambda p: setattr(p, "channel", _sync.Channel())))
    assert len(results) > 3 and not any(r.failed for r in results), [r.problems for r in results if r.failed][:1]


def test_a_native_channel_is_fifo_across_threads():
    channel = _sync.Channel()
    producer = threading.Thread(target=lambda: [channel.put(i) for i in range(100)])
    producer.start()
    assert [channel.get() for _ in range(100)] == list(range(100))
    producer.join()


def test_a_model_join_waits_for_its_thread_in_every_schedule():
    """A thread is alive exactly until its body has run; join returns only after that."""

    def parent(p):
        def child():
            _sync.yield_point("child.working")
            p.log.append("child done")

        thread = _sync.Thread(child, "child")
        _sync.yield_point("parent.started_child")
        if thread.is_alive() is not (not p.log):
            p.bad.append(f"alive {thread.is_alive()!r} with log {p.log}")
        thread.join()
        if p.log != ["child done"] or thread.is_alive() is not False:
            p.bad.append(f"after join: log {p.log}, alive {thread.is_alive()!r}")

    results = every_schedule(SyncProgram(parent, setup=lambda p: setattr(p, "log", [])))
    assert len(results) > 1 and not any(r.failed for r in results), [r.problems for r in results if r.failed][:1]


def test_a_native_seam_thread_is_a_named_daemon_and_join_honours_its_timeout():
    release = threading.Event()
    thread = _sync.Thread(lambda: release.wait(DEADLINE_S), name="kvproof-test-service")
    try:
        (native,) = [t for t in threading.enumerate() if t.name == "kvproof-test-service"]
        assert native.daemon is True and thread.is_alive() is True
        started = time.monotonic()
        thread.join(0.05)
        assert thread.is_alive() is True and time.monotonic() - started < DEADLINE_S / 2
    finally:
        release.set()
    thread.join(DEADLINE_S)
    assert thread.is_alive() is False


def test_a_native_seam_thread_can_be_made_non_daemon():
    thread = _sync.Thread(lambda: None, name="kvproof-test-foreground", daemon=False)
    assert thread._thread.daemon is False
    thread.join(DEADLINE_S)


def test_a_thread_local_namespace_is_one_per_thread_natively_and_under_the_scheduler():
    space = _sync.local()
    assert isinstance(space, threading.local)
    space.x = "main"
    seen = []
    other = threading.Thread(target=lambda: seen.append(getattr(space, "x", None)))
    other.start()
    other.join()
    assert seen == [None] and space.x == "main"

    def body(tag):
        def run(p):
            p.space.x = tag
            _sync.yield_point("set")
            if p.space.x != tag:
                p.bad.append(f"{tag} reads {p.space.x!r}")

        return run

    results = every_schedule(SyncProgram(body("a"), body("b"), setup=lambda p: setattr(p, "space", _sync.local())))
    assert len(results) > 1 and not any(r.failed for r in results), [r.problems for r in results if r.failed][:1]


def test_current_thread_id_is_the_logical_threads_under_a_controller(recorder):
    assert _sync.current_thread_id() == 7
    _sync.control(None)
    assert _sync.current_thread_id() == threading.get_ident()


def test_the_switch_interval_is_set_and_the_previous_one_returned():
    before = sys.getswitchinterval()
    try:
        assert _sync.set_switch_interval(0.25) == before and sys.getswitchinterval() == pytest.approx(0.25)
        assert _sync.set_switch_interval(0.5) == pytest.approx(0.25)
    finally:
        sys.setswitchinterval(before)

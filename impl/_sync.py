"""The threading seam: the only module in ``impl/`` that imports ``threading`` or ``queue``.

Every concurrent implementation takes its primitives from here (locks, the shared /
exclusive gate, events, channels, threads, thread-local storage) and marks each place where
another thread's interleaving matters with ``yield_point(name)``. A deterministic scheduler
(the interleaving explorer) replaces this module's behaviour through ``install(hooks)``:
it then decides, at every yield point and every blocking acquire, which thread runs next.
With no hooks installed the primitives are the standard library's, and ``yield_point``
costs one global read.

Design (after trio's ``_core`` and shuttle's ``shuttle-std``, docs/sources.md#aesthetics):

- ``RWGate`` is a writer-preferring shared/exclusive lock (Dynamo's ``shape_gate`` is a
  parking_lot ``RwLock<()>``). It is not reentrant: taking the exclusive side while holding
  the shared side deadlocks, exactly as in Rust. It records which thread holds the exclusive
  side, so ``owns_exclusive()`` asserts that *this* thread holds it (cheap, always on; in
  the spirit of trio's ``ConflictDetector``), while ``held_exclusive()`` / ``held_shared()``
  say whether anyone does (the quiescence checks).
- ``Channel`` is an unbounded FIFO (Dynamo's lanes use flume channels).
- ``yield_point`` names are stable dotted strings, ``<operation>.<place>``, so that a
  failing schedule can be printed and replayed. The tree uses ``store.after_plan``,
  ``store.after_child_plan``, ``store.after_descend_plan``, ``store.before_first_child``,
  ``remove.before_gate``, ``drop.before_gate``, ``repair.before_scan``,
  ``repair.after_redirect``, ``read.after_version`` and ``read.after_child``; the slot
  tracker's names start with ``sequences.`` (``sequences.add.booked``,
  ``sequences.free.owner_found``, ``sequences.read.between_load_and_membership``, ...).

Two ways to take the seam over:

- ``install(hooks)``: an *observer* (``harness.interleave.PauseAt``) sees every
  ``yield_point``; the primitives stay the standard library's.
- ``control(controller)``: a *scheduler* (``stateful_tests.explore.scheduler``) runs every
  thread itself. Primitives created while it is in control are its model primitives: a
  ``Lock`` acquire, an ``RWGate`` acquire, an ``Event.wait``, a ``Channel.get`` and a
  ``Thread.join`` report to it (``Controller.block_until``) instead of blocking the OS
  thread, every acquire is a scheduling decision, and ``Thread`` starts a logical thread of
  its own. One logical thread runs at a time, so the model primitives need no inner lock:
  the scheduler alone decides who runs between two decisions. The rules the gate follows
  (writer preference, ownership, non-reentrancy) are written once, below, for both.
"""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class Hooks(Protocol):
    """What an observer implements: it sees every yield point."""

    def yield_point(self, name: str) -> None: ...


class Controller(Hooks, Protocol):
    """What a controlled scheduler implements to run every thread itself."""

    def block_until(self, ready: Callable[[], bool], what: str) -> None:
        """Park the running logical thread until ``ready()`` holds (the scheduler picks who runs meanwhile)."""

    def spawn(self, target: Callable[[], None], name: str) -> Any:
        """Start a logical thread; return a handle with a ``done`` attribute."""

    def current(self) -> int:
        """Return the running logical thread's id."""

    def local(self) -> Any:
        """Return a namespace with one set of attributes per logical thread."""


_hooks: Hooks | None = None
_controller: Controller | None = None
_control_thread: int | None = None  # the OS thread the scheduler runs in: its logical threads are the controlled ones


def install(hooks: Hooks | None) -> None:
    """Route every ``yield_point`` to ``hooks`` (None restores the free-running default)."""
    global _hooks
    _hooks = hooks


def control(controller: Controller | None) -> None:
    """Hand the seam to a scheduler (None gives it back): yield points and new primitives are its own.

    Only the calling OS thread is controlled: a primitive made, or a thread id asked for, on any
    other OS thread meanwhile is the standard library's.
    """
    global _hooks, _controller, _control_thread
    _hooks = _controller = controller
    _control_thread = None if controller is None else threading.get_ident()


def _active() -> Controller | None:
    """The scheduler, if the calling OS thread is the one it controls."""
    controller = _controller
    if controller is None or threading.get_ident() != _control_thread:
        return None
    return controller


def yield_point(name: str) -> None:
    """Mark a place where another thread's interleaving matters (a no-op unless hooks are installed)."""
    hooks = _hooks
    if hooks is not None:
        hooks.yield_point(name)


def set_switch_interval(seconds: float) -> float:
    """Set the interpreter's thread switch interval; return the previous one (stress tests use ~1e-6)."""
    import sys

    previous = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    return previous


class _NoLock:
    """The inner lock (and condition) of a model gate: one logical thread runs at a time, so it guards
    nothing; the gate only enters it with ``with`` and notifies it."""

    __slots__ = ()

    def notify_all(self) -> None:
        pass

    def __enter__(self) -> bool:
        return True

    def __exit__(self, *exc: object) -> None:
        pass


_NO_LOCK = _NoLock()


class _ModelLock:
    """A lock under the scheduler: acquiring is a decision, a held lock parks the caller."""

    __slots__ = ("_controller", "_point", "_owner")

    def __init__(self, controller: Controller, name: str) -> None:
        self._controller, self._point = controller, f"{name}.acquire"
        self._owner: int | None = None

    def _free(self) -> bool:
        return self._owner is None

    def acquire(self) -> bool:
        controller = self._controller
        controller.yield_point(self._point)
        if self._owner is not None:
            controller.block_until(self._free, self._point)
        self._owner = controller.current()
        return True

    def release(self) -> None:
        assert self._owner is not None, f"{self._point}: release of a lock nobody holds"
        self._owner = None


class Lock:
    """A plain mutual-exclusion lock, used as ``with lock:``."""

    __slots__ = ("_lock", "name")

    def __init__(self, name: str = "lock") -> None:
        controller = _active()
        self._lock: Any = threading.Lock() if controller is None else _ModelLock(controller, name)
        self.name = name

    def __enter__(self) -> Lock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def lock(name: Callable[[], str], like: Any = None) -> Any:
    """Return a lock for ``with``, for structures that hold very many: the standard library's bare lock when
    no scheduler controls this thread (no wrapper, no name kept), else a ``Lock`` named ``name()``.

    ``like`` (another lock this function returned) makes the two one bare lock natively, for two locks
    that are never held together: each guards what it did, only more coarsely. Under a scheduler they
    stay two named locks, so the explorer's decision points do not change.
    """
    if _active() is None:
        return threading.Lock() if like is None else like
    return Lock(name())


@dataclass(frozen=True)
class GateStatistics:
    """Counters of one ``RWGate``: acquisitions by mode."""

    shared: int
    exclusive: int


class RWGate:
    """A writer-preferring shared/exclusive lock.

    Invariant: ``_writer`` implies ``_readers == 0``; waiting writers block new readers so a
    stream of readers cannot starve a split. ``_owner`` is the thread that holds the exclusive
    side (None when nobody does). The uncontended paths take one short internal lock and
    never touch the condition variable. Under a scheduler the internal lock is ``_NoLock``,
    every acquire starts with a decision, and a wait parks the logical thread.
    """

    __slots__ = (
        "_lock",
        "_cond",
        "_readers",
        "_writer",
        "_owner",
        "_writers_waiting",
        "_readers_waiting",
        "_shared_count",
        "_exclusive_count",
        "name",
        "_controller",
    )

    def __init__(self, name: str = "gate") -> None:
        # Small on purpose: every tree node has one. The condition variable is made by the first
        # thread that has to wait (under the internal lock), the decision points' names only under
        # a scheduler, and the ``with`` holds per use (``shared()`` / ``exclusive()``).
        self._controller = controller = _active()
        if controller is None:
            self._lock: Any = threading.Lock()
            self._cond: Any = None
        else:
            self._lock = self._cond = _NO_LOCK
        self._readers = 0
        self._writer = False
        self._owner: int | None = None
        self._writers_waiting = 0
        self._readers_waiting = 0
        self._shared_count = 0
        self._exclusive_count = 0
        self.name = name

    @property
    def _shared_point(self) -> str:
        return f"{self.name}.shared"

    @property
    def _exclusive_point(self) -> str:
        return f"{self.name}.exclusive"

    def _may_share(self) -> bool:
        return not (self._writer or self._writers_waiting)

    def _may_own(self) -> bool:
        return not (self._writer or self._readers)

    def _await(self, ready: Callable[[], bool], point: str) -> None:
        """Wait until ``ready()`` (the internal lock held natively; a parked logical thread under a scheduler)."""
        controller = self._controller
        if controller is not None:
            controller.block_until(ready, point)
            return
        cond = self._cond
        if cond is None:  # the first wait on this gate (the internal lock is held: no other thread makes one)
            cond = self._cond = threading.Condition(self._lock)
        while not ready():
            cond.wait()

    # The rules of the four transitions are written once, in the holds below (what ``with`` runs).

    def acquire_shared(self) -> None:
        _SharedHold(self).__enter__()

    def release_shared(self) -> None:
        _SharedHold(self).__exit__()

    def acquire_exclusive(self) -> None:
        _ExclusiveHold(self).__enter__()

    def release_exclusive(self) -> None:
        _ExclusiveHold(self).__exit__()

    def shared(self) -> _SharedHold:
        """``with gate.shared():`` holds the gate in shared mode."""
        return _SharedHold(self)

    def exclusive(self) -> _ExclusiveHold:
        """``with gate.exclusive():`` holds the gate in exclusive mode."""
        return _ExclusiveHold(self)

    def held_exclusive(self) -> bool:
        """Check if any thread holds the exclusive side."""
        return self._writer

    def owns_exclusive(self) -> bool:
        """Check if the calling thread holds the exclusive side (what a shape change asserts)."""
        return self._writer and self._owner == current_thread_id()

    def held_shared(self) -> bool:
        """Check if any thread holds the shared side."""
        return self._readers > 0

    def statistics(self) -> GateStatistics:
        return GateStatistics(self._shared_count, self._exclusive_count)


class _SharedHold:
    """``with gate.shared():`` (one small object per use, nothing kept on the gate; the shared side's rules)."""

    __slots__ = ("_gate",)

    def __init__(self, gate: RWGate) -> None:
        self._gate = gate

    def __enter__(self) -> None:
        gate = self._gate
        if gate._controller is not None:
            gate._controller.yield_point(gate._shared_point)
        with gate._lock:
            if gate._writer or gate._writers_waiting:
                gate._readers_waiting += 1
                gate._await(gate._may_share, gate._shared_point)
                gate._readers_waiting -= 1
            gate._readers += 1
            gate._shared_count += 1

    def __exit__(self, *exc: object) -> None:
        gate = self._gate
        with gate._lock:
            assert gate._readers > 0, f"{gate.name}: shared release without a shared hold"
            gate._readers -= 1
            if gate._readers == 0 and gate._writers_waiting:
                gate._cond.notify_all()


class _ExclusiveHold:
    """``with gate.exclusive():`` (one small object per use, nothing kept on the gate; the exclusive side's rules)."""

    __slots__ = ("_gate",)

    def __init__(self, gate: RWGate) -> None:
        self._gate = gate

    def __enter__(self) -> None:
        gate = self._gate
        if gate._controller is not None:
            gate._controller.yield_point(gate._exclusive_point)
        me = _get_ident() if _controller is None else current_thread_id()
        with gate._lock:
            if gate._writer or gate._readers:
                gate._writers_waiting += 1
                gate._await(gate._may_own, gate._exclusive_point)
                gate._writers_waiting -= 1
            gate._writer = True
            gate._owner = me
            gate._exclusive_count += 1

    def __exit__(self, *exc: object) -> None:
        gate = self._gate
        me = _get_ident() if _controller is None else current_thread_id()
        with gate._lock:
            assert gate._writer, f"{gate.name}: exclusive release without an exclusive hold"
            assert gate._owner == me, f"{gate.name}: exclusive release by a thread that does not hold it"
            gate._writer = False
            gate._owner = None
            if gate._writers_waiting or gate._readers_waiting:
                gate._cond.notify_all()


class Event:
    """A one-shot flag threads can wait on."""

    __slots__ = ("_event", "_controller", "_set")

    def __init__(self) -> None:
        self._controller = _active()
        self._event = threading.Event() if self._controller is None else None
        self._set = False

    def set(self) -> None:
        if self._event is None:
            self._set = True
        else:
            self._event.set()

    def is_set(self) -> bool:
        return self._set if self._event is None else self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until set; under a scheduler a timeout is ignored (waiting forever is a reported deadlock)."""
        if self._event is not None:
            return self._event.wait(timeout)
        assert self._controller is not None
        if not self._set:
            self._controller.block_until(self.is_set, "event.wait")
        return True


class Channel:
    """An unbounded FIFO between threads."""

    __slots__ = ("_queue", "_items", "_controller")

    def __init__(self) -> None:
        self._controller = _active()
        self._queue: queue.SimpleQueue[Any] | None = queue.SimpleQueue() if self._controller is None else None
        self._items: collections.deque[Any] = collections.deque()

    def _ready(self) -> bool:
        return bool(self._items)

    def put(self, item: Any) -> None:
        if self._queue is None:
            self._items.append(item)
        else:
            self._queue.put(item)

    def get(self) -> Any:
        if self._queue is not None:
            return self._queue.get()
        assert self._controller is not None
        if not self._items:
            self._controller.block_until(self._ready, "channel.get")
        return self._items.popleft()


class Thread:
    """A started thread running ``target()`` (a logical thread under a scheduler); ``join`` waits for it."""

    __slots__ = ("_thread", "_controller")

    def __init__(self, target: Callable[[], None], name: str, daemon: bool = True) -> None:
        self._controller = _active()
        if self._controller is None:
            self._thread: Any = threading.Thread(target=target, name=name, daemon=daemon)
            self._thread.start()
        else:
            self._thread = self._controller.spawn(target, name)

    def is_alive(self) -> bool:
        return self._thread.is_alive() if self._controller is None else not self._thread.done

    def join(self, timeout: float | None = None) -> None:
        if self._controller is None:
            self._thread.join(timeout)
            return
        handle = self._thread
        if not handle.done:
            self._controller.block_until(lambda: handle.done, "thread.join")


def local() -> Any:
    """Return a fresh thread-local namespace (one per logical thread under a scheduler)."""
    controller = _active()
    return threading.local() if controller is None else controller.local()


_get_ident = threading.get_ident


def current_thread_id() -> int:
    """Return an identifier of the running thread (the logical thread's under a scheduler)."""
    if _controller is None:
        return _get_ident()
    controller = _active()
    return threading.get_ident() if controller is None else controller.current()

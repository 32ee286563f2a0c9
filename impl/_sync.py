"""The threading seam: the only module in ``impl/`` that imports ``threading`` or ``queue``.

Every concurrent implementation takes its primitives from here (locks, the shared /
exclusive gate, events, channels, threads, thread-local storage) and marks each place where
another thread's interleaving matters with ``yield_point(name)``. A deterministic scheduler
(the interleaving explorer) replaces this module's behaviour through ``install(hooks)``:
it then decides, at every yield point and every blocking acquire, which thread runs next.
With no hooks installed the primitives are the standard library's, and ``yield_point``
costs one global read.

Design (after trio's ``_core`` and shuttle's ``shuttle-std``, aesthetics.md §4-§5):

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

XX: the explorer needs blocking operations (``Lock`` acquisition, ``RWGate`` waits,
``Channel.get``, ``Event.wait``) to report to it instead of blocking the OS thread; the
``Hooks`` protocol below has the entry points it will need.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class Hooks(Protocol):
    """What a controlled scheduler implements to take over the seam."""

    def yield_point(self, name: str) -> None: ...


_hooks: Hooks | None = None


def install(hooks: Hooks | None) -> None:
    """Route every ``yield_point`` to ``hooks`` (None restores the free-running default)."""
    global _hooks
    _hooks = hooks


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


class Lock:
    """A plain mutual-exclusion lock, used as ``with lock:``."""

    __slots__ = ("_lock", "name")

    def __init__(self, name: str = "lock") -> None:
        self._lock = threading.Lock()
        self.name = name

    def __enter__(self) -> Lock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


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
    never touch the condition variable.
    """

    __slots__ = (
        "_lock", "_cond", "_readers", "_writer", "_owner", "_writers_waiting", "_readers_waiting",
        "_shared_count", "_exclusive_count", "name", "_shared_cm", "_exclusive_cm",
    )

    def __init__(self, name: str = "gate") -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._readers = 0
        self._writer = False
        self._owner: int | None = None
        self._writers_waiting = 0
        self._readers_waiting = 0
        self._shared_count = 0
        self._exclusive_count = 0
        self.name = name
        self._shared_cm = _Hold(self.acquire_shared, self.release_shared)
        self._exclusive_cm = _Hold(self.acquire_exclusive, self.release_exclusive)

    def acquire_shared(self) -> None:
        lock = self._lock
        lock.acquire()
        if self._writer or self._writers_waiting:
            self._readers_waiting += 1
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers_waiting -= 1
        self._readers += 1
        self._shared_count += 1
        lock.release()

    def release_shared(self) -> None:
        lock = self._lock
        lock.acquire()
        assert self._readers > 0, f"{self.name}: shared release without a shared hold"
        self._readers -= 1
        if self._readers == 0 and self._writers_waiting:
            self._cond.notify_all()
        lock.release()

    def acquire_exclusive(self) -> None:
        lock = self._lock
        lock.acquire()
        if self._writer or self._readers:
            self._writers_waiting += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
        self._writer = True
        self._owner = threading.get_ident()
        self._exclusive_count += 1
        lock.release()

    def release_exclusive(self) -> None:
        lock = self._lock
        lock.acquire()
        assert self._writer, f"{self.name}: exclusive release without an exclusive hold"
        assert self._owner == threading.get_ident(), f"{self.name}: exclusive release by a thread that does not hold it"
        self._writer = False
        self._owner = None
        if self._writers_waiting or self._readers_waiting:
            self._cond.notify_all()
        lock.release()

    def shared(self) -> _Hold:
        """``with gate.shared():`` holds the gate in shared mode."""
        return self._shared_cm

    def exclusive(self) -> _Hold:
        """``with gate.exclusive():`` holds the gate in exclusive mode."""
        return self._exclusive_cm

    def held_exclusive(self) -> bool:
        """Check if any thread holds the exclusive side."""
        return self._writer

    def owns_exclusive(self) -> bool:
        """Check if the calling thread holds the exclusive side (what a shape change asserts)."""
        return self._writer and self._owner == threading.get_ident()

    def held_shared(self) -> bool:
        """Check if any thread holds the shared side."""
        return self._readers > 0

    def statistics(self) -> GateStatistics:
        return GateStatistics(self._shared_count, self._exclusive_count)


class _Hold:
    """A reusable context manager around an acquire/release pair (no generator per use)."""

    __slots__ = ("_acquire", "_release")

    def __init__(self, acquire: Callable[[], None], release: Callable[[], None]) -> None:
        self._acquire, self._release = acquire, release

    def __enter__(self) -> None:
        self._acquire()

    def __exit__(self, *exc: object) -> None:
        self._release()


class Event:
    """A one-shot flag threads can wait on."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


class Channel:
    """An unbounded FIFO between threads."""

    __slots__ = ("_queue",)

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def put(self, item: Any) -> None:
        self._queue.put(item)

    def get(self) -> Any:
        return self._queue.get()


class Thread:
    """A started OS thread running ``target()``; ``join`` waits for it."""

    __slots__ = ("_thread",)

    def __init__(self, target: Callable[[], None], name: str, daemon: bool = True) -> None:
        self._thread = threading.Thread(target=target, name=name, daemon=daemon)
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)


def local() -> Any:
    """Return a fresh thread-local namespace."""
    return threading.local()


def current_thread_id() -> int:
    """Return an identifier of the running thread."""
    return threading.get_ident()

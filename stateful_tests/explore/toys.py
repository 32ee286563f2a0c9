"""Small programs with known schedule counts: the explorer's self-test and its benchmark.

- ``YieldPoints(n, k)``: ``n`` threads, each passing ``k`` yield points. Every segment between
  two points is a step, so a schedule is an interleaving of ``n`` sequences of ``k + 1`` steps:
  ``((k+1)n)! / ((k+1)!)^n`` of them.
- ``LostUpdate(n, locked)``: ``n`` threads each increment a shared counter with a read, a yield
  point and a write; unlocked, some schedules lose an update (the finish check fails); under a
  ``_sync.Lock`` none does.
- ``LockOrder``: two threads take two locks in opposite orders; some schedules deadlock.
"""

from __future__ import annotations

from collections.abc import Callable

from ...impl import _sync


class YieldPoints:
    def __init__(self, threads: int, points: int) -> None:
        self.n, self.k = threads, points
        self.trace: list[int] = []

    def setup(self) -> None:
        self.trace = []

    def threads(self) -> list[tuple[str, Callable[[], None]]]:
        def body(i: int) -> Callable[[], None]:
            def run() -> None:
                for _ in range(self.k):
                    self.trace.append(i)
                    _sync.yield_point("toy.step")
                self.trace.append(i)

            return run

        return [(f"t{i}", body(i)) for i in range(self.n)]

    def finish(self) -> list[str]:
        return []


class LostUpdate:
    def __init__(self, threads: int = 2, locked: bool = False) -> None:
        self.n, self.locked = threads, locked
        self.value = 0
        self.lock: _sync.Lock | None = None

    def setup(self) -> None:
        self.value = 0
        self.lock = _sync.Lock("toy.counter") if self.locked else None

    def _increment(self) -> None:
        seen = self.value
        _sync.yield_point("toy.between_read_and_write")
        self.value = seen + 1

    def threads(self) -> list[tuple[str, Callable[[], None]]]:
        def run() -> None:
            if self.lock is None:
                self._increment()
            else:
                with self.lock:
                    self._increment()

        return [(f"t{i}", run) for i in range(self.n)]

    def finish(self) -> list[str]:
        return [] if self.value == self.n else [f"lost update: counter {self.value}, expected {self.n}"]


class LockOrder:
    def __init__(self) -> None:
        self.a: _sync.Lock | None = None
        self.b: _sync.Lock | None = None

    def setup(self) -> None:
        self.a, self.b = _sync.Lock("toy.a"), _sync.Lock("toy.b")

    def threads(self) -> list[tuple[str, Callable[[], None]]]:
        a, b = self.a, self.b
        assert a is not None and b is not None

        def forward() -> None:
            with a, b:
                pass

        def backward() -> None:
            with b, a:
                pass

        return [("forward", forward), ("backward", backward)]

    def finish(self) -> list[str]:
        return []


class PingPong:
    """A depth-3 bug of two threads: it shows only when ``a1 < b1 < a2 < b2`` (each a step between yield points),
    after ``pad`` yield points of padding in each thread (more decisions, the same bug)."""

    def __init__(self, pad: int = 0) -> None:
        self.pad = pad
        self.x = self.y = self.z = 0

    def setup(self) -> None:
        self.x = self.y = self.z = 0

    def threads(self) -> list[tuple[str, Callable[[], None]]]:
        def first() -> None:
            for _ in range(self.pad):
                _sync.yield_point("toy.pad")
            self.x = 1  # a1
            _sync.yield_point("toy.a")
            if self.y:  # a2
                self.z = 1
            for _ in range(self.pad):
                _sync.yield_point("toy.pad")

        def second() -> None:
            for _ in range(self.pad):
                _sync.yield_point("toy.pad")
            if self.x:  # b1
                self.y = 1
            _sync.yield_point("toy.b")
            if self.z:  # b2
                raise AssertionError("the depth-3 order a1 < b1 < a2 < b2")
            for _ in range(self.pad):
                _sync.yield_point("toy.pad")

        return [("first", first), ("second", second)]

    def finish(self) -> list[str]:
        return []

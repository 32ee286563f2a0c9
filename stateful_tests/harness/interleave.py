"""Force one interleaving with real threads: pause a thread at a named yield point.

``PauseAt(point)`` is a ``_sync`` hook. The first thread (other than the one that created
the hook) to reach ``point`` parks there until ``release()``; ``reached`` is set when it
arrives. A test starts the thread to pause, waits for ``reached``, performs the conflicting
operation on another lane, releases, and joins: the race happens in exactly that order,
every run. (The deterministic explorer of a later issue generalises this to every
interleaving.)
"""

from __future__ import annotations

from collections.abc import Callable

from ...impl import _sync


class PauseAt:
    def __init__(self, point: str) -> None:
        self.point = point
        self.reached = _sync.Event()
        self._go = _sync.Event()
        self._owner = _sync.current_thread_id()
        self._paused: int | None = None

    def yield_point(self, name: str) -> None:
        if name != self.point or self._go.is_set():
            return
        me = _sync.current_thread_id()
        if me == self._owner or (self._paused is not None and self._paused != me):
            return
        self._paused = me
        self.reached.set()
        self._go.wait()

    def release(self) -> None:
        self._go.set()


def race(point: str, paused: Callable[[], None], meanwhile: Callable[[], None], timeout: float = 10.0) -> list[BaseException]:
    """Run ``paused`` in a thread until it reaches ``point``, run ``meanwhile``, then let it finish.

    Returns the exceptions the paused thread raised (empty if none). Raises if the point is
    never reached.
    """
    hook = PauseAt(point)
    errors: list[BaseException] = []

    def body() -> None:
        try:
            paused()
        except BaseException as exc:  # handed back to the test
            errors.append(exc)

    _sync.install(hook)
    try:
        thread = _sync.Thread(body, "kvproof-paused")
        if not hook.reached.wait(timeout):
            hook.release()
            thread.join(timeout)
            raise AssertionError(f"the paused thread never reached {point!r}")
        meanwhile()
        hook.release()
        thread.join(timeout)
    finally:
        _sync.install(None)
    return errors

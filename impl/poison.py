"""Poisoning: what a concurrent structure does when a write is interrupted by an untyped exception.

The law (docs/sources.md#kvproof-robustness, "faults mid-operation"): after an exception escapes a write, the structure's
``check()`` holds and its abstract state is the state before or after the call (or a prefix of it
that the spec allows), *or* the structure marks itself poisoned and every later call says so with
a typed ``spec.errors.Poisoned``. A poisoned structure never answers a read from a torn state.

How the structures here follow it: every public call runs inside ``guard``. A typed rejection
(``KvProofError``) passes through untouched (rejections are decided before anything changes, or,
for a ``removed`` batch, are part of the spec). Any other exception is a fault: for an
``Exception``, the structure runs its own ``check()`` and poisons itself if it fails; for a
``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``, ``SystemExit``, a coroutine
or greenlet being unwound) no code should run on, so the structure is poisoned at once. The
original exception is always re-raised.

[Conservative: under concurrency ``check()`` may see another writer's transient state (an odd
version, a held gate) and poison a structure the fault left sound. A spurious poison costs a
rebuild; a missed one would cost wrong routing.]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Concatenate, Literal, ParamSpec, TypeVar

from ..spec.errors import KvProofError, Poisoned


class Poisonable:
    """Mix-in: ``guard(call)`` around each public call, ``poisoned`` once a fault broke the invariants."""

    poisoned: Poisoned | None = None

    def check(self) -> None:  # the structure's own invariants (overridden)
        raise NotImplementedError

    def refuse_if_poisoned(self) -> None:
        """Raise ``Poisoned`` if an earlier fault left the structure inconsistent."""
        if self.poisoned is not None:
            raise Poisoned(str(self.poisoned))

    def guard(self, call: str) -> AbstractContextManager[None]:
        """Run one public call: refuse if poisoned; on a fault, poison the structure when it no longer checks."""
        return _Guard(self, call)


class _Guard:
    """``with structure.guard(call):`` (a plain context manager: no generator per call, it runs on every event).

    On entry it refuses a poisoned structure. On exit, a typed rejection (``KvProofError``) passes
    untouched; any other ``Exception`` poisons the structure if its ``check()`` fails; any other
    ``BaseException`` poisons it at once. The exception always propagates (``__exit__`` returns False).
    """

    __slots__ = ("_owner", "_call")

    def __init__(self, owner: Poisonable, call: str) -> None:
        self._owner, self._call = owner, call

    def __enter__(self) -> None:
        self._owner.refuse_if_poisoned()

    def __exit__(
        self, kind: type[BaseException] | None, fault: BaseException | None, _tb: TracebackType | None
    ) -> Literal[False]:
        if kind is None or fault is None or isinstance(fault, KvProofError):
            return False
        owner, call = self._owner, self._call
        if isinstance(fault, Exception):
            owner.poisoned = owner.poisoned or _verdict(owner.check, call, fault)
        else:
            owner.poisoned = owner.poisoned or Poisoned(_interrupted(call, fault) + "; no check could run after it")
        return False


P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound=Poisonable)


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Decorate a public method of a ``Poisonable`` so that it runs inside ``guard(<its name>)``."""

    @functools.wraps(method)
    def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.guard(method.__name__):
            return method(self, *args, **kwargs)

    return call


def _interrupted(call: str, fault: BaseException) -> str:
    return f"{type(fault).__name__} interrupted {call} ({fault})"


def _verdict(check: Callable[[], None], call: str, fault: BaseException) -> Poisoned | None:
    """Return ``Poisoned`` naming the first broken invariant if ``check`` fails after ``fault``, else ``None``."""
    try:
        check()
    except Exception as broken:  # an AssertionError, or anything a torn structure makes check() raise
        first = str(broken).strip().splitlines()
        detail = " ".join(line.strip() for line in first[:2]) or type(broken).__name__
        return Poisoned(f"{_interrupted(call, fault)} and left the structure inconsistent: {detail}; rebuild it")
    return None

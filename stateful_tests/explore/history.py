"""Concurrent histories: every call's invocation, response, thread, operation and result.

``HistoryRecorder.call`` stamps the invocation and the response from one counter, so in a controlled
run (one logical thread at a time) the stamps are the exact real-time order, and under real
threads ``next`` on the shared counter is atomic under the interpreter lock, which keeps the
order sound there too. A typed error of the system under test (``KvCacheEventError``, a
tracker's ``SequenceError``) is a result like any other (``("error", name)``); any other
exception propagates, and the run reports it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Call:
    """One completed call: ``call`` and ``ret`` are stamps of one counter (``call < ret``)."""

    thread: str
    call: int
    ret: int
    op: str
    args: tuple[Any, ...]
    result: Hashable
    read: bool = False

    def describe(self) -> str:
        args = ", ".join(repr(a) for a in self.args)
        return f"[{self.call:>3}-{self.ret:<3}] {self.thread:>10}: {self.op}({args}) -> {self.result!r}"


def outcome(
    fn: Callable[[], Any], typed: tuple[type[BaseException], ...], normalize: Callable[[Any], Hashable] = lambda v: v
) -> Hashable:
    """Return what a history records for a call: ``("ok", normalize(value))`` or ``("error", name)`` for a typed error."""
    try:
        value = fn()
    except typed as exc:
        return ("error", type(exc).__name__)
    return ("ok", normalize(value))


def overlaps(a: Call, b: Call) -> bool:
    return a.call < b.ret and b.call < a.ret


class HistoryRecorder:
    """Collects the calls of one run (one recorder per run)."""

    def __init__(self, typed_errors: tuple[type[BaseException], ...]) -> None:
        self._clock = itertools.count()
        self._typed = typed_errors
        self.calls: list[Call] = []

    def call(
        self,
        thread: str,
        op: str,
        args: tuple[Any, ...],
        fn: Callable[[], Any],
        normalize: Callable[[Any], Hashable] = lambda v: v,
        read: bool = False,
    ) -> None:
        start = next(self._clock)
        result = outcome(fn, self._typed, normalize)
        self.calls.append(Call(thread, start, next(self._clock), op, args, result, read))

    def describe(self) -> list[str]:
        return [c.describe() for c in sorted(self.calls, key=lambda c: c.call)]

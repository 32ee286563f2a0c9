"""The linearizability checker: is a concurrent history explained by some order of the sequential spec?

Wing and Gong's search with Lowe's memoisation (the core of Knossos and Porcupine): repeatedly
pick a *minimal* pending entry (one no pending entry's response precedes), apply it to the
spec, keep it only if the spec's result equals the observed one, and remember every
(linearized set, spec state, open reads) already seen so no state is searched twice.

**Writes are exact**: a write is linearized at one point inside its call, with exactly the
result the spec gives there. **Reads are judged by the spec's read law** (``SequentialSpec.admits``)
over every spec state that existed while the read was open: a read becomes two point entries,
*open* at its invocation and *close* at its response, and every write linearized between them
adds the state after it to what the read saw (``Seen``: every state of the linearization so far,
which write made it, and whether that write had returned when the read began, so that a spec
can also judge an eventually consistent read model). A read that no write (in the whole history)
overlaps is *quiescent* and must equal the one state it saw. This is how the tree's
``find_matches`` is judged: best-effort during shape changes by design, so never above what
each rank held at some point during the call, and exact when nothing was changing.

**Partitions.** Where the spec composes (``partition``), the history is split and each part is
checked alone (P-compositionality, as Porcupine does): the tree partitions by worker, because a
rank's outcomes and scores depend on its own events only. **Bounds.** A search that visits more
than ``budget`` states returns *unknown*, never a pass (as Knossos's time limit does).

Source: Wing & Gong (1993); Lowe, "Testing for linearizability" (2017); docs/sources.md#tooling-3-4.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .history import Call, overlaps


class SequentialSpec(Protocol):
    """What the checker needs of a sequential specification."""

    def initial(self) -> Any:
        """Return the spec's state before the history."""

    def apply(self, state: Any, call: Call) -> tuple[Any, Hashable]:
        """Apply a write to a copy of ``state``; return the new state and the result the spec gives."""

    def observe(self, state: Any, call: Call) -> Hashable:
        """Return what the read ``call`` would return in ``state``."""

    def admits(self, call: Call, seen: Seen, quiescent: bool) -> bool:
        """Whether the read's observed result is allowed, given what it would have returned in each state so far."""

    def fingerprint(self, state: Any) -> Hashable:
        """Return a hashable summary that equal states share (the memo key)."""

    def partition(self, calls: Sequence[Call]) -> list[list[Call]]:
        """Split a history into independently checkable parts (``[list(calls)]`` when it does not compose)."""

    def partials(self, state: Any, call: Call) -> list[Any]:
        """The states a faulted write may leave besides none or all of its effect (``faults``' torn-but-consistent)."""


FAULTED = ("error", "InjectedFault")
"""The result of a write interrupted by an injected fault (``faults``): linearized either whole, whatever it
would have returned, or not at all."""


class LinearizabilityVerdict(enum.StrEnum):
    LINEARIZABLE = "linearizable"
    NOT_LINEARIZABLE = "not linearizable"
    UNKNOWN = "unknown"  # the search budget ran out


@dataclass
class LinearizabilityReport:
    verdict: LinearizabilityVerdict
    part: list[Call] = field(default_factory=list)  # the failing (or undecided) part, minimized when asked
    states: int = 0  # spec states visited

    @property
    def ok(self) -> bool:
        return self.verdict is LinearizabilityVerdict.LINEARIZABLE

    def describe(self) -> list[str]:
        return [c.describe() for c in sorted(self.part, key=lambda c: c.call)]


@dataclass(frozen=True)
class _Entry:
    index: int  # position in the part
    at: float  # invocation stamp (a point entry's only stamp)
    until: float  # response stamp
    kind: str  # "write", "open", "close"


def _entries(part: Sequence[Call]) -> list[_Entry]:
    out = []
    for i, c in enumerate(part):
        if c.read:
            out.append(_Entry(i, c.call, c.call, "open"))
            out.append(_Entry(i, c.ret, c.ret, "close"))
        else:
            out.append(_Entry(i, c.call, c.ret, "write"))
    return sorted(out, key=lambda e: e.at)


class _Budget(Exception):
    pass


@dataclass(frozen=True)
class Seen:
    """What a read is judged on: the observation in every state of the linearization so far, oldest first.

    ``states[k]`` is what the read would return after the ``k``-th write (``states[0]``: before
    any); ``completed[k]`` whether that write returned before the read was invoked; the read was
    open from ``states[opened]`` on.
    """

    states: tuple[Hashable, ...]
    completed: tuple[bool, ...]
    opened: int

    @property
    def during(self) -> tuple[Hashable, ...]:
        """The states that existed while the read was open."""
        return self.states[self.opened :]


def _check_part(
    spec: SequentialSpec, part: Sequence[Call], writes: Sequence[Call], budget: int
) -> tuple[LinearizabilityVerdict, int]:
    quiet = _quiescent(part, writes)
    entries = _entries(part)
    n = len(entries)
    memo: set[Hashable] = set()
    visited = 0
    path: list[tuple[Any, Call | None]] = []  # the states of the current linearization, with the write that made each

    def seen_by(read: Call, opened: int) -> Seen:
        return Seen(
            tuple(spec.observe(state, read) for state, _ in path), tuple(w is None or w.ret < read.call for _, w in path), opened
        )

    def search(done: frozenset[int], open_reads: tuple[tuple[int, int], ...]) -> bool:
        nonlocal visited
        if len(done) == n:
            return True
        state = path[-1][0]
        key = (done, spec.fingerprint(state), open_reads)
        if key in memo:
            return False
        memo.add(key)
        visited += 1
        if visited > budget:
            raise _Budget
        pending = [k for k in range(n) if k not in done]
        horizon = min(entries[k].until for k in pending)
        for k in pending:
            e = entries[k]
            if e.at > horizon:
                break  # entries are sorted by invocation: none further is minimal
            call = part[e.index]
            if e.kind == "write":
                new_state, result = spec.apply(state, call)
                faulted = call.result == FAULTED
                if result != call.result and not faulted:
                    continue
                path.append((new_state, call))
                if search(done | {k}, open_reads):
                    return True
                path.pop()
                if faulted and search(done | {k}, open_reads):  # a faulted write may also have done nothing at all
                    return True
                for partial in spec.partials(state, call) if faulted else ():  # or, where the spec allows, a part
                    path.append((partial, call))
                    if search(done | {k}, open_reads):
                        return True
                    path.pop()
            elif e.kind == "open":
                if search(done | {k}, (*open_reads, (e.index, len(path) - 1))):
                    return True
            else:
                opened = dict(open_reads)[e.index]
                if call.result == FAULTED or spec.admits(call, seen_by(call, opened), e.index in quiet):
                    rest = tuple(item for item in open_reads if item[0] != e.index)
                    if search(done | {k}, rest):
                        return True
        return False

    path.append((spec.initial(), None))
    try:
        ok = search(frozenset(), ())
    except _Budget:
        return LinearizabilityVerdict.UNKNOWN, visited
    return (LinearizabilityVerdict.LINEARIZABLE if ok else LinearizabilityVerdict.NOT_LINEARIZABLE), visited


def _quiescent(part: Sequence[Call], writes: Sequence[Call]) -> frozenset[int]:
    return frozenset(i for i, c in enumerate(part) if c.read and not any(overlaps(c, w) for w in writes))


def check(spec: SequentialSpec, calls: Sequence[Call], budget: int = 200_000, minimize: bool = True) -> LinearizabilityReport:
    """Check a history; on failure report the failing part, minimized (a smaller part that still fails) if asked."""
    writes = [c for c in calls if not c.read]
    total = 0
    undecided: list[Call] | None = None
    for part in spec.partition(calls):
        verdict, visited = _check_part(spec, part, writes, budget)
        total += visited
        if verdict is LinearizabilityVerdict.NOT_LINEARIZABLE:  # a definite failure wins over any undecided part
            return LinearizabilityReport(verdict, _minimize(spec, part, writes, budget) if minimize else list(part), total)
        if verdict is LinearizabilityVerdict.UNKNOWN:
            undecided = undecided or list(part)
    if undecided is not None:
        return LinearizabilityReport(LinearizabilityVerdict.UNKNOWN, undecided, total)
    return LinearizabilityReport(LinearizabilityVerdict.LINEARIZABLE, [], total)


def _minimize(spec: SequentialSpec, part: list[Call], writes: Sequence[Call], budget: int) -> list[Call]:
    """A smaller part that is still not linearizable, and still a witness of the real history.

    Reads are dropped one at a time (a read changes no state). A write is dropped only when it was
    invoked after every other remaining call returned: what is left is then the history up to a
    moment, a fair witness, while dropping any other write could leave an outcome that depended
    on it unexplained, a failure of the cut history rather than of the real one.
    """
    current = list(part)

    def still_fails(trial: list[Call]) -> bool:
        verdict, _ = _check_part(spec, trial, writes, budget)
        return verdict is LinearizabilityVerdict.NOT_LINEARIZABLE

    for c in [c for c in part if c.read]:
        trial = [x for x in current if x is not c]
        if still_fails(trial):
            current = trial
    while True:
        latest = max(current, key=lambda x: x.call)
        trial = [x for x in current if x is not latest]
        if latest.read or not trial or latest.call < max(x.ret for x in trial) or not still_fails(trial):
            return current
        current = trial

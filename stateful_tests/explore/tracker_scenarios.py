"""The slot tracker's races, as explorable programs.

One worker with two dp ranks (slots ``A`` = (1, 0) and ``B`` = (1, 1)); every call at the same
instant, so the clock plays no part and the reference's answers depend only on the order.
The final reads (``snapshot``: the authoritative state; ``registry``: the read model; ``loads``)
are quiescent, so exact: the registry must have converged to the projection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...spec.primitives import WorkerWithDpRank
from ...spec.sequence_inputs import PrefillLoadHint, SequenceRequest, millis
from .programs import HistoryProgram, Step
from .specs import TRACKER_ERRORS, TrackerSpec

A, B = WorkerWithDpRank(1, 0), WorkerWithDpRank(1, 1)
NOW = millis(10)


def request(rid: str, slot: WorkerWithDpRank, blocks: tuple[int, ...] = (1, 2), tokens: int = 100) -> SequenceRequest:
    return SequenceRequest(rid, slot, blocks, True, None, PrefillLoadHint(tokens, millis(50)))


def add(rid: str, slot: WorkerWithDpRank, blocks: tuple[int, ...] = (1, 2), tokens: int = 100) -> Step:
    return Step("add_request", (request(rid, slot, blocks, tokens), NOW))


def free(rid: str) -> Step:
    return Step("free", (rid, NOW))


def mark(rid: str) -> Step:
    return Step("mark_prefill_completed", (rid, NOW))


REGISTER = Step("register_worker", (1, 0, 2, NOW))
LOADS = Step("loads", (NOW,), read=True)
POTENTIAL = Step("potential_loads", ((1, 2, 3), 64, NOW), read=True)
FINAL = [Step("snapshot", (), read=True), Step("registry", (), read=True), LOADS]


class TrackerProgram(HistoryProgram):
    typed = TRACKER_ERRORS

    def perform(self, lane: str, step: Step) -> Any:
        tracker = self.subject
        if step.op == "snapshot":
            return tracker.snapshot()
        if step.op == "registry":
            return tracker.registry_snapshot()
        return getattr(tracker, step.op)(*step.args)

    def normalize(self, step: Step) -> Callable[[Any], Any]:
        if step.op in ("loads", "potential_loads"):
            return lambda v: tuple(sorted(v.items()))
        return lambda v: v

    def spec(self) -> TrackerSpec:
        return TrackerSpec()


def free_vs_add_and_mark() -> tuple[list[tuple[str, Step]], list[tuple[str, list[Step]]], list[Step]]:
    """A free of r races its add and a mark; a second add of r on the other slot races both. Ownership stays
    exclusive, a free that loses the race frees nothing, and nobody's request is left unbooked."""
    threads = [("t0", [add("r", A), mark("r")]), ("t1", [free("r"), add("r", B)]), ("t2", [mark("r"), free("r"), LOADS])]
    return [], threads, FINAL


def projection_vs_reads() -> tuple[list[tuple[str, Step]], list[tuple[str, list[Step]]], list[Step]]:
    """Adds, a mark and a free on one slot publish their deltas while a reader reads loads and potential loads: each
    read row is some moment's (potential loads may pair two moments), and the registry converges."""
    setup = [("setup", add("q", A, (1, 2, 3), 300))]
    threads = [
        ("t0", [add("r", A, (1, 2), 100), free("q")]),
        ("t1", [add("s", A, (1, 4), 200), mark("r")]),
        ("reader", [LOADS, POTENTIAL]),
    ]
    return setup, threads, FINAL


LAYOUTS = {
    "free-vs-add-and-mark": free_vs_add_and_mark,
    "projection-vs-reads": projection_vs_reads,
}


def tracker_program(name: str, make: Callable[[], Any]) -> TrackerProgram:
    setup, threads, final = LAYOUTS[name]()
    return TrackerProgram(make, [("setup", REGISTER), *setup], threads, final)

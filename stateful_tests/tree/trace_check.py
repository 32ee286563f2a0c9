"""Trace conformance: every tree and every slot tracker fed one router simulation, compared at every step.

``check_trace`` replays requests through ``router.RouterSim`` and feeds its steps to:

- **the trees** (``harness.targets`` names: reference, impl, impl-lanes, impl-pool, Dynamo when
  installed, or ``module:Factory``). Every operation's outcome must be ``ok`` (the engines only
  store under blocks they hold). Before every routing decision the query is asked of every
  tree with and without ``early_exit``; every answer is compared with the *oracle*'s (Dynamo
  when it is one of the trees, else the first): plain scores exactly; early-exit scores
  exactly, except where both answers obey the early-exit law against their own full walk
  (docs/dynamo-findings.md F7: trees cut edges in different places), which is tolerated and
  counted. A tree whose early-exit answer breaks the law against its own full walk
  (``spec.match.early_exit_agrees``) is a mismatch. At the end the dumps are compared as
  multisets (F2, Dynamo's unreplayable entries, tolerated as ``conformance`` does).
- **the ground truth**: every score, of every tree in both modes, is at most the prefix the
  rank's engine really holds (``router.Ask.truth``); more is an **over-credit**
  (``spec/contract.py``: a score never exceeds what the rank holds).
- **the slot trackers** (``sequences.model.TARGETS``: spec, reference, impl, or any class with
  that API): every call's outcome, and after every call the reads (``loads`` at the call's
  time, ``potential_loads`` of the routing query before each decision,
  ``modeled_remaining_prefill_times``), compared with the first tracker's.

With the ``tree`` policy the routing tree is the oracle's own scores, so every tree is judged on
the traffic a tree-driven router makes. ``TraceReport`` holds the verdicts and the figures.

Source: docs/sources.md#kvproof-traffic ("Real traffic"); docs/dynamo-findings.md F2, F7.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...spec.match import early_exit_agrees
from ..harness import targets
from ..harness.surface import LeftOut, lacks
from ..harness.targets import dump_entries
from .router import Ask, Route, RouterPlan, RouterSim, RouterStats, TrackerCall, apply_tracker_call, nanos
from .streams import apply_op, describe
from .trace_stress import TraceStressReport
from .traffic import Request
from .verdicts import dump_difference

Factory = Callable[[], Any]
Scores = dict[tuple[int, int], int]


@dataclass
class TreeVerdict:
    """One tree's record on the trace."""

    name: str
    queries: int = 0  # find_matches calls compared (both modes)
    mismatches: int = 0
    overcredits: int = 0
    tolerated: int = 0  # early-exit differences both trees explain (F7), dumps differing only by F2
    first: str = ""  # the first failure, in words

    def fail(self, detail: str, overcredit: bool = False) -> None:
        if overcredit:
            self.overcredits += 1
        else:
            self.mismatches += 1
        if not self.first:
            self.first = detail

    @property
    def ok(self) -> bool:
        return not (self.mismatches or self.overcredits)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "queries": self.queries,
            "mismatches": self.mismatches,
            "overcredits": self.overcredits,
            "tolerated": self.tolerated,
            "first": self.first,
        }


@dataclass
class TrackerVerdict:
    """One slot tracker's record on the trace: calls and reads compared with the first tracker's."""

    name: str
    calls: int = 0
    reads: int = 0
    mismatches: int = 0
    first: str = ""

    def fail(self, detail: str) -> None:
        self.mismatches += 1
        if not self.first:
            self.first = detail

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def to_json(self) -> dict:
        return {"name": self.name, "calls": self.calls, "reads": self.reads, "mismatches": self.mismatches, "first": self.first}


@dataclass
class TraceReport:
    plan: RouterPlan
    oracle: str
    stats: RouterStats
    trees: list[TreeVerdict] = field(default_factory=list)
    trackers: list[TrackerVerdict] = field(default_factory=list)
    seconds: float = 0.0
    stress: TraceStressReport | None = None  # the same events under real threads (trace_stress.py), when run
    calls: list[TrackerCall] = field(default_factory=list)  # the tracker calls, when kept (the real tracker replays them)
    left_out: LeftOut = field(default_factory=LeftOut)  # queries a tree's surface cannot carry (harness.surface)

    @property
    def queries(self) -> int:
        return sum(t.queries for t in self.trees)

    @property
    def mismatches(self) -> int:
        """Tree and tracker mismatches, and the stress's parity breaks."""
        return (
            sum(t.mismatches for t in self.trees)
            + sum(t.mismatches for t in self.trackers)
            + (self.stress.parity_breaks if self.stress else 0)
        )

    @property
    def overcredits(self) -> int:
        """Over-credits against the ground truth, and the stress's overcounts (reads above what was held during them)."""
        return sum(t.overcredits for t in self.trees) + (self.stress.overcounts if self.stress else 0)

    @property
    def ok(self) -> bool:
        return not (self.mismatches or self.overcredits)

    def summary_line(self) -> str:
        return (
            f"trace: requests={self.stats.requests} events={self.stats.event_count} queries={self.queries} "
            f"mismatches={self.mismatches} overcredits={self.overcredits}"
        )

    def to_json(self) -> dict:
        s = self.stats
        return {
            "plan": {k: getattr(self.plan, k) for k in self.plan.__dataclass_fields__},
            "oracle": self.oracle,
            "requests": s.requests,
            "events": dict(s.events),
            "prompt_blocks": s.prompt_blocks,
            "cached_blocks": s.cached_blocks,
            "hit_rate": round(s.hit_rate, 6),
            "per_rank": [{"rank": list(r), "requests": s.routed[r], "peak_active": s.peak[r]} for r in sorted(s.routed | s.peak)],
            "trees": [t.to_json() for t in self.trees],
            "trackers": [t.to_json() for t in self.trackers],
            "stress": None
            if self.stress is None
            else {
                k: getattr(self.stress, k)
                for k in ("writers", "readers", "ops", "reads", "overcounts", "parity_breaks", "problems")
            },
            "queries": self.queries,
            "mismatches": self.mismatches,
            "overcredits": self.overcredits,
            "seconds": round(self.seconds, 3),
        }


def overcredit(scores: Scores, truth: Scores) -> str:
    """The ranks ``scores`` credit with more blocks than they hold (empty: none)."""
    return "; ".join(
        f"{rank} scored {n} but holds {truth.get(rank, 0)}" for rank, n in sorted(scores.items()) if n > truth.get(rank, 0)
    )


def _outcome(call: Callable[[], object]) -> tuple[str, object]:
    try:
        return "ok", call()
    except Exception as exc:  # every tracker's typed errors are compared by name
        return type(exc).__name__, None


class _Trees:
    """The trees under comparison and their verdicts; the oracle's answers are the reference answers."""

    def __init__(self, trees: dict[str, Factory], oracle: str) -> None:
        self.names = list(trees)
        self.oracle = oracle
        self.trees = {name: factory() for name, factory in trees.items()}
        self.verdicts = {name: TreeVerdict(name) for name in self.names}
        self.left_out = LeftOut()

    def apply(self, op: Any, where: str) -> None:
        for name, tree in self.trees.items():
            got = apply_op(tree, op)
            if got == targets.UNOBSERVED:
                self.left_out.add(f"outcomes ({name})", lacks(tree, "outcomes") or "")
            elif got != targets.OK:
                self.verdicts[name].fail(f"{where}: {describe(op)}: outcome {got}, but the engine held the parent")

    def ask(self, ask: Ask, where: str) -> Scores:
        query = list(ask.query)
        answers = {
            name: (targets.scores(tree, query, False), self._early(name, tree, query)) for name, tree in self.trees.items()
        }
        want_plain, want_early = answers[self.oracle]
        for name, (plain, early) in answers.items():
            verdict = self.verdicts[name]
            verdict.queries += 1 + (early is not None)
            for mode, got in (("", plain), (", early_exit=True", early)):
                over = overcredit(got, ask.truth) if got is not None else ""
                if over:
                    verdict.fail(f"{where}: find_matches(query{mode}) over-credits: {over}", overcredit=True)
            if early is not None and not early_exit_agrees(plain, early):  # type: ignore[arg-type]  # (worker, dp) tuples are ranks
                verdict.fail(f"{where}: early_exit=True {early} breaks the early-exit law against the full walk {plain}")
            elif name != self.oracle and plain != want_plain:
                verdict.fail(f"{where}: find_matches = {plain}, {self.oracle} {want_plain}")
            elif name != self.oracle and None not in (early, want_early) and early != want_early:
                verdict.tolerated += 1  # F7: both obey the law; they cut edges in different places
        return want_plain

    def _early(self, name: str, tree: Any, query: list[int]) -> Scores | None:
        """The early-exit answer, or None (counted as left out) where the tree's surface has no early exit."""
        why = lacks(tree, "early_exit")
        if why is None:
            return targets.scores(tree, query, True)
        self.left_out.add(f"early_exit ({name})", why)
        return None

    def finish(self) -> None:
        oracle = self.trees[self.oracle]
        if targets.has_dump(oracle):
            want = dump_entries(oracle)
            for name, tree in self.trees.items():
                if name == self.oracle or not targets.has_dump(tree):
                    continue
                d = dump_difference(0, dump_entries(tree), want)
                if d is None:
                    continue
                if d.known:
                    self.verdicts[name].tolerated += 1
                else:
                    self.verdicts[name].fail(d.detail)
        for tree in self.trees.values():
            targets.dispose(tree)


class _Trackers:
    """The slot trackers under comparison; the first one's outcomes and reads are the reference."""

    def __init__(self, trackers: dict[str, Factory]) -> None:
        self.trackers = {name: factory() for name, factory in trackers.items()}
        self.verdicts = {name: TrackerVerdict(name) for name in trackers}
        self.first = next(iter(trackers), "")

    def _compare(self, what: str, call: Callable[[Any], object], read: bool) -> None:
        results = {name: _outcome(lambda: call(tracker)) for name, tracker in self.trackers.items()}
        want = results[self.first]
        for name, got in results.items():
            verdict = self.verdicts[name]
            verdict.reads += read
            verdict.calls += not read
            if got != want:
                verdict.fail(f"{what}: {name} gave {got!r}, {self.first} gave {want!r}")

    def call(self, call: TrackerCall) -> None:
        self._compare(f"{call.kind} {call.rid} at {call.at} ns", lambda t: apply_tracker_call(t, call), False)
        self._compare(f"loads at {call.at} ns (after {call.kind} {call.rid})", lambda t: t.loads(call.at), True)
        self._compare(f"modeled times at {call.at} ns", lambda t: t.modeled_remaining_prefill_times(call.at), True)

    def potential(self, index: int, blocks: tuple[int, ...], at: int, isl: int) -> None:
        """The ``/potential_loads`` read a router makes before routing: the prompt's block (sequence) hashes."""
        self._compare(f"potential_loads of request {index} at {at} ns", lambda t: t.potential_loads(blocks, isl, at), True)

    def finish(self) -> None:
        for name, tracker in self.trackers.items():
            outcome, _ = _outcome(tracker.check)
            if outcome != "ok":
                self.verdicts[name].fail(f"check() at the end: {outcome}")


def check_trace(
    requests: Iterable[Request],
    plan: RouterPlan,
    trees: dict[str, Factory],
    trackers: dict[str, Factory],
    oracle: str | None = None,
    keep_calls: bool = False,
) -> TraceReport:
    """Replay ``requests`` under ``plan`` through ``trees`` and ``trackers`` (see the module docstring).

    ``oracle`` names the tree whose answers are the reference ones (default: ``dynamo`` when it is
    among ``trees``, else the first); with the ``tree`` policy it also routes.
    """
    started = time.perf_counter()
    if not trees and plan.policy == "tree":
        raise ValueError("the tree policy needs a tree to route by")
    chosen = oracle or ("dynamo" if "dynamo" in trees else next(iter(trees), ""))
    forest = _Trees(trees, chosen) if trees else None
    books = _Trackers(trackers) if trackers else None
    routing: list[Scores] = []
    calls: list[TrackerCall] = []
    sim = RouterSim(plan, (lambda query: routing[-1]) if plan.policy == "tree" else None)
    where = "start"
    pending: list[Request] = []

    def requests_seen() -> Iterable[Request]:
        for r in requests:
            pending[:] = [r]
            yield r

    try:
        for step in _chain(sim, requests_seen()):
            if isinstance(step, Ask):
                where = f"request {step.index}"
                scores = forest.ask(step, where) if forest else {}
                routing.append(scores)
                if books and pending:
                    r = pending[0]
                    books.potential(
                        step.index,
                        tuple(b.ext for b in r.prompt),
                        nanos(r.time_s),
                        r.input_tokens or plan.block_tokens * len(r.prompt),
                    )
            elif isinstance(step, Route):
                routing.clear()
            elif isinstance(step, TrackerCall):
                if keep_calls:
                    calls.append(step)
                if books:
                    books.call(step)
            elif forest:
                forest.apply(step, where)
    finally:
        if forest:
            forest.finish()
    if books:
        books.finish()
    report = TraceReport(
        plan,
        chosen,
        sim.stats,
        list(forest.verdicts.values()) if forest else [],
        list(books.verdicts.values()) if books else [],
        calls=calls,
        left_out=forest.left_out if forest else LeftOut(),
    )
    report.seconds = time.perf_counter() - started
    return report


def _chain(sim: RouterSim, requests: Iterable[Request]) -> Iterable[Any]:
    yield from sim.steps(requests)
    yield from sim.drain()

"""A concurrent tree fed as production feeds it: the events of different workers at once, reads racing them.

The differential run (``conformance``) steps a tree one event at a time, so a concurrent
indexer's lanes never run together. Here they do. A stream is cut into **rounds**: a run of
consecutive events of different workers goes out at once, each on its rank's own socket
(``send_many``: Dynamo's indexer applies them on its lanes in parallel), and one fence ends the
round; a worker removal or a clear is a round of its own. While every round is in flight a
reader thread asks the stream's queries again and again (pipelined batches), stamping each
batch's invocation and response on one counter shared with the rounds.

Every answer is judged twice:

- **the contract** (``spec/contract.py``): each event's outcome against the verdict for its
  rank (a store under a reachable parent must be accepted, one under a parent the rank does not
  hold refused), and every read, rank by rank, against the states the rank passed through while
  the read was open: never above the longest prefix it held in any of them (no over-credit),
  never below the shortest prefix it could reach in all of them (no unexplained undercount);
- **linearizability** against the reference under the run's rule set, with the explorer's
  checker (``explore.linearizability``, ``explore.specs.TreeSpec``): writes exact, reads within
  what the rank scored in some state that existed while they ran, exact when nothing overlapped.
  The reader idles between rounds, so each round is checked alone, from the reference as it stood
  before it; a round holds one event per worker, so the search is small.
  Under a rule set that is not exact (the concurrent tree's, F11) a history that keeps the
  contract but is not linearizable against the reference is reported as known F11.

A target that pays a fixed delay per round trip (the selection service's recovery call) is fed
in lockstep with the other streams and read after each round, quiescent, instead of raced.

A round's outcomes come back as a multiset of the indexer's labels. Where they equal the
reference's (run in stream order) each event takes the reference's outcome. Where they differ,
the round is judged by counts against the contract (at least the events it says must be accepted
were, at most those it does not say must be refused): events of different workers may land in any
order, and where the contract leaves an outcome open, the order may change it (a stale lookup entry
that another worker's split left behind). A round that keeps the contract that way ends the
linearizability check of its stream there (the reference, stepping in stream order, is no longer
its specification) and is counted; one that breaks it is an outcome failure.

Runs are seeded (the stream) but the interleaving is the machine's: a failure prints the seed,
the round's events and the reads that broke the law, as Dynamo events, and the command that runs
the stream again (``kvproof conform tree --concurrent --target T --seed S --stream K``).
"""

from __future__ import annotations

import copy
import itertools
import shlex
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...impl import _sync
from ...spec.contract import EMPTY_CONTRACT, ContractState, Verdict, holdings, remove_verdict, store_verdict
from ...spec.events import Removed, Stored
from ...spec.primitives import Rank
from ...spec.rules import RuleSet
from ..harness import lockstep, targets
from ..harness.paths import held_prefix
from ..harness.surface import LeftOut, lacks
from ..tree.conformance import contract_after
from ..tree.log import file_safe, ops_to_lines
from ..tree.streams import EventOp, Op, Stream, apply_op, describe, generate, not_carried
from .history import Call
from .linearizability import check as check_linearizable
from .removal_race import RaceReport, race_removals, takes_submissions
from .specs import TreeSpec

Factory = Callable[[], Any]

LABEL_OUTCOMES = {
    "ok": targets.OK,
    "parent_block_not_found": "ParentBlockNotFound",
    "block_not_found": "BlockNotFound",
    "invalid_block": "InvalidBlockSequence",
}
"""The indexer's outcome labels as kvproof's outcome names (``harness.dynamo_indexer``)."""


RACE_ROUNDS = 10
"""Rounds of the removal race (``removal_race``) after the streams, for a target whose trees queue events."""


def feeds_concurrently(tree: Any) -> bool:
    """Whether a tree takes events of several ranks at once (``send_many``)."""
    return callable(getattr(tree, "send_many", None))


def rounds_of(ops: list[Op]) -> list[list[Op]]:
    """Cut a stream into rounds: runs of consecutive events of different workers; any other call alone."""
    out: list[list[Op]] = []
    current: list[Op] = []
    workers: set[int] = set()
    for op in ops:
        if not isinstance(op, EventOp):
            if current:
                out.append(current)
            out.append([op])
            current, workers = [], set()
            continue
        if op.worker_id in workers:
            out.append(current)
            current, workers = [], set()
        current.append(op)
        workers.add(op.worker_id)
    if current:
        out.append(current)
    return out


@dataclass
class Violation:
    """A read or a round that broke the contract."""

    round: int
    detail: str


@dataclass
class StreamVerdict:
    seed: int
    stream: int
    rounds: int = 0
    events: int = 0
    reads: int = 0
    violations: list[Violation] = field(default_factory=list)  # contract breaks: the findings
    outcome: str = ""  # a round whose outcomes differ from the reference's
    linearizable: str = "linearizable"
    history: list[str] = field(default_factory=list)  # the failing part of the history, when not linearizable
    diverged_at: int | None = None  # the first round whose outcomes kept the contract but differed from the reference's
    ops: list[Op] = field(default_factory=list)  # the stream up to the first failure
    left_out: LeftOut = field(default_factory=LeftOut)

    @property
    def ok(self) -> bool:
        return not self.violations and not self.outcome and self.linearizable == "linearizable"


class _Reader:
    """A thread that asks the stream's queries in pipelined batches until told to stop, stamping each batch.

    With ``racing=False`` (a target that pays a fixed delay per round trip, run in lockstep) there is
    no thread: the queries are asked once after each round, when the target is quiescent.
    """

    def __init__(self, tree: Any, clock: Callable[[], int], racing: bool = True) -> None:
        self.tree, self.clock = tree, clock
        self.queries: list[list[int]] = []
        self.calls: list[Call] = []
        self.running = False  # set while a round is in flight (read by the thread; a bool is swapped atomically)
        self.idle = True  # no batch in flight (the next round waits for it, so every read lies inside one round)
        self.round_start = 0  # reads before this round
        self.stopping = False
        self.error: BaseException | None = None
        self.racing = racing
        self.thread = _sync.Thread(self._run, "kvproof-reader") if racing else None

    def _run(self) -> None:
        try:
            while not self.stopping:
                if not self.running:
                    self.idle = True
                    time.sleep(0.0005)
                    continue
                self.idle = False
                self._batch()
        except BaseException as exc:  # reported by the run; the thread must not die silently
            self.error = exc

    def _batch(self) -> None:
        qs = list(self.queries)
        if not qs:
            if self.racing:
                time.sleep(0.001)
            return
        start = self.clock()
        answers = targets.scores_many(self.tree, qs)
        end = self.clock()
        result = ("ok", tuple(tuple(sorted((Rank(*rank), n) for rank, n in scores.items())) for scores in answers))
        self.calls.append(Call("reader", start, end, "find_matches_many", (tuple(map(tuple, qs)),), result, read=True))

    def pause(self) -> None:
        """Stop asking and wait for the batch in flight (so no read spans two rounds); then, if no batch ran during the
        round (no thread, or a round too quick to race), ask once now, quiescent: every round is read."""
        self.running = False
        if self.thread is not None:
            deadline = time.monotonic() + 10
            while not self.idle and self.thread.is_alive() and time.monotonic() < deadline:
                time.sleep(0.0002)
        if len(self.calls) == self.round_start:
            self._batch()
        self.idle = True

    def begin_round(self) -> None:
        self.round_start = len(self.calls)
        self.idle = False
        self.running = True

    def stop(self) -> None:
        self.stopping = True
        if self.thread is not None:
            self.thread.join(10)


def feed_stream(subject: Factory, stream: Stream, rules: RuleSet, budget: int = 200_000) -> StreamVerdict:
    """Feed ``stream`` to a fresh ``subject`` in rounds with a racing reader; judge it (see the module docstring)."""
    verdict = StreamVerdict(stream.seed, stream.index)
    tree = subject()
    reference = targets.load_target("reference", rules).factory
    assert reference is not None
    oracle = reference()
    counter = itertools.count()
    clock = counter.__next__
    reader = _Reader(tree, clock, racing=not getattr(tree, "lockstep", False))
    segments: list[
        tuple[list[Any], list[Call], int]
    ] = []  # per round: the references it may start from, its writes, reads so far
    starts: list[Any] = [reference()]  # every reference state the rounds so far may have left (see possible_states)
    spans: list[tuple[int, int]] = []  # each round's (first stamp, last stamp)
    states: list[ContractState] = [EMPTY_CONTRACT]  # the contract after each round
    try:
        position = 0
        for number, batch in enumerate(rounds_of(stream.ops)):
            carried = []
            for op in batch:
                gap = not_carried(tree, op)
                if gap is not None:
                    verdict.left_out.add(gap.part, gap.why)
                else:
                    carried.append(op)
            position += len(batch)
            if not carried:
                continue
            reader.queries = [q for qs in stream.queries[position - len(batch) : position] for q in qs]
            before = states[-1]
            segments.append((starts, [], len(reader.calls)))
            expected = [apply_op(oracle, op) for op in carried]
            starts = possible_states(starts, carried, expected)
            reader.begin_round()
            start = clock()
            got = _send_round(tree, carried)
            end = clock()
            reader.pause()
            spans.append((start, end))
            verdict.rounds += 1
            verdict.events += len(carried)
            state = before
            for op, outcome in zip(carried, expected):
                state = contract_after(state, op, outcome, rules)
            states.append(state)
            unobserved = lacks(tree, "outcomes")
            if unobserved is not None:
                verdict.left_out.add("outcomes", unobserved, len(carried))
            elif Counter(got) != Counter(expected):
                problem = _round_outcome_problem(before, carried, got)
                if problem:
                    verdict.outcome = (
                        f"round {number}: the tree answered {sorted(Counter(got).items())}, the reference "
                        f"under {rules.name} {sorted(Counter(expected).items())} for "
                        f"{[describe(op) for op in carried]}: {problem}"
                    )
                elif verdict.diverged_at is None:
                    verdict.diverged_at = len(segments) - 1  # within the contract, in another order than the reference's
            for op, outcome in zip(carried, expected):
                segments[-1][1].append(
                    Call(
                        f"worker{_worker(op)}",
                        start,
                        end,
                        *_write_call(op),
                        ("ok", None) if outcome == targets.OK else ("error", outcome),
                    )
                )
            if verdict.outcome or verdict.violations:
                verdict.ops = stream.ops[:position]
                break
        reader.stop()
        if reader.error is not None:
            raise reader.error
    finally:
        reader.stop()
        targets.dispose(tree)
    verdict.reads = sum(len(call.args[0]) for call in reader.calls)
    verdict.ops = verdict.ops or list(stream.ops)
    for call in reader.calls:
        problem = _read_problem(call, spans, states)
        if problem:
            verdict.violations.append(Violation(-1, problem))
            break
    if not verdict.violations and not verdict.outcome:
        bounds = [first for _, _, first in segments[1:]] + [len(reader.calls)]
        checked = list(zip(segments, bounds))[: verdict.diverged_at]  # past a divergence the reference is no spec
        for (start_trees, writes, first), last in checked:
            history = writes + reader.calls[first:last]
            reports = [check_linearizable(_TreeSpecFrom(start, rules), history, budget) for start in start_trees]
            if not any(report.ok for report in reports):
                verdict.linearizable = reports[0].verdict.value
                verdict.history = reports[0].describe()[:20]
                break
    return verdict


MAX_STARTS = 24
"""At most this many distinct reference states are carried from round to round."""


def possible_states(starts: list[Any], ops: list[Op], outcomes: list[str]) -> list[Any]:
    """Every reference state a round may leave: each start, with the round's events applied in each order that gives
    every event the outcome it has in the stream's order, one per distinct shape.

    The events of a round go to the target at once, so it applies them in an order of its own. Where two orders
    leave the same holdings but different trees (a removal before or after another rank's clear decides whether a
    node is released, and so whether a later re-store reconnects the rank's old descendants), the next rounds are
    judged from each (kvproof issue 30: the single-threaded indexer, a control, was judged not linearizable once in
    about 120 streams, from the one start state the stream's own order leaves).
    """
    found: dict[str, Any] = {}
    for start in starts:
        for order in itertools.permutations(range(len(ops))):
            tree = copy.deepcopy(start)
            got = {i: apply_op(tree, ops[i]) for i in order}
            if [got[i] for i in range(len(ops))] != outcomes:
                continue
            key = repr((tree.shape(), sorted(tree.snapshot().items())))
            if key not in found:
                found[key] = tree
            if len(found) >= MAX_STARTS:
                return list(found.values())
    return list(found.values())


class _TreeSpecFrom(TreeSpec):
    """``TreeSpec`` starting from the reference as it stood before a round (rounds are checked one by one: the
    reader is idle between rounds, so the history is quiescent there), reading a batch of queries as one call.

    A batch's answers came at different instants inside the batch, so each query is judged alone by
    ``TreeSpec``'s read law over the states that existed while the batch ran. A round holds a few
    writes, so the history is checked whole (not partitioned by worker).
    """

    def __init__(self, start: Any, rules: RuleSet) -> None:
        super().__init__(rules)
        self.start = start

    def fresh(self) -> Any:
        return copy.deepcopy(self.start)

    def observe(self, state: Any, call: Call) -> Any:
        if call.op != "find_matches_many":
            return super().observe(state, call)
        return ("ok", tuple(tuple(sorted(state[0].find_matches(list(q)).scores.items())) for q in call.args[0]))

    def admits(self, call: Call, seen: Any, quiescent: bool) -> bool:
        if call.op != "find_matches_many":
            return super().admits(call, seen, quiescent)
        return all(
            super(_TreeSpecFrom, self).admits(_one(call, k), _one_seen(seen, k), quiescent) for k in range(len(call.args[0]))
        )

    def partition(self, calls: Any) -> list[list[Call]]:
        return [list(calls)]


def _one(call: Call, k: int) -> Call:
    """The ``k``-th query of a batch read, as a read of its own."""
    return Call(call.thread, call.call, call.ret, "find_matches", (list(call.args[0][k]),), ("ok", call.result[1][k]), True)  # type: ignore[index]


def _one_seen(seen: Any, k: int) -> Any:
    from .linearizability import Seen

    return Seen(tuple(("ok", s[1][k]) for s in seen.states), seen.completed, seen.opened)


def _rank(op: Op) -> tuple[int, int]:
    assert isinstance(op, EventOp)
    return (op.worker_id, op.event.dp_rank)


def _write_call(op: Op) -> tuple[str, tuple[Any, ...]]:
    if isinstance(op, EventOp):
        return "event", (op.worker_id, op.event)
    name = {"RemoveWorkerOp": "remove_worker", "ClearAllBlocksOp": "clear_all_blocks"}[type(op).__name__]
    return name, (_worker(op),)


def _worker(op: Op) -> int:
    """The worker a stream's operation belongs to (a generated stream holds no dump)."""
    worker = getattr(op, "worker_id", None)
    assert isinstance(worker, int), f"{op!r} belongs to no worker"
    return worker


def _send_round(tree: Any, batch: list[Op]) -> list[str]:
    """Send a round; return the outcomes it produced (as kvproof's outcome names, a multiset)."""
    if len(batch) == 1 and not isinstance(batch[0], EventOp):
        return [apply_op(tree, batch[0])]
    labels = tree.send_many([(Rank(*_rank(op)), op.event) for op in batch if isinstance(op, EventOp)])
    return [LABEL_OUTCOMES.get(status, f"status {status}") for _, status in labels]


def _round_outcome_problem(state: ContractState, batch: list[Op], got: list[str]) -> str:
    """Why a round's outcomes (a multiset: the labels name no event) break the contract ("" if they keep it).

    The events of different workers may land in any order, and where the contract leaves an outcome
    open the order may change it (a stale lookup entry a split left behind, say); so the round is judged
    by counts: at least the events that must be accepted were, at most the others were."""
    verdicts = [_verdict(state, op) for op in batch]
    must_apply = sum(v is Verdict.MUST_APPLY for v in verdicts)
    must_reject = sum(v is Verdict.MUST_REJECT for v in verdicts)
    accepted = sum(outcome == targets.OK for outcome in got)
    if len(got) != len(batch):
        return f"{len(got)} outcomes for {len(batch)} events"
    if accepted < must_apply:
        return f"{must_apply} must be accepted (parents reachable, blocks held), only {accepted} were"
    if accepted > len(batch) - must_reject:
        return f"{must_reject} must be refused (parents the ranks do not hold), only {len(batch) - accepted} were"
    return ""


def _verdict(state: ContractState, op: Op) -> Verdict:
    if not isinstance(op, EventOp):
        return Verdict.MUST_APPLY
    rank = Rank(*_rank(op))
    if isinstance(op.event.data, Stored):
        return store_verdict(state, rank, op.event.data)
    if isinstance(op.event.data, Removed):
        return remove_verdict(state, rank, op.event.data)
    return Verdict.MUST_APPLY


def _read_problem(call: Call, spans: list[tuple[int, int]], states: list[ContractState]) -> str:
    """Why a batch read broke the contract against every state its ranks passed through while it was open ("" if none)."""
    for query, answer in zip(call.args[0], call.result[1]):  # type: ignore[index]
        problem = _query_problem(call, tuple(query), dict(answer), spans, states)
        if problem:
            return problem
    return ""


def _query_problem(
    call: Call, query: tuple[int, ...], scores: dict[Any, int], spans: list[tuple[int, int]], states: list[ContractState]
) -> str:
    first = sum(1 for _, end in spans if end < call.call)  # rounds that ended before the read began
    last = sum(1 for start, _ in spans if start < call.ret)  # rounds that began before it returned
    seen = states[first : last + 1]
    ranks = set(scores) | {r for s in seen for r in s}
    problems = []
    for rank in sorted(ranks):
        got = scores.get(rank, 0)
        held = max(held_prefix(query, holdings(s, rank).held) for s in seen)
        reachable = min(held_prefix(query, holdings(s, rank).reachable) for s in seen)
        if got > held:
            problems.append(
                f"over-credits {tuple(rank)}: score {got}, but it held at most {held} blocks of the query while the read ran"
            )
        elif got < reachable:
            problems.append(f"unexplained undercount of {tuple(rank)}: score {got}, reachable {reachable} throughout")
    if not problems:
        return ""
    during = "after every round" if first == last else f"while rounds {first} to {last - 1} were in flight"
    return f"find_matches({list(query)}) = {scores} {during}: {'; '.join(problems)}"


@dataclass
class ProductionReport:
    subject: str
    rules: str
    seed: int
    streams: int = 0
    rounds: int = 0
    events: int = 0
    reads: int = 0
    failures: list[StreamVerdict] = field(default_factory=list)  # contract breaks and outcome differences
    not_linearizable: list[StreamVerdict] = field(default_factory=list)
    tolerated: int = 0  # histories within the contract that the reference, not exact here, cannot linearize (F11)
    reordered: int = 0  # streams whose outcomes, in a round, kept the contract but differed from the reference's
    left_out: LeftOut = field(default_factory=LeftOut)
    race: RaceReport | None = None  # the removal race's rounds, for a target that queues events (removal_race)
    seconds: float = 0.0
    kind = "conform-concurrent"
    skipped = ""

    @property
    def ok(self) -> bool:
        return not self.failures and not self.not_linearizable and (self.race is None or self.race.ok)

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        """The run's figures and what the target's surface left out (the failures were said as they were found)."""
        say(f"seconds={self.seconds:.1f} seed={self.seed} subject={self.subject} rules={self.rules}")
        for line in self.left_out.lines():
            say(line)

    def summary_line(self) -> str:
        return (
            f"concurrent: streams={self.streams} rounds={self.rounds} events={self.events} reads={self.reads} "
            f"contract_breaks={sum(1 for v in self.failures if v.violations)} "
            f"outcome_differences={sum(1 for v in self.failures if v.outcome and not v.violations)} "
            f"not_linearizable={len(self.not_linearizable)} tolerated={self.tolerated} (F11) "
            f"reordered={self.reordered}" + (f"; {self.race.summary_line()}" if self.race is not None else "")
        )

    def report(self, verdict: StreamVerdict) -> str:
        """One stream's failure: what broke, the events up to it, and the command that runs the stream again."""
        what = (
            verdict.violations[0].detail
            if verdict.violations
            else verdict.outcome or f"the history is {verdict.linearizable} against the reference under {self.rules}"
        )
        events = ops_to_lines(verdict.ops)
        path = Path("kvproof-failures") / file_safe(f"concurrent-{self.subject}-seed{verdict.seed}-stream{verdict.stream}.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in events))
        lines = [
            f"CONCURRENT [{'contract' if verdict.violations else 'outcome' if verdict.outcome else 'linearizability'}] "
            f"{self.subject}: seed={verdict.seed} stream={verdict.stream}",
            f"  {what}",
            f"  the stream up to there: {len(events)} operations, as Dynamo events, in {path}; the last ones:",
        ]
        lines += [f"    {line}" for line in events[-8:]]
        lines += [f"  {line}" for line in verdict.history]
        lines.append(
            f"  run it again: kvproof conform tree --concurrent --target {shlex.quote(self.subject)} --seed {verdict.seed} "
            f"--stream {verdict.stream} (the interleaving is the machine's: it may take a few runs)"
        )
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "rules": self.rules,
            "seed": self.seed,
            "streams": self.streams,
            "rounds": self.rounds,
            "events": self.events,
            "reads": self.reads,
            "tolerated": self.tolerated,
            "failures": [
                {
                    "stream": v.stream,
                    "violations": [x.detail for x in v.violations],
                    "outcome": v.outcome,
                    "events": ops_to_lines(v.ops),
                }
                for v in self.failures
            ],
            "not_linearizable": [{"stream": v.stream, "history": v.history} for v in self.not_linearizable],
            "left_out": self.left_out.to_json(),
            "race": self.race.to_json() if self.race is not None else None,
            "seconds": round(self.seconds, 3),
        }


def feed(
    subject: Factory,
    subject_name: str,
    rules: RuleSet,
    streams: int,
    seed: int,
    only_stream: int | None = None,
    on_failure: Callable[[str], None] | None = None,
    races: int = RACE_ROUNDS,
) -> ProductionReport:
    """Feed ``streams`` streams of run ``seed`` (or just ``only_stream``) to fresh trees of ``subject``; then, if its
    trees queue events (``removal_race.takes_submissions``), run ``races`` rounds of a removal racing the removed
    worker's own events (not when replaying one stream)."""
    started = time.perf_counter()
    report = ProductionReport(subject_name, rules.name, seed)
    indices = [only_stream] if only_stream is not None else list(range(streams))
    verdicts = lockstep.run_each(lambda i: feed_stream(subject, generate(seed, i), rules), indices)
    for verdict in verdicts:
        report.streams += 1
        report.rounds += verdict.rounds
        report.events += verdict.events
        report.reads += verdict.reads
        report.left_out.merge(verdict.left_out)
        report.reordered += verdict.diverged_at is not None
        if verdict.violations or verdict.outcome:
            report.failures.append(verdict)
        elif verdict.linearizable != "linearizable":
            if rules.exact:
                report.not_linearizable.append(verdict)
            else:
                report.tolerated += 1
        else:
            continue
        if on_failure is not None and (verdict.violations or verdict.outcome or rules.exact) and len(report.failures) <= 3:
            on_failure(report.report(verdict))
    if races and only_stream is None and queues_events(subject):
        report.race = race_removals(subject, subject_name, races, seed, on_failure)
    report.seconds = time.perf_counter() - started
    return report


def queues_events(subject: Factory) -> bool:
    """Whether ``subject``'s trees queue events (``submit`` and ``flush``): those take the removal race."""
    tree = subject()
    try:
        return takes_submissions(tree)
    finally:
        targets.dispose(tree)


def run_concurrent(
    target_name: str, streams: int, seed: int, stream: int | None, rules: str | None, say: Callable[[str], None]
) -> ProductionReport:
    """``kvproof conform tree --concurrent``: the target fed as production feeds it; a target that cannot take the
    events of several ranks at once (no ``send_many``) is refused."""
    from ..harness.errors import CampaignInputError

    factory = targets.production_factory(target_name)
    probe = factory() if factory is not None else None
    takes_many = probe is not None and feeds_concurrently(probe)
    if probe is not None:
        targets.dispose(probe)
    if factory is None or not takes_many:
        raise CampaignInputError(
            f"--concurrent needs a target that takes events of several ranks at once (send_many); {target_name} does not"
        )
    rule_set, note = targets.resolve_rules(target_name, override=rules)
    say(f"conform tree --concurrent: {note}")
    return feed(factory, target_name, rule_set, streams, seed, stream, on_failure=say)

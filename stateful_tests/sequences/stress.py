"""Real-thread stress of a concurrent slot tracker: add / complete / free / read races, then a quiescent audit.

``stress(factory, threads, ops, seed)`` starts ``threads`` OS threads (from ``impl._sync``)
that hammer one tracker at once, with the interpreter's switch interval at 1 µs and, at
every ``yield_point`` the tracker marks, a forced thread switch with probability
``chaos``. Each thread draws its operations from ``random.Random((seed, thread))``:

- adds of ids from a small shared pool, so the same id is added by several threads at
  once (duplicate-id races) on different slots, with random prompts and hints;
- frees and completions of ids from the same pool, so a free races the add of its id
  (the window of sequences.md §10 item 4), a second free, or a re-add on another slot;
- reads (``loads``, ``potential_loads``, ``modeled_remaining_prefill_times``): torn
  combinations are allowed, but every value must be well formed;
- one thread churns a worker of its own (register, add, unregister) to race topology
  changes against the lifecycle.

Each thread counts its successful adds and frees per id. After every thread has joined
(quiescence) the audit requires:

- ``check()``: every must-never-break invariant of the write model, and the registry
  equal to the projection of the authoritative state (the may-lag invariants caught up);
- conservation: for every id of the pool, successful adds minus successful frees is 1 if
  the id is booked and 0 if not, so no request was lost or owned twice;
- no lost mark: a mark that succeeded after the add that booked a still-booked request
  returned has completed that request's prefill (``lost_marks``);
- the counters of ``statistics()`` when the tracker has them (how many frees and marks
  actually lost a race), so a run that never raced is visible.

A failure names the seed; ``kvproof check --only stress --seed S`` or
``stress(..., seed=S)`` replays the same operation streams (the interleaving itself is the
OS scheduler's, so a rare race may need a few seeds; ``sequences/tests/test_stress.py`` runs several).

Source: docs/sources.md#dynamo-sequences-readme "Torn reads are intentional", "Eventual consistency contract";
docs/sources.md#sequences-8-3 (concurrency experiments: 8 threads adding one id get one 201 and seven 409),
docs/sources.md#sequences-10 item 4.
"""

from __future__ import annotations

import contextlib
import functools
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...impl import _sync
from ...impl.slot_tracker import ConcurrentSlotTracker
from ...spec.primitives import WorkerWithDpRank
from ...spec.sequence_errors import MissingExpectedDuration, SequenceError
from ...spec.sequence_inputs import PrefillLoadHint, SequenceRequest, millis
from ...spec.sequence_invariants import write_model_violations

SLOTS = [WorkerWithDpRank(1, 0), WorkerWithDpRank(1, 1), WorkerWithDpRank(2, 0)]
CHURN_WORKER = 9


@dataclass
class SequenceStressReport:
    seed: int
    threads: int
    ops: int = 0
    adds: int = 0
    frees: int = 0
    marks: int = 0
    duplicates: int = 0
    reads: int = 0
    churn_cycles: int = 0
    seconds: float = 0.0
    statistics: Any = None
    problems: list[str] = field(default_factory=list)

    def summary_line(self) -> str:
        return (
            f"stress: seed={self.seed} threads={self.threads} ops={self.ops} adds={self.adds} frees={self.frees} "
            f"marks={self.marks} duplicate_rejections={self.duplicates} reads={self.reads} "
            f"churn_cycles={self.churn_cycles} seconds={self.seconds:.2f} problems={len(self.problems)}"
        )


class _Chaos:
    """Yield-point hooks: switch threads at a marked point with probability ``p`` (deterministic per thread)."""

    def __init__(self, p: float, seed: int) -> None:
        self.p = p
        self.seed = seed
        self.local = _sync.local()
        self.hits: Counter = Counter()

    def yield_point(self, name: str) -> None:
        rng = getattr(self.local, "rng", None)
        if rng is None:
            rng = self.local.rng = random.Random(f"{self.seed}/{_sync.current_thread_id()}")
        if rng.random() < self.p:
            self.hits[name] += 1
            time.sleep(0)


def _request(rng: random.Random, rid: str, worker: WorkerWithDpRank) -> SequenceRequest:
    blocks = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 4)))
    duration = rng.choice([None, 0, millis(rng.randint(1, 4000))])
    return SequenceRequest(rid, worker, blocks, rng.random() < 0.9, None, PrefillLoadHint(rng.choice([0, 5, 100]), duration))


def _check_reads(tracker: Any, now: int) -> list[str]:
    problems = []
    for rank, row in tracker.loads(now).items():
        if row.active_prefill_tokens < 0 or row.active_decode_blocks < 0 or row.active_requests < 0:
            problems.append(f"negative load {row!r} on {rank!r}")
    for rank, value in tracker.modeled_remaining_prefill_times(now).items():
        if not (isinstance(value, MissingExpectedDuration) or (isinstance(value, int) and value >= 0)):
            problems.append(f"bad modeled time {value!r} on {rank!r}")
    for rank, row in tracker.potential_loads((1, 2, 3), 7, now).items():
        if row.potential_decode_blocks < 0 or row.potential_prefill_tokens < 7:
            problems.append(f"bad potential load {row!r} on {rank!r}")
    return problems


def stress(
    factory: Callable[..., Any] = ConcurrentSlotTracker,
    threads: int = 8,
    ops: int = 300,
    seed: int = 1,
    ids: int = 10,
    chaos: float = 0.2,
) -> SequenceStressReport:
    """Run one stress round and audit the quiescent tracker; ``report.problems`` is empty when it passed."""
    tracker = factory(None)  # expiry off: every departure is a counted free
    tracker.register_worker(1, 0, 2, 0)
    tracker.register_worker(2, 0, 1, 0)
    pool = [f"q{i}" for i in range(ids)]
    clock = iter(range(1, 10**12))  # next() is atomic under the GIL: a shared fake clock in 1 ms ticks
    report = SequenceStressReport(seed, threads)
    per_thread: list[Counter] = [Counter() for _ in range(threads + 1)]
    logs: list[list[tuple[str, str, int, int]]] = [[] for _ in range(threads)]  # (kind, rid, started, returned) of successes
    errors: list[str] = []

    def now() -> int:
        return millis(next(clock))

    def worker(index: int) -> None:
        counts, log = per_thread[index], logs[index]
        try:
            rng = random.Random(f"{seed}/{index}")
            for _ in range(ops):
                kind = rng.choice(["add", "add", "add", "free", "free", "mark", "read"])
                rid = rng.choice(pool)
                counts["ops"] += 1
                try:
                    if kind == "add":
                        started = now()
                        tracker.add_request(_request(rng, rid, rng.choice(SLOTS)), started)
                        log.append(("add", rid, started, now()))
                        counts[("add", rid)] += 1
                        counts["adds"] += 1
                    elif kind == "free":
                        if tracker.free(rid, now()):
                            counts[("free", rid)] += 1
                            counts["frees"] += 1
                    elif kind == "mark":
                        started = now()
                        tracker.mark_prefill_completed(rid, started)
                        log.append(("mark", rid, started, now()))
                        counts["marks"] += 1
                    else:
                        errors.extend(_check_reads(tracker, now()))
                        counts["reads"] += 1
                except SequenceError as exc:
                    counts["duplicates"] += type(exc).__name__ == "DuplicateRequest"
        except Exception as exc:  # a crash of the tracker (not a typed rejection) fails the run
            errors.append(f"thread {index}: {type(exc).__name__}: {exc}")

    def churn() -> None:
        counts = per_thread[threads]
        try:
            rng = random.Random(f"{seed}/churn")
            for cycle in range(max(1, ops // 20)):
                tracker.register_worker(CHURN_WORKER, 0, 1, now())
                for k in range(rng.randint(0, 3)):
                    with contextlib.suppress(SequenceError):
                        tracker.add_request(_request(rng, f"z{cycle}.{k}", WorkerWithDpRank(CHURN_WORKER, 0)), now())
                tracker.unregister_worker(CHURN_WORKER)
                counts["churn"] += 1
        except Exception as exc:
            errors.append(f"churn: {type(exc).__name__}: {exc}")

    hooks = _Chaos(chaos, seed)
    previous = _sync.set_switch_interval(1e-6)
    _sync.install(hooks)
    started = time.perf_counter()
    try:
        running = [_sync.Thread(functools.partial(worker, i), name=f"stress-{i}") for i in range(threads)]
        running.append(_sync.Thread(churn, name="stress-churn"))
        for t in running:
            t.join()
    finally:
        _sync.install(None)
        _sync.set_switch_interval(previous)
    report.seconds = time.perf_counter() - started

    total = sum(per_thread, Counter())
    report.ops, report.adds, report.frees = total["ops"], total["adds"], total["frees"]
    report.marks, report.duplicates, report.reads, report.churn_cycles = (
        total["marks"],
        total["duplicates"],
        total["reads"],
        total["churn"],
    )
    report.problems += errors
    finished = [i for i in range(threads) if per_thread[i]["ops"] == ops]
    if len(finished) != threads:
        report.problems.append(f"only {len(finished)} of {threads} threads finished their {ops} operations")

    # ---- the quiescent audit
    try:
        tracker.check()
    except AssertionError as exc:
        report.problems.append(f"check(): {exc}")
    state = tracker.snapshot()
    report.problems += [f"write model: {v}" for v in write_model_violations(state)]
    for rid in pool:
        balance = total[("add", rid)] - total[("free", rid)]
        booked = rid in state.request_index
        held = sum(rid in seq.requests for seq in state.sequences.values())
        if balance != int(booked) or held != int(booked):
            report.problems.append(
                f"{rid}: {total[('add', rid)]} adds - {total[('free', rid)]} frees = {balance}, booked={booked}, held by {held} slots"
            )
    report.problems += lost_marks(state, [entry for log in logs for entry in log])
    if hasattr(tracker, "statistics"):
        report.statistics = tracker.statistics()
    return report


def lost_marks(state: Any, log: list[tuple[str, str, int, int]]) -> list[str]:
    """The marks that succeeded but did not stick: for each request still booked, a mark that *began*
    after the add that booked it *returned* must have completed its prefill (the fake clock orders the
    calls: every call reads a later tick than every call that returned before it began)."""
    problems = []
    for rid, slot in state.request_index.items():
        booked_at = max((end for kind, r, _, end in log if kind == "add" and r == rid), default=None)
        if booked_at is None:
            continue
        marked = [start for kind, r, start, _ in log if kind == "mark" and r == rid and start > booked_at]
        queued = {e.request_id for e in state.sequences[slot].prefill.order}
        if marked and rid in queued:
            problems.append(
                f"{rid}: marked at tick {marked[0]} after its add returned at tick {booked_at}, "
                "but its prefill is still queued (a lost mark)"
            )
    return problems


@dataclass
class SequenceStressRun:
    """``kvproof stress sequences``: the rounds' lines (said as each ends), their problems, and the replay line."""

    threads: int
    ops: int
    seed: int
    model: str
    rounds: list[SequenceStressReport] = field(default_factory=list)
    kind = "stress-sequences"
    skipped = ""

    @property
    def problems(self) -> int:
        return sum(len(r.problems) for r in self.rounds)

    @property
    def ok(self) -> bool:
        return not self.problems

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        if self.problems:
            say(
                f"replay: kvproof stress sequences --threads {self.threads} --ops {self.ops} --seed {self.seed} "
                f"--rounds {len(self.rounds)} --model {self.model}"
            )

    def summary_line(self) -> str:
        return f"stress sequences: rounds={len(self.rounds)} ops={sum(r.ops for r in self.rounds)} problems={self.problems}"

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "rounds": [{"seed": r.seed, "summary": r.summary_line(), "problems": r.problems} for r in self.rounds],
        }


def run_stress_command(
    factory: Callable[..., Any], model: str, threads: int, ops: int, seed: int, rounds: int, say: Callable[[str], None]
) -> SequenceStressRun:
    """``rounds`` rounds (seeds ``seed``, ``seed + 1``, ...), each on a fresh tracker of ``factory``."""
    run = SequenceStressRun(threads, ops, seed, model)
    for k in range(rounds):
        result = stress(factory, threads=threads, ops=ops, seed=seed + k)
        run.rounds.append(result)
        say(f"round {k + 1}/{rounds} seed={seed + k}: {result.summary_line()}")
        for p in result.problems[:5]:
            say(f"  problem: {p}")
    return run

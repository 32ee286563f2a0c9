"""A worker's removal racing its own queued events, asked of any indexer that queues events (kvproof issue 31, item 3).

An indexer with event threads (Dynamo's ``ThreadPoolIndexer``, kvproof's ``impl.indexer``) routes each
worker's events to one lane. A removal of the worker races the worker's own events still queued or
in flight: each may land before or after the removal (both are linearizable), but the events must
not leave blocks where no later removal reaches them. The law checked here:

    after the race has settled, the worker stores again and is removed again with nothing in
    flight; from then on no rank of the worker is credited with any block.

The pool before issue 31 broke it: the removal forgot the worker's route while an event of it
still waited behind the removal; that event landed after the removal, the worker's next event was
routed to another lane, and the later removal reached only that lane
(``tree.impl_mutants.ForgetsRouteWithEventsInFlight``, this check's negative control).

One **round** on a fresh tree: busy workers keep every lane working on long stores; the victim
stores a chain, its removal starts, and (where the target allows a call while a removal is under
way) the victim stores a second chain from the root while the removal waits (a store that stands
whether it lands before or after the removal); everything settles (``flush``); the victim
stores a third chain from the root (routed afresh), everything settles, the victim is removed, it
settles again, and every chain is read. The interleaving is the machine's, so a round is a
witness when it fails and no proof when it passes; a failure prints the round's seed and the
command that runs it again.

A target takes part if it queues events (``queue_door``): the pool's ``submit(worker_id, payload)``
returns at once and ``flush()`` waits until everything submitted before it was applied; the
standalone indexer's ``send_unfenced`` and ``settle`` are the same door without the pool's
acknowledgements (``settle`` also takes an event as dropped: Dynamo's indexer stops listening to a
worker it unregistered). A target whose ``submits_during_removal`` is False
(the standalone indexer: a rank's ZMQ socket is not shared between threads) gets its racing events
sent just before the removal instead, still in flight when the removal arrives.
"""

from __future__ import annotations

import random
import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...spec.events import KvCacheEvent, Stored, encode_event
from ...spec.primitives import Block
from ..harness import targets

BUSY_WORKERS = 8
"""Workers whose long stores keep the lanes busy (at least one per lane of a pool of up to 8 threads)."""

BUSY_STORES = 50
"""Stores of each busy worker, a chain of ``CHAIN_BLOCKS`` blocks each: enough work that the victim's removal waits
behind it on its lane (a few milliseconds per lane in an interpreted pool)."""

CHAIN_BLOCKS = 4
"""Blocks per store of the victim."""

VICTIM = 1_000
"""The victim's worker id (the busy workers are 1..BUSY_WORKERS)."""

Factory = Callable[[], Any]


Door = tuple[Callable[[int, bytes], object], Callable[[], None]]
"""How a round queues an event (returning at once) and waits for everything it queued."""


def queue_door(tree: Any) -> Door | None:
    """The tree's door for queued events: ``(submit, flush)`` of a pool, ``(send_unfenced, settle)`` of the standalone
    indexer, or None for a tree that applies each event before it returns."""
    for send, wait in (("submit", "flush"), ("send_unfenced", "settle")):
        door = getattr(tree, send, None), getattr(tree, wait, None)
        if callable(door[0]) and callable(door[1]):
            return door[0], door[1]
    return None


def takes_submissions(tree: Any) -> bool:
    """Whether a tree queues events (``queue_door``)."""
    return queue_door(tree) is not None


def chain(start: int, count: int, parent: int | None) -> tuple[bytes, list[int]]:
    """A store of ``count`` blocks with local hashes ``start..`` and external hashes ``10**6 + start..`` below
    ``parent``; return the payload and the chain's local hashes (the query that reads it)."""
    blocks = tuple(Block(start + i, 10**6 + start + i) for i in range(count))
    return encode_event(KvCacheEvent(start, Stored(parent, blocks))), [b.local for b in blocks]


def busy_stores(worker: int) -> list[bytes]:
    """A busy worker's stores: one chain from the root, ``CHAIN_BLOCKS`` blocks per store, ``BUSY_STORES`` stores."""
    base, payloads, parent = 10**7 * worker, [], None
    for k in range(BUSY_STORES):
        payload, _ = chain(base + k * CHAIN_BLOCKS, CHAIN_BLOCKS, parent)
        payloads.append(payload)
        parent = 10**6 + base + (k + 1) * CHAIN_BLOCKS - 1
    return payloads


@dataclass
class RoundVerdict:
    """One round: the seed it ran with and, if the law broke, what the victim was still credited with."""

    seed: int
    late_landed: bool  # the racing store stood after the race settled: it landed after the removal (the window was hit)
    credited: dict[str, int] = field(default_factory=dict)  # "rank on chain" -> blocks still credited

    @property
    def ok(self) -> bool:
        return not self.credited


class Remover(threading.Thread):
    """``remove_worker(worker)`` on a thread of its own (the pool's removal waits for its lane); ``started`` is set
    just before the call, and an error of the call is kept for the round to raise."""

    def __init__(self, tree: Any, worker: int) -> None:
        super().__init__(name="kvproof-race-remover", daemon=True)
        self.tree, self.worker = tree, worker
        self.started = threading.Event()
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        self.started.set()
        try:
            self.tree.remove_worker(self.worker)
        except BaseException as exc:  # raised again on the round's thread by ``join``
            self.error = exc

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self.error is not None:
            raise self.error


def victim_credits(tree: Any, query: list[int]) -> dict[tuple[int, int], int]:
    """Each rank of the victim that ``query`` credits, with its blocks."""
    return {(rank[0], rank[1]): score for rank, score in tree.find_matches(query).scores.items() if rank[0] == VICTIM and score}


def race_round(factory: Factory, seed: int) -> RoundVerdict:
    """Run one round on a fresh tree of ``factory`` (see the module docstring)."""
    rng = random.Random(seed)
    tree = factory()
    try:
        door = queue_door(tree)
        if door is None:
            raise TypeError(f"{type(tree).__name__} does not queue events: it has no submit/flush or send_unfenced/settle")
        submit, flush = door
        for worker in range(1, BUSY_WORKERS + 1):
            for payload in busy_stores(worker):
                submit(worker, payload)
        first, first_query = chain(10**5, CHAIN_BLOCKS, None)
        submit(VICTIM, first)
        late, late_query = chain(3 * 10**5, CHAIN_BLOCKS, None)
        if getattr(tree, "submits_during_removal", True):
            remover = Remover(tree, VICTIM)
            remover.started.wait()
            time.sleep(rng.uniform(0.0005, 0.002))  # the removal is queued by now, behind the busy stores
            submit(VICTIM, late)
            remover.join()
        else:
            submit(VICTIM, late)
            tree.remove_worker(VICTIM)
        flush()
        late_landed = bool(victim_credits(tree, late_query))
        second, second_query = chain(2 * 10**5, CHAIN_BLOCKS, None)
        submit(VICTIM, second)
        flush()
        tree.remove_worker(VICTIM)
        flush()
        verdict = RoundVerdict(seed, late_landed)
        for name, query in (("first", first_query), ("late", late_query), ("second", second_query)):
            for (worker, dp_rank), score in victim_credits(tree, query).items():
                verdict.credited[f"rank ({worker}, {dp_rank}) on the {name} chain"] = score
        return verdict
    finally:
        targets.dispose(tree)


@dataclass
class RaceReport:
    """Every round of a run: which broke the law."""

    subject: str
    seed: int
    rounds: int = 0
    late_landed: int = 0
    failures: list[RoundVerdict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary_line(self) -> str:
        return (
            f"removal race: rounds={self.rounds} late_store_after_removal={self.late_landed} "
            f"survived_removal={len(self.failures)}"
        )

    def report(self, verdict: RoundVerdict) -> str:
        """One failed round: what the removed worker was still credited with, and how to run the round again."""
        held = "; ".join(f"{what}: {blocks} blocks" for what, blocks in verdict.credited.items())
        return (
            f"REMOVAL RACE {self.subject}: seed={verdict.seed}: worker {VICTIM} was removed with nothing in flight, "
            f"after its removal had raced its own queued events, and is still credited ({held})\n"
            f"  run it again: kvproof conform tree --concurrent --target {shlex.quote(self.subject)} --seed {verdict.seed} "
            f"(the interleaving is the machine's: it may take a few runs)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "seed": self.seed,
            "rounds": self.rounds,
            "late_landed": self.late_landed,
            "seconds": round(self.seconds, 3),
            "failures": [{"seed": v.seed, "credited": v.credited} for v in self.failures],
        }


def race_removals(
    factory: Factory, subject: str, rounds: int, seed: int, on_failure: Callable[[str], None] | None = None
) -> RaceReport:
    """Run ``rounds`` rounds, round ``k`` with seed ``seed + k``; report the ones that broke the law."""
    started = time.perf_counter()
    report = RaceReport(subject, seed)
    for k in range(rounds):
        verdict = race_round(factory, seed + k)
        report.rounds += 1
        report.late_landed += verdict.late_landed
        if not verdict.ok:
            report.failures.append(verdict)
            if on_failure is not None and len(report.failures) <= 3:
                on_failure(report.report(verdict))
    report.seconds = time.perf_counter() - started
    return report

"""A router simulation: a request trace turned into the inputs a KV-aware router receives, in order.

``traffic.Fleet`` holds the engines (``workers`` workers of exactly ``dp_ranks`` ranks, each rank
a prefix cache of ``capacity`` blocks, least recently used first out, touched tail first so shared
heads stay). ``RouterSim.steps`` replays requests (``traffic.mooncake_requests``: any file of the
Mooncake format) on the trace's own time axis and yields, per request:

1. ``Ask``: the routing query (the prompt's block hashes) with the **ground truth**, the number
   of leading prompt blocks each rank holds: what a tree may credit at most (``spec/contract.py``:
   a score is never more than the rank holds). It comes before the decision, so every tree is
   asked in the state the router would be in.
2. ``Route``: the decision of the plan's ``policy``. ``truth`` and ``tree`` credit each rank with a
   cached prefix, the one it really holds (the ground truth) or the one a tree's own
   ``find_matches`` scores (``RouterSim`` takes the scorer), and pick the rank of least cost
   ``blocks to prefill + active requests`` (prefix first, load next: without the load term a
   prefix block every request shares would send the whole trace to one rank), ties to the
   longer credit, then the first rank. ``round-robin`` takes the ranks in turn. The hit rate
   counts what the chosen rank really holds, whatever the policy believed.
3. The tree operations (``streams.Op``) the chosen rank sends: the prompt blocks it lacks stored
   under the last one it holds, the response's blocks stored ``decode_batch`` at a time as
   extensions, and the blocks it evicts to fit its capacity as one ``removed`` batch.
4. The slot tracker's calls (``TrackerCall``) on the time axis, in nanoseconds: the request's
   ``add`` at arrival with a prefill hint (its uncached tokens; a modeled duration of those tokens
   at the rank's ``prefill_tokens_per_s``), ``mark`` when the rank's prefill queue (one prefill at a
   time, at that rate) has served it, and ``free`` when its output tokens are decoded at
   ``decode_tokens_per_s``. Calls due before the next arrival come before it; the rest at the end.
   Ranks are registered at time 0.

Everything is a pure function of the plan and the requests (and, for ``tree``, of the scorer).
``RouterSim`` also keeps the figures a maintainer reads: events by kind, hit rate (cached prompt
blocks over prompt blocks of the routing decisions), requests and peak active requests per rank,
and the active requests of each rank over time (``samples``).

Source: docs/sources.md#kvproof-traffic ("Real traffic"); docs/sources.md#mooncake (Mooncake FAST'25 traces,
Apache-2.0).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ...spec.events import Removed, Stored
from ...spec.primitives import Rank, WorkerWithDpRank
from ...spec.sequence_inputs import NANOS_PER_SEC, PrefillLoadHint, SequenceRequest
from .streams import EventOp, Op
from .traffic import NO_CHURN, Fleet, Request

POLICIES = ("truth", "tree", "round-robin")
"""How a request picks its rank (see the module docstring)."""

Scorer = Callable[[list[int]], dict[tuple[int, int], int]]


class RouterPlanError(ValueError):
    """A router plan that cannot run (a count below 1, an unknown policy, a rate that is not positive)."""


@dataclass(frozen=True)
class RouterPlan:
    """The fleet and the router: sizes, policy, and the rates that put prefill and decode on the time axis."""

    workers: int = 8
    capacity: int = 2000
    dp_ranks: int = 1
    policy: str = "truth"
    prefill_tokens_per_s: float = 20_000.0  # per rank, one prefill at a time
    decode_tokens_per_s: float = 40.0  # per request
    decode_batch: int = 1  # response blocks per extension event
    block_tokens: int = 512

    def check(self) -> None:
        """Raise ``RouterPlanError`` naming the first bad field."""
        for name in ("workers", "capacity", "dp_ranks", "decode_batch", "block_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RouterPlanError(f"{name} must be an integer >= 1, got {value!r}")
        if self.policy not in POLICIES:
            raise RouterPlanError(f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        for name in ("prefill_tokens_per_s", "decode_tokens_per_s"):
            if not getattr(self, name) > 0:
                raise RouterPlanError(f"{name} must be > 0, got {getattr(self, name)!r}")


@dataclass(frozen=True, slots=True)
class Ask:
    """The routing query of request ``index``, asked before it is routed, and what each rank really holds of it."""

    index: int
    query: tuple[int, ...]
    truth: dict[tuple[int, int], int]  # ranks holding a non-empty prefix -> its length in blocks


@dataclass(frozen=True, slots=True)
class Route:
    """Request ``index`` went to ``rank``, which held ``cached`` of its ``blocks`` prompt blocks."""

    index: int
    rank: Rank
    cached: int
    blocks: int


@dataclass(frozen=True, slots=True)
class TrackerCall:
    """One slot tracker call at ``at`` ns: ``register`` (worker, dp size), ``add`` (request), ``mark``, ``free`` (rid)."""

    at: int
    kind: str
    rid: str = ""
    request: SequenceRequest | None = None
    worker_id: int = 0
    dp_size: int = 0


Step = Ask | Route | Op | TrackerCall


def apply_tracker_call(tracker: Any, call: TrackerCall) -> object:
    """Make ``call`` on ``tracker`` (any of ``sequences.model.TARGETS``); return what it returned."""
    if call.kind == "register":
        return tracker.register_worker(call.worker_id, 0, call.dp_size, call.at)
    if call.kind == "add":
        return tracker.add_request(call.request, call.at)
    if call.kind == "mark":
        return tracker.mark_prefill_completed(call.rid, call.at)
    return tracker.free(call.rid, call.at)


def nanos(seconds: float) -> int:
    return round(seconds * NANOS_PER_SEC)


@dataclass
class RouterStats:
    """What the replay did: requests, events by kind, the routing decisions' hits, per-rank load."""

    requests: int = 0
    events: Counter[str] = field(default_factory=Counter)  # stored, removed (batches), stored_blocks, removed_blocks
    prompt_blocks: int = 0
    cached_blocks: int = 0
    routed: Counter[tuple[int, int]] = field(default_factory=Counter)
    peak: Counter[tuple[int, int]] = field(default_factory=Counter)  # most active requests at once
    samples: list[tuple[float, tuple[int, int], int]] = field(default_factory=list)  # (seconds, rank, active)

    @property
    def hit_rate(self) -> float:
        return self.cached_blocks / self.prompt_blocks if self.prompt_blocks else 0.0

    def count(self, op: Op) -> None:
        if isinstance(op, EventOp) and isinstance(op.event.data, Stored):
            self.events["stored"] += 1
            self.events["stored_blocks"] += len(op.event.data.blocks)
        elif isinstance(op, EventOp) and isinstance(op.event.data, Removed):
            self.events["removed"] += 1
            self.events["removed_blocks"] += len(op.event.data.block_hashes)
        else:
            self.events[type(op).__name__] += 1

    @property
    def event_count(self) -> int:
        return sum(v for k, v in self.events.items() if not k.endswith("_blocks"))


class RouterSim:
    """Replay requests through a fleet under a plan (see the module docstring)."""

    def __init__(self, plan: RouterPlan, scorer: Scorer | None = None) -> None:
        plan.check()
        if plan.policy == "tree" and scorer is None:
            raise RouterPlanError("the tree policy routes by a tree's scores: pass a scorer")
        self.plan, self.scorer = plan, scorer
        self.fleet = Fleet(
            0, plan.workers, plan.capacity, NO_CHURN, dp_ranks=plan.dp_ranks, exact_dp=True, decode_batch=plan.decode_batch
        )
        self.ranks = self.fleet.ranks()
        self.active: Counter[tuple[int, int]] = Counter()  # requests added, not freed
        self.prefill_free_at: dict[tuple[int, int], int] = {tuple(r): 0 for r in self.ranks}  # type: ignore[misc]
        self.due: list[tuple[int, int, TrackerCall]] = []
        self.seq = 0
        self.stats = RouterStats()

    def truth(self, request: Request) -> dict[tuple[int, int], int]:
        held = {(r.worker_id, r.dp_rank): self.fleet.held_prefix(r, request.prompt) for r in self.ranks}
        return {rank: n for rank, n in held.items() if n}

    def choose(self, index: int, query: list[int], truth: dict[tuple[int, int], int]) -> Rank:
        if self.plan.policy == "round-robin":
            return self.ranks[index % len(self.ranks)]
        if self.plan.policy == "tree":
            assert self.scorer is not None  # checked in __init__
            credit = self.scorer(query)
        else:
            credit = truth
        blocks = len(query)

        def cost(i: int) -> tuple[int, int, int]:
            key = (self.ranks[i].worker_id, self.ranks[i].dp_rank)
            held = min(credit.get(key, 0), blocks)
            return blocks - held + self.active[key], -held, i

        return self.ranks[min(range(len(self.ranks)), key=cost)]

    def _later(self, call: TrackerCall) -> None:
        self.seq += 1
        heapq.heappush(self.due, (call.at, self.seq, call))

    def _due(self, until: int | None) -> Iterator[TrackerCall]:
        while self.due and (until is None or self.due[0][0] <= until):
            call = heapq.heappop(self.due)[2]
            if call.kind == "free":
                assert call.request is not None
                rank = (call.request.worker.worker_id, call.request.worker.dp_rank)
                self.active[rank] -= 1
                self.stats.samples.append((call.at / NANOS_PER_SEC, rank, self.active[rank]))
            yield call

    def steps(self, requests: Iterable[Request]) -> Iterator[Step]:
        """The router's inputs for ``requests``, in order (see the module docstring)."""
        stats = self.stats
        for worker, size in sorted(self.fleet.workers.items()):
            yield TrackerCall(0, "register", worker_id=worker, dp_size=size)
        for index, request in enumerate(requests):
            now = nanos(request.time_s)
            yield from self._due(now)
            query = [b.local for b in request.prompt]
            truth = self.truth(request)
            yield Ask(index, tuple(query), truth)
            rank = self.choose(index, query, truth)
            key = (rank.worker_id, rank.dp_rank)
            cached = truth.get(key, 0)
            stats.requests += 1
            stats.prompt_blocks += len(request.prompt)
            stats.cached_blocks += cached
            stats.routed[key] += 1
            yield Route(index, rank, cached, len(request.prompt))
            for op in self.fleet.serve(request, rank):
                stats.count(op)
                yield op
            yield from self._track(index, request, rank, cached, now)

    def drain(self) -> Iterator[TrackerCall]:
        """The tracker calls still due after the last request (marks and frees), in time order."""
        yield from self._due(None)

    def _track(self, index: int, request: Request, rank: Rank, cached: int, now: int) -> Iterator[TrackerCall]:
        plan, key = self.plan, (rank.worker_id, rank.dp_rank)
        tokens = request.input_tokens or plan.block_tokens * len(request.prompt)
        uncached = max(0, tokens - cached * plan.block_tokens)
        duration = nanos(uncached / plan.prefill_tokens_per_s)
        rid = f"r{index}"
        sequence = SequenceRequest(
            rid,
            WorkerWithDpRank(*key),
            tuple(b.ext for b in request.prompt),
            True,
            request.output_tokens,
            PrefillLoadHint(uncached, duration),
        )
        yield TrackerCall(now, "add", rid, sequence)
        self.active[key] += 1
        self.stats.peak[key] = max(self.stats.peak[key], self.active[key])
        self.stats.samples.append((now / NANOS_PER_SEC, key, self.active[key]))
        done = max(now, self.prefill_free_at[key]) + duration
        self.prefill_free_at[key] = done
        self._later(TrackerCall(done, "mark", rid, sequence))
        self._later(TrackerCall(done + nanos(request.output_tokens / plan.decode_tokens_per_s), "free", rid, sequence))


def replay(requests: Iterable[Request], plan: RouterPlan, scorer: Scorer | None = None) -> tuple[list[Step], RouterStats]:
    """Every step of ``requests`` under ``plan``, the drained tracker calls included, and the figures."""
    sim = RouterSim(plan, scorer)
    steps = list(sim.steps(requests))
    steps += sim.drain()
    return steps, sim.stats

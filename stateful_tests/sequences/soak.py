"""The churn soak of a slot tracker: hours of simulated requests, and no collection that grows without bound.

``run_tracker_soak`` drives a tracker (the reference or the concurrent one) with a
deterministic load on a simulated clock, in epochs: workers register (one or two dp ranks);
requests arrive (Poisson), are added on a rank with prompts that share system prefixes,
complete their prefill (``mark_prefill_completed``) and are freed when their decode ends; a
share of them is never freed (a client that went away) and must be expired
(``force_expiry`` every 30 simulated seconds, the tracker's own expiry of 300 s); workers leave
(``unregister_worker``) and come back under their id or a fresh one.

``Load.live()`` is the tree-independent measure of live content: the requests booked (added,
not freed, not dropped with their worker, and for the never-freed ones not yet past the
expiry plus one check interval), their blocks, and the ranks registered. After each epoch a
census (``harness.census``) of the tracker and, optionally, the tracemalloc size of what
kvproof's layers allocated are sampled. The laws:

- **Size laws**: request records (over every slot) <= booked requests; index entries <=
  booked requests; slots and registry entries <= registered ranks.
- **No trend** (``census.trends``): every figure per unit of live content, first window after
  the warm-up to the last, within the slack.

Each law has a leaking twin in ``LEAKY`` (``tests/test_soak.py``).

Source: docs/sources.md#kvproof-robustness ("Resources": the slot tracker family in the churn soak).
"""

from __future__ import annotations

import heapq
import random
import re
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...impl.slot_tracker import ConcurrentSlotTracker
from ...reference.sequences import ActiveSequences
from ...reference.sequences import SlotTracker as ReferenceSlotTracker
from ...spec.primitives import WorkerWithDpRank
from ...spec.sequence_inputs import PrefillLoadHint, SequenceRequest
from ...spec.sequences import CHECK_EXPIRY_FREQUENCY, DEFAULT_EXPIRY
from ..harness import census
from ..harness.census import GrowthVerdict

NANOS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class TrackerLive:
    booked: int
    blocks: int
    ranks: int


@dataclass(frozen=True)
class TrackerPlan:
    epochs: int = 12
    epoch_s: float = 300.0
    rate: float = 4.0
    workers: int = 4
    lost: float = 0.05  # share of requests never freed
    leave: float = 0.003  # per request: a worker leaves (and comes back)
    warmup: int = 2
    window: int = 3
    slack: float = 0.25
    traced: bool = True


@dataclass
class _Booking:
    rank: WorkerWithDpRank
    blocks: int
    started: int
    lost: bool


class Load:
    """The deterministic load: workers, requests on a clock, and what it believes is booked."""

    def __init__(self, seed: int, plan: TrackerPlan) -> None:
        self.rng = random.Random(f"kvproof-tracker-soak:{seed}")
        self.plan = plan
        self.workers: dict[int, int] = {}
        self.next_worker = 1
        self.booked: dict[str, _Booking] = {}
        self.due: list[tuple[int, int, str, str]] = []  # (time, seq, "mark" | "free", rid)
        self.seq = 0
        self.systems = [tuple(self.rng.getrandbits(40) for _ in range(self.rng.randint(2, 6))) for _ in range(4)]
        self.requests = 0

    def ranks(self) -> list[WorkerWithDpRank]:
        return [WorkerWithDpRank(w, dp) for w, n in sorted(self.workers.items()) for dp in range(n)]

    def live(self, now: int) -> TrackerLive:
        horizon = DEFAULT_EXPIRY + CHECK_EXPIRY_FREQUENCY
        kept = [b for b in self.booked.values() if not b.lost or now - b.started < horizon]
        return TrackerLive(len(kept), sum(b.blocks for b in kept), sum(self.workers.values()))

    def join(self, tracker: Any, now: int, worker: int | None = None) -> None:
        wid = self.next_worker if worker is None else worker
        self.next_worker = max(self.next_worker, wid + 1)
        self.workers[wid] = self.rng.randint(1, 2)
        tracker.register_worker(wid, 0, self.workers[wid], now)

    def leave(self, tracker: Any, now: int) -> None:
        wid = self.rng.choice(sorted(self.workers))
        tracker.unregister_worker(wid)
        del self.workers[wid]
        for rid in [r for r, b in self.booked.items() if b.rank.worker_id == wid]:
            del self.booked[rid]
        self.join(tracker, now, wid if self.rng.random() < 0.5 else None)

    def _later(self, at: int, what: str, rid: str) -> None:
        self.seq += 1
        heapq.heappush(self.due, (at, self.seq, what, rid))

    def run_until(self, tracker: Any, now: int, end: int) -> int:
        """Serve requests and their due marks and frees from ``now`` to ``end``; return the new time."""
        rng = self.rng
        while True:
            arrival = now + int(rng.expovariate(self.plan.rate) * NANOS)
            while self.due and self.due[0][0] <= min(arrival, end):
                at, _, what, rid = heapq.heappop(self.due)
                booking = self.booked.get(rid)
                if booking is None:
                    continue  # its worker left
                if what == "mark":
                    tracker.mark_prefill_completed(rid, at)
                else:
                    tracker.free(rid, at)
                    del self.booked[rid]
            if arrival > end:
                return end
            now = arrival
            if now // (30 * NANOS) != (now - 1) // (30 * NANOS):
                tracker.force_expiry(now)
            self._add(tracker, now)
            if rng.random() < self.plan.leave:
                self.leave(tracker, now)

    def _add(self, tracker: Any, now: int) -> None:
        rng = self.rng
        self.requests += 1
        rid = f"r{self.requests}"
        rank = rng.choice(self.ranks())
        blocks = rng.choice(self.systems) + tuple(rng.getrandbits(40) for _ in range(rng.randint(1, 12)))
        hint = PrefillLoadHint(rng.randint(100, 4000), rng.randint(50, 2000) * 1_000_000)
        tracker.add_request(SequenceRequest(rid, rank, blocks, True, rng.randint(16, 512), hint), now)
        lost = rng.random() < self.plan.lost
        self.booked[rid] = _Booking(rank, len(blocks), now, lost)
        self._later(now + int(rng.uniform(0.1, 2.0) * NANOS), "mark", rid)
        if not lost:
            self._later(now + int(rng.uniform(2.0, 90.0) * NANOS), "free", rid)


# ----------------------------------------------------------------------------- laws


@dataclass(frozen=True)
class TrackerSizeLaw:
    name: str
    pattern: re.Pattern[str]  # the census figures summed
    bound: Callable[[TrackerLive], int]
    statement: str


SIZE_LAWS = (
    TrackerSizeLaw(
        "request records <= booked requests",
        re.compile(r"len \w*Sequences\.requests"),
        lambda v: v.booked,
        "a freed, expired or unregistered request leaves no record on any slot",
    ),
    TrackerSizeLaw(
        "index entries <= booked requests",
        re.compile(r"len (\w+\.index|_RequestIndex\._owner)"),
        lambda v: v.booked,
        "the request index names only booked requests",
    ),
    TrackerSizeLaw(
        "slots <= registered ranks",
        re.compile(r"len \w+\._?slots"),
        lambda v: v.ranks,
        "an unregistered worker's slots are dropped",
    ),
    TrackerSizeLaw(
        "registry entries <= registered ranks",
        re.compile(r"len \w+\._?registry"),
        lambda v: v.ranks,
        "an unregistered worker's registry views are dropped",
    ),
)


def _figure(figures: dict[str, int], pattern: re.Pattern[str]) -> int | None:
    hits = [v for k, v in figures.items() if pattern.fullmatch(k)]
    return sum(hits) if hits else None


@dataclass
class TrackerSample:
    epoch: int
    now: int
    live: TrackerLive
    figures: dict[str, int]
    traced_bytes: int


def size_problems(samples: list[TrackerSample]) -> dict[str, str]:
    """The first sample breaking each size law, by law name."""
    problems: dict[str, str] = {}
    for s in samples:
        for law in SIZE_LAWS:
            q = _figure(s.figures, law.pattern)
            if law.name not in problems and q is not None and q > law.bound(s.live):
                problems[law.name] = f"epoch {s.epoch}: {q} > {law.bound(s.live)} ({law.statement})"
    return problems


@dataclass
class TrackerSoakReport(GrowthVerdict):
    target: str
    plan: TrackerPlan
    samples: list[TrackerSample] = field(default_factory=list)
    sizes: dict[str, str] = field(default_factory=dict)
    trends: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    kind = "soak-sequences"
    skipped = ""

    @property
    def ok(self) -> bool:
        return not self.grew

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        for line in self.growth_lines():
            say(line)

    def summary_line(self) -> str:
        p = self.plan
        verdict = (
            f"GROWTH: {len(self.sizes)} size laws broken, {len(self.trends)} figures trend up" if self.grew else "growth=none"
        )
        return (
            f"soak: family=sequences target={self.target} epochs={p.epochs} sim={p.epochs * p.epoch_s / 3600:.2f}h "
            f"{verdict} ({self.seconds:.0f} s)"
        )

    def to_json(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {
            "target": self.target,
            "plan": asdict(self.plan),
            "sizes": self.sizes,
            "trends": self.trends,
            "samples": [asdict(s) for s in self.samples],
        }

    def line(self, s: TrackerSample) -> str:
        records = _figure(s.figures, SIZE_LAWS[0].pattern)
        index = _figure(s.figures, SIZE_LAWS[1].pattern)
        return (
            f"epoch {s.epoch:>3} t={s.now / NANOS / 3600:5.2f}h live: booked={s.live.booked} blocks={s.live.blocks} "
            f"ranks={s.live.ranks} | records={records} index={index} traced={s.traced_bytes / 1024:,.0f}KiB"
        )


def run_tracker_soak(
    factory: Callable[[], Any],
    name: str,
    plan: TrackerPlan = TrackerPlan(),
    seed: int = 1,
    each: Callable[[TrackerSoakReport, TrackerSample], None] | None = None,
) -> TrackerSoakReport:
    """Drive one tracker through ``plan.epochs`` epochs of requests and churn and judge the samples."""
    report = TrackerSoakReport(name, plan)
    started = time.perf_counter()
    tracing = plan.traced and not tracemalloc.is_tracing()
    if tracing:
        tracemalloc.start(1)
    try:
        tracker, load = factory(), Load(seed, plan)
        now = NANOS
        for _ in range(plan.workers):
            load.join(tracker, now)
        for epoch in range(1, plan.epochs + 1):
            now = load.run_until(tracker, now, int(epoch * plan.epoch_s * NANOS))
            tracker.force_expiry(now)
            figures = census.take(tracker).quantities()
            s = TrackerSample(epoch, now, load.live(now), figures, census.layer_bytes() if plan.traced else 0)
            report.samples.append(s)
            if each is not None:
                each(report, s)
    finally:
        if tracing:
            tracemalloc.stop()
    report.sizes = size_problems(report.samples)
    traced = all(s.traced_bytes for s in report.samples[plan.warmup :])
    series = [
        ({**s.figures, **({"traced bytes": s.traced_bytes} if traced else {})}, s.live.booked + s.live.blocks + s.live.ranks + 1)
        for s in report.samples
    ]
    report.trends = census.trends(series, plan.warmup, plan.window, plan.slack)
    report.seconds = time.perf_counter() - started
    return report


# ----------------------------------------------------------------------------- leaking twins


class KeepsIndexOfUnregistered(ReferenceSlotTracker):
    """Leaks: ``unregister_worker`` keeps the gone ranks' index entries (caught: index entries <= booked)."""

    def unregister_worker(self, worker_id: object) -> None:
        kept = dict(self.index)
        super().unregister_worker(worker_id)
        self.index.update(kept)


class KeepsRegistryOfUnregistered(ReferenceSlotTracker):
    """Leaks: ``unregister_worker`` keeps the gone ranks' registry views (caught: registry entries <= registered ranks)."""

    def unregister_worker(self, worker_id: object) -> None:
        kept = dict(self.registry)
        super().unregister_worker(worker_id)
        self.registry.update({r: v for r, v in kept.items() if r not in self.registry})


class _NeverExpiringSequences(ActiveSequences):
    def force_expiry(self, now: int, expiry: int | None) -> tuple[list[str], list[Any]]:
        return [], []


class NeverExpires(ReferenceSlotTracker):
    """Leaks: no slot ever expires a request, so requests nobody frees stay (caught: request records <= booked)."""

    sequences_class = _NeverExpiringSequences


class KeepsFreedIds(ConcurrentSlotTracker):
    """Leaks: the concurrent tracker remembers every freed id in a set (caught: a figure that trends up)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.freed: set[str] = set()

    def free(self, request_id: object, now: object, worker: object = None) -> bool:
        self.freed.add(str(request_id))
        return super().free(request_id, now, worker)


LEAKY: dict[str, tuple[Callable[[], Any], str]] = {
    "KeepsIndexOfUnregistered": (KeepsIndexOfUnregistered, "index entries <= booked requests"),
    "KeepsRegistryOfUnregistered": (KeepsRegistryOfUnregistered, "registry entries <= registered ranks"),
    "NeverExpires": (NeverExpires, "request records <= booked requests"),
    "KeepsFreedIds": (KeepsFreedIds, "trend: len KeepsFreedIds.freed"),
}
"""Each leaking twin and the law that must catch it."""

TRACKERS: dict[str, Callable[[], Any]] = {
    "reference": ReferenceSlotTracker,
    "impl": ConcurrentSlotTracker,
    **{name: f for name, (f, _) in LEAKY.items()},
}


def run_soak_command(target_name: str, plan: TrackerPlan, seed: int, say: Callable[[str], None]) -> TrackerSoakReport:
    """``kvproof soak --family sequences``: a tracker (or a leaking twin) by name, one line per epoch said as it ends."""
    from ..harness.errors import CampaignInputError

    factory = TRACKERS.get(target_name)
    if factory is None:
        raise CampaignInputError(f"unknown tracker {target_name!r}: use {', '.join(TRACKERS)}", param="--target")
    return run_tracker_soak(factory, target_name, plan, seed, each=lambda r, s: say(r.line(s)))

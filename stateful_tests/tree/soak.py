"""The churn soak: hours of simulated traffic through a tree, and laws that no collection grows without bound.

``run_soak`` drives a tree with ``traffic.Fleet`` serving ``traffic.synthetic_requests`` (or
any request source) in *epochs* of simulated time: stores, decode extensions, LRU evictions,
holes, ``cleared``, ``clear_all_blocks``, worker removal and re-join (same id, fresh id),
``remove_worker_dp_rank`` and rejected stores. After each epoch it samples:

- the fleet's live content (``traffic.Live``: what the engines hold, independent of the tree);
- a census of everything the tree holds (``harness.census``: every object and container
  reachable from it, by type and by where it sits, walked rather than named);
- the tree's own shape: reachable nodes, and among them the dead ones (no holder);
- the tracemalloc size of what is allocated from kvproof's layers (spec, reference, impl)
  and still live, so that a leak outside the walked structure is seen too.

The laws, each with a leaking twin in ``LEAKY`` that it must catch (``tests/test_soak.py``):

- **Size laws** (``SIZE_LAWS``): at every sample, a size is at most a function of the live
  content: lookup entries <= live (rank, block) pairs; registered ranks <= ranks that have
  announced themselves (sent an event since they joined, or were last removed or cleared);
  the (rank, block) pairs the reachable nodes credit <= live pairs; reachable nodes <= live
  blocks + 1; routing entries (the pool) <= workers in the fleet; queued tasks = 0 at
  quiescence.
- **No trend** (``trend_problems``, ``census.trends``): with the live content steady, every
  census figure, the traced bytes and the hidden bytes, per live pair, in the last ``window``
  epochs is at most ``1 + slack`` times its value in the first ``window`` epochs after the
  warm-up (plus a small floor). Among them ``detached nodes`` (node objects still referenced,
  by lookups or split links, that the tree no longer reaches) and ``hidden bytes`` (traced
  bytes less ``sys.getsizeof`` of everything walked: what a leak outside the structure, a
  module-level cache, would raise).

Found by this soak, and fixed (issue 12): kvproof's reference and concurrent tree kept a node
that lost its last holder until a store passed its first local hash, so fresh traffic piled up
dead leaves under held prefixes (100,000 store-evict cycles: +97 MiB and +343 MiB; the Dynamo
binding, which releases them at eviction since PR #14878, +0.3 MiB); both now release a leaf at
eviction, as 1.6 does (``_release_if_dead``). And the thread pool never forgot a worker's route;
``remove_worker`` now does. Growth that remains by design: the rule sets of releases before 1.6
(``reuse-dead-nodes``, ``per-block-nodes``) keep dead nodes as those releases did, which
``beyond_dead_nodes`` (``kvproof soak --tolerate-dead-nodes``) sets aside.

Source: docs/sources.md#kvproof-robustness ("Resources": a churn soak that shows no unbounded growth).
"""

from __future__ import annotations

import re
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ...impl.radix_tree import ConcurrentRadixTree
from ...reference import RadixTree
from ...spec.coverage import holders
from ..harness import census, targets
from ..harness.census import GrowthVerdict
from .streams import RemoveWorkerDpRankOp, apply_op
from .traffic import Fleet, Live, Rates, Request, synthetic_requests

# ----------------------------------------------------------------------------- samples


@dataclass
class Sample:
    """One epoch's measurements."""

    epoch: int
    sim_s: float
    requests: int
    ops: int
    live: Live
    figures: dict[str, int]  # census figures and the shape figures, by name
    traced_bytes: int

    def figure(self, name: str) -> int:
        return self.figures.get(name, 0)


def inner_tree(tree: Any) -> Any:
    """The tree under a wrapper (the thread pool's ``tree``, ``RoutedImpl``'s), or the tree itself."""
    return getattr(tree, "tree", tree)


def _edge_state(node: Any) -> Any:
    view = getattr(node, "view", None)
    return node.state if view is None else view.state


def shape_figures(tree: Any) -> dict[str, int]:
    """Reachable nodes (from the root, through child maps), how many of them no rank holds, and the
    (rank, block) pairs they credit (each full-edge rank the whole edge, each cutoff its prefix)."""
    root = getattr(inner_tree(tree), "root", None)
    if root is None:
        return {}
    nodes = dead = covered = 0
    stack = list(root.children.values())
    while stack:
        node = stack.pop()
        state = _edge_state(node)
        nodes += 1
        dead += not holders(state)
        covered += len(state.edge) * len(state.full_edge_workers) + sum(state.worker_cutoffs.values())
        stack.extend(node.children.values())
    return {"reachable nodes": nodes, "dead nodes": dead, "holder nodes": nodes - dead, "covered pairs": covered}


def sample(tree: Any, epoch: int, sim_s: float, fleet: Fleet, ops: int, traced: bool) -> Sample:
    flush = getattr(tree, "flush", None)
    if flush is not None:
        flush()
    walked = census.take(tree)
    figures = walked.quantities() | shape_figures(tree) | {WALKED_BYTES: walked.bytes}
    if "reachable nodes" in figures:
        # node objects the structure still references but the tree no longer reaches (lookups and split
        # links may name them while a rank covers them; kept after that, they are garbage held)
        node_objects = figures.get("# Node", 0) + figures.get("# ConcurrentNode", 0)  # reference or concurrent nodes
        figures["detached nodes"] = node_objects - figures["reachable nodes"] - 1
    return Sample(epoch, sim_s, fleet.requests, ops, fleet.live(), figures, census.layer_bytes() if traced else 0)


# ----------------------------------------------------------------------------- the laws


@dataclass(frozen=True)
class SizeLaw:
    """``quantity(sample) <= bound(live)`` at every sample; ``applies`` when the tree has the quantity."""

    name: str
    quantity: Callable[[Sample], int]
    bound: Callable[[Live], int]
    statement: str
    applies: Callable[[Sample], bool] = lambda s: True


def _has(*labels: str) -> Callable[[Sample], bool]:
    return lambda s: any(label in s.figures for label in labels)


ROUTES_LAW = "routing entries <= fleet workers"
LOOKUP_ENTRIES = re.compile(r"len \w+\._?lookups\[\]")  # the reference's ``_lookups``, each lane's ``lookups`` (any subclass)
REGISTERED_RANKS = re.compile(r"len \w+\._?lookups")


def matching(pattern: re.Pattern[str]) -> Callable[[Sample], int]:
    """The sum of the figures whose names match ``pattern`` in full."""
    return lambda s: sum(v for k, v in s.figures.items() if pattern.fullmatch(k))


def _has_match(pattern: re.Pattern[str]) -> Callable[[Sample], bool]:
    return lambda s: any(pattern.fullmatch(k) for k in s.figures)


SIZE_LAWS: tuple[SizeLaw, ...] = (
    SizeLaw(
        "lookup entries <= live pairs",
        matching(LOOKUP_ENTRIES),
        lambda v: v.pairs,
        "every lookup entry (summed over ranks and lanes) names a block its rank's engine holds",
        _has_match(LOOKUP_ENTRIES),
    ),
    SizeLaw(
        "registered ranks <= announced ranks",
        matching(REGISTERED_RANKS),
        lambda v: v.announced,
        "a removed (or cleared) rank is forgotten: the registries name only ranks that have sent an event since",
        _has_match(REGISTERED_RANKS),
    ),
    SizeLaw(
        "covered pairs <= live pairs",
        lambda s: s.figure("covered pairs"),
        lambda v: v.pairs,
        "the (rank, block) pairs the reachable nodes credit are pairs the engines hold",
        _has("covered pairs"),
    ),
    SizeLaw(
        "reachable nodes <= live blocks + 1",
        lambda s: s.figure("reachable nodes"),
        lambda v: v.blocks + 1,
        "a node nobody holds is released (Dynamo 1.6 releases unowned branches on eviction, PR #14878)",
        _has("reachable nodes"),
    ),
    SizeLaw(
        ROUTES_LAW,
        lambda s: s.figure("len ThreadPoolIndexer._routes"),
        lambda v: v.workers,
        "the pool forgets a removed worker's route",
        _has("len ThreadPoolIndexer._routes"),
    ),
    SizeLaw(
        "queued tasks = 0 at quiescence",
        lambda s: s.figure("len Channel._items"),
        lambda v: 0,
        "after a flush no task is left on any event thread's channel",
        _has("len Channel._items"),
    ),
)


def size_problems(samples: list[Sample]) -> dict[str, str]:
    """The first sample breaking each size law, by law name."""
    problems: dict[str, str] = {}
    for s in samples:
        for law in SIZE_LAWS:
            if law.name in problems or not law.applies(s):
                continue
            q, b = law.quantity(s), law.bound(s.live)
            if q > b:
                problems[law.name] = f"epoch {s.epoch}: {q} > {b} ({law.statement})"
    return problems


def trend_problems(samples: list[Sample], warmup: int, window: int, slack: float) -> dict[str, str]:
    """Every figure (and, when traced, the traced and hidden bytes) that trends up per live pair (``census.trends``)."""
    traced = all(s.traced_bytes for s in samples[warmup:])

    def figures(s: Sample) -> dict[str, float]:
        extra = {"traced bytes": s.traced_bytes, HIDDEN_BYTES: hidden_bytes(s)} if traced else {}
        return {**s.figures, **extra}

    return census.trends([(figures(s), s.live.pairs + s.live.ranks + 1) for s in samples], warmup, window, slack)


WALKED_BYTES = "walked bytes"
HIDDEN_BYTES = "hidden bytes"


def hidden_bytes(s: Sample) -> int:
    """Traced bytes the walk cannot account for: what spec/, reference/ and impl/ allocated and keep alive,
    less ``sys.getsizeof`` of everything reachable from the tree. Growth the census sees (more nodes)
    moves both; a leak outside the structure (a module-level list, a cache) moves only the first."""
    return s.traced_bytes - s.figure(WALKED_BYTES)


# ----------------------------------------------------------------------------- the run


@dataclass
class SoakReport(GrowthVerdict):
    target: str
    epochs: int
    epoch_s: float
    seed: int
    samples: list[Sample] = field(default_factory=list)
    sizes: dict[str, str] = field(default_factory=dict)
    trends: dict[str, str] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def line(self, s: Sample) -> str:
        """The compact per-epoch line."""
        f = s.figure
        nodes = (
            f"nodes={f('reachable nodes')} dead={f('dead nodes')} objects={f('# Node') if '# Node' in s.figures else f('# ConcurrentNode')} "
            if "reachable nodes" in s.figures
            else ""
        )
        lookups, ranks = matching(LOOKUP_ENTRIES)(s), matching(REGISTERED_RANKS)(s)
        return (
            f"epoch {s.epoch:>3} t={s.sim_s / 3600:5.2f}h requests={s.requests} live: pairs={s.live.pairs} "
            f"blocks={s.live.blocks} ranks={s.live.ranks} | {nodes}lookups={lookups} ranks={ranks} "
            f"traced={s.traced_bytes / 1024:,.0f}KiB"
        )

    def verdict(self) -> str:
        if not self.grew:
            return (
                f"soak: target={self.target} epochs={self.epochs} sim={self.epochs * self.epoch_s / 3600:.2f}h "
                f"growth=none (size laws {len(SIZE_LAWS)} hold, no figure trends up)"
            )
        return (
            f"soak: target={self.target} epochs={self.epochs} sim={self.epochs * self.epoch_s / 3600:.2f}h "
            f"GROWTH: {len(self.sizes)} size laws broken, {len(self.trends)} figures trend up"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "epochs": self.epochs,
            "epoch_s": self.epoch_s,
            "seed": self.seed,
            "seconds": self.seconds,
            "grew": self.grew,
            "sizes": self.sizes,
            "trends": self.trends,
            "outcomes": self.outcomes,
            "samples": [asdict(s) for s in self.samples],
        }


SOAK_RATES = Rates(remove_rank=0.002)
"""The default churn, rank removal included (dropped for a tree without ``remove_worker_dp_rank``: the pool)."""


@dataclass(frozen=True)
class SoakPlan:
    """The soak's knobs: epochs of ``epoch_s`` simulated seconds; the fleet; the trend test."""

    epochs: int = 12
    epoch_s: float = 600.0
    rate: float = 4.0
    workers: int = 6
    capacity: int = 160
    warmup: int = 2
    window: int = 3
    slack: float = 0.25
    traced: bool = True
    rates: Rates = SOAK_RATES


def run_soak(
    factory: Callable[[], Any],
    name: str,
    plan: SoakPlan = SoakPlan(),
    seed: int = 1,
    requests: Iterator[Request] | None = None,
    each: Callable[[SoakReport, Sample], None] | None = None,
) -> SoakReport:
    """Drive one tree through ``plan.epochs`` epochs of churn and judge the samples (see the module docstring)."""
    probe = factory()
    rank_removal = hasattr(probe, "remove_worker_dp_rank")  # the pool has none
    targets.dispose(probe)
    fleet = Fleet(seed, plan.workers, plan.capacity, plan.rates if rank_removal else replace(plan.rates, remove_rank=0.0))
    source = requests if requests is not None else synthetic_requests(seed, plan.rate)
    report = SoakReport(name, plan.epochs, plan.epoch_s, seed)
    started = time.perf_counter()
    tracing = plan.traced and not tracemalloc.is_tracing()
    if tracing:
        tracemalloc.start(1)
    tree = factory()
    try:
        ops = 0
        outcomes: dict[str, int] = {}
        pending = next(source)
        for epoch in range(1, plan.epochs + 1):
            end = epoch * plan.epoch_s
            while pending.time_s < end:
                for op in fleet.serve(pending):
                    if isinstance(op, RemoveWorkerDpRankOp) and not rank_removal:
                        continue
                    outcome = apply_op(tree, op)
                    outcomes[outcome] = outcomes.get(outcome, 0) + 1
                    ops += 1
                pending = next(source)
            s = sample(tree, epoch, end, fleet, ops, plan.traced)
            report.samples.append(s)
            if each is not None:
                each(report, s)
        report.outcomes = outcomes
    finally:
        targets.dispose(tree)
        if tracing:
            tracemalloc.stop()
    report.sizes = size_problems(report.samples)
    report.trends = trend_problems(report.samples, plan.warmup, plan.window, plan.slack)
    report.seconds = time.perf_counter() - started
    return report


# ----------------------------------------------------------------------------- the known growth

DEAD_NODES_LAW = "reachable nodes <= live blocks + 1"
_NODE_PARTS = (
    "# Node",
    "# ConcurrentNode",
    "# EdgeState",
    "# ConcurrentNodeView",
    "# FrozenMap",
    "# FrozenSet",
    "# Map",
    "# Block",
    "# RWGate",
    "# Lock",
    "# _Hold",
    "# Condition",
    "len Node.",
    "len ConcurrentNode.",
    "len EdgeState.",
    "len ConcurrentNodeView.",
    "len FrozenMap.",
    "len FrozenSet.",
    "len Condition.",
    "reachable nodes",
    "dead nodes",
    "traced bytes",
    "walked bytes",
)


def is_node_part(figure: str) -> bool:
    """Whether ``figure`` counts nodes or what every node carries (its edge, index, gates, locks)."""
    return any(figure == p or figure.startswith(p) for p in _NODE_PARTS)


def beyond_dead_nodes(report: SoakReport) -> set[str]:
    """The failed laws that dead nodes kept by design do not explain.

    Under the rule sets of releases before 1.6 (``reuse-dead-nodes``, ``per-block-nodes``) a node
    that loses its last holder stays attached until a store passes it, as those releases kept it, so
    under fresh traffic dead leaves pile up below held prefixes. That breaks ``DEAD_NODES_LAW`` and
    makes node-part figures trend; this set leaves those out. (kvproof's trees under the current
    rules released such leaves only on a later store until issue 12's soak found the growth.)
    """
    return {
        law
        for law in report.failed_laws()
        if law != DEAD_NODES_LAW and not (law.startswith("trend: ") and is_node_part(law.removeprefix("trend: ")))
    }


# ----------------------------------------------------------------------------- leaking twins (negative controls)


class KeepsLookupEntries(RadixTree):
    """Leaks: a removal never deletes the rank's lookup entries (caught: lookup entries <= live pairs)."""

    def _scrub(self, lookup, stale, scrubbed):
        scrubbed.update(stale)

    def _remove_run(self, rank, lookup, hashes, i, scrubbed):
        kept = dict(lookup)
        consumed = super()._remove_run(rank, lookup, hashes, i, scrubbed)
        lookup.update({h: n for h, n in kept.items() if h not in lookup})
        return consumed


class KeepsRemovedWorkers(RadixTree):
    """Leaks: ``remove_worker`` empties the ranks' lookups but keeps them registered (caught: registered ranks)."""

    def remove_worker(self, worker_id: int) -> None:
        self._drop_ranks(self._worker_ranks(worker_id), forget=False)


class ForgetsWithoutUncovering(RadixTree):
    """Leaks: ``remove_worker`` forgets the ranks' lookups but leaves their coverage on every node
    (caught: covered pairs <= live pairs)."""

    def remove_worker(self, worker_id: int) -> None:
        for rank in self._worker_ranks(worker_id):
            del self._lookups[rank]
        self._ranks_of.pop(worker_id, None)


class KeepsDetachedNodes(RadixTree):
    """Leaks: every node a child-clear detaches stays referenced from a graveyard list (caught: detached nodes trend up)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.graveyard: list[Any] = []

    def _clear_children_if_unheld(self, node):
        self.graveyard.extend(node.children.values())
        super()._clear_children_if_unheld(node)


class KeepsDeadLeaves(ConcurrentRadixTree):
    """Leaks: an eviction never releases the leaf it leaves unowned (kvproof's trees before issue 12; caught: node
    objects trend up per live pair, and over a longer soak reachable nodes <= live blocks + 1)."""

    def _release_if_dead(self, lane, node):
        pass


class KeepsEventLog(ConcurrentRadixTree):
    """Leaks: the tree keeps every payload it applied in a list (caught: a census figure that trends up)."""

    def __init__(self, lanes: int = 1) -> None:
        super().__init__(lanes)
        self.applied: list[Any] = []

    def apply_on(self, lane, worker_id, event):
        self.applied.append((worker_id, event))
        super().apply_on(lane, worker_id, event)


_HIDDEN: list[Any] = []


class HidesALeak(RadixTree):
    """Leaks where the census cannot see: each store's edge state kept in a module-level list, allocated in spec/
    (caught only by the tracemalloc figure)."""

    def _apply_stored(self, rank, stored):
        from ...spec.coverage import new_edge

        _HIDDEN.append(new_edge(stored.blocks, rank))
        super()._apply_stored(rank, stored)


LEAKY: dict[str, tuple[Callable[[], Any], str]] = {
    "KeepsLookupEntries": (KeepsLookupEntries, "lookup entries <= live pairs"),
    "KeepsRemovedWorkers": (KeepsRemovedWorkers, "registered ranks <= announced ranks"),
    "ForgetsWithoutUncovering": (ForgetsWithoutUncovering, "covered pairs <= live pairs"),
    "KeepsDetachedNodes": (KeepsDetachedNodes, "trend: detached nodes"),
    "KeepsDeadLeaves": (KeepsDeadLeaves, "trend: # ConcurrentNode"),
    "KeepsEventLog": (KeepsEventLog, "trend: len KeepsEventLog.applied"),
    "HidesALeak": (HidesALeak, f"trend: {HIDDEN_BYTES}"),
}
"""Each leaking twin and the law that must catch it."""


SOAK_TREES = ("reference", "impl", "impl-lanes", "impl-pool")
"""The trees ``kvproof soak`` knows by name (``LEAKY``'s twins besides)."""


def soak_targets() -> Iterator[tuple[str, Callable[[], Any] | None]]:
    """The targets ``kvproof soak`` knows by name (plus ``LEAKY``'s twins)."""
    for name in SOAK_TREES:
        yield name, targets.load_target(name).factory
    yield from ((name, factory) for name, (factory, _) in LEAKY.items())


@dataclass
class TreeSoakRun:
    """``kvproof soak``: the soak's report, judged with or without tolerating dead nodes kept by design."""

    report: SoakReport
    tolerate_dead_nodes: bool
    kind = "soak"
    skipped = ""

    @property
    def ok(self) -> bool:
        return not (beyond_dead_nodes(self.report) if self.tolerate_dead_nodes else self.report.grew)

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        for line in self.report.growth_lines():
            say(line)
        if self.report.grew and not beyond_dead_nodes(self.report):
            say("known: every growth above is dead nodes kept until a store passes them (the rule of releases before 1.6)")

    def summary_line(self) -> str:
        return self.report.verdict() + f" ({self.report.seconds:.0f} s)"

    def to_json(self) -> dict[str, Any]:
        return self.report.to_json()


def soak_factory(target_name: str) -> Callable[[], Any]:
    """The tree a soak runs: a soak target by name (a leaking twin included), or any target by ``module:Factory`` or
    ``reference@RULES``; an unknown or unavailable one is refused."""
    from ..harness.errors import CampaignInputError

    known = dict(soak_targets())
    by_name = ":" in target_name or target_name.startswith("reference@")
    factory = targets.load_target(target_name).factory if by_name else known.get(target_name)
    if factory is None:
        raise CampaignInputError(
            f"unknown or unavailable soak target {target_name!r}: use {', '.join(known)} or module.path:Factory", param="--target"
        )
    return factory


def trace_traffic(trace_file: str, epochs: int, epoch_s: float, say: Callable[[str], None]) -> Iterator[Request]:
    """The requests of a Mooncake trace (``default``: the full trace beside the checkout, else the shipped slice),
    looped with fresh ids for the soak's whole simulated time; a trace that does not read, or is empty, is refused."""
    from pathlib import Path

    from ..harness.errors import CampaignInputError
    from .traffic import TraceFormatError, default_trace, mooncake_requests, read_trace

    path = default_trace() if trace_file == "default" else Path(trace_file)
    try:
        records = read_trace(path)
    except TraceFormatError as exc:
        raise CampaignInputError(f"error: {exc}") from None
    if not records:
        raise CampaignInputError(f"error: {path}: the trace has no requests")
    period = records[-1].timestamp_ms / 1000.0 + 1.0  # the trace again, fresh ids, a second after its last request
    say(f"traffic: {path} ({len(records)} requests), replayed every {period:.0f} s with fresh ids")
    return mooncake_requests(path, loops=int(epochs * epoch_s // period) + 2, period_s=period)


def run_soak_command(
    target_name: str, plan: SoakPlan, seed: int, trace_file: str | None, tolerate_dead_nodes: bool, say: Callable[[str], None]
) -> TreeSoakRun:
    """``kvproof soak --family tree``: the tree's soak, one line per epoch said as it ends."""
    factory = soak_factory(target_name)
    requests = trace_traffic(trace_file, plan.epochs, plan.epoch_s, say) if trace_file is not None else None
    report = run_soak(factory, target_name, plan, seed, requests=requests, each=lambda r, s: say(r.line(s)))
    return TreeSoakRun(report, tolerate_dead_nodes)

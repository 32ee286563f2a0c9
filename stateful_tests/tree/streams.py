"""Random, replayable event streams for differential testing of radix trees.

A stream is plain data: a list of operations and, after each, the queries to compare. It
is a pure function of ``(seed, index, profile)``, so ``kvproof conform ... --seed S
--stream K`` regenerates stream ``K`` exactly.

The generator models the *engines*, not the index: for every rank it tracks the blocks the
engine holds and emits what an engine would (stores that chain from a held parent,
evictions of held blocks), plus a measured dose of what only a broken or racing publisher
sends (stores under parents the rank never held, self-referencing stores, removals of
unknown hashes). The index's answers never feed back into generation.

Shape of the workload (after Dynamo's harness, crtc.md §10 "Generation"):

- a pool of ``systems x docs x turns`` sequences whose local hashes come from a small
  alphabet, so sequences share prefixes and diverge inside edges; external hashes are
  derived from the whole local prefix, so every stream is in contract;
- long documents (up to 4x) so edges exceed 16 blocks;
- stores of fresh ranges, re-stores into holes, duplicate sub-ranges, chained halves;
- decode extensions, two of three variants shared between ranks so they race to extend
  and split the same leaf;
- removals: tail runs, head-first runs, single mid-chain blocks, random subsets, in kept,
  reversed or shuffled order, sometimes with unknown hashes mixed in;
- ``cleared`` events, ``clear_all_blocks``, and ``remove_worker`` with the worker coming
  back under the same or a fresh id;
- three phases: store-heavy, mixed, remove-heavy.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from ...spec.events import Cleared, KvCacheEvent, Removed, Stored, encode_event
from ...spec.primitives import Block, Rank
from ..harness import targets
from ..harness.paths import ext, held_prefix
from ..harness.surface import NotOnSurface, lacks, store_not_carried, surface_of

Path = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class EventOp:
    """Apply ``event`` as emitted by ``worker_id``."""

    worker_id: int
    event: KvCacheEvent


@dataclass(frozen=True, slots=True)
class RemoveWorkerOp:
    """Call ``remove_worker(worker_id)``."""

    worker_id: int


@dataclass(frozen=True, slots=True)
class ClearAllBlocksOp:
    """Call ``clear_all_blocks(worker_id)``."""

    worker_id: int


@dataclass(frozen=True, slots=True)
class RemoveWorkerDpRankOp:
    """Call ``remove_worker_dp_rank(worker_id, dp_rank)`` (only in streams whose profile asks for it:
    Dynamo 1.6.1's binding has no such method)."""

    worker_id: int
    dp_rank: int


@dataclass(frozen=True, slots=True)
class DumpOp:
    """Call ``dump_tree_as_events()`` (in logs only: the call a target failed in, ``harness.isolation``)."""


Op = EventOp | RemoveWorkerOp | ClearAllBlocksOp | RemoveWorkerDpRankOp | DumpOp


def apply_op(tree: Any, op: Op) -> str:
    """Apply one operation to a target; return ``"ok"`` or the outcome name (``targets.observed``: an event on a
    surface that reports no outcome is ``UNOBSERVED``)."""
    method, args = op_call(op)
    return _outcome(tree, op, targets.outcome_of_call(lambda: getattr(tree, method)(*args)))


def _outcome(tree: Any, op: Op, outcome: str) -> str:
    return targets.observed(tree, outcome) if isinstance(op, EventOp) else outcome


def op_call(op: Op) -> tuple[str, tuple[Any, ...]]:
    """The tree call that applies ``op``: method name and arguments (an event as its JSON, as ``targets.apply``)."""
    if isinstance(op, EventOp):
        return "apply_event", (op.worker_id, encode_event(op.event))
    if isinstance(op, RemoveWorkerOp):
        return "remove_worker", (op.worker_id,)
    if isinstance(op, RemoveWorkerDpRankOp):
        return "remove_worker_dp_rank", (op.worker_id, op.dp_rank)
    if isinstance(op, DumpOp):
        return "dump_tree_as_events", ()
    return "clear_all_blocks", (op.worker_id,)


Answers = list[dict[tuple[int, int], int] | BaseException]
"""A batch of queries' scores as plain dicts, or for a query the error it raised."""


def apply_op_and_read(
    tree: Any, op: Op, queries: list[list[int]], early_exit: bool
) -> tuple[str, Answers | None, Answers | None]:
    """``apply_op(tree, op)`` and then, in the same round trip where the tree takes several calls at once (``steps``:
    a tree in a host process), the scores of ``queries`` without and (if ``early_exit``) with early exit.

    Return the outcome and the two batches of answers, a batch None where it was not asked here (the caller asks
    it as before); the outcome is named as ``apply_op`` names it. A target's process costs a round trip per call,
    so a differential run's op and the reads after it go as one (kvproof issue 32).
    """
    steps = targets.steps_of(tree)
    if steps is None:
        return apply_op(tree, op), None, None
    asked = [("find_matches", (q, False)) for q in queries] + [("find_matches", (q, True)) for q in queries if early_exit]
    first, *answers = steps([op_call(op), *asked])
    outcome = _outcome(tree, op, targets.outcome_of_call(lambda: _reraise(first)))
    plain = [targets.plain_scores(a) if not isinstance(a, BaseException) else a for a in answers]
    return outcome, plain[: len(queries)], plain[len(queries) :] if early_exit else None


def _reraise(result: Any) -> None:
    if isinstance(result, BaseException):
        raise result


def not_carried(tree: Any, op: Op) -> NotOnSurface | None:
    """Why ``tree``'s surface cannot carry ``op`` (``harness.surface``), or None: a store its converter would
    rewrite, or a rank removal it has no door for."""
    if isinstance(op, EventOp) and isinstance(op.event.data, Stored):
        stored = op.event.data
        return store_not_carried(surface_of(tree), stored.parent_hash, [b.ext for b in stored.blocks])
    if isinstance(op, RemoveWorkerDpRankOp):
        why = lacks(tree, "rank_removal")
        if why is None and not callable(getattr(tree, "remove_worker_dp_rank", None)):
            why = "the target has no remove_worker_dp_rank"
        return NotOnSurface("rank_removal", why) if why is not None else None
    return None


Encoded = tuple[str, int, Any]
"""An operation ready to replay fast: (method, worker id, the event's JSON bytes / the dp rank / None)."""


def encode_op(op: Op) -> Encoded:
    """Return ``op`` as the method to call, its worker id and its argument (an event pre-encoded to bytes)."""
    if isinstance(op, EventOp):
        return ("event", op.worker_id, encode_event(op.event))
    if isinstance(op, RemoveWorkerOp):
        return ("remove_worker", op.worker_id, None)
    if isinstance(op, RemoveWorkerDpRankOp):
        return ("remove_worker_dp_rank", op.worker_id, op.dp_rank)
    if isinstance(op, DumpOp):
        raise ValueError("a dump is a log's call, not part of a workload")
    return ("clear_all_blocks", op.worker_id, None)


def describe(op: Op) -> str:
    """Return a one-line, human-readable form of an operation."""
    if isinstance(op, EventOp):
        rank = f"({op.worker_id}, {op.event.dp_rank})"
        return f"{rank} {op.event.data!r}"
    return repr(op)


@dataclass(frozen=True)
class StreamProfile:
    """Knobs of the generator. The defaults give ~50 events and ~900 compared queries per stream."""

    events: int = 48
    min_workers: int = 2
    max_workers: int = 4
    max_dp_ranks: int = 2
    systems: int = 3
    docs: int = 4
    turns: int = 3
    doc_len: int = 6
    alphabet: int = 6
    live_queries: int = 6
    random_queries: int = 3
    rank_removal: float = 0.0  # share of worker churn that removes one rank (remove_worker_dp_rank); 0: never


@dataclass
class Stream:
    """One generated stream: ``ops[i]`` is followed by comparing ``queries[i]``."""

    seed: int
    index: int
    ops: list[Op] = field(default_factory=list)
    queries: list[list[list[int]]] = field(default_factory=list)


def stream_rng(seed: int, index: int) -> random.Random:
    """Return the generator for stream ``index`` of run ``seed`` (independent of every other stream)."""
    return random.Random(f"kvproof-stream:{seed}:{index}")


def blocks_of(path: Path, start: int, stop: int) -> tuple[Block, ...]:
    """Return the blocks at positions ``[start, stop)`` of ``path``."""
    return tuple(Block(path[i], ext(path[: i + 1])) for i in range(start, stop))


class _Engines:
    """What every rank's engine holds, and the next ids to hand out."""

    def __init__(self, rng: random.Random, profile: StreamProfile) -> None:
        self.rng = rng
        self.profile = profile
        self.held: dict[Rank, dict[int, Path]] = {}
        n_workers = rng.randint(profile.min_workers, profile.max_workers)
        self.workers = {w: rng.randint(1, profile.max_dp_ranks) for w in range(1, n_workers + 1)}
        self.next_worker = n_workers + 1
        self.paths: list[Path] = self._pool()
        self.event_id = 0

    def _locals(self, n: int) -> list[int]:
        return [self.rng.randint(1, self.profile.alphabet) for _ in range(n)]

    def _pool(self) -> list[Path]:
        p, rng = self.profile, self.rng
        paths = []
        for _ in range(p.systems):
            system = self._locals(rng.randint(1, 3))
            for d in range(p.docs):
                longest = p.doc_len * (4 if d == p.docs - 1 else 1)
                doc = self._locals(rng.randint(0, longest))
                for _ in range(p.turns):
                    paths.append(tuple(system + doc + self._locals(rng.randint(1, 3))))
        return paths

    def ranks(self) -> list[Rank]:
        return [Rank(w, dp) for w, n in sorted(self.workers.items()) for dp in range(n)]

    def holds(self, rank: Rank) -> dict[int, Path]:
        return self.held.setdefault(rank, {})

    def held_prefix(self, rank: Rank, path: Path) -> int:
        return held_prefix(path, self.held.get(rank, {}))

    def event(self, rank: Rank, data) -> EventOp:
        self.event_id += 1
        return EventOp(rank.worker_id, KvCacheEvent(self.event_id, data, rank.dp_rank))

    def store(self, rank: Rank, path: Path, start: int, stop: int) -> EventOp:
        parent = ext(path[:start]) if start else None
        held = self.holds(rank)
        if parent is None or parent in held:
            for i in range(start, stop):
                held[ext(path[: i + 1])] = path[: i + 1]
        return self.event(rank, Stored(parent, blocks_of(path, start, stop)))

    def remove(self, rank: Rank, hashes: list[int]) -> EventOp:
        held = self.holds(rank)
        for h in hashes:
            held.pop(h, None)
        return self.event(rank, Removed(tuple(hashes)))


def _gen_store(e: _Engines, rank: Rank) -> list[Op]:
    rng = e.rng
    path = rng.choice(e.paths)
    h = e.held_prefix(rank, path)
    if h == len(path):
        if rng.random() < 0.25:
            a = rng.randint(0, h - 1)
            return [e.store(rank, path, a, rng.randint(a + 1, h))]
        return _gen_decode(e, rank, path)
    held = e.holds(rank)
    if h + 1 < len(path) and ext(path[: h + 2]) in held and rng.random() < 0.4:
        return [e.store(rank, path, h, h + 1)]  # re-store one block into a hole
    stop = rng.randint(h + 1, len(path))
    if stop - h >= 2 and rng.random() < 0.3:
        mid = rng.randint(h + 1, stop - 1)
        return [e.store(rank, path, h, mid), e.store(rank, path, mid, stop)]
    return [e.store(rank, path, h, stop)]


def _gen_decode(e: _Engines, rank: Rank, path: Path) -> list[Op]:
    rng = e.rng
    variant = rng.randrange(3)
    n = rng.randint(1, 3)
    if variant < 2:  # shared continuations: other ranks decoding this path pick the same blocks
        shared = random.Random(f"decode:{path}:{variant}")
        tail = tuple(shared.randint(1, e.profile.alphabet) for _ in range(n))
    else:
        tail = tuple(rng.randint(1, e.profile.alphabet) for _ in range(n))
    longer = path + tail
    if longer not in e.paths:
        e.paths.append(longer)
    return [e.store(rank, longer, len(path), len(longer))]


def _gen_remove(e: _Engines, rank: Rank) -> list[Op]:
    rng = e.rng
    held = e.holds(rank)
    if not held:
        return _gen_store(e, rank)
    candidates = [p for p in e.paths if e.held_prefix(rank, p)]
    r = rng.random()
    if candidates and r < 0.7:
        path = rng.choice(candidates)
        h = e.held_prefix(rank, path)
        if r < 0.35:
            k = rng.randint(1, min(4, h))
            chosen = [ext(path[: i + 1]) for i in range(h - k, h)]
        elif r < 0.5:
            k = rng.randint(1, h)
            chosen = [ext(path[: i + 1]) for i in range(k)]
        else:
            i = rng.randrange(h)
            chosen = [ext(path[: i + 1])]
    else:
        chosen = rng.sample(sorted(held), min(len(held), rng.randint(1, 5)))
    order = rng.random()
    if order < 0.4:
        chosen.reverse()
    elif order < 0.6:
        rng.shuffle(chosen)
    if rng.random() < 0.15:
        strangers = [ext(p) for p in rng.sample(e.paths, 3) if ext(p) not in held]
        for h in strangers[: rng.randint(1, 3)]:
            chosen.insert(rng.randint(0, len(chosen)), h)
    return [e.remove(rank, chosen)]


def _gen_rejected_store(e: _Engines, rank: Rank) -> list[Op]:
    rng = e.rng
    path = rng.choice(e.paths)
    held = e.holds(rank)
    r = rng.random()
    if r < 0.2 and len(path) >= 2:  # a self-referencing store: its parent is among its blocks
        i = rng.randrange(len(path) - 1)
        return [e.event(rank, Stored(ext(path[: i + 1]), blocks_of(path, i, len(path))))]
    if r < 0.3:
        return [e.event(rank, Stored(rng.choice([None, ext(path)]), ()))]
    unheld = [i for i in range(1, len(path)) if ext(path[:i]) not in held]
    if not unheld:
        return [e.event(rank, Stored(rng.getrandbits(63), blocks_of(path, 0, 1)))]
    i = rng.choice(unheld)
    return [e.event(rank, Stored(ext(path[:i]), blocks_of(path, i, min(len(path), i + 2))))]


def _gen_worker_churn(e: _Engines) -> list[Op]:
    rng = e.rng
    worker = rng.choice(sorted(e.workers))
    if e.profile.rank_removal and rng.random() < e.profile.rank_removal:  # no draw at all when off
        rank = Rank(worker, rng.randrange(e.workers[worker]))
        e.held[rank] = {}  # the worker's other ranks keep what they hold
        return [RemoveWorkerDpRankOp(rank.worker_id, rank.dp_rank)]
    for rank in [r for r in e.held if r.worker_id == worker]:
        e.held[rank] = {}
    r = rng.random()
    if r < 0.3:
        return [ClearAllBlocksOp(worker)]
    if r < 0.65:
        dp_ranks = e.workers.pop(worker)
        e.workers[e.next_worker] = dp_ranks  # a fresh id replaces it
        e.next_worker += 1
    return [RemoveWorkerOp(worker)]


def _queries(e: _Engines) -> list[list[int]]:
    rng, p = e.rng, e.profile
    roots = {path[0] for path in e.paths}  # a path is live while some rank holds its first block
    live_roots = {root for root in roots if any(ext((root,)) in held for held in e.held.values())}
    live = [path for path in e.paths if path[0] in live_roots]
    chosen = rng.sample(live, min(len(live), p.live_queries))
    for _ in range(p.random_queries):
        path = rng.choice(e.paths)
        chosen.append(path[: rng.randint(1, len(path))])
    stray = rng.choice(e.paths)
    chosen.append(stray + (p.alphabet + 1,))
    return [list(q) for q in chosen]


DEFAULT_PROFILE = StreamProfile()


def generate(seed: int, index: int, profile: StreamProfile = DEFAULT_PROFILE) -> Stream:
    """Generate stream ``index`` of run ``seed``."""
    rng = stream_rng(seed, index)
    e = _Engines(rng, profile)
    stream = Stream(seed, index)
    while len(stream.ops) < profile.events:
        phase = len(stream.ops) / profile.events
        remove_weight = 0.25 if phase < 0.35 else 0.4 if phase < 0.7 else 0.6
        rank = rng.choice(e.ranks())
        r = rng.random()
        ops: list[Op]
        if r < 0.03:
            ops = [e.event(rank, Cleared())]
            e.held[rank] = {}
        elif r < 0.05:
            ops = _gen_worker_churn(e)
        elif r < 0.09:
            ops = _gen_rejected_store(e, rank)
        elif r < 0.09 + remove_weight:
            ops = _gen_remove(e, rank)
        else:
            ops = _gen_store(e, rank)
        for op in ops:
            stream.ops.append(op)
            stream.queries.append(_queries(e))
    return stream

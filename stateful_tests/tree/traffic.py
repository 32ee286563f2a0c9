"""Long, realistic router traffic: requests from a fleet of capacity-bounded engines, as tree operations.

``streams.py`` makes short adversarial streams for differential checks; this module makes the
traffic a router sees for hours, for the memory benchmark and the churn soak. It is plain data
and a pure function of its seed (and, for the trace, of the trace file).

**Requests** (``Request``: arrival time, prompt blocks, the blocks its response adds):

- ``synthetic_requests``: chat traffic. A few system prompts shared by everyone; conversations
  start under one of them (a document of fresh blocks), come back for more turns (each turn's
  prompt is the conversation so far, the previous responses included), and end; at most
  ``active`` conversations are open, so the set of live prefixes is steady while fresh hashes
  keep arriving. Poisson arrivals at ``rate`` requests per simulated second.
- ``mooncake_requests``: the Mooncake FAST'25 conversation trace (one line per request, a
  ``hash_ids`` list of prefix-aware 512-token block ids, a millisecond timestamp); a block's id
  is its local and its external hash (equal ids are equal prefixes). Each loop of the hour gets
  fresh ids, so a long run keeps meeting new blocks.

**The fleet** (``Fleet``): workers with one or two dp ranks, each rank an engine holding at
most ``capacity`` blocks, least recently used evicted first (a request touches its blocks tail
first, so shared heads stay and tails go). A request is routed to the rank holding its
longest prefix (``affinity`` of the time, else any rank); that rank stores the part it lacks
below the part it holds, then the response's blocks (a decode extension), then evicts what
overflows as one ``removed`` event. Between requests, at the given rates: a single held
block evicted (holes), a ``cleared`` event, ``clear_all_blocks``, ``remove_worker`` (the
worker re-joins under its own id, or under a fresh one: autoscaling), ``remove_worker_dp_rank``
(if enabled), and a store under a parent the rank does not hold (a racing publisher; the
tree must reject it and keep nothing).

``Fleet.live()`` is what the engines hold, the tree-independent measure of live content: the
(rank, block) pairs, the distinct blocks, the ranks and workers in the fleet.

Source: docs/sources.md#kvproof-robustness ("Resources"); docs/sources.md#mooncake (Mooncake FAST'25 traces,
Apache-2.0).
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter, OrderedDict, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ...spec.errors import KvProofError
from ...spec.events import Cleared, KvCacheEvent, Removed, Stored
from ...spec.primitives import Block, Rank
from ..harness.paths import seq_hash
from .streams import ClearAllBlocksOp, EventOp, Op, RemoveWorkerDpRankOp, RemoveWorkerOp

MOONCAKE_TRACE = Path(__file__).resolve().parents[3] / "shared" / "data" / "mooncake" / "conversation_trace.jsonl"
"""Where the Mooncake conversation trace lies beside a checkout (``../shared/data/mooncake/``; ``--trace`` names another)."""

SHIPPED_TRACE = Path(__file__).resolve().parent / "data" / "mooncake_conversation_1k.jsonl"
"""The first 1,000 requests of the conversation trace, shipped with the package (``data/NOTICE.md``: source, licence)."""


def default_trace() -> Path:
    """The full conversation trace when it lies beside the checkout, else the shipped slice."""
    return MOONCAKE_TRACE if MOONCAKE_TRACE.is_file() else SHIPPED_TRACE


class TraceFormatError(KvProofError, ValueError):
    """A trace file that is not of the Mooncake format; the message names the file and the line."""


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One line of a Mooncake trace: arrival (ms), token lengths, and the prompt's 512-token block ids."""

    timestamp_ms: float
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_trace_line(text: str) -> TraceRecord:
    """One line as a record; raises ``ValueError`` saying what is wrong (``read_trace`` adds where).

    The format (Mooncake FAST'25 traces): a JSON object with ``timestamp`` (ms, a finite number
    >= 0) and ``hash_ids`` (a list of integers >= 0); ``input_length`` and ``output_length`` are
    integers >= 0 (absent: the prompt's blocks times 512, and 0). Other keys are ignored.
    """
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    if "hash_ids" not in obj or "timestamp" not in obj:
        raise ValueError(f"missing {' and '.join(k for k in ('timestamp', 'hash_ids') if k not in obj)}")
    ids, t = obj["hash_ids"], obj["timestamp"]
    if not isinstance(ids, list) or not all(_count(h) for h in ids):
        raise ValueError("hash_ids must be a list of integers >= 0")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
        raise ValueError(f"timestamp must be a finite number of ms >= 0, got {t!r}")
    lengths = {k: obj.get(k, default) for k, default in (("input_length", 512 * len(ids)), ("output_length", 0))}
    for key, value in lengths.items():
        if not _count(value):
            raise ValueError(f"{key} must be an integer >= 0, got {value!r}")
    return TraceRecord(float(t), lengths["input_length"], lengths["output_length"], tuple(ids))


def read_trace(path: Path | str, limit: int | None = None) -> list[TraceRecord]:
    """The records of a Mooncake trace file (its first ``limit``), in file order; blank lines are skipped.

    A bad line, or a timestamp earlier than the line before it, raises ``TraceFormatError``
    naming the file and the line; an unreadable file raises it too.
    """
    try:
        lines = Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"{path}: cannot read the trace ({type(exc).__name__}: {exc})") from None
    records: list[TraceRecord] = []
    for number, line in enumerate(lines, 1):
        if limit is not None and len(records) >= limit:
            break
        if not line.strip():
            continue
        try:
            record = parse_trace_line(line)
        except ValueError as exc:
            raise TraceFormatError(f"{path}: line {number}: {exc}") from None
        if records and record.timestamp_ms < records[-1].timestamp_ms:
            raise TraceFormatError(
                f"{path}: line {number}: timestamp {record.timestamp_ms:g} ms is earlier than the "
                f"line before ({records[-1].timestamp_ms:g} ms); a trace is in arrival order"
            )
        records.append(record)
    return records


@dataclass(frozen=True, slots=True)
class Request:
    """One request: when it arrives (simulated seconds), its prompt's blocks, its response's blocks."""

    time_s: float
    prompt: tuple[Block, ...]
    decode: tuple[Block, ...] = ()
    input_tokens: int = 0  # the prompt's tokens (0: not known; a router simulation takes 512 per block)
    output_tokens: int = 0


def _grow(blocks: list[Block], path_hash: int, locals_: list[int]) -> int:
    """Append blocks for ``locals_`` with prefix-derived external hashes; return the new prefix hash.

    The hash of a prefix is ``paths.seq_hash`` of its local hashes, computed one step at a time.
    """
    for x in locals_:
        path_hash = seq_hash((path_hash, x))
        blocks.append(Block(x, path_hash))
    return path_hash


@dataclass
class _Conversation:
    blocks: list[Block]
    head: int  # the prefix hash after the last block


def synthetic_requests(
    seed: int, rate: float = 4.0, systems: int = 4, active: int = 48, new_share: float = 0.3, max_blocks: int = 48
) -> Iterator[Request]:
    """Chat traffic without end (see the module docstring); deterministic in ``seed``."""
    rng = random.Random(f"kvproof-traffic:{seed}")

    def fresh(n: int) -> list[int]:
        return [rng.getrandbits(31) for _ in range(n)]

    prompts = []
    for _ in range(systems):
        blocks: list[Block] = []
        prompts.append(_Conversation(blocks, _grow(blocks, 0, fresh(rng.randint(2, 6)))))
    open_: deque[_Conversation] = deque()
    t = 0.0
    while True:
        t += rng.expovariate(rate)
        if not open_ or rng.random() < new_share:
            system = rng.choice(prompts)
            blocks = list(system.blocks)
            conv = _Conversation(blocks, _grow(blocks, system.head, fresh(rng.randint(0, 10))))
            open_.append(conv)
            if len(open_) > active:
                open_.popleft()
        else:
            conv = rng.choice(open_)
        conv.head = _grow(conv.blocks, conv.head, fresh(rng.randint(1, 3)))  # the user's turn
        prompt = tuple(conv.blocks)
        conv.head = _grow(conv.blocks, conv.head, fresh(rng.randint(1, 2)))  # the response
        yield Request(t, prompt, tuple(conv.blocks[len(prompt) :]))
        if len(conv.blocks) > max_blocks and conv in open_:
            open_.remove(conv)  # the conversation ends


def mooncake_requests(
    path: Path = MOONCAKE_TRACE, loops: int = 1, limit: int | None = None, block_tokens: int = 512, period_s: float = 3600.0
) -> Iterator[Request]:
    """The trace's requests, ``loops`` times over (fresh ids each loop, each loop ``period_s`` later than the one
    before); the response's blocks get fresh ids.

    A bad file raises ``TraceFormatError`` naming the line (``read_trace``).
    """
    records = read_trace(path)
    span = 1 + max((max(r.hash_ids, default=0) for r in records), default=0)
    fresh = span * loops
    served = 0
    for loop in range(loops):
        base, offset_s = loop * span, loop * period_s
        for r in records:
            if limit is not None and served >= limit:
                return
            prompt = tuple(Block(h + base, h + base) for h in r.hash_ids)
            n_decode = r.output_length // block_tokens
            decode = tuple(Block(fresh + i, fresh + i) for i in range(n_decode))
            fresh += n_decode
            served += 1
            yield Request(offset_s + r.timestamp_ms / 1000.0, prompt, decode, r.input_length, r.output_length)


@dataclass(frozen=True)
class Rates:
    """How often each kind of churn happens, per request."""

    hole: float = 0.02  # one held block evicted out of LRU order
    cleared: float = 0.002  # a rank sends ``cleared``
    clear_all: float = 0.002  # the router calls ``clear_all_blocks(worker)``
    remove_worker: float = 0.004  # the worker leaves and re-joins (same id or fresh)
    fresh_id: float = 0.5  # share of re-joins under a fresh worker id (autoscaling)
    remove_rank: float = 0.0  # ``remove_worker_dp_rank`` (trees that have it)
    rejected: float = 0.01  # a store under a parent the rank does not hold


NO_CHURN = Rates(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class Live:
    """What the engines hold: the live content every size law is bounded by."""

    pairs: int  # (rank, block) pairs
    blocks: int  # distinct blocks
    ranks: int  # ranks in the fleet
    workers: int
    announced: int = 0  # ranks that sent an event since they joined (or were last removed or cleared)


class Fleet:
    """The engines behind a router (see the module docstring); ``serve`` turns a request into operations."""

    def __init__(
        self,
        seed: int,
        workers: int = 6,
        capacity: int = 160,
        rates: Rates = Rates(),
        affinity: float = 0.7,
        dp_ranks: int = 2,
        exact_dp: bool = False,
        decode_batch: int = 0,
    ) -> None:
        """``dp_ranks``: each worker draws 1 to ``dp_ranks`` ranks, or has exactly ``dp_ranks`` when ``exact_dp``;
        ``decode_batch``: the response's blocks are stored ``decode_batch`` at a time (0: in one event)."""
        self.rng = random.Random(f"kvproof-fleet:{seed}")
        self.capacity, self.rates, self.affinity, self.decode_batch = capacity, rates, affinity, decode_batch
        self.workers: dict[int, int] = {w: dp_ranks if exact_dp else self.rng.randint(1, dp_ranks) for w in range(1, workers + 1)}
        self.next_worker = workers + 1
        self.engines: dict[Rank, OrderedDict[int, None]] = {}
        self.holders: Counter[int] = Counter()  # block -> how many ranks hold it
        self.announced: set[Rank] = set()  # what a tree may have registered
        self.event_id = 0
        self.requests = 0

    # ------------------------------------------------------------------ live content

    def ranks(self) -> list[Rank]:
        return [Rank(w, dp) for w, n in sorted(self.workers.items()) for dp in range(n)]

    def live(self) -> Live:
        return Live(
            sum(len(e) for e in self.engines.values()),
            len(self.holders),
            sum(self.workers.values()),
            len(self.workers),
            len(self.announced),
        )

    def _engine(self, rank: Rank) -> OrderedDict[int, None]:
        engine = self.engines.get(rank)
        if engine is None:
            engine = self.engines[rank] = OrderedDict()
        return engine

    def _hold(self, rank: Rank, block: int) -> None:
        engine = self._engine(rank)
        if block not in engine:
            self.holders[block] += 1
        engine[block] = None
        engine.move_to_end(block)

    def _drop(self, rank: Rank, block: int) -> None:
        self.engines[rank].pop(block)
        self.holders[block] -= 1
        if not self.holders[block]:
            del self.holders[block]

    def _drop_all(self, rank: Rank) -> None:
        for block in list(self.engines.get(rank, ())):
            self._drop(rank, block)
        self.engines.pop(rank, None)

    def _event(self, rank: Rank, data: Stored | Removed | Cleared) -> EventOp:
        self.event_id += 1
        if isinstance(data, Cleared):
            self.announced.discard(rank)  # a tree forgets a cleared rank
        else:
            self.announced.add(rank)
        return EventOp(rank.worker_id, KvCacheEvent(self.event_id, data, rank.dp_rank))

    # ------------------------------------------------------------------ requests

    def held_prefix(self, rank: Rank, blocks: tuple[Block, ...]) -> int:
        engine: Mapping[int, None] = self.engines.get(rank, {})
        n = 0
        while n < len(blocks) and blocks[n].ext in engine:
            n += 1
        return n

    def route(self, prompt: tuple[Block, ...]) -> Rank:
        ranks = self.ranks()
        if self.rng.random() < self.affinity:
            return max(ranks, key=lambda r: (self.held_prefix(r, prompt), -len(self.engines.get(r, ()))))
        return self.rng.choice(ranks)

    def serve(self, request: Request, rank: Rank | None = None) -> list[Op]:
        """The operations one request causes on ``rank`` (None: the fleet routes it), plus the churn drawn after it.

        The rank stores the prompt's blocks it lacks under the last one it holds, then the response's
        blocks as extensions (``decode_batch`` at a time), then evicts what overflows, least recently
        used first, as one ``removed`` batch.
        """
        self.requests += 1
        if rank is None:
            rank = self.route(request.prompt)
        ops: list[Op] = []
        ops += self._store(rank, request.prompt)
        step = self.decode_batch or len(request.decode)
        for end in range(step, len(request.decode) + step, step) if request.decode else ():
            ops += self._store(rank, request.prompt + request.decode[:end], start=len(request.prompt))
        for block in reversed(request.prompt + request.decode):  # tail first: the head is the most recent
            if block.ext in self._engine(rank):
                self._engine(rank).move_to_end(block.ext)
        ops += self._evict(rank)
        ops += self._churn(rank)
        return ops

    def _store(self, rank: Rank, blocks: tuple[Block, ...], start: int | None = None) -> list[Op]:
        held = self.held_prefix(rank, blocks)
        if start is not None and held < start:
            return []  # the prompt was not stored whole (cannot happen: the store precedes)
        if held == len(blocks):
            return []
        parent = blocks[held - 1].ext if held else None
        for block in blocks[held:]:
            self._hold(rank, block.ext)
        return [self._event(rank, Stored(parent, blocks[held:]))]

    def _evict(self, rank: Rank) -> list[Op]:
        engine = self._engine(rank)
        evicted = []
        while len(engine) > self.capacity:
            block = next(iter(engine))
            self._drop(rank, block)
            evicted.append(block)
        return [self._event(rank, Removed(tuple(evicted)))] if evicted else []

    def _churn(self, rank: Rank) -> list[Op]:
        rng, r = self.rng, self.rates
        ops: list[Op] = []
        engine = self._engine(rank)
        if engine and rng.random() < r.hole:
            block = rng.choice(list(engine))
            self._drop(rank, block)
            ops.append(self._event(rank, Removed((block,))))
        if rng.random() < r.cleared:
            self._drop_all(rank)
            ops.append(self._event(rank, Cleared()))
        if rng.random() < r.clear_all:
            worker = rng.choice(sorted(self.workers))
            for other in [x for x in self.engines if x.worker_id == worker]:
                self._drop_all(other)
            ops.append(ClearAllBlocksOp(worker))
        if rng.random() < r.remove_worker:
            worker = rng.choice(sorted(self.workers))
            for other in [x for x in self.engines if x.worker_id == worker]:
                self._drop_all(other)
            ops.append(RemoveWorkerOp(worker))
            self.announced -= {x for x in self.announced if x.worker_id == worker}
            if rng.random() < r.fresh_id:
                self.workers[self.next_worker] = self.workers.pop(worker)
                self.next_worker += 1
        if rng.random() < r.remove_rank:
            worker = rng.choice(sorted(self.workers))
            gone = Rank(worker, rng.randrange(self.workers[worker]))
            self._drop_all(gone)
            self.announced.discard(gone)
            ops.append(RemoveWorkerDpRankOp(gone.worker_id, gone.dp_rank))
        if rng.random() < r.rejected:
            ops.append(self._event(rank, Stored(rng.getrandbits(62) | 1, (Block(rng.getrandbits(31), rng.getrandbits(62)),))))
        return ops

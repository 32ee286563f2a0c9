"""Real-thread stress of the concurrent tree, in the style of Dynamo's race soak (crtc.md §10 "Soak").

Writers (default 8) each own a lane of one ``ConcurrentRadixTree`` and a disjoint set of
ranks; readers (default 4) query the tree the whole time. The interpreter's switch interval
is cut to a microsecond and, in chaos mode, yield points sleep at random to widen races.

**Workload** (per writer, from its own seeded RNG, over one shared pool of prompts so that
writers collide on shared nodes): stores that extend a rank's held prefix (30% split into
two chained events), decode extensions whose continuations are shared between ranks (so
ranks race to extend and split the same leaf), leaf-first evictions of up to four blocks,
and ``cleared`` events. *Chaos* mode adds holes (a quarter of evictions take one block
anywhere) and worker churn (``remove_worker``, the worker returning under the same id).

**Every read is checked** against what each rank held *during the read*: each rank's blocks
carry holding intervals on a global clock, opened before the store reaches the tree and
closed after the eviction leaves it; a read between clock ticks ``t0`` and ``t1`` may credit
a rank only with query blocks it held at some instant of ``[t0, t1]``. A score past that
bound is an overcount.

**At quiescence** (every ``check_every`` operations per writer, writers pause at a barrier,
and readers with them: a read of a tree that nothing writes races nothing) the tree is compared
with the reference built from the same per-worker event orders: in strict mode (no holes) the
snapshots and every pool query's scores must be equal and ``check()`` must pass; in chaos mode,
where holes make the final shape depend on the interleaving, the snapshot must satisfy the
contract (between reachable and held). Any difference is a parity break.

Replay: the workload is a pure function of the seed; thread schedules are not (the
interleaving explorer of a later issue replays schedules exactly). A failure prints the
seed and the command.
"""

from __future__ import annotations

import functools
import itertools
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from ...impl import _sync
from ...impl.radix_tree import ConcurrentRadixTree
from ...reference import RadixTree
from ...spec import contract as spec_contract
from ...spec.events import Cleared, KvCacheEvent, Removed, Stored
from ...spec.primitives import Block, Rank
from ..harness.paths import ext, held_prefix
from ..harness.shards import WHOLE, Shard, run_parts

Path = tuple[int, ...]


@dataclass(frozen=True)
class StressConfig:
    ops: int = 20_000
    seed: int = 1
    writers: int = 8
    readers: int = 4
    workers_per_writer: int = 4
    mode: str = "chaos"  # "strict": no holes, exact parity; "chaos": holes and churn, contract at quiescence
    check_every: int = 250  # operations per writer between quiescent checkpoints
    churn_per_mille: int = 10
    switch_interval: float = 1e-6
    yield_sleep: float = 0.02  # chance that a yield point sleeps (chaos and strict alike)


@dataclass
class TreeStressReport:
    config: StressConfig
    ops: int = 0
    reads: int = 0
    overcounts: int = 0
    parity_breaks: int = 0
    checkpoints: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    statistics: dict = field(default_factory=dict)

    def summary_line(self) -> str:
        return f"stress: ops={self.ops} reads={self.reads} overcounts={self.overcounts} parity_breaks={self.parity_breaks}"

    @property
    def failed(self) -> bool:
        return bool(self.overcounts or self.parity_breaks or self.problems)

    def to_json(self) -> dict:
        body = asdict(self)
        body["config"] = asdict(self.config)
        return body


@dataclass(frozen=True)
class StressTask:
    """A stress campaign, picklable: ``runs`` runs (seeds ``seed``, ``seed + 1``, ...) of each mode, numbered run-major.

    ``task(shard)`` runs the items the shard owns (``harness.shards``) and returns them with their
    numbers, so the shards together run exactly the whole campaign's items. (Each run is real
    threads: its interleaving is the machine's, only its seed and size are the campaign's.)
    """

    ops: int
    seed: int
    modes: tuple[str, ...] = ("strict", "chaos")
    writers: int = 8
    readers: int = 4
    check_every: int = 250
    yield_sleep: float = 0.02
    runs: int = 1
    mutant: str | None = None  # a class of stateful_tests/tree/impl_mutants.py: a negative control

    def items(self) -> list[StressConfig]:
        return [
            StressConfig(
                ops=self.ops // len(self.modes),
                seed=self.seed + run,
                writers=self.writers,
                readers=self.readers,
                mode=mode,
                check_every=self.check_every,
                yield_sleep=self.yield_sleep,
            )
            for run in range(self.runs)
            for mode in self.modes
        ]

    def __call__(self, shard: Shard) -> list[tuple[int, TreeStressReport]]:
        tree_class: type = ConcurrentRadixTree
        if self.mutant:
            from .impl_mutants import IMPL_MUTANTS, short_name

            tree_class = next(m for m in IMPL_MUTANTS if short_name(m) == self.mutant)
        items = self.items()
        return [(i, run_stress(items[i], tree_class)) for i in shard.of(len(items))]


def stress_sharded(
    task: StressTask, shard: Shard = WHOLE, processes: int = 1, executor: str = "local"
) -> list[tuple[int, TreeStressReport]]:
    """Run ``shard`` of ``task`` over ``processes`` parts (or as Ray tasks); the items in their campaign order."""
    return sorted(
        (item for part in run_parts(task, shard.split(processes), processes, executor) for item in part), key=lambda item: item[0]
    )


def prompt_pool(seed: int) -> list[Path]:
    """Return the shared pool: 6 system prompts x 12 documents x 6 turns (crtc.md §10 soak)."""
    rng = random.Random(f"stress-pool:{seed}")

    def run(n: int) -> list[int]:
        return [rng.randint(1, 9) for _ in range(n)]

    pool = []
    for _ in range(6):
        system = run(rng.randint(1, 12))
        for _ in range(12):
            doc = run(rng.randint(0, 10))
            for _ in range(6):
                pool.append(tuple(system + doc + run(rng.randint(1, 8))))
    return pool


class RandomYields:
    """Yield-point hooks that give up the interpreter lock at random, widening race windows."""

    def __init__(self, chance: float) -> None:
        self.chance = chance

    def yield_point(self, name: str) -> None:
        if random.random() < self.chance:
            time.sleep(0)


@contextmanager
def racing(switch_interval: float, yield_sleep: float) -> Iterator[RandomYields | None]:
    """Real threads with wide race windows for the duration: a short switch interval and random yields at every
    yield point (``RandomYields``, given to the block); both restored on every exit path."""
    previous = _sync.set_switch_interval(switch_interval)
    hooks = RandomYields(yield_sleep) if yield_sleep else None
    _sync.install(hooks)
    try:
        yield hooks
    finally:
        _sync.install(None)
        _sync.set_switch_interval(previous)


class ReadWindows:
    """The clock ticks at which in-flight reads started, so closed intervals nobody can see are pruned.

    A reader publishes 0 (which blocks all pruning) *before* taking its start tick, then the
    tick itself, and clears its slot when its check is done: a writer pruning in between can
    only drop intervals that ended before the read started.
    """

    def __init__(self, readers: int = 0) -> None:
        self.starts: list[int | None] = [None] * readers  # one slot per reader: fixed size, no resizing races

    def oldest(self, now: int) -> int:
        return min((t for t in list(self.starts) if t is not None), default=now)


class Holdings:
    """What one writer's ranks hold, with holding intervals on the shared clock (guarded by ``lock``).

    A closed interval that ended before every read in flight started can no longer matter to
    any read (later reads start later still), so ``close`` prunes it: the lists stay short on
    runs of millions of operations.
    """

    def __init__(self, windows: ReadWindows | None = None) -> None:
        self.windows = windows or ReadWindows()
        self.lock = _sync.Lock("holdings")
        self.held: dict[Rank, dict[int, Path]] = {}
        self.kids: dict[Rank, Counter] = {}
        self.intervals: dict[Rank, dict[int, list[list]]] = {}

    def open(self, rank: Rank, blocks: list[tuple[int, Path]], now: int) -> None:
        with self.lock:
            held = self.held.setdefault(rank, {})
            spans = self.intervals.setdefault(rank, {})
            kids = self.kids.setdefault(rank, Counter())
            for h, path in blocks:
                if h not in held:
                    held[h] = path
                    if len(path) > 1:
                        kids[ext(path[:-1])] += 1
                    spans.setdefault(h, []).append([now, None])

    def close(self, rank: Rank, hashes: list[int], now: int) -> None:
        with self.lock:
            held = self.held.get(rank, {})
            kids = self.kids.get(rank, Counter())
            for h in hashes:
                path = held.pop(h, None)
                if path is None:
                    continue
                if len(path) > 1:
                    kids[ext(path[:-1])] -= 1
                spans = self.intervals[rank][h]
                if spans and spans[-1][1] is None:
                    spans[-1][1] = now
                oldest = self.windows.oldest(now)
                spans[:] = [span for span in spans if span[1] is None or span[1] > oldest]
                if not spans:
                    del self.intervals[rank][h]

    def close_all(self, rank: Rank, now: int) -> None:
        self.close(rank, list(self.held.get(rank, {})), now)

    def bound(self, rank: Rank, chain: list[int], t0: int, t1: int) -> int:
        """Return the longest prefix of ``chain`` the rank held at some instant of ``[t0, t1]``."""
        with self.lock:
            spans = self.intervals.get(rank, {})
            n = 0
            for h in chain:
                if not any(start < t1 and (end is None or end > t0) for start, end in spans.get(h, ())):
                    break
                n += 1
            return n


class Writer:
    """One writer thread's workload: its lane, its ranks, its engine model, its event log."""

    def __init__(self, index: int, config: StressConfig, pool: list[Path], tree: Any, clock, windows: ReadWindows) -> None:
        self.index = index
        self.config = config
        self.rng = random.Random(f"stress-writer:{config.seed}:{index}")
        self.pool = pool
        self.lane = tree.lane(index)
        self.clock = clock
        self.holdings = Holdings(windows)
        base = index * config.workers_per_writer + 1
        self.workers = list(range(base, base + config.workers_per_writer))
        self.ranks = [Rank(w, dp) for w in self.workers for dp in (0, 1)]
        # ("event", worker, KvCacheEvent, outcome on the tree) | ("remove_worker", worker, None, None)
        self.log: list[tuple[str, int, Any, Any]] = []
        self.logged = 0  # how much of the log the reference has seen
        self.decoded: list[Path] = []
        self.verdicts: list[str] = []
        self.ops = 0
        self.event_id = 0

    def held_prefix(self, rank: Rank, path: Path) -> int:
        return held_prefix(path, self.holdings.held.get(rank, {}))

    def holds(self, rank: Rank, path: Path) -> bool:
        """Whether ``rank`` holds every block of ``path``. The last block is asked first: it rules out nearly every
        candidate of a decode (hundreds a step) at one lookup, where the prefix walk hashed up to the first gap, a
        third of the writers' CPU."""
        held = self.holdings.held.get(rank, {})
        return ext(path) in held and held_prefix(path, held) == len(path)

    def send(self, rank: Rank, data: Any) -> str:
        self.event_id += 1
        event = KvCacheEvent(self.event_id, data, rank.dp_rank)
        self.ops += 1
        try:
            self.lane.apply_event(rank.worker_id, event)
            outcome = "ok"
        except Exception as exc:
            outcome = type(exc).__name__
        self.log.append(("event", rank.worker_id, event, outcome))
        return outcome

    def store(self, rank: Rank, path: Path, start: int, stop: int) -> None:
        blocks = [(ext(path[: i + 1]), path[: i + 1]) for i in range(start, stop)]
        self.holdings.open(rank, blocks, next(self.clock))  # before the tree can show them
        stored = Stored(
            ext(path[:start]) if start else None, tuple(Block(path[i], ext(path[: i + 1])) for i in range(start, stop))
        )
        self.send(rank, stored)  # in strict mode it must be accepted: the checkpoint's verdicts check it

    def evict(self, rank: Rank, hashes: list[int]) -> None:
        self.send(rank, Removed(tuple(hashes)))
        self.holdings.close(rank, hashes, next(self.clock))  # after the tree has dropped them

    def step(self) -> None:
        rng, rank = self.rng, self.rng.choice(self.ranks)
        r = rng.random()
        if self.config.mode == "chaos" and rng.randrange(1000) < self.config.churn_per_mille:
            worker = rng.choice(self.workers)
            self.log.append(("remove_worker", worker, None, None))
            self.ops += 1
            self.lane.remove_worker(worker)
            now = next(self.clock)
            for dp in (0, 1):
                self.holdings.close_all(Rank(worker, dp), now)
            return
        if r < 0.01:
            self.send(rank, Cleared())
            self.holdings.close_all(rank, next(self.clock))
        elif r < 0.46:
            path = rng.choice(self.pool)
            h = self.held_prefix(rank, path)
            if h == len(path):
                return self.decode(rank, path)
            stop = rng.randint(h + 1, len(path))
            if stop - h >= 2 and rng.random() < 0.3:
                mid = rng.randint(h + 1, stop - 1)
                self.store(rank, path, h, mid)
                self.store(rank, path, mid, stop)
            else:
                self.store(rank, path, h, stop)
        elif r < 0.66:
            held = [p for p in self.pool[:: max(1, len(self.pool) // 64)] + self.decoded if self.holds(rank, p)]
            if held:
                self.decode(rank, rng.choice(held))
            else:
                self.step()
        else:
            self.evict_some(rank)

    def decode(self, rank: Rank, path: Path) -> None:
        variant = self.rng.randrange(3)
        n = self.rng.randint(1, 4)
        if variant < 2:  # shared: other ranks decoding this path pick the same continuation
            shared = random.Random(f"decode:{path}:{variant}")
            tail = tuple(shared.randint(1, 9) for _ in range(n))
        else:
            tail = tuple(self.rng.randint(1, 9) for _ in range(n))
        longer = path + tail
        if len(self.decoded) < 512:
            self.decoded.append(longer)
        self.store(rank, longer, len(path), len(longer))

    def evict_some(self, rank: Rank) -> None:
        rng = self.rng
        held = self.holdings.held.get(rank, {})
        if not held:
            return
        if self.config.mode == "chaos" and rng.random() < 0.25:
            return self.evict(rank, [rng.choice(sorted(held))])  # a hole anywhere
        # Leaf-first: walk back from a leaf while the blocks have no other held children.
        kids = self.holdings.kids.get(rank, Counter())
        leaves = [h for h in held if not kids.get(h)]
        h = rng.choice(sorted(leaves))
        path = held[h]
        chosen: list[int] = []
        while path and len(chosen) < rng.randint(1, 4):
            x = ext(path)
            if x not in held or (chosen == [] and kids.get(x)) or (chosen and kids.get(x, 0) > 1):
                break
            chosen.append(x)
            path = path[:-1]
        if rng.random() < 0.5:
            chosen.reverse()
        self.evict(rank, chosen)


def run_stress(config: StressConfig, tree_class: type = ConcurrentRadixTree) -> TreeStressReport:
    """Run one stress campaign; return the counts (never raises for a finding, reports it)."""
    return StressRun(config, tree_class).run()


class StressRun:
    """One stress campaign's state and its steps: writers on their lanes, readers racing them, and at every barrier a
    quiescent checkpoint (the contract fed with every outcome, the snapshot against the reference or the contract,
    the tree's own ``check()``). The threads share this object; the main thread drives the barriers (``run``)."""

    def __init__(self, config: StressConfig, tree_class: type) -> None:
        self.config = config
        self.report = TreeStressReport(config)
        pool = prompt_pool(config.seed)
        self.tree = tree_class(lanes=config.writers)
        self.clock = itertools.count(1)
        self.windows = ReadWindows(config.readers)
        self.writers = [Writer(i, config, pool, self.tree, self.clock, self.windows) for i in range(config.writers)]
        self.owner = {r: w for w in self.writers for r in w.ranks}
        self.reference = RadixTree()
        self.contract: spec_contract.ContractState = spec_contract.EMPTY_CONTRACT
        self.queries = pool + [p + (10,) for p in pool[::7]]
        self.stop_reading = _sync.Event()
        self.writing = _sync.Event()  # set while the writers write; replaced by an unset one at every barrier
        self.writing.set()
        self.read_counts = [0] * config.readers
        self.overcounts: list[str] = []
        self.crashes: list[str] = []
        self.per_writer = max(1, config.ops // config.writers)
        self.barrier_in = [_sync.Event() for _ in self.writers]
        self.barrier_out = [_sync.Event() for _ in self.writers]

    # -- the threads

    def reader(self, k: int) -> None:
        try:
            self.read(k)
        except Exception as exc:  # a tree a writer's crash poisoned refuses reads: the crash is already the finding
            self.crashes.append(f"reader {k}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")

    def read(self, k: int) -> None:
        """Read random prefixes while the writers write, until told to stop; every score is held to what its rank held
        while the read ran. At a barrier the reader waits: the main thread's checkpoint then has the interpreter to
        itself, instead of sharing it with reads of a tree that nothing changes."""
        rng = random.Random(f"stress-reader:{self.config.seed}:{k}")
        windows = self.windows
        while True:
            self.writing.wait()
            if self.stop_reading.is_set():
                return
            query = list(rng.choice(self.queries))
            query = query[: rng.randint(1, len(query))]
            chain = [ext(tuple(query[: i + 1])) for i in range(len(query))]
            early = rng.random() < 0.25
            windows.starts[k] = 0  # block pruning while the start tick is taken
            t0 = next(self.clock)
            windows.starts[k] = t0  # from now on only intervals that ended before t0 may be pruned
            scores = self.tree.find_matches(query, early).scores
            t1 = next(self.clock)
            self.read_counts[k] += 1
            for rank, score in scores.items():
                w = self.owner.get(Rank(*rank))
                bound = 0 if w is None else w.holdings.bound(Rank(*rank), chain, t0, t1)
                if score > bound:
                    self.overcounts.append(
                        f"{rank} scored {score} on {query} (early_exit={early}) but held at most {bound} during the read"
                    )
            windows.starts[k] = None

    def writer_loop(self, w: Writer) -> None:
        """Step ``w`` up to each checkpoint, then wait at the barrier until the main thread has checked."""
        try:
            while w.ops < self.per_writer:
                target = min(self.per_writer, w.ops + self.config.check_every)
                while w.ops < target:
                    w.step()
                self.barrier_in[w.index].set()
                self.barrier_out[w.index].wait()
                self.barrier_out[w.index] = _sync.Event()
                if self.crashes:  # another writer crashed: the run is over (the main thread released every writer)
                    return
        except BaseException as exc:  # a crash of the tree is a finding, reported with the seed
            self.crashes.append(f"writer {w.index}: {type(exc).__name__}: {exc}")
            self.barrier_in[w.index].set()

    # -- the checkpoint (main thread, every writer at the barrier)

    def feed_contract(self, w: Writer) -> None:
        """Replay ``w``'s new log entries into the reference and the contract, noting the outcomes the contract forbids."""
        for kind, worker, event, outcome in w.log[w.logged :]:
            if kind == "remove_worker":
                self.reference.remove_worker(worker)
                self.contract = spec_contract.on_remove_worker(self.contract, worker)
                continue
            try:
                self.reference.apply_event(worker, event)
            except Exception:
                pass  # the reference's answer matters only in strict mode, where all must apply
            rank = Rank(worker, event.dp_rank)
            data = event.data
            verdict = (
                spec_contract.store_verdict(self.contract, rank, data)
                if isinstance(data, Stored)
                else spec_contract.remove_verdict(self.contract, rank, data)
                if isinstance(data, Removed)
                else spec_contract.Verdict.MUST_APPLY
            )
            if verdict is spec_contract.Verdict.MUST_APPLY and outcome != "ok":
                w.verdicts.append(f"{rank} {data!r} had to be accepted, got {outcome}")
            if verdict is spec_contract.Verdict.MUST_REJECT and outcome == "ok":
                w.verdicts.append(f"{rank} {data!r} had to be rejected (parent not held)")
            # The contract follows the tree under test: where a store may go either way, its choice.
            self.contract = spec_contract.on_event(self.contract, rank, data, outcome == "ok")
        w.logged = len(w.log)

    def strict_problems(self, snapshot: dict) -> list[str]:
        """Strict mode: the snapshot and every query's scores equal the reference's."""
        problems = []
        expected = self.reference.snapshot()
        if snapshot != expected:
            for rank in sorted(set(snapshot) | set(expected)):
                got, want = snapshot.get(rank, frozenset()), expected.get(rank, frozenset())
                if got != want:
                    problems.append(
                        f"snapshot differs from the reference for {rank}: "
                        f"{len(got - want)} blocks too many, {len(want - got)} missing"
                    )
        for q in self.queries:
            if self.tree.find_matches(q).scores != self.reference.find_matches(q).scores:
                problems.append(f"find_matches({list(q)}) differs from the reference")
                break
        return problems

    def checkpoint(self) -> None:
        """Judge the quiescent tree: the contract's verdicts, the snapshot (strict: the reference's; chaos: the
        contract's index verdict) and ``check()``; the first problem is reported with the checkpoint's number."""
        for w in self.writers:
            self.feed_contract(w)
        self.report.checkpoints += 1
        snapshot = self.tree.snapshot()
        if self.config.mode == "strict":
            problems = self.strict_problems(snapshot)
        else:
            problems = spec_contract.index_verdict(self.contract, snapshot)
        try:
            self.tree.check()
        except AssertionError as exc:
            problems.append(str(exc).splitlines()[1] if len(str(exc).splitlines()) > 1 else str(exc))
        for w in self.writers:
            problems += w.verdicts
            w.verdicts = []
        if problems:
            self.report.parity_breaks += 1
            self.report.problems.append(f"checkpoint {self.report.checkpoints}: {problems[0]}")

    # -- the run

    def drive_barriers(self, hooks: RandomYields | None) -> None:
        """Wait for every writer at the barrier, check, release them; until all are done or one crashed.

        The checkpoint runs with the yield points off (``hooks`` back after it): every other thread waits, so a yield
        there races nothing and only gives the processor away."""
        while True:
            for event in self.barrier_in:
                event.wait()
            for i in range(len(self.barrier_in)):
                self.barrier_in[i] = _sync.Event()
            self.writing = _sync.Event()  # the readers wait while the main thread checks
            if self.crashes:
                for event in list(self.barrier_out):  # release the writers waiting at the barrier, or join would wait forever
                    event.set()
                return
            _sync.install(None)
            self.checkpoint()
            _sync.install(hooks)
            done = all(w.ops >= self.per_writer for w in self.writers)
            if not done:
                self.writing.set()
            for event in list(self.barrier_out):
                event.set()
            if done:
                return

    def run(self) -> TreeStressReport:
        report = self.report
        started = time.perf_counter()
        with racing(self.config.switch_interval, self.config.yield_sleep) as hooks:
            readers = [_sync.Thread(functools.partial(self.reader, k), f"stress-reader-{k}") for k in range(self.config.readers)]
            threads = [_sync.Thread(functools.partial(self.writer_loop, w), f"stress-writer-{w.index}") for w in self.writers]
            self.drive_barriers(hooks)
            for t in threads:
                t.join()
            self.stop_reading.set()
            self.writing.set()
            for t in readers:
                t.join()
        report.seconds = time.perf_counter() - started
        report.ops = sum(w.ops for w in self.writers)
        report.reads = sum(self.read_counts)
        report.overcounts = len(self.overcounts)
        report.problems = self.crashes + self.overcounts[:3] + report.problems
        report.statistics = asdict(self.tree.statistics())
        return report


@dataclass
class StressTreeRun:
    """``kvproof stress tree``: every run's line, the campaign's figures, and (for a broken tree) how often it was caught."""

    task: StressTask
    mode: str
    shard: Shard
    done: list[tuple[int, TreeStressReport]]
    kind = "stress-tree"
    skipped = ""

    @property
    def reports(self) -> list[TreeStressReport]:
        return [result for _, result in self.done]

    @property
    def caught(self) -> int:
        return sum(r.failed for r in self.reports)

    @property
    def ok(self) -> bool:
        """A healthy tree: no run failed; a broken one (``--mutant``): some run caught it."""
        return self.caught > 0 if self.task.mutant is not None else not self.caught

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        t = self.task
        for item, result in self.done:
            say(
                f"run {item // len(t.modes) + 1}/{t.runs} {result.config.mode} seed={result.config.seed}: "
                f"{result.summary_line()} ({result.seconds:.1f} s)"
            )
            for problem in result.problems[:5]:
                say(f"  problem: {problem}")
        if t.mutant is not None:
            return
        stats: Counter[str] = Counter()
        for r in self.reports:
            stats.update(r.statistics)
        say(
            f"seconds={sum(r.seconds for r in self.reports):.1f} seed={t.seed} modes={'+'.join(t.modes)} "
            f"writers={t.writers} readers={t.readers} checkpoints={sum(r.checkpoints for r in self.reports)}"
        )
        say(f"statistics: { {k: v for k, v in stats.items() if v} }")
        if self.caught:
            say(
                f"replay the workload: kvproof stress tree --ops {t.ops} --seed {t.seed} --mode {self.mode} "
                f"--yield-sleep {t.yield_sleep}"
            )

    def summary_line(self) -> str:
        rs = self.reports
        if self.task.mutant is not None:
            return f"mutant {self.task.mutant}: caught in {self.caught} of {len(rs)} runs ({self.mode}, {self.task.ops} ops each)"
        return (
            f"stress: ops={sum(r.ops for r in rs)} reads={sum(r.reads for r in rs)} "
            f"overcounts={sum(r.overcounts for r in rs)} parity_breaks={sum(r.parity_breaks for r in rs)}"
            + ("" if self.shard.whole else f" shard={self.shard}")
        )

    def to_json(self) -> dict[str, Any]:
        return {"runs": [r.to_json() | {"item": item} for item, r in self.done], "shard": str(self.shard)}


def run_stress_tree(task: StressTask, mode: str, shard: Shard, processes: int, executor: str) -> StressTreeRun:
    """The campaign of ``kvproof stress tree`` (``mode``: strict, chaos or both, as asked); an unknown broken tree is
    refused."""
    from ..harness.errors import CampaignInputError
    from .impl_mutants import IMPL_MUTANTS, short_name

    if task.mutant and not any(short_name(m) == task.mutant for m in IMPL_MUTANTS):
        raise CampaignInputError(
            f"unknown mutant {task.mutant!r}; one of {[short_name(m) for m in IMPL_MUTANTS]}", param="--mutant"
        )
    return StressTreeRun(task, mode, shard, stress_sharded(task, shard, processes, executor))

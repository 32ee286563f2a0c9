"""A sequential slot tracker with incremental bookkeeping: the reference the concurrent tracker must equal.

It keeps what Dynamo's ``ActiveSequences`` keeps, updated in O(1) or O(blocks) per event
instead of recomputed, and must agree with ``spec.slot_tracker`` on every read at every time:

- ``PrefillTracker``: the FIFO of prefills (an insertion-ordered dict), the running token
  sum, the running count of unmodeled prefills, the running modeled-ms sum (each duration
  truncated to whole ms before it is added), and the anchor as ``(request_id, since)``;
- ``BlockTrie``: a prefix trie keyed by hash lineage (a node is a path: its parent node and
  one block hash) with an owner count per node, which reports exactly which paths appear
  (the store delta) and disappear (the remove delta) as ``PathRun``s (a prompt's tuple and
  the depth they start at, never one tuple per path), and keeps ``active_blocks`` as a counter;
- ``ActiveSequences``: one slot's requests (``spec.sequences.RequestRecord``), its prefill
  tracker, its trie and its expiry clock;
- ``SlotTracker``: the WorkerTable (worker id -> dp range, slot -> ActiveSequences), the
  RequestIndex (request id -> slot) and the PromptRegistry (slot -> membership, a
  ``PathTrie``, and load snapshot), which every mutation updates from its delta right after
  the slot changes, as the seed's write pipeline does.

The reads decay tokens and modeled time from the registry's load snapshots with the
reference's own arithmetic (``decayed_tokens``, ``remaining_modeled_ms``), not the spec's.

Complexity: add O(blocks) in time and memory (at most one trie node and one registry node
per block) plus expiry (O(requests) when due, at most once per 30 s); mark O(1) (front) or
O(prefills) (middle removal is a dict delete: O(1)); free O(blocks); reads O(slots) plus
O(query) per slot for potential loads; ``snapshot`` O(requests), ``registry_snapshot`` and
``check`` O(total blocks) (stateful_tests/sequences/tests/test_growth.py measures the growth).

API (all times and durations are int nanoseconds; see ``spec.sequence_inputs``)::

    t = SlotTracker(expiry=DEFAULT_EXPIRY)
    t.register_worker(worker_id, dp_start, dp_size, now)     t.unregister_worker(worker_id)
    t.add_request(SequenceRequest(...), now)                 t.mark_prefill_completed(rid, now, worker=None)
    t.free(rid, now, worker=None) -> bool                    t.force_expiry(now)
    t.loads(now)  t.potential_loads(query, new_isl_tokens, now)  t.modeled_remaining_prefill_times(now)
    t.snapshot() -> spec SlotTrackerState   t.registry_snapshot() -> spec PromptRegistryState   t.check()

Source: docs/sources.md#sequences-2 (state and mutations), docs/sources.md#sequences-3 to docs/sources.md#sequences-4
(reads), docs/sources.md#sequences-5 (projection), docs/sources.md#sequences-6 (asserted invariants),
docs/sources.md#sequences-10 (implementation notes); docs/sources.md#dynamo-sequences-readme.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..spec import sequence_errors as errors
from ..spec import slot_tracker
from ..spec.prefill import AnchorSnapshot, PrefillEntry, PrefillLoadSnapshot, PrefillState, is_prefill_tracked
from ..spec.primitives import U64_MAX, FrozenMap, Rank
from ..spec.sequence_inputs import NANOS_PER_MILLI, NANOS_PER_SEC, SequenceRequest, check_arg_uint, check_instant
from ..spec.sequence_invariants import is_block_membership_exact, read_model_lag, write_model_violations
from ..spec.sequences import (
    CHECK_EXPIRY_FREQUENCY,
    DEFAULT_EXPIRY,
    ActiveSequencesState,
    Path,
    PathSet,
    RequestRecord,
    WorkerLoadSnapshot,
    is_expired,
)
from ..spec.slot_tracker import PotentialLoad, WorkerLoad

# ----------------------------------------------------------------------------- reads (own arithmetic)


def _whole_ms(nanos: int) -> int:
    return min(nanos // NANOS_PER_MILLI, U64_MAX)


def _f64_secs(nanos: int) -> float:
    return nanos // NANOS_PER_SEC + (nanos % NANOS_PER_SEC) / 1e9


def decayed_tokens(snapshot: PrefillLoadSnapshot, now: int) -> int:
    """Return the active prefill tokens of a load snapshot at ``now`` (aggregate or anchor-only decay)."""
    front = snapshot.anchor
    if front is None:
        return 0
    e = now - front.since if now > front.since else 0
    a, d = front.tokens, front.duration
    if snapshot.total_modeled_ms is not None:  # every prefill modeled: spill at the anchor's rate
        assert d is not None, "a modeled backlog has no unmodeled prefill"
        done = a if d == 0 else min(a * e // d, U64_MAX)
        return snapshot.tokens_sum - done if snapshot.tokens_sum > done else 0
    if d is None:
        left = a
    elif d == 0:
        left = 0
    else:
        left = math.ceil(a * min(1.0, max(0.0, 1.0 - _f64_secs(e) / _f64_secs(d))))
    return snapshot.tokens_sum - a + left


def remaining_modeled_ms(snapshot: PrefillLoadSnapshot, now: int) -> int:
    """Return the modeled remaining prefill ms of a load snapshot at ``now``; raise ``MissingExpectedDuration``."""
    total = snapshot.total_modeled_ms
    if total is None:
        raise errors.MissingExpectedDuration()
    if snapshot.anchor is None:
        return total
    e = now - snapshot.anchor.since if now > snapshot.anchor.since else 0
    return max(total - _whole_ms(e), 0)


# ----------------------------------------------------------------------------- prefill tracker


class PrefillTracker:
    """One slot's prefills with running sums and the anchor (docs/sources.md#sequences-2 "PrefillLoadTracker")."""

    __slots__ = ("entries", "tokens_sum", "unmodeled", "modeled_ms", "anchor_id", "anchor_since")

    def __init__(self) -> None:
        self.entries: dict[str, tuple[int, int | None]] = {}  # FIFO: insertion order is admission order
        self.tokens_sum = 0
        self.unmodeled = 0
        self.modeled_ms = 0  # exact running sum of whole-ms durations; the snapshot saturates it
        self.anchor_id: str | None = None
        self.anchor_since: int | None = None

    # -- rules a mutant may break (each one line of the law)

    def _credit(self, since: int, duration: int, now: int) -> int:
        return min(since + duration, now)

    def _reanchor_time(self, old_since: int, now: int) -> int:
        return now

    def _duration_ms(self, duration: int) -> int:
        return _whole_ms(duration)

    # -- events

    def insert(self, rid: str, tokens: int, duration: int | None, now: int) -> None:
        self.entries[rid] = (tokens, duration)
        self.tokens_sum += tokens
        if duration is None:
            self.unmodeled += 1
        else:
            self.modeled_ms += self._duration_ms(duration)
        if self.anchor_id is None:
            self.anchor_id, self.anchor_since = rid, now

    def remove(self, rid: str, now: int) -> bool:
        entry = self.entries.pop(rid, None)
        if entry is None:
            return False
        tokens, duration = entry
        self.tokens_sum -= tokens
        if duration is None:
            self.unmodeled -= 1
        else:
            self.modeled_ms -= self._duration_ms(duration)
        if rid == self.anchor_id:
            if self.entries:
                self.anchor_id = next(iter(self.entries))
                self.anchor_since = self._reanchor_time(self.anchor_since, now)  # type: ignore[arg-type]
            else:
                self.anchor_id = self.anchor_since = None
        elif duration is not None:
            self.anchor_since = self._credit(self.anchor_since, duration, now)  # type: ignore[arg-type]
        return True

    # -- views

    def snapshot(self) -> PrefillLoadSnapshot:
        total = None if self.unmodeled else min(self.modeled_ms, U64_MAX)
        anchor = None
        if self.anchor_id is not None:
            tokens, duration = self.entries[self.anchor_id]
            anchor = AnchorSnapshot(tokens, duration, self.anchor_since)  # type: ignore[arg-type]
        return PrefillLoadSnapshot(self.tokens_sum, anchor, total)

    def state(self) -> PrefillState:
        order = tuple(PrefillEntry(rid, t, d) for rid, (t, d) in self.entries.items())
        return PrefillState(order, self.anchor_since)

    def check(self) -> None:
        """Assert the running values equal their recomputation (an expensive no-op when sound)."""
        values = list(self.entries.values())
        assert self.tokens_sum == sum(t for t, _ in values), "prefill tokens sum drifted"
        assert self.unmodeled == sum(d is None for _, d in values), "unmodeled count drifted"
        assert self.modeled_ms == sum(self._duration_ms(d) for _, d in values if d is not None), "modeled ms drifted"
        front = next(iter(self.entries), None)
        assert self.anchor_id == front, f"anchor {self.anchor_id!r} is not the front {front!r}"
        assert (self.anchor_since is None) == (front is None), "anchor time without an anchor"


# ----------------------------------------------------------------------------- block trie


@dataclass(frozen=True, slots=True)
class PathRun:
    """The block paths ``blocks[:i + 1]`` for ``start <= i < len(blocks)``: one prompt's lineage from a depth on.

    A trie's store and remove deltas are runs: naming n paths costs O(1) (the prompt's own
    tuple and an index), applying them O(n); iterating builds each path (tests only).
    """

    blocks: tuple[int, ...]
    start: int

    def __len__(self) -> int:
        return len(self.blocks) - self.start

    def __iter__(self) -> Iterator[Path]:
        return (self.blocks[: i + 1] for i in range(self.start, len(self.blocks)))


class _TrieNode:
    __slots__ = ("children", "owners")

    def __init__(self) -> None:
        self.children: dict[int, _TrieNode] = {}
        self.owners = 0  # requests whose prompt passes through (or ends at) this node


class BlockTrie:
    """Block paths of one slot, counted by lineage, with exact appear / disappear deltas.

    A node is one path (its lineage: the parent node and one block hash), so a prompt of n
    blocks costs n nodes at most: acquire and release are O(n) time and memory, and their
    deltas are ``PathRun``s (every new or vanished path of a prompt is a suffix of its walk).
    """

    __slots__ = ("root", "active_blocks")

    def __init__(self) -> None:
        self.root = _TrieNode()
        self.active_blocks = 0

    def acquire(self, blocks: tuple[int, ...]) -> PathRun:
        """Add one owner to every path of ``blocks``; return the paths that newly appeared."""
        node, start = self.root, len(blocks)
        for i, h in enumerate(blocks):
            child = node.children.get(h)
            if child is None:
                child = node.children[h] = _TrieNode()
            if child.owners == 0:
                start = min(start, i)  # an unowned node has no owned node below it
                self.active_blocks += 1
            child.owners += 1
            node = child
        return PathRun(blocks, start)

    def release(self, blocks: tuple[int, ...]) -> PathRun:
        """Remove one owner from every path of ``blocks``; return the paths that disappeared."""
        node = self.root
        for i, h in enumerate(blocks):
            child = node.children[h]
            child.owners -= 1
            if child.owners == 0:
                # Every deeper node of this prompt has no other owner either: drop them at once.
                del node.children[h]
                self.active_blocks -= len(blocks) - i
                return PathRun(blocks, i)
            node = child
        return PathRun(blocks, len(blocks))

    def paths(self) -> PathSet:
        """Return the paths the trie holds, as the spec's value (O(total prompt length))."""
        return _path_set_of(self.root, lambda node: True)

    def check(self, prompts: list[tuple[int, ...]]) -> None:
        """Assert owner counts equal the number of prompts through each node and the counter is exact (O(total blocks))."""
        through: dict[int, int] = {}  # id(node) -> prompts whose walk passes it
        for blocks in prompts:
            node = self.root
            for depth, h in enumerate(blocks, 1):
                child = node.children.get(h)
                assert child is not None, f"a prompt's path of depth {depth} is missing"
                through[id(child)] = through.get(id(child), 0) + 1
                node = child
        nodes = 0
        for depth, node in _walk(self.root):
            assert node.owners > 0, f"an unowned node at depth {depth}"
            assert node.owners == through.get(id(node)), (
                f"a node at depth {depth} has {node.owners} owners, {through.get(id(node))} prompts"
            )
            nodes += 1
        assert self.active_blocks == nodes, f"active_blocks {self.active_blocks} != {nodes}"


class _PathNode:
    __slots__ = ("children", "held")

    def __init__(self) -> None:
        self.children: dict[int, _PathNode] = {}
        self.held = False


class PathTrie:
    """A mutable set of block paths as a trie: the registry's membership of one slot.

    A path is held when its node's flag is set; an unflagged node exists only above a held
    one. ``store`` and ``remove`` apply a ``PathRun`` as set union and difference, path by
    path, in O(len(blocks)): applied in mutation order, the trie equals the slot's own
    ``BlockTrie``; applied in another order (a broken pipeline), it is whatever set the
    deltas make, exactly, as a set of tuples would be.
    """

    __slots__ = ("root", "size")

    def __init__(self) -> None:
        self.root = _PathNode()
        self.size = 0

    def store(self, run: PathRun) -> None:
        if not run:
            return  # no path to hold, so no node to make
        node = self.root
        for i, h in enumerate(run.blocks):
            child = node.children.get(h)
            if child is None:
                child = node.children[h] = _PathNode()
            if i >= run.start and not child.held:
                child.held = True
                self.size += 1
            node = child

    def remove(self, run: PathRun) -> None:
        node, trail = self.root, []
        for i, h in enumerate(run.blocks):
            child = node.children.get(h)
            if child is None:
                break
            if i >= run.start and child.held:
                child.held = False
                self.size -= 1
            trail.append((node, h, child))
            node = child
        for parent, h, child in reversed(trail):  # drop the unflagged nodes left with nothing below
            if child.held or child.children:
                break
            del parent.children[h]

    def held_depth(self, query: tuple[int, ...]) -> int:
        """Return how many leading blocks of ``query`` are held, each with everything before it."""
        node, depth = self.root, 0
        for h in query:
            child = node.children.get(h)
            if child is None or not child.held:
                break
            node, depth = child, depth + 1
        return depth

    def freeze(self) -> PathSet:
        """Return the set as the spec's value (O(total leaf length))."""
        return _path_set_of(self.root, lambda node: node.held)

    def check(self) -> None:
        """Assert every unflagged node has a node below it and the size counter is exact."""
        held = 0
        for depth, node in _walk(self.root):
            assert node.held or node.children, f"an unheld leaf at depth {depth}"
            held += node.held
        assert self.size == held, f"size {self.size} != {held} held paths"


def _walk(root: Any) -> Iterator[tuple[int, Any]]:
    """Yield ``(depth, node)`` for every node below ``root`` (iterative: a prompt may be deeper than the stack)."""
    stack = [(1, child) for child in root.children.values()]
    while stack:
        depth, node = stack.pop()
        yield depth, node
        stack.extend((depth + 1, child) for child in node.children.values())


def _path_set_of(root: Any, is_held: Callable[[Any], bool]) -> PathSet:
    """Return the paths below ``root`` as a ``PathSet``: the childless nodes are the leaves, the unheld ones the gaps.

    Every childless node is held in both tries (``check``), so that is the canonical value.
    """
    leaves: list[Path] = []
    gaps: list[Path] = []
    path: list[int] = []
    stack = [(1, h, child) for h, child in root.children.items()]
    while stack:
        depth, h, node = stack.pop()
        del path[depth - 1 :]
        path.append(h)
        if not node.children:
            leaves.append(tuple(path))
        if not is_held(node):
            gaps.append(tuple(path))
        stack.extend((depth + 1, g, child) for g, child in node.children.items())
    return PathSet(frozenset(leaves), frozenset(gaps))


def _nonempty(run: PathRun) -> list[PathRun]:
    return [run] if run else []


# ----------------------------------------------------------------------------- one slot


class ActiveSequences:
    """The authoritative state of one (worker, dp_rank) slot (docs/sources.md#sequences-2)."""

    prefill_class: type[PrefillTracker] = PrefillTracker
    trie_class: type[BlockTrie] = BlockTrie

    def __init__(self, now: int) -> None:
        self.requests: dict[str, RequestRecord] = {}
        self.prefill = self.prefill_class()
        self.trie = self.trie_class()
        self.last_expiry_check = now

    # -- rules a mutant may break

    def _is_tracked(self, request: SequenceRequest) -> bool:
        return is_prefill_tracked(request.track_prefill_tokens, request.prefill_load_hint)

    def _expiry_due(self, now: int) -> bool:
        return now - self.last_expiry_check >= CHECK_EXPIRY_FREQUENCY

    def _free_prefill(self, rid: str, now: int) -> None:
        self.prefill.remove(rid, now)

    # -- events; each returns the membership delta (stored, removed) for the registry: lists of non-empty runs

    def would_overflow(self, request: SequenceRequest) -> bool:
        hint = request.prefill_load_hint
        return self._is_tracked(request) and self.prefill.tokens_sum + hint.initial_effective_prefill_tokens > U64_MAX  # type: ignore[union-attr]

    def add(self, request: SequenceRequest, now: int, expiry: int | None) -> tuple[list[str], list[PathRun], list[PathRun]]:
        if request.request_id in self.requests:
            return [], [], []
        expired, removed = self.force_expiry(now, expiry)
        blocks = request.token_sequence or ()
        self.requests[request.request_id] = RequestRecord(blocks, now, request.expected_output_tokens)
        stored = _nonempty(self.trie.acquire(blocks))
        if self._is_tracked(request):
            hint = request.prefill_load_hint
            self.prefill.insert(request.request_id, hint.initial_effective_prefill_tokens, hint.expected_prefill_duration, now)  # type: ignore[union-attr]
        return expired, stored, removed

    def mark_prefill_completed(self, rid: str, now: int) -> bool:
        return self.prefill.remove(rid, now)

    def free(self, rid: str, now: int) -> list[PathRun] | None:
        self._free_prefill(rid, now)
        record = self.requests.pop(rid, None)
        if record is None:
            return None
        return _nonempty(self.trie.release(record.blocks))

    def _is_expired(self, started_at: int, now: int, expiry: int) -> bool:
        return is_expired(started_at, now, expiry)  # a rule a mutant may break

    def force_expiry(self, now: int, expiry: int | None) -> tuple[list[str], list[PathRun]]:
        if expiry is None or not self._expiry_due(now):
            return [], []
        expired = [rid for rid, r in self.requests.items() if self._is_expired(r.started_at, now, expiry)]
        removed: list[PathRun] = []
        for rid in expired:
            removed += self.free(rid, now) or []
        self.last_expiry_check = now
        return expired, removed

    # -- views

    def load_snapshot(self) -> WorkerLoadSnapshot:
        return WorkerLoadSnapshot(self.trie.active_blocks, len(self.requests), self.prefill.snapshot())

    def state(self) -> ActiveSequencesState:
        return ActiveSequencesState(FrozenMap(self.requests), self.prefill.state(), self.last_expiry_check)

    def check(self) -> None:
        self.prefill.check()
        self.trie.check([r.blocks for r in self.requests.values()])
        assert set(self.prefill.entries) <= set(self.requests), "a prefill without its request"
        assert is_block_membership_exact(self.trie.paths(), self.state()), "trie paths differ from request prompts"


# ----------------------------------------------------------------------------- the tracker


class _View:
    __slots__ = ("membership", "load")

    def __init__(self) -> None:
        self.membership = PathTrie()
        self.load = WorkerLoadSnapshot()


class SlotTracker:
    """The multi-worker tracker of one model and routing group, sequential and exact."""

    sequences_class: type[ActiveSequences] = ActiveSequences

    def __init__(self, expiry: int | None = DEFAULT_EXPIRY) -> None:
        self.expiry = slot_tracker.new_slot_tracker(expiry).expiry  # validates
        self.ranges: dict[int, slot_tracker.DpRange] = {}
        self.slots: dict[Rank, ActiveSequences] = {}
        self.index: dict[str, Rank] = {}
        self.registry: dict[Rank, _View] = {}

    # -- rules a mutant may break

    def _decayed_tokens(self, snapshot: PrefillLoadSnapshot, now: int) -> int:
        return decayed_tokens(snapshot, now)

    def _remaining_ms(self, snapshot: PrefillLoadSnapshot, now: int) -> int:
        return remaining_modeled_ms(snapshot, now)

    def _booked_owner(self, rid: str) -> Rank | None:
        return self.index.get(rid)

    def _publish(self, rank: Rank, stored: list[PathRun], removed: list[PathRun]) -> None:
        """Project one slot's delta into the registry: removes, then stores, then the load (O(delta prompts' blocks))."""
        view = self.registry[rank]
        for run in removed:
            view.membership.remove(run)
        for run in stored:
            view.membership.store(run)
        view.load = self.slots[rank].load_snapshot()

    # -- topology

    def register_worker(self, worker_id: object, dp_start: object, dp_size: object, now: object) -> None:
        wid, dp, now = slot_tracker.check_register_args(worker_id, dp_start, dp_size, now)
        slot_tracker.check_new_worker(self.ranges, wid)
        self.ranges[wid] = dp
        for rank in slot_tracker.dp_ranks(wid, dp):
            self.slots[rank] = self.sequences_class(now)
            self.registry[rank] = _View()

    def unregister_worker(self, worker_id: object) -> None:
        wid = check_arg_uint(worker_id, "worker_id")
        dp = self.ranges.pop(wid, None)
        if dp is None:
            raise errors.UnknownWorker(wid)
        gone = set(slot_tracker.dp_ranks(wid, dp))
        for rank in gone:
            del self.slots[rank], self.registry[rank]
        for rid in [rid for rid, w in self.index.items() if w in gone]:
            del self.index[rid]

    # -- lifecycle

    def add_request(self, request: object, now: object) -> None:
        request, now = slot_tracker.check_add_args(request, now)
        slot = slot_tracker.check_slot(self.slots.get(request.worker), request.worker)
        slot_tracker.check_admission(request, self._booked_owner(request.request_id), lambda: slot.would_overflow(request))
        self.index[request.request_id] = request.worker
        expired, stored, removed = slot.add(request, now, self.expiry)
        for rid in expired:
            self.index.pop(rid, None)
        self._publish(request.worker, stored, removed)

    def mark_prefill_completed(self, request_id: object, now: object, worker: object = None) -> None:
        rid, at, named = slot_tracker.check_request_args(request_id, now, worker)
        owner = slot_tracker.check_fence(rid, named, self.index.get(rid))
        if owner is None:
            raise errors.RequestNotFound(rid)
        if self.slots[owner].mark_prefill_completed(rid, at):
            self._publish(owner, [], [])

    def free(self, request_id: object, now: object, worker: object = None) -> bool:
        rid, at, named = slot_tracker.check_request_args(request_id, now, worker)
        owner = slot_tracker.check_fence(rid, named, self.index.get(rid))
        if owner is None:
            return False
        del self.index[rid]
        removed = self.slots[owner].free(rid, at)
        self._publish(owner, [], removed or [])
        return True

    def force_expiry(self, now: object) -> None:
        now = check_instant(now)
        for rank, slot in self.slots.items():
            expired, removed = slot.force_expiry(now, self.expiry)
            for rid in expired:
                self.index.pop(rid, None)
            if expired:
                self._publish(rank, [], removed)

    # -- reads (from the registry, the read model)

    def loads(self, now: object) -> FrozenMap[Rank, WorkerLoad]:
        now = check_instant(now)
        return FrozenMap(
            {rank: slot_tracker.load_row(self._decayed_tokens(v.load.prefill, now), v.load) for rank, v in self.registry.items()}
        )

    def potential_loads(self, query: object, new_isl_tokens: object, now: object) -> FrozenMap[Rank, PotentialLoad]:
        q, isl, now = slot_tracker.check_potential_loads_args(query, new_isl_tokens, now)
        return FrozenMap(
            {
                rank: slot_tracker.potential_load_row(
                    self._decayed_tokens(v.load.prefill, now), v.load, q, slot_tracker.overlap_depth(v.membership, q), isl
                )
                for rank, v in self.registry.items()
            }
        )

    def modeled_remaining_prefill_times(self, now: object) -> FrozenMap[Rank, Any]:
        now = check_instant(now)
        out: dict[Rank, Any] = {}
        for rank, v in self.registry.items():
            try:
                out[rank] = self._remaining_ms(v.load.prefill, now)
            except errors.MissingExpectedDuration as missing:
                out[rank] = missing
        return FrozenMap(out)

    # -- abstraction and invariants

    def snapshot(self) -> slot_tracker.SlotTrackerState:
        """Return the authoritative state as the spec's abstract value."""
        return slot_tracker.SlotTrackerState(
            slot_tracker.WorkerTable(FrozenMap(self.ranges)),
            FrozenMap(self.index),
            FrozenMap({rank: slot.state() for rank, slot in self.slots.items()}),
            self.expiry,
        )

    def registry_snapshot(self) -> slot_tracker.PromptRegistryState:
        """Return the PromptRegistry (the read model) as the spec's abstract value."""
        return slot_tracker.PromptRegistryState(
            FrozenMap({rank: slot_tracker.WorkerView(v.membership.freeze(), v.load) for rank, v in self.registry.items()})
        )

    def check(self) -> None:
        """Assert every invariant; the registry must equal the projection (always, being sequential)."""
        for slot in self.slots.values():
            slot.check()
        for view in self.registry.values():
            view.membership.check()
        state = self.snapshot()
        bad = write_model_violations(state)
        assert not bad, f"write model violates {bad}"
        lag = read_model_lag(self.registry_snapshot(), state)
        assert not lag, f"registry differs from the projection: {lag}"

"""A concurrent multi-worker slot tracker: many request threads add, complete, free and read at once.

Design
------
The seed's local write pipeline, made concurrent (docs/sources.md#dynamo-sequences-readme; docs/sources.md#sequences-5 "When")::

    event -> WorkerTable + RequestIndex -> one slot's ActiveSequences (under its lock) -> PromptRegistry

- **Topology gate** (``RWGate``): every lifecycle call holds it shared for its whole
  length; ``register_worker`` / ``unregister_worker`` hold it exclusive. So the slot a
  call found cannot disappear under it, and a booking always names a registered slot.
- **Slot lock** (one ``Lock`` per (worker, dp_rank)): guards that slot's
  ``ActiveSequences`` (the reference's per-slot write model) *and every RequestIndex entry
  that names the slot*. An add books its id and mutates the slot inside one critical
  section; a free or mark re-checks the booking under the lock before it acts. This closes
  the window docs/sources.md#sequences-10 item 4 describes, where booking before taking the lock lets
  a racing free remove the booking, see no state, and leave the add's request unbooked
  (``stateful_tests.sequences.mutants.BookBeforeSlotLock`` reopens it; the stress test
  catches it).
- **RequestIndex** (a dict under its own short ``Lock``): ``try_insert`` is atomic, so two
  adds of one id on different slots cannot both book it; ``remove_if`` removes only the
  booking of the expected slot.
- **PromptRegistry**: per slot, a membership (a set of block paths held as a trie, O(blocks)
  per delta) under its own lock and a load snapshot
  (an immutable ``WorkerLoadSnapshot`` replaced by one reference assignment, as Dynamo's
  SeqLock slot is replaced whole). A mutation publishes its delta while it still holds
  the slot lock, in three separate steps (removes, stores, load), so publications of one
  slot land in mutation order and the registry converges once writers stop. Readers take
  no slot lock: [Relaxed: a reader may pair one moment's membership with another moment's
  load (the seed's torn reads); each single load snapshot is never torn.]

Lock order: topology gate -> slot lock -> index lock; topology gate -> slot lock ->
registry gate (shared) -> membership lock. Readers: registry gate (shared) -> membership
lock. Topology changes: topology gate (exclusive) -> index lock / registry gate (exclusive).

Linearization points: add, at its ``try_insert`` (or its rejection); free and mark, at the
re-check of the booking under the slot lock (a free that finds the booking gone was
overtaken by another free, and is a no-op there; a mark that finds it gone reports
``RequestNotFound`` there); reads, at each slot's single load-snapshot read.

Every place where another thread's interleaving matters is marked with ``yield_point``.
Only ``impl/_sync.py`` imports ``threading``.

XX: the registry's membership is a trie of paths per slot (``reference.sequences.PathTrie``,
O(blocks) per delta), not Dynamo's shared prompt trie; overlap depth is a walk of
``len(query)`` child lookups.

Source: docs/sources.md#dynamo-sequences-readme (whole); docs/sources.md#sequences-1 "RequestIndex",
docs/sources.md#sequences-5, docs/sources.md#sequences-10 item 4.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..reference.sequences import ActiveSequences, PathRun, PathTrie
from ..spec import sequence_errors as errors
from ..spec import slot_tracker
from ..spec.prefill import modeled_remaining_prefill_ms
from ..spec.primitives import FrozenMap, Rank
from ..spec.sequence_inputs import check_arg_uint, check_instant
from ..spec.sequence_invariants import read_model_lag, write_model_violations
from ..spec.sequences import DEFAULT_EXPIRY, WorkerLoadSnapshot
from ..spec.slot_tracker import PotentialLoad, WorkerLoad
from ..spec.token_load import active_prefill_tokens
from ._sync import Lock, RWGate, yield_point
from .poison import Poisonable, guarded


@dataclass(frozen=True)
class TrackerStatistics:
    """What the races did: rejected duplicates, and frees / marks that lost their booking under them."""

    adds: int
    duplicate_rejections: int
    frees: int
    raced_frees: int
    raced_marks: int


@dataclass
class SlotCounts:
    """One slot's counters (written under its lock); ``statistics`` sums them into ``TrackerStatistics``."""

    adds: int = 0
    duplicate_rejections: int = 0
    frees: int = 0
    raced_frees: int = 0
    raced_marks: int = 0


class _Slot:
    """One (worker, dp_rank): its ActiveSequences and the counters of what happened to it."""

    __slots__ = ("lock", "seq", "counts")

    def __init__(self, rank: Rank, now: int) -> None:
        self.lock = Lock(f"slot{rank!r}")  # guards seq, counts, and every index entry naming this slot
        self.seq = ActiveSequences(now)
        self.counts = SlotCounts()


class _RequestIndex:
    """request id -> owning slot; each operation is atomic under one short lock."""

    __slots__ = ("_lock", "_owner")

    def __init__(self) -> None:
        self._lock = Lock("request_index")
        self._owner: dict[str, Rank] = {}

    def get(self, rid: str) -> Rank | None:
        return self._owner.get(rid)

    def try_insert(self, rid: str, worker: Rank) -> Rank | None:
        """Book ``rid`` on ``worker`` unless booked; return the existing owner or None."""
        with self._lock:
            owner = self._owner.get(rid)
            if owner is None:
                self._owner[rid] = worker
            return owner

    def remove_if(self, rid: str, worker: Rank) -> bool:
        """Remove ``rid``'s booking only if it names ``worker``; return whether it did."""
        with self._lock:
            if self._owner.get(rid) != worker:
                return False
            del self._owner[rid]
            return True

    def remove_workers(self, ranks: set[Rank]) -> None:
        with self._lock:
            for rid in [r for r, w in self._owner.items() if w in ranks]:
                del self._owner[rid]

    def items(self) -> list[tuple[str, Rank]]:
        with self._lock:
            return list(self._owner.items())


class _RegistryView:
    """One slot's registry entry: membership under its own lock, and a load snapshot replaced whole."""

    __slots__ = ("lock", "membership", "load")

    def __init__(self) -> None:
        self.lock = Lock("registry.membership")
        self.membership = PathTrie()
        self.load = WorkerLoadSnapshot()


class ConcurrentSlotTracker(Poisonable):
    """The concurrent tracker; same API and errors as ``reference.sequences.SlotTracker``.

    A write interrupted by an untyped exception poisons the tracker when it no longer checks
    (``poison``): every later call then raises ``Poisoned``.
    """

    def __init__(self, expiry: int | None = DEFAULT_EXPIRY) -> None:
        self.expiry = slot_tracker.new_slot_tracker(expiry).expiry  # validates
        self._topology = RWGate("sequences.topology")
        self._ranges: dict[int, slot_tracker.DpRange] = {}  # guarded by the topology gate (exclusive to write)
        self._slots: dict[Rank, _Slot] = {}  # guarded by the topology gate (exclusive to write)
        self._index = _RequestIndex()
        self._registry_gate = RWGate("sequences.registry")
        self._registry: dict[Rank, _RegistryView] = {}  # keys guarded by the registry gate (exclusive to write)

    # ------------------------------------------------------------------ topology

    @guarded
    def register_worker(self, worker_id: object, dp_start: object, dp_size: object, now: object) -> None:
        wid, dp, now = slot_tracker.check_register_args(worker_id, dp_start, dp_size, now)
        with self._topology.exclusive():
            slot_tracker.check_new_worker(self._ranges, wid)
            ranks = slot_tracker.dp_ranks(wid, dp)
            self._ranges[wid] = dp
            for rank in ranks:
                self._slots[rank] = _Slot(rank, now)
            with self._registry_gate.exclusive():
                for rank in ranks:
                    self._registry[rank] = _RegistryView()

    @guarded
    def unregister_worker(self, worker_id: object) -> None:
        wid = check_arg_uint(worker_id, "worker_id")
        with self._topology.exclusive():
            dp = self._ranges.pop(wid, None)
            if dp is None:
                raise errors.UnknownWorker(wid)
            gone = set(slot_tracker.dp_ranks(wid, dp))
            for rank in gone:
                del self._slots[rank]
            self._index.remove_workers(gone)
            with self._registry_gate.exclusive():
                for rank in gone:
                    del self._registry[rank]

    # ------------------------------------------------------------------ lifecycle

    def _publish(self, rank: Rank, slot: _Slot, stored: list[PathRun], removed: list[PathRun]) -> None:
        """Project one slot's delta into the registry (caller holds the slot lock): removes, stores, load.

        Each delta is a list of ``PathRun``s, so publishing a prompt of n blocks is O(n).
        """
        with self._registry_gate.shared():
            view = self._registry[rank]
            if removed:
                with view.lock:
                    for run in removed:
                        view.membership.remove(run)
                yield_point("sequences.publish.removed")
            if stored:
                with view.lock:
                    for run in stored:
                        view.membership.store(run)
                yield_point("sequences.publish.stored")
            view.load = slot.seq.load_snapshot()

    @guarded
    def add_request(self, request: object, now: object) -> None:
        request, now = slot_tracker.check_add_args(request, now)
        rid, worker = request.request_id, request.worker
        with self._topology.shared():
            slot = slot_tracker.check_slot(self._slots.get(worker), worker)
            yield_point("sequences.add.slot_found")
            with slot.lock:
                yield_point("sequences.add.slot_locked")
                try:
                    slot_tracker.check_admission(request, self._index.get(rid), lambda: slot.seq.would_overflow(request))
                    owner = self._index.try_insert(rid, worker)
                    if owner is not None:  # an add of the same id on another slot booked it since the check
                        raise errors.DuplicateRequest(rid, owner)
                except errors.DuplicateRequest:
                    slot.counts.duplicate_rejections += 1
                    raise
                yield_point("sequences.add.booked")
                expired, stored, removed = slot.seq.add(request, now, self.expiry)
                for gone in expired:
                    self._index.remove_if(gone, worker)
                slot.counts.adds += 1
                yield_point("sequences.add.mutated")
                self._publish(worker, slot, stored, removed)

    def _lookup(self, rid: str, named: Rank | None) -> Rank | None:
        return slot_tracker.check_fence(rid, named, self._index.get(rid))

    @guarded
    def mark_prefill_completed(self, request_id: object, now: object, worker: object = None) -> None:
        rid, now, named = slot_tracker.check_request_args(request_id, now, worker)
        with self._topology.shared():
            owner = self._lookup(rid, named)
            if owner is None:
                raise errors.RequestNotFound(rid)
            slot = self._slots[owner]
            yield_point("sequences.mark.owner_found")
            with slot.lock:
                if self._index.get(rid) != owner:
                    slot.counts.raced_marks += 1
                    raise errors.RequestNotFound(rid)  # freed (and perhaps re-added elsewhere) since the lookup
                if slot.seq.mark_prefill_completed(rid, now):
                    self._publish(owner, slot, [], [])

    @guarded
    def free(self, request_id: object, now: object, worker: object = None) -> bool:
        rid, now, named = slot_tracker.check_request_args(request_id, now, worker)
        with self._topology.shared():
            owner = self._lookup(rid, named)
            if owner is None:
                return False
            slot = self._slots[owner]
            yield_point("sequences.free.owner_found")
            with slot.lock:
                if not self._index.remove_if(rid, owner):
                    slot.counts.raced_frees += 1
                    return False  # another free got there first
                yield_point("sequences.free.unbooked")
                removed = slot.seq.free(rid, now)
                slot.counts.frees += 1
                self._publish(owner, slot, [], removed or [])
                return True

    @guarded
    def force_expiry(self, now: object) -> None:
        now = check_instant(now)
        with self._topology.shared():
            for rank, slot in list(self._slots.items()):
                with slot.lock:
                    expired, removed = slot.seq.force_expiry(now, self.expiry)
                    for gone in expired:
                        self._index.remove_if(gone, rank)
                    if expired:
                        self._publish(rank, slot, [], removed)
                yield_point("sequences.expiry.slot_done")

    # ------------------------------------------------------------------ reads (the read model only)

    def _views(self) -> list[tuple[Rank, _RegistryView]]:
        with self._registry_gate.shared():
            return list(self._registry.items())

    @guarded
    def loads(self, now: object) -> FrozenMap[Rank, WorkerLoad]:
        now = check_instant(now)
        out = {}
        for rank, view in self._views():
            load = view.load  # one reference read: never torn
            out[rank] = slot_tracker.load_row(active_prefill_tokens(load.prefill, now), load)
        return FrozenMap(out)

    @guarded
    def potential_loads(self, query: object, new_isl_tokens: object, now: object) -> FrozenMap[Rank, PotentialLoad]:
        q, isl, now = slot_tracker.check_potential_loads_args(query, new_isl_tokens, now)
        out = {}
        for rank, view in self._views():
            load = view.load
            yield_point("sequences.read.between_load_and_membership")  # [Relaxed: torn read]
            with view.lock:
                depth = slot_tracker.overlap_depth(view.membership, q)
            out[rank] = slot_tracker.potential_load_row(active_prefill_tokens(load.prefill, now), load, q, depth, isl)
        return FrozenMap(out)

    @guarded
    def modeled_remaining_prefill_times(self, now: object) -> FrozenMap[Rank, Any]:
        now = check_instant(now)
        out: dict[Rank, Any] = {}
        for rank, view in self._views():
            try:
                out[rank] = modeled_remaining_prefill_ms(view.load.prefill, now)
            except errors.MissingExpectedDuration as missing:
                out[rank] = missing
        return FrozenMap(out)

    # ------------------------------------------------------------------ abstraction and invariants

    def statistics(self) -> TrackerStatistics:
        with self._topology.exclusive():
            totals = {f.name: sum(getattr(s.counts, f.name) for s in self._slots.values()) for f in fields(SlotCounts)}
        return TrackerStatistics(**totals)

    @guarded
    def snapshot(self) -> slot_tracker.SlotTrackerState:
        """Return the authoritative state (taken under the exclusive topology gate: no writer runs)."""
        return self._state()

    @guarded
    def registry_snapshot(self) -> slot_tracker.PromptRegistryState:
        """Return the registry as it is now (possibly lagging while writers run)."""
        return self._registry_state()

    def _state(self) -> slot_tracker.SlotTrackerState:
        with self._topology.exclusive():
            return slot_tracker.SlotTrackerState(
                slot_tracker.WorkerTable(FrozenMap(self._ranges)),
                FrozenMap(dict(self._index.items())),
                FrozenMap({rank: slot.seq.state() for rank, slot in self._slots.items()}),
                self.expiry,
            )

    def _registry_state(self) -> slot_tracker.PromptRegistryState:
        with self._registry_gate.exclusive():
            views = {}
            for rank, view in self._registry.items():
                with view.lock:
                    views[rank] = slot_tracker.WorkerView(view.membership.freeze(), view.load)
        return slot_tracker.PromptRegistryState(FrozenMap(views))

    def check(self) -> None:
        """Assert every invariant; call only when no writer runs (the registry may lag until then)."""
        with self._topology.exclusive():
            for slot in self._slots.values():
                slot.seq.check()
            for view in self._registry.values():  # no writer runs, and readers only read: no membership lock
                view.membership.check()
        state = self._state()
        bad = write_model_violations(state)
        assert not bad, f"write model violates {bad}"
        lag = read_model_lag(self._registry_state(), state)
        assert not lag, f"registry has not converged to the projection: {lag}"

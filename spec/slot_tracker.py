"""The multi-worker slot tracker: WorkerTable, RequestIndex, per-slot ActiveSequences, PromptRegistry.

Write model (authoritative, strict)
-----------------------------------
- ``WorkerTable``: worker id -> dp range; each (worker_id, dp_rank) in a range is a slot
  with its own ``ActiveSequencesState`` (``spec.sequences``).
- ``RequestIndex``: request id -> the slot that owns it. Ids are unique across every
  worker and rank of one tracker; a second add of a booked id is ``DuplicateRequest``
  naming the owner, checked *before* any slot is touched.

A local mutation flows one way (docs/sources.md#dynamo-sequences-readme "Why this is a DAG")::

    event -> WorkerTable + RequestIndex -> ActiveSequences (of one slot) -> PromptRegistry -> readers

Read model (derived, advisory)
------------------------------
``PromptRegistry``: per slot, the prompt membership (the block paths it holds) and its
``WorkerLoadSnapshot``. It is a projection of the write model (``project_prompt_registry``)
and never writes back. A concurrent implementation may publish membership and load
separately and let readers see torn combinations; after quiescence it must equal the
projection (``spec.sequence_invariants``). Readers decay load at read time from the frozen
snapshot, so load decays without any write.

Every handler validates its arguments first and raises a typed error from
``sequence_errors`` without changing anything; success returns the new state.

Source: docs/sources.md#dynamo-sequences-readme (whole); docs/sources.md#sequences-1 "WorkerTable", "RequestIndex",
"Unknown worker on add"; docs/sources.md#sequences-5 "PromptRegistry projection"; docs/sources.md#sequences-8-2 to
docs/sources.md#sequences-8-3 (routes and codes confirmed on 1.6.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from . import sequences as single
from .prefill import modeled_remaining_prefill_ms
from .primitives import EMPTY_MAP, U32_MAX, U64_MAX, FrozenMap, Rank
from .sequence_errors import (
    DuplicateRequest,
    DuplicateWorker,
    InvalidDpRange,
    InvalidDuration,
    MissingExpectedDuration,
    RequestNotFound,
    TokenLoadOverflow,
    UnknownWorker,
    WorkerNotFound,
    WrongWorker,
)
from .sequence_inputs import (
    SequenceRequest,
    check_arg_uint,
    check_duration,
    check_instant,
    check_request_id,
    check_sequence_request,
    check_token_sequence,
    check_worker,
)
from .sequences import DEFAULT_EXPIRY, EMPTY_PATHS, ActiveSequencesState, Path, PathSet, WorkerLoadSnapshot
from .token_load import active_prefill_tokens


@dataclass(frozen=True, slots=True)
class DpRange:
    """The contiguous dp ranks ``[dp_start, dp_start + dp_size)`` a worker registered."""

    dp_start: int
    dp_size: int


@dataclass(frozen=True, slots=True)
class WorkerTable:
    """Worker id -> dp range; the registered slots are every (worker_id, rank) in a range."""

    ranges: FrozenMap[int, DpRange] = EMPTY_MAP


@dataclass(frozen=True, slots=True)
class SlotTrackerState:
    """The authoritative state of one tracker (one model and routing group)."""

    worker_table: WorkerTable
    request_index: FrozenMap[str, Rank]
    sequences: FrozenMap[Rank, ActiveSequencesState]
    expiry: int | None = DEFAULT_EXPIRY


@dataclass(frozen=True, slots=True)
class WorkerView:
    """What the PromptRegistry holds for one slot: prompt membership (its block paths) and the load snapshot."""

    membership: PathSet = EMPTY_PATHS
    load: WorkerLoadSnapshot = single.IDLE_LOAD


@dataclass(frozen=True, slots=True)
class PromptRegistryState:
    """The derived read model: one ``WorkerView`` per registered slot."""

    views: FrozenMap[Rank, WorkerView] = EMPTY_MAP


@dataclass(frozen=True, slots=True)
class WorkerLoad:
    """One row of ``/loads``: decayed prefill tokens, decode blocks and requests of a slot."""

    active_prefill_tokens: int
    active_decode_blocks: int
    active_requests: int


@dataclass(frozen=True, slots=True)
class PotentialLoad:
    """One row of ``/potential_loads``: the slot's load if a new prompt were routed to it."""

    potential_prefill_tokens: int
    potential_decode_blocks: int
    active_requests: int


def new_slot_tracker(expiry: int | None = DEFAULT_EXPIRY) -> SlotTrackerState:
    """Return an empty tracker whose requests expire after ``expiry`` (``None``: never).

    Source: docs/sources.md#sequences-2 "Expiry" (default 300 s; ``DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS``).
    """
    if expiry is not None:
        expiry = check_duration(expiry, "expiry")
        if expiry == 0:
            raise InvalidDuration("expiry must be greater than zero (Dynamo panics on a zero expiry)")
    return SlotTrackerState(WorkerTable(), EMPTY_MAP, EMPTY_MAP, expiry)


# ----------------------------------------------------------------------------- topology


def dp_ranks(worker_id: int, dp: DpRange) -> tuple[Rank, ...]:
    """Return the slots of one registered worker."""
    return tuple(Rank(worker_id, r) for r in range(dp.dp_start, dp.dp_start + dp.dp_size))


def registered_ranks(table: WorkerTable) -> frozenset[Rank]:
    """Return every registered (worker_id, dp_rank) slot."""
    return frozenset(rank for w, dp in table.ranges.items() for rank in dp_ranks(w, dp))


MAX_DP_SIZE = 65_536
"""The most data-parallel ranks one worker may register. Dynamo takes any u32 size and builds one slot per rank,
so a single ``register_worker(w, 0, 2**31)`` stalls the tracker for minutes; kvproof refuses a size past this
bound (docs/hostile-input.md H12). No deployment runs more than a few hundred ranks per worker."""


def check_dp_range(dp_start: object, dp_size: object) -> DpRange:
    """Return the range, or raise ``InvalidDpRange`` for ``dp_size == 0``, past ``MAX_DP_SIZE``, or an end past u32.

    Source: docs/sources.md#sequences-1 "WorkerTable" (``InvalidDpSize``, ``InvalidDpRange``);
    docs/sources.md#sequences-8-3 (start 4294967295 size 1 is 400; start 4294967294 size 1 is accepted).
    """
    start, size = check_arg_uint(dp_start, "dp_start", U32_MAX), check_arg_uint(dp_size, "dp_size", U32_MAX)
    if size == 0:
        raise InvalidDpRange("dp_size must be greater than 0")
    if size > MAX_DP_SIZE:
        raise InvalidDpRange(f"dp_size {size} is more than {MAX_DP_SIZE} ranks for one worker (kvproof's bound; H12)")
    if start + size > U32_MAX:
        raise InvalidDpRange(f"dp range overflows u32: start={start} size={size}")
    return DpRange(start, size)


def on_register_worker(
    state: SlotTrackerState, worker_id: object, dp_start: object, dp_size: object, now: object
) -> SlotTrackerState:
    """Return the state with a new worker whose slots start empty at ``now``; strict on duplicates.

    Source: docs/sources.md#sequences-1 ``register_worker`` (``DuplicateWorker``), "A worker that is removed and
    re-added starts empty"; docs/sources.md#sequences-8-2 ``POST /register``.
    """
    wid, dp, now = check_register_args(worker_id, dp_start, dp_size, now)
    check_new_worker(state.worker_table.ranges, wid)
    sequences = dict(state.sequences)
    for rank in dp_ranks(wid, dp):
        sequences[rank] = single.new_active_sequences(now)
    table = WorkerTable(state.worker_table.ranges.set(wid, dp))
    return SlotTrackerState(table, state.request_index, FrozenMap(sequences), state.expiry)


def check_register_args(worker_id: object, dp_start: object, dp_size: object, now: object) -> tuple[int, DpRange, int]:
    """Return the checked arguments of ``register_worker``; the first bad one wins: worker id, dp range, time.

    Source: docs/sources.md#sequences-1 ``register_worker``; docs/sources.md#sequences-8-3 (422 for a wrong type, 400
    for a bad range).
    """
    wid = check_arg_uint(worker_id, "worker_id")
    dp = check_dp_range(dp_start, dp_size)
    return wid, dp, check_instant(now)


def check_new_worker(ranges: Mapping[int, DpRange], worker_id: int) -> None:
    """Raise ``DuplicateWorker`` if ``worker_id`` is registered already (after the arguments are checked).

    Source: docs/sources.md#sequences-1 ``register_worker`` (strict on duplicates).
    """
    if worker_id in ranges:
        raise DuplicateWorker(worker_id)


def on_unregister_worker(state: SlotTrackerState, worker_id: object) -> SlotTrackerState:
    """Return the state without the worker's slots and without the bookings of their requests.

    Source: docs/sources.md#sequences-1 ``unregister_worker`` (strict), "the orchestrator then removes the removed
    workers' request mappings and registry entries"; docs/sources.md#sequences-8-3.
    """
    wid = check_arg_uint(worker_id, "worker_id")
    if wid not in state.worker_table.ranges:
        raise UnknownWorker(wid)
    gone = set(dp_ranks(wid, state.worker_table.ranges[wid]))
    index = FrozenMap({rid: w for rid, w in state.request_index.items() if w not in gone})
    sequences = FrozenMap({w: s for w, s in state.sequences.items() if w not in gone})
    return SlotTrackerState(WorkerTable(state.worker_table.ranges.delete(wid)), index, sequences, state.expiry)


# ----------------------------------------------------------------------------- lifecycle


def owner_of(state: SlotTrackerState, request_id: str) -> Rank | None:
    """Return the slot that owns ``request_id`` according to the RequestIndex, or None."""
    return state.request_index.get(request_id)


def _with_slot(state: SlotTrackerState, rank: Rank, seq: ActiveSequencesState, index: FrozenMap) -> SlotTrackerState:
    return SlotTrackerState(state.worker_table, index, state.sequences.set(rank, seq), state.expiry)


def on_add_request(state: SlotTrackerState, request: object, now: object) -> SlotTrackerState:
    """Return the state after admitting ``request`` at ``now`` on its slot (strict admission).

    Rejections, in order: a malformed request (typed errors), an unregistered slot
    (``WorkerNotFound``, even for a booked id: confirmed on 1.6.1), a booked id anywhere in
    the tracker (``DuplicateRequest`` naming the owner), a prefill token sum past u64
    (``TokenLoadOverflow``). Then the slot expires stale requests (their bookings go too),
    stores the request, and the index books it.

    Source: docs/sources.md#sequences-1 "Unknown worker on add", "RequestIndex" (``try_insert_request`` before
    ``ActiveSequences`` is touched); docs/sources.md#sequences-2 "Add"; docs/sources.md#sequences-8-3.
    """
    request, now = check_add_args(request, now)
    seq = check_slot(state.sequences.get(request.worker), request.worker)
    check_admission(request, owner_of(state, request.request_id), lambda: single.would_overflow_tokens(seq, request))
    seq, expired = single.on_add_request(seq, request, now, state.expiry)
    index = dict(state.request_index)
    for rid in expired:
        del index[rid]
    index[request.request_id] = request.worker
    return _with_slot(state, request.worker, seq, FrozenMap(index))


def check_add_args(request: object, now: object) -> tuple[SequenceRequest, int]:
    """Return the checked arguments of ``add_request``: the request first, then the time.

    Source: docs/sources.md#sequences-8-3 (422 for a malformed request body).
    """
    request = check_sequence_request(request)
    return request, check_instant(now)


S = TypeVar("S")


def check_slot(slot: S | None, worker: Rank) -> S:
    """Return the slot an add names, or raise ``WorkerNotFound``: the first rejection of a well-formed add.

    It wins over a booked id (confirmed on 1.6.1), so it is checked before ``check_admission``.

    Source: docs/sources.md#sequences-1 "Unknown worker on add"; docs/sources.md#sequences-8-3.
    """
    if slot is None:
        raise WorkerNotFound(worker)
    return slot


def check_admission(request: SequenceRequest, owner: Rank | None, overflows: Callable[[], bool]) -> None:
    """Admit or reject an add on a registered slot: a booked id anywhere wins, then a token sum past u64.

    ``owner`` is the slot the RequestIndex books ``request.request_id`` on (None: unbooked),
    so ``DuplicateRequest`` names it; ``overflows()`` is asked only for an unbooked id and
    says if the slot's prefill token sum would pass u64 (``TokenLoadOverflow``).

    Source: docs/sources.md#sequences-1 "RequestIndex" (``try_insert_request`` before ``ActiveSequences`` is touched);
    docs/sequences-findings.md S1 (the overflow).
    """
    if owner is not None:
        raise DuplicateRequest(request.request_id, owner)
    if overflows():
        raise TokenLoadOverflow(f"prefill tokens of {request.worker!r} would pass u64")


def check_request_args(request_id: object, now: object, worker: object) -> tuple[str, int, Rank | None]:
    """Return the checked arguments of ``mark_prefill_completed`` / ``free``: id, time, then the fence worker (None: unfenced)."""
    rid = check_request_id(request_id)
    now = check_instant(now)
    return rid, now, None if worker is None else check_worker(worker)


def check_fence(request_id: str, named: Rank | None, owner: Rank | None) -> Rank | None:
    """Return ``owner``, or raise ``WrongWorker`` if the call names a worker and the request is booked on another one.

    An unfenced call (``named`` None) and an unbooked id (``owner`` None) pass; the caller then decides
    (``RequestNotFound`` for a mark, a no-op for a free).

    Source: docs/sources.md#sequences-5 "Replica sync" (stale-worker marks and frees are rejected).
    """
    if named is not None and owner is not None and named != owner:
        raise WrongWorker(request_id, named, owner)
    return owner


def on_mark_prefill_completed(
    state: SlotTrackerState, request_id: object, now: object, worker: object = None
) -> SlotTrackerState:
    """Return the state after the request's prefill completes at ``now``; ``RequestNotFound`` if unbooked.

    A booked request that is not prefilling is a no-op. ``worker``, when given, fences the
    call to the owner (``WrongWorker`` otherwise), as replica sync does.

    Source: docs/sources.md#sequences-2 "MarkPrefillCompleted"; docs/sources.md#sequences-8-2 (404 for an unknown id,
    200 for a known request that is not prefilling); docs/sources.md#sequences-5 "Replica sync" (stale-worker marks
    rejected).
    """
    rid, now, named = check_request_args(request_id, now, worker)
    owner = check_fence(rid, named, owner_of(state, rid))
    if owner is None:
        raise RequestNotFound(rid)
    seq = single.on_mark_prefill_completed(state.sequences[owner], rid, now)
    return _with_slot(state, owner, seq, state.request_index)


def on_free(state: SlotTrackerState, request_id: object, now: object, worker: object = None) -> SlotTrackerState:
    """Return the state after freeing the request at ``now``: its booking goes, then the slot frees it.

    Freeing an unbooked id (never added, freed before, expired, or on a removed worker) is
    a no-op, not an error. ``worker`` fences the call as in ``on_mark_prefill_completed``.

    Source: docs/sources.md#sequences-2 "Free"; docs/sources.md#sequences-8-2 (200 also for an unknown id or a second
    free).
    """
    rid, now, named = check_request_args(request_id, now, worker)
    owner = check_fence(rid, named, owner_of(state, rid))
    if owner is None:
        return state
    seq = single.on_free(state.sequences[owner], rid, now)
    return _with_slot(state, owner, seq, state.request_index.delete(rid))


def on_force_expiry(state: SlotTrackerState, now: object) -> SlotTrackerState:
    """Return the state after the periodic sweep: every slot runs its (gated) expiry at ``now``.

    Source: docs/sources.md#sequences-2 "Expiry" (``start_periodic_force_expiry_across_all_workers``).
    """
    now = check_instant(now)
    index = dict(state.request_index)
    sequences = dict(state.sequences)
    for rank, seq in state.sequences.items():
        sequences[rank], expired = single.on_force_expiry(seq, now, state.expiry)
        for rid in expired:
            del index[rid]
    return SlotTrackerState(state.worker_table, FrozenMap(index), FrozenMap(sequences), state.expiry)


# ----------------------------------------------------------------------------- projection


def project_worker(seq: ActiveSequencesState) -> WorkerView:
    """Return the registry view of one slot: its block paths and its load snapshot."""
    return WorkerView(single.block_membership(seq), single.worker_load_snapshot(seq))


def project_prompt_registry(state: SlotTrackerState) -> PromptRegistryState:
    """Return the PromptRegistry a quiescent tracker must show: the projection of every slot.

    Source: docs/sources.md#dynamo-sequences-readme "Eventual consistency contract"; docs/sources.md#sequences-6
    (``PromptRegistry::assert_consistent_with_workers``).
    """
    return PromptRegistryState(FrozenMap({rank: project_worker(seq) for rank, seq in state.sequences.items()}))


# ----------------------------------------------------------------------------- reads


class HeldPaths(Protocol):
    """A slot's prompt membership as a reader walks it: a ``PathSet``, or an implementation's own trie."""

    def held_depth(self, query: Path) -> int:
        """Return the largest ``d`` such that ``query[:1]``, ..., ``query[:d]`` are all held."""
        ...


def overlap_depth(membership: HeldPaths, query: tuple[int, ...]) -> int:
    """Return how many leading blocks of ``query`` the slot holds as one lineage path.

    That is the largest ``d`` such that every prefix ``query[:1]``, ..., ``query[:d]`` is a
    path of the membership, found by walking it (no prefix tuple of the query is built).

    Source: docs/sources.md#sequences-5 ``potential_blocks_and_tokens``; docs/sources.md#sequences-oracle (the blocks
    experiment) (query ``[2, 3]`` overlaps 0 with a prompt ``[1, 2, 3, 5]``).
    """
    return membership.held_depth(query)


def load_row(tokens: int, load: WorkerLoadSnapshot) -> WorkerLoad:
    """Return one slot's ``/loads`` row: its decayed prefill ``tokens`` at the read time, and its snapshot's counts."""
    return WorkerLoad(tokens, load.active_blocks, load.active_requests)


def check_potential_loads_args(query: object, new_isl_tokens: object, now: object) -> tuple[tuple[int, ...], int, int]:
    """Return the checked arguments of ``potential_loads``: the query (None reads as empty), the new tokens, the time."""
    q = check_token_sequence(query) or ()
    isl = check_arg_uint(new_isl_tokens, "new_isl_tokens")
    return q, isl, check_instant(now)


def potential_load_row(tokens: int, load: WorkerLoadSnapshot, query: tuple[int, ...], depth: int, isl: int) -> PotentialLoad:
    """Return one slot's ``/potential_loads`` row: ``tokens`` (decayed) plus ``isl``, and the blocks past ``depth``.

    Tokens saturate at u64 (1.6.1 wraps: finding S2) and are not reduced by overlap; blocks
    are the active blocks plus the query blocks past the slot's ``overlap_depth``.

    Source: docs/sources.md#sequences-8-2 ``POST /potential_loads``, docs/sources.md#sequences-8-3.
    """
    return PotentialLoad(min(tokens + isl, U64_MAX), load.active_blocks + len(query) - depth, load.active_requests)


def read_loads(registry: PromptRegistryState, now: object) -> FrozenMap[Rank, WorkerLoad]:
    """Return every slot's ``/loads`` row at ``now``, decaying prefill tokens from its snapshot.

    Source: docs/sources.md#sequences-8-2 ``GET /loads``; docs/sources.md#sequences-4.
    """
    now = check_instant(now)
    return FrozenMap({rank: load_row(active_prefill_tokens(v.load.prefill, now), v.load) for rank, v in registry.views.items()})


def read_potential_loads(
    registry: PromptRegistryState, query: object, new_isl_tokens: object, now: object
) -> FrozenMap[Rank, PotentialLoad]:
    """Return every slot's load if a prompt ``query`` with ``new_isl_tokens`` were routed there.

    Tokens: active tokens plus the uniform new tokens (not reduced by overlap), saturating
    at u64 (1.6.1 wraps: finding S2). Blocks: active blocks plus the query blocks past the
    slot's overlap depth.

    Source: docs/sources.md#sequences-8-2 ``POST /potential_loads``, docs/sources.md#sequences-8-3 (128 tokens, 5
    blocks, 2 requests).
    """
    q, isl, now = check_potential_loads_args(query, new_isl_tokens, now)
    return FrozenMap(
        {
            rank: potential_load_row(active_prefill_tokens(v.load.prefill, now), v.load, q, overlap_depth(v.membership, q), isl)
            for rank, v in registry.views.items()
        }
    )


def read_modeled_remaining_prefill_times(
    registry: PromptRegistryState, now: object
) -> FrozenMap[Rank, int | MissingExpectedDuration]:
    """Return every slot's modeled remaining prefill time in ms, or ``MissingExpectedDuration`` for that slot.

    An error on one slot does not affect the others; idle slots read 0.

    Source: docs/sources.md#sequences-3 "Errors" (a ``Vec<PrefillTimeLoad{worker, Result}>``);
    docs/sources.md#sequences-5.
    """
    now = check_instant(now)
    out: dict[Rank, int | MissingExpectedDuration] = {}
    for rank, v in registry.views.items():
        try:
            out[rank] = modeled_remaining_prefill_ms(v.load.prefill, now)
        except MissingExpectedDuration as missing:
            out[rank] = missing
    return FrozenMap(out)

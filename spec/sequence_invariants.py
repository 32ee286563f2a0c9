"""The invariants of the active-sequence state, as named predicates, in two classes.

**Must never break** (the write model: WorkerTable, RequestIndex, ActiveSequences). These
hold after every completed operation, under any interleaving, with no exception:

- request ownership: every request a slot holds is booked in the RequestIndex to that
  slot, every booking names a registered slot that holds the request, so no request is
  lost (held but unbooked, or booked but held nowhere) or owned twice;
- block membership: a slot's block paths are exactly the lineage paths of its requests;
- prefill bookkeeping: prefills are a subset of requests, queued once each, each with
  tokens > 0, the token sum fits u64, and an anchor time exists exactly when a prefill does;
- topology: the slots are exactly the registered (worker, rank) pairs.

**May lag** (the read model: the PromptRegistry). A concurrent tracker may publish a
slot's load snapshot and its prompt membership at different moments, so a reader may see
a combination that never existed. They must hold again once writers are quiescent:

- load snapshots: each slot's published ``WorkerLoadSnapshot`` equals the projection;
- prompt membership: each slot's published paths equal its block membership;
- registry topology: the registry has a view for exactly the registered slots.

``write_model_violations`` and ``read_model_lag`` return the names of the failing
predicates, so every ``check()`` states each law once, here.

Source: docs/sources.md#dynamo-sequences-readme "Torn reads are intentional" ("lifecycle and ownership invariants live
in the write model ... scheduling quality lives in the read model"), "Eventual consistency contract";
docs/sources.md#sequences-6 (``assert_consistent`` of the prefill tracker, ActiveSequences, BlockTracker and
``PromptRegistry::assert_consistent_with_workers``).
"""

from __future__ import annotations

from collections import Counter

from .prefill import PrefillState
from .primitives import U64_MAX
from .sequences import ActiveSequencesState, PathSet, block_membership, worker_load_snapshot
from .slot_tracker import PromptRegistryState, SlotTrackerState, registered_ranks

# ----------------------------------------------------------------------------- must never break


def is_request_booked_by_its_slot(state: SlotTrackerState) -> bool:
    """Check if every request a slot holds is booked in the RequestIndex to that same slot."""
    return all(state.request_index.get(rid) == rank for rank, seq in state.sequences.items() for rid in seq.requests)


def is_booking_backed_by_slot(state: SlotTrackerState) -> bool:
    """Check if every booking names a registered slot that holds the request."""
    return all(rank in state.sequences and rid in state.sequences[rank].requests for rid, rank in state.request_index.items())


def is_request_owned_once(state: SlotTrackerState) -> bool:
    """Check if no request id is held by two slots."""
    counts = Counter(rid for seq in state.sequences.values() for rid in seq.requests)
    return all(n == 1 for n in counts.values())


def is_slot_set_registered(state: SlotTrackerState) -> bool:
    """Check if the slots are exactly the registered (worker_id, dp_rank) pairs."""
    return set(state.sequences) == registered_ranks(state.worker_table)


def is_anchor_present_iff_prefilling(prefill: PrefillState) -> bool:
    """Check if the anchor time is set exactly when some prefill is active."""
    return (prefill.anchor_since is None) == (not prefill.order)


def is_prefill_queued_once(prefill: PrefillState) -> bool:
    """Check if no request appears twice in the prefill order."""
    ids = [e.request_id for e in prefill.order]
    return len(ids) == len(set(ids))


def is_prefill_tokens_positive(prefill: PrefillState) -> bool:
    """Check if every active prefill tracks at least one token (zero-token hints are never tracked)."""
    return all(e.tokens > 0 for e in prefill.order)


def is_prefill_subset_of_requests(seq: ActiveSequencesState) -> bool:
    """Check if every active prefill belongs to an active request of the slot."""
    return all(e.request_id in seq.requests for e in seq.prefill.order)


def is_token_sum_in_range(seq: ActiveSequencesState) -> bool:
    """Check if the slot's prefill token sum fits u64."""
    return sum(e.tokens for e in seq.prefill.order) <= U64_MAX


def is_block_membership_exact(paths: PathSet, seq: ActiveSequencesState) -> bool:
    """Check if an implementation's recorded block paths equal the lineage paths of the slot's requests (O(total blocks))."""
    return paths == block_membership(seq)


SLOT_INVARIANTS = (
    is_anchor_present_iff_prefilling,
    is_prefill_queued_once,
    is_prefill_tokens_positive,
)
SEQUENCE_INVARIANTS = (is_prefill_subset_of_requests, is_token_sum_in_range)
TRACKER_INVARIANTS = (is_request_booked_by_its_slot, is_booking_backed_by_slot, is_request_owned_once, is_slot_set_registered)


def write_model_violations(state: SlotTrackerState) -> list[str]:
    """Return the names of the must-never-break invariants ``state`` violates (empty when sound)."""
    bad = [p.__name__ for p in TRACKER_INVARIANTS if not p(state)]
    for rank, seq in state.sequences.items():
        bad += [f"{p.__name__}{rank!r}" for p in SLOT_INVARIANTS if not p(seq.prefill)]
        bad += [f"{p.__name__}{rank!r}" for p in SEQUENCE_INVARIANTS if not p(seq)]
    return bad


# ----------------------------------------------------------------------------- may lag


def is_registry_topology_current(registry: PromptRegistryState, state: SlotTrackerState) -> bool:
    """Check if the registry has a view for exactly the registered slots."""
    return set(registry.views) == set(state.sequences)


def is_load_snapshot_current(registry: PromptRegistryState, state: SlotTrackerState, rank) -> bool:
    """Check if the slot's published load snapshot equals the projection of its ActiveSequences."""
    view = registry.views.get(rank)
    return view is not None and view.load == worker_load_snapshot(state.sequences[rank])


def is_prompt_membership_current(registry: PromptRegistryState, state: SlotTrackerState, rank) -> bool:
    """Check if the slot's published prompt membership equals its block membership."""
    view = registry.views.get(rank)
    return view is not None and view.membership == block_membership(state.sequences[rank])


def read_model_lag(registry: PromptRegistryState, state: SlotTrackerState) -> list[str]:
    """Return the names of the may-lag invariants the registry does not (yet) satisfy."""
    if not is_registry_topology_current(registry, state):
        return ["is_registry_topology_current"]
    bad = []
    for rank in state.sequences:
        bad += [
            f"{p.__name__}{rank!r}"
            for p in (is_load_snapshot_current, is_prompt_membership_current)
            if not p(registry, state, rank)
        ]
    return bad

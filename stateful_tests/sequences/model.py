"""The spec as a tracker: ``SpecSlotTracker`` holds a ``spec.slot_tracker.SlotTrackerState`` and
applies the pure handlers, so the spec, the reference and the implementation share one API.

Every write replaces the state with the handler's result (a rejected write raises before the
state is replaced, so it changes nothing); every read projects the registry and applies the
spec's read functions. ``TARGETS`` names the three trackers for the harness, the gate and
the command line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...impl.slot_tracker import ConcurrentSlotTracker
from ...reference.sequences import SlotTracker as ReferenceSlotTracker
from ...spec import slot_tracker
from ...spec.sequence_invariants import write_model_violations
from ...spec.sequences import DEFAULT_EXPIRY


class SpecSlotTracker:
    """The law, driven through the tracker API (slow: every write copies the state)."""

    def __init__(self, expiry: int | None = DEFAULT_EXPIRY) -> None:
        self.state = slot_tracker.new_slot_tracker(expiry)
        self.expiry = self.state.expiry

    def register_worker(self, worker_id, dp_start, dp_size, now) -> None:
        self.state = slot_tracker.on_register_worker(self.state, worker_id, dp_start, dp_size, now)

    def unregister_worker(self, worker_id) -> None:
        self.state = slot_tracker.on_unregister_worker(self.state, worker_id)

    def add_request(self, request, now) -> None:
        self.state = slot_tracker.on_add_request(self.state, request, now)

    def mark_prefill_completed(self, request_id, now, worker=None) -> None:
        self.state = slot_tracker.on_mark_prefill_completed(self.state, request_id, now, worker)

    def free(self, request_id, now, worker=None) -> bool:
        before = self.state
        self.state = slot_tracker.on_free(before, request_id, now, worker)
        return self.state is not before

    def force_expiry(self, now) -> None:
        self.state = slot_tracker.on_force_expiry(self.state, now)

    def loads(self, now):
        return slot_tracker.read_loads(slot_tracker.project_prompt_registry(self.state), now)

    def potential_loads(self, query, new_isl_tokens, now):
        return slot_tracker.read_potential_loads(slot_tracker.project_prompt_registry(self.state), query, new_isl_tokens, now)

    def modeled_remaining_prefill_times(self, now):
        return slot_tracker.read_modeled_remaining_prefill_times(slot_tracker.project_prompt_registry(self.state), now)

    def snapshot(self) -> slot_tracker.SlotTrackerState:
        return self.state

    def registry_snapshot(self) -> slot_tracker.PromptRegistryState:
        return slot_tracker.project_prompt_registry(self.state)

    def check(self) -> None:
        bad = write_model_violations(self.state)
        assert not bad, f"spec state violates {bad}"


TARGETS: dict[str, Callable[..., Any]] = {
    "spec": SpecSlotTracker,
    "reference": ReferenceSlotTracker,
    "impl": ConcurrentSlotTracker,
}

"""Deliberately broken slot trackers: the negative controls of every active-sequence check.

Each mutant is the reference ``SlotTracker`` (or the concurrent one) with exactly one rule
broken. ``sequences/tests/test_mutants.py`` runs each through the checks listed in
``CAUGHT_BY`` and asserts that each catches it:

- ``machine``: the Hypothesis state machine (spec vs the mutant, every read after every step);
- ``values``: the named upstream reference values (``sequences.values``);
- ``laws``: the spec law named in ``LAW_OF`` (``sequences.laws``);
- ``stress``: the real-thread stress run (registry convergence, no lost or doubled ownership).

The two the issue names are ``NoCreditCap`` (credit without the cap at the removal time)
and ``SpilloverWhenUnmodeled`` (aggregate spillover although a prefill is unmodeled).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

from ...impl._sync import yield_point
from ...impl.slot_tracker import ConcurrentSlotTracker, _Slot
from ...reference.sequences import ActiveSequences, PrefillTracker, SlotTracker, decayed_tokens, remaining_modeled_ms
from ...spec import slot_tracker
from ...spec.prefill import PrefillLoadSnapshot
from ...spec.primitives import U64_MAX
from ...spec.sequence_errors import DuplicateRequest, MissingExpectedDuration, RequestNotFound, TokenLoadOverflow, WorkerNotFound
from ...spec.sequence_inputs import NANOS_PER_MILLI, check_instant, check_request_id, check_sequence_request, check_worker
from ...spec.sequences import WorkerLoadSnapshot
from ..harness.controls import Expected

# ----------------------------------------------------------------------------- prefill rules


class _NoCapPrefill(PrefillTracker):
    def _credit(self, since: int, duration: int, now: int) -> int:
        return since + duration


class _NoCreditPrefill(PrefillTracker):
    def _credit(self, since: int, duration: int, now: int) -> int:
        return since


class _KeepOldAnchorPrefill(PrefillTracker):
    def _reanchor_time(self, old_since: int, now: int) -> int:
        return old_since


class _SumThenTruncatePrefill(PrefillTracker):
    def snapshot(self) -> PrefillLoadSnapshot:
        snap = super().snapshot()
        if snap.total_modeled_ms is None:
            return snap
        total = sum(d for _, d in self.entries.values()) // NANOS_PER_MILLI  # type: ignore[misc]
        return PrefillLoadSnapshot(snap.tokens_sum, snap.anchor, total)


def _with_prefill(prefill: type[PrefillTracker]) -> type[ActiveSequences]:
    return type(f"ActiveSequences_{prefill.__name__}", (ActiveSequences,), {"prefill_class": prefill})


class NoCreditCap(SlotTracker):
    """Credit rule broken: a removed modeled non-anchor moves the anchor by its duration, uncapped."""

    sequences_class = _with_prefill(_NoCapPrefill)


class NoCredit(SlotTracker):
    """Credit rule broken: removing a modeled non-anchor never moves the anchor."""

    sequences_class = _with_prefill(_NoCreditPrefill)


class ReanchorKeepsOldTime(SlotTracker):
    """Re-anchor rule broken: the new front inherits the removed anchor's time, not the removal time."""

    sequences_class = _with_prefill(_KeepOldAnchorPrefill)


class SumThenTruncate(SlotTracker):
    """Truncation rule broken: the modeled backlog truncates the summed durations, not each one."""

    sequences_class = _with_prefill(_SumThenTruncatePrefill)


# ----------------------------------------------------------------------------- read rules


class SpilloverWhenUnmodeled(SlotTracker):
    """Mode rule broken: a modeled anchor spills into later prefills even when one is unmodeled."""

    def _decayed_tokens(self, snapshot: PrefillLoadSnapshot, now: int) -> int:
        front = snapshot.anchor
        if front is None or front.duration is None or front.duration == 0 or snapshot.total_modeled_ms is not None:
            return decayed_tokens(snapshot, now)
        done = min(front.tokens * max(0, now - front.since) // front.duration, U64_MAX)
        return max(0, snapshot.tokens_sum - done)


class NoSpillover(SlotTracker):
    """Spillover rule broken: even with every prefill modeled, only the anchor decays."""

    def _decayed_tokens(self, snapshot: PrefillLoadSnapshot, now: int) -> int:
        if snapshot.total_modeled_ms is None:
            return decayed_tokens(snapshot, now)
        return decayed_tokens(PrefillLoadSnapshot(snapshot.tokens_sum, snapshot.anchor, None), now)


class ZeroDurationAnchorCompletesAll(SlotTracker):
    """Zero-duration rule broken: a zero-duration anchor completes every queued prefill at once."""

    def _decayed_tokens(self, snapshot: PrefillLoadSnapshot, now: int) -> int:
        front = snapshot.anchor
        if front is not None and front.duration == 0 and snapshot.total_modeled_ms is not None:
            return 0
        return decayed_tokens(snapshot, now)


class AnchorOnlyRoundsDown(SlotTracker):
    """Rounding rule broken: the anchor's remaining share in anchor-only mode is floored, not ceiled."""

    def _decayed_tokens(self, snapshot: PrefillLoadSnapshot, now: int) -> int:
        front = snapshot.anchor
        if front is None or snapshot.total_modeled_ms is not None or not front.duration:
            return decayed_tokens(snapshot, now)
        fraction = min(1.0, max(0.0, 1.0 - max(0, now - front.since) / front.duration))
        return snapshot.tokens_sum - front.tokens + math.floor(front.tokens * fraction)


class ModeledTimeNotClipped(SlotTracker):
    """Clip rule broken: the modeled remaining time goes negative (the older signed variant)."""

    def _remaining_ms(self, snapshot: PrefillLoadSnapshot, now: int) -> int:
        if snapshot.total_modeled_ms is None:
            raise MissingExpectedDuration()
        if snapshot.anchor is None:
            return snapshot.total_modeled_ms
        return snapshot.total_modeled_ms - max(0, now - snapshot.anchor.since) // NANOS_PER_MILLI


class MissingDurationReadsZero(SlotTracker):
    """Error rule broken: a worker with an unmodeled prefill reads 0 ms instead of MissingExpectedDuration."""

    def _remaining_ms(self, snapshot: PrefillLoadSnapshot, now: int) -> int:
        try:
            return remaining_modeled_ms(snapshot, now)
        except MissingExpectedDuration:
            return 0


class ElapsedRoundedToNearest(SlotTracker):
    """Truncation rule broken: elapsed time is rounded to the nearest ms instead of truncated."""

    def _remaining_ms(self, snapshot: PrefillLoadSnapshot, now: int) -> int:
        if snapshot.total_modeled_ms is None or snapshot.anchor is None:
            return remaining_modeled_ms(snapshot, now)
        elapsed = round(max(0, now - snapshot.anchor.since) / NANOS_PER_MILLI)
        return max(0, snapshot.total_modeled_ms - elapsed)


# ----------------------------------------------------------------------------- per-slot rules


class _TrackZeroTokens(ActiveSequences):
    def _is_tracked(self, request) -> bool:
        return request.track_prefill_tokens and request.prefill_load_hint is not None


class _FreeKeepsPrefill(ActiveSequences):
    def _free_prefill(self, rid: str, now: int) -> None:
        return None


class _ExpiryAlwaysDue(ActiveSequences):
    def _expiry_due(self, now: int) -> bool:
        return True


class _ExpiresAtTheBoundary(ActiveSequences):
    def _is_expired(self, started_at: int, now: int, expiry: int) -> bool:
        return started_at <= now - expiry


class _HashSetBlocks(ActiveSequences):
    def load_snapshot(self) -> WorkerLoadSnapshot:
        snap = super().load_snapshot()
        hashes = {h for r in self.requests.values() for h in r.blocks}
        return WorkerLoadSnapshot(len(hashes), snap.active_requests, snap.prefill)


class ZeroTokenHintTracked(SlotTracker):
    """Tracking rule broken: a hint with zero tokens is tracked (it anchors and adds its duration)."""

    sequences_class = _TrackZeroTokens


class FreeSkipsPrefillCleanup(SlotTracker):
    """Free rule broken: freeing a request leaves its prefill in the queue (no implicit completion)."""

    sequences_class = _FreeKeepsPrefill


class ExpiryIgnoresCheckInterval(SlotTracker):
    """Expiry rule broken: every add and sweep checks for stale requests, not once per 30 s."""

    sequences_class = _ExpiryAlwaysDue


class ExpiresAtTheBoundary(SlotTracker):
    """Expiry rule off by one: a request exactly ``expiry`` old is freed (the rule frees only older ones)."""

    sequences_class = _ExpiresAtTheBoundary


class SetBlockCounting(SlotTracker):
    """Block rule broken: active blocks count distinct hashes, not distinct prefix lineages."""

    sequences_class = _HashSetBlocks


# ----------------------------------------------------------------------------- tracker rules


class DuplicateAddMovesOwner(SlotTracker):
    """Ownership rule broken: a duplicate add re-books the id on the new worker instead of failing."""

    def _booked_owner(self, rid: str) -> None:
        return None


class MarkUnknownIsSilent(SlotTracker):
    """Rejection rule broken: marking an unbooked request succeeds silently instead of RequestNotFound."""

    def mark_prefill_completed(self, request_id, now, worker=None) -> None:
        try:
            super().mark_prefill_completed(request_id, now, worker)
        except RequestNotFound:
            return None


# ----------------------------------------------------------------------------- concurrency rules (impl)


class BookBeforeSlotLock(ConcurrentSlotTracker):
    """Pipeline rule broken: the id is booked before the slot lock and a free unbooks without it.

    This is the window sequences.md §10 item 4 describes: a free racing the add removes the
    booking, finds no state, and the add then inserts a request nobody owns (lost ownership).
    """

    def add_request(self, request, now) -> None:
        request = check_sequence_request(request)
        now = check_instant(now)
        rid, worker = request.request_id, request.worker
        with self._topology.shared():
            slot: _Slot | None = self._slots.get(worker)
            if slot is None:
                raise WorkerNotFound(worker)
            owner = self._index.get(rid)
            if owner is None and slot.seq.would_overflow(request):
                raise TokenLoadOverflow(f"prefill tokens of {worker!r} would pass u64")
            owner = owner or self._index.try_insert(rid, worker)
            if owner is not None:
                raise DuplicateRequest(rid, owner)
            _pause()
            with slot.lock:
                expired, stored, removed = slot.seq.add(request, now, self.expiry)
                for gone in expired:
                    self._index.remove_if(gone, worker)
                self._publish(worker, slot, stored, removed)

    def free(self, request_id, now, worker=None) -> bool:
        rid = check_request_id(request_id)
        now = check_instant(now)
        named = None if worker is None else check_worker(worker)
        with self._topology.shared():
            owner = self._lookup(rid, named)
            if owner is None or not self._index.remove_if(rid, owner):
                return False
            slot = self._slots[owner]
            with slot.lock:
                removed = slot.seq.free(rid, now)
                self._publish(owner, slot, [], removed or [])
            return True


class MarkSkipsPublish(ConcurrentSlotTracker):
    """Projection rule broken: completing a prefill never republishes the load (the registry stays stale)."""

    def mark_prefill_completed(self, request_id, now, worker=None) -> None:
        rid = check_request_id(request_id)
        now = check_instant(now)
        with self._topology.shared():
            owner = self._lookup(rid, None if worker is None else check_worker(worker))
            if owner is None:
                raise RequestNotFound(rid)
            slot = self._slots[owner]
            with slot.lock:
                slot.seq.mark_prefill_completed(rid, now)  # ... and no _publish


class MarkIsLost(ConcurrentSlotTracker):
    """Mark rule broken: a mark of a booked request succeeds but leaves its prefill queued (the state stays
    consistent, so only an oracle of the marks that succeeded can tell)."""

    def mark_prefill_completed(self, request_id, now, worker=None) -> None:
        rid = check_request_id(request_id)
        check_instant(now)
        with self._topology.shared():
            if self._lookup(rid, None if worker is None else check_worker(worker)) is None:
                raise RequestNotFound(rid)


class PublishAfterUnlock(ConcurrentSlotTracker):
    """A lock released before publish: an add mutates its slot under the slot lock but publishes the delta after
    releasing it, so two writers of one slot can publish out of mutation order and the registry keeps a stale load."""

    def add_request(self, request, now) -> None:
        request, now = slot_tracker.check_add_args(request, now)
        rid, worker = request.request_id, request.worker
        with self._topology.shared():
            slot = slot_tracker.check_slot(self._slots.get(worker), worker)
            with slot.lock:
                slot_tracker.check_admission(request, self._index.get(rid), lambda: slot.seq.would_overflow(request))
                if self._index.try_insert(rid, worker) is not None:
                    raise DuplicateRequest(rid, self._index.get(rid))
                expired, stored, removed = slot.seq.add(request, now, self.expiry)
                for gone in expired:
                    self._index.remove_if(gone, worker)
                load = slot.seq.load_snapshot()
            yield_point("sequences.add.unlocked")
            with self._registry_gate.shared():  # the delta and the load, published after the lock is gone
                view = self._registry[worker]
                with view.lock:
                    for run in removed:
                        view.membership.remove(run)
                    for run in stored:
                        view.membership.store(run)
                view.load = load


def _pause() -> None:
    """Give other threads the window the broken pipeline opens: a yield point (the explorer's decision) and a GIL
    switch (real threads)."""
    import time

    yield_point("sequences.add.booked_early")
    time.sleep(0)


MUTANTS = [
    NoCreditCap,
    SpilloverWhenUnmodeled,
    NoCredit,
    ReanchorKeepsOldTime,
    SumThenTruncate,
    NoSpillover,
    ZeroDurationAnchorCompletesAll,
    AnchorOnlyRoundsDown,
    ModeledTimeNotClipped,
    MissingDurationReadsZero,
    ElapsedRoundedToNearest,
    ZeroTokenHintTracked,
    FreeSkipsPrefillCleanup,
    ExpiryIgnoresCheckInterval,
    ExpiresAtTheBoundary,
    SetBlockCounting,
    DuplicateAddMovesOwner,
    MarkUnknownIsSilent,
    BookBeforeSlotLock,
    MarkSkipsPublish,
    MarkIsLost,
    PublishAfterUnlock,
]

# The spec law (sequence_laws) that each mutant breaks, by the law's function name.
LAW_OF = {
    NoCreditCap: "law_decay_resumes_at_the_removal_time",
    SpilloverWhenUnmodeled: "law_unmodeled_prefills_never_decay",
    NoCredit: "law_uncapped_credit_is_continuous",
    ReanchorKeepsOldTime: "law_removed_anchor_reanchors_at_the_removal_time",
    SumThenTruncate: "law_backlog_is_the_sum_of_truncated_durations",
    NoSpillover: "law_all_modeled_load_spills_past_the_anchor",
    ZeroDurationAnchorCompletesAll: "law_zero_duration_anchor_completes_only_itself",
    AnchorOnlyRoundsDown: "law_anchor_only_share_rounds_up",
    ModeledTimeNotClipped: "law_modeled_time_is_whole_nonnegative_ms_or_missing",
    MissingDurationReadsZero: "law_modeled_time_is_whole_nonnegative_ms_or_missing",
    ElapsedRoundedToNearest: "law_elapsed_time_is_truncated",
    ZeroTokenHintTracked: "law_zero_token_hints_are_not_tracked",
    FreeSkipsPrefillCleanup: "law_free_completes_the_prefill",
    ExpiryIgnoresCheckInterval: "law_expiry_runs_at_most_once_per_check_interval",
    SetBlockCounting: "law_blocks_are_counted_by_lineage",
    DuplicateAddMovesOwner: "law_ownership_is_exclusive",
    MarkUnknownIsSilent: "law_rejections_are_typed_and_change_nothing",
    MarkSkipsPublish: "law_registry_equals_the_projection_after_every_call",
}

# The failure the three-way machine must report for each (the comparison that tells the mutant from
# the spec); a crash for another reason is not a catch.
_DIFFERS = r"differs from the spec|mutant gave .* spec gave"
MACHINE_FAILURE = {
    NoCreditCap: Expected(AssertionError, _DIFFERS),
    SpilloverWhenUnmodeled: Expected(AssertionError, r"loads at \d+: mutant gave"),
    NoCredit: Expected(AssertionError, _DIFFERS),
    ReanchorKeepsOldTime: Expected(AssertionError, _DIFFERS),
    SumThenTruncate: Expected(AssertionError, r"registry differs from the projection|differs from the spec|mutant gave"),
    NoSpillover: Expected(AssertionError, r"loads at \d+: mutant gave"),
    ZeroDurationAnchorCompletesAll: Expected(AssertionError, r"loads at \d+: mutant gave"),
    AnchorOnlyRoundsDown: Expected(AssertionError, r"loads at \d+: mutant gave"),
    ModeledTimeNotClipped: Expected(AssertionError, r"modeled times at \d+: mutant gave"),
    MissingDurationReadsZero: Expected(AssertionError, r"modeled times at \d+: mutant gave"),
    ElapsedRoundedToNearest: Expected(AssertionError, r"modeled times at \d+: mutant gave"),
    ZeroTokenHintTracked: Expected(AssertionError, r"write model violates \['is_prefill_tokens_positive"),
    FreeSkipsPrefillCleanup: Expected(AssertionError, r"a prefill without its request"),
    ExpiryIgnoresCheckInterval: Expected(AssertionError, _DIFFERS),
    SetBlockCounting: Expected(AssertionError, r"registry differs from the projection|differs from the spec|mutant gave"),
    DuplicateAddMovesOwner: Expected(AssertionError, r"^add SequenceRequest\(.*mutant gave"),
    MarkUnknownIsSilent: Expected(AssertionError, r"^mark .*mutant gave \('ok'.*spec gave \('RequestNotFound'"),
    MarkSkipsPublish: Expected(AssertionError, r"registry has not converged to the projection"),
}


class NeverPoisonedTracker(ConcurrentSlotTracker):
    """A tracker that never poisons itself: a fault between booking and publish leaves bookings, slot and
    registry disagreeing, and it goes on answering (caught only by the fault row, ``explore.faults``)."""

    @contextmanager
    def guard(self, call: str) -> Iterator[None]:
        yield


FAULT_MUTANTS = [NeverPoisonedTracker]


def law_failure(mutant: type[object]) -> Expected:
    """The failure the law ``LAW_OF[mutant]`` must report: its own body's assertion."""
    return Expected(AssertionError, raised_in=LAW_OF[mutant].removeprefix("law"))


CAUGHT_BY = {m: {"machine", "values", "laws"} for m in MUTANTS}
CAUGHT_BY[BookBeforeSlotLock] = {"stress"}
CAUGHT_BY[MarkIsLost] = {"stress", "values"}  # the stress's lost-mark oracle; the audit's invariants alone pass it
CAUGHT_BY[ExpiresAtTheBoundary] = {"values"}  # the sampled histories never land a sweep exactly `expiry` after a start
CAUGHT_BY[MarkSkipsPublish] = {"machine", "values", "laws"}
CAUGHT_BY[PublishAfterUnlock] = {
    "explore"
}  # only some interleavings show it: the explorer's  # stress: only when a mark is a slot's last write


def catch_rates(
    seeds: range = range(1, 6), machine_runs: int = 200, law_histories: int = 300
) -> list[tuple[str, str, str, str, str]]:
    """Return, per mutant: value scenarios failing, machine seeds catching, law seeds catching, stress seeds catching."""
    from hypothesis import Phase, settings

    from ..harness.seeding import law_settings, run_given, run_machine
    from .laws import LAWS_BY_NAME, law_test
    from .machine import sequence_machine_for, sequence_machine_settings
    from .steps import run_value_scenario
    from .stress import stress
    from .values import VALUE_SCENARIOS

    rows = []
    for mutant in MUTANTS:
        values = f"{sum(1 for s in VALUE_SCENARIOS if run_value_scenario(mutant, s))}/{len(VALUE_SCENARIOS)}"
        machine = slot_tracker = stressed = "-"
        if "machine" in CAUGHT_BY[mutant]:
            firsts = []
            for s in seeds:
                cls = sequence_machine_for({"mutant": mutant})
                quick = settings(sequence_machine_settings(machine_runs, 40), phases=[Phase.generate])
                try:
                    run_machine(cls, quick, s)
                except Exception:
                    firsts.append(len(cls.runs) + 1)
            median = sorted(firsts)[len(firsts) // 2] if firsts else "-"
            machine = f"{len(firsts)}/{len(seeds)} (median first catch: run {median})"
        if mutant in LAW_OF:
            caught = 0
            for s in seeds:
                quick = settings(law_settings(law_histories), phases=[Phase.generate], print_blob=False)
                try:
                    run_given(law_test([LAWS_BY_NAME[LAW_OF[mutant]]], [mutant]), quick, s)
                except Exception:
                    caught += 1
            slot_tracker = f"{caught}/{len(seeds)}"
        if "stress" in CAUGHT_BY[mutant]:
            stressed = f"{sum(1 for s in range(1, 9) if stress(mutant, threads=8, ops=400, seed=s).problems)}/8"
        rows.append((mutant.__name__, values, machine, slot_tracker, stressed))
    return rows


if __name__ == "__main__":
    print(f"{'mutant':32} {'values':7} {'machine':36} {'law':5} stress")
    for row in catch_rates():
        print(f"{row[0]:32} {row[1]:7} {row[2]:36} {row[3]:5} {row[4]}", flush=True)

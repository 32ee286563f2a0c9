"""Named tests of spec.prefill, spec.token_load, spec.sequences, spec.slot_tracker, spec.sequence_inputs
and spec.sequence_invariants: each rule with its source's worked values."""

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from kvproof.spec import sequence_invariants as inv
from kvproof.spec import slot_tracker as st
from kvproof.spec.prefill import (
    EMPTY_PREFILL,
    AnchorSnapshot,
    PrefillEntry,
    PrefillLoadSnapshot,
    PrefillState,
    credited_anchor_since,
    elapsed_since,
    is_prefill_tracked,
    modeled_remaining_prefill_ms,
    on_prefill_insert,
    on_prefill_remove,
    prefill_load_snapshot,
    remaining_ms,
    total_modeled_ms,
)
from kvproof.spec.primitives import U32_MAX, U64_MAX, FrozenMap, WorkerWithDpRank
from kvproof.spec.sequence_errors import (
    DuplicateRequest,
    InvalidDpRange,
    InvalidDuration,
    InvalidInstant,
    MissingExpectedDuration,
    RequestNotFound,
    SequenceArgumentTypeError,
    TokenLoadOverflow,
    WorkerNotFound,
)
from kvproof.spec.sequence_inputs import (
    DURATION_MAX,
    INSTANT_MAX,
    PrefillLoadHint,
    SequenceRequest,
    check_duration,
    check_instant,
    floor_ms,
    millis,
    secs,
    secs_f64,
)
from kvproof.spec.sequences import (
    CHECK_EXPIRY_FREQUENCY,
    PathSet,
    RequestRecord,
    active_blocks,
    lineage_paths,
    new_active_sequences,
    on_add_request,
    on_force_expiry,
    on_free,
    on_mark_prefill_completed,
    path_set,
    prompt_paths,
)
from kvproof.spec.token_load import active_prefill_tokens, all_modeled_tokens, anchor_remaining_tokens, completed_tokens

A = PrefillEntry("A", 100, secs(10))
B = PrefillEntry("B", 40, secs(4))
U = PrefillEntry("U", 60, None)
W = WorkerWithDpRank(1, 0)


def queue(*entries, at=0):
    state = EMPTY_PREFILL
    for e in entries:
        state = on_prefill_insert(state, e, at)
    return state


# ----------------------------------------------------------------------------- prefill


def test_first_prefill_anchors_at_its_insert_time_later_ones_do_not_move_it():
    state = on_prefill_insert(on_prefill_insert(EMPTY_PREFILL, A, secs(1)), B, secs(3))
    assert state.anchor_since == secs(1) and [e.request_id for e in state.order] == ["A", "B"]


def test_removing_the_anchor_reanchors_the_front_at_the_removal_time():
    state = on_prefill_remove(queue(A, B), "A", secs(3))
    assert state.order == (B,) and state.anchor_since == secs(3)


def test_removing_the_last_prefill_clears_the_anchor():
    assert on_prefill_remove(queue(A), "A", secs(3)) == EMPTY_PREFILL


def test_credit_moves_the_anchor_by_the_duration_capped_at_the_removal_time():
    assert credited_anchor_since(0, secs(4), secs(5)) == secs(4)  # uncapped
    assert credited_anchor_since(0, secs(4), secs(2)) == secs(2)  # capped
    assert on_prefill_remove(queue(A, B), "B", secs(5)).anchor_since == secs(4)
    assert on_prefill_remove(queue(A, B), "B", secs(2)).anchor_since == secs(2)


def test_unmodeled_and_zero_duration_removals_give_no_credit():
    assert on_prefill_remove(queue(A, U), "U", secs(5)).anchor_since == 0
    zero = PrefillEntry("Z", 5, 0)
    assert on_prefill_remove(queue(A, zero), "Z", secs(5)).anchor_since == 0


def test_prefill_removal_is_idempotent():
    once = on_prefill_remove(queue(A, B), "B", secs(1))
    assert on_prefill_remove(once, "B", secs(2)) is once


def test_zero_token_hints_and_disabled_tracking_are_not_tracked():
    assert not is_prefill_tracked(True, PrefillLoadHint(0, secs(5)))
    assert not is_prefill_tracked(False, PrefillLoadHint(10, secs(5)))
    assert not is_prefill_tracked(True, None)
    assert is_prefill_tracked(True, PrefillLoadHint(1, None))


def test_modeled_backlog_truncates_each_duration_before_summing():
    state = queue(PrefillEntry("a", 1, 1_500_000), PrefillEntry("b", 1, 1_500_000))
    assert total_modeled_ms(state) == 2  # not floor(3.0)
    assert total_modeled_ms(queue(A, U)) is None
    assert total_modeled_ms(EMPTY_PREFILL) == 0


def test_modeled_backlog_saturates_at_u64():
    huge = PrefillEntry("h", 1, (U64_MAX // 1000) * secs(1))
    assert total_modeled_ms(queue(huge, PrefillEntry("h2", 1, (U64_MAX // 1000) * secs(1)))) == U64_MAX


def test_modeled_read_spills_over_the_whole_backlog_and_clips_at_zero():
    snap = prefill_load_snapshot(
        on_prefill_insert(queue(PrefillEntry("r1", 1, secs(10))), PrefillEntry("r2", 1, secs(6)), secs(2))
    )
    assert [modeled_remaining_prefill_ms(snap, secs(t)) for t in (2, 12, 17, 100)] == [14000, 4000, 0, 0]


def test_modeled_read_before_the_anchor_counts_no_elapsed_time():
    snap = prefill_load_snapshot(queue(A, at=secs(5)))
    assert modeled_remaining_prefill_ms(snap, secs(1)) == 10000


def test_modeled_read_is_missing_with_any_unmodeled_prefill_and_zero_when_idle():
    with pytest.raises(MissingExpectedDuration):
        modeled_remaining_prefill_ms(prefill_load_snapshot(queue(A, U)), 0)
    assert modeled_remaining_prefill_ms(PrefillLoadSnapshot(), secs(99)) == 0
    assert MissingExpectedDuration() == MissingExpectedDuration()


def test_missing_expected_duration_reads_as_the_upstream_error_variant():
    # sequences.md §3 "Errors": the read's one error is Err(MissingExpectedDuration), named as the variant
    with pytest.raises(MissingExpectedDuration, match=r"^MissingExpectedDuration$"):
        modeled_remaining_prefill_ms(prefill_load_snapshot(queue(U)), secs(1))
    assert (
        str(MissingExpectedDuration()) == "MissingExpectedDuration"
        and repr(MissingExpectedDuration()) == "MissingExpectedDuration()"
    )


def hashes_as_it_compares(make) -> bool:
    """Two instances from ``make`` are equal, hash alike, collapse in a set and find each other as map keys."""
    first, second = make(), make()
    return (
        first is not second
        and first == second
        and hash(first) == hash(second)
        and len({first, second}) == 1
        and {first: "worker 2"}.get(second) == "worker 2"
    )


def test_missing_expected_duration_is_a_value_that_hashes_as_it_compares():
    """Equal by class, so equal instances hash alike: a set of per-worker read errors holds one, a map keyed by one
    finds it under another instance (sequence_errors.MissingExpectedDuration's __eq__ and __hash__)."""
    assert hashes_as_it_compares(MissingExpectedDuration)
    first = MissingExpectedDuration()
    assert first != "MissingExpectedDuration" and first != ValueError("MissingExpectedDuration")


def test_negative_control_an_identity_hash_breaks_the_value_law():
    class IdentityHash(MissingExpectedDuration):
        def __hash__(self) -> int:
            return id(self)

    assert not hashes_as_it_compares(IdentityHash)


def test_elapsed_time_is_saturating_so_none_has_passed_at_or_before_the_anchor():
    # sequences.md §3 step 4 (saturating_duration_since): 0 at the anchor's own instant and before it
    assert [elapsed_since(secs(5), t) for t in (secs(3), secs(5), secs(5) + 1, secs(7))] == [0, 0, 1, secs(2)]
    assert remaining_ms(10, secs(5), secs(5)) == 10 and remaining_ms(10, secs(5), secs(5) + millis(3)) == 7


def test_removing_a_non_anchor_from_a_queue_without_an_anchor_time_is_refused():
    # a prefilling queue always has an anchor time (is_anchor_present_iff_prefilling); a handler given one without refuses it
    with pytest.raises(AssertionError, match=r"^a non-anchor prefill implies an anchor(\n|$)"):
        on_prefill_remove(PrefillState((A, B), None), "B", secs(1))


# ----------------------------------------------------------------------------- token load


def test_completed_tokens_floor_in_integer_nanoseconds_and_spill_past_the_anchor():
    assert completed_tokens(3, secs(1), millis(500)) == 1
    assert completed_tokens(1000, secs(1), millis(1050)) == 1050  # not capped at 1000
    assert completed_tokens(100, 0, secs(5)) == 100  # zero duration: exactly its own tokens


def test_completed_tokens_over_a_one_nanosecond_duration_divide_by_one():
    # sequences.md §4 step 2: floor(a * e_ns / D_ns), so D = 1 ns completes a tokens per elapsed nanosecond
    assert [completed_tokens(3, 1, e) for e in (0, 1, 2)] == [0, 3, 6]
    assert all_modeled_tokens(10, 3, 1, 2) == 4


def test_nothing_is_completed_at_the_anchor_instant():
    # sequences.md §4 step 2: e = max(0, now - t_anchor), so a read at (or before) the anchor time owes every token
    snap = prefill_load_snapshot(queue(PrefillEntry("A", 10, 5), at=secs(1)))
    assert [active_prefill_tokens(snap, t) for t in (0, secs(1), secs(1) + 1, secs(1) + 5)] == [10, 10, 8, 0]


def test_time_and_token_kernels_are_one_text_over_plain_ints_and_z3_terms():
    """spec.arith: each kernel takes ``ops``; over Z3 terms (as proofs/ runs it) it evaluates to the plain value."""
    z3 = pytest.importorskip("z3")
    from kvproof.proofs.harness import Z3

    for args in ((14000, secs(2), secs(12)), (10, secs(5), secs(3)), (10, 0, millis(2))):
        assert z3.simplify(remaining_ms(*map(z3.IntVal, args), Z3)).as_long() == remaining_ms(*args)
    for args in ((2000, 1000, secs(2), secs(3)), (1500, 1000, 0, secs(3)), (100, 3, 1, 7)):
        assert z3.simplify(all_modeled_tokens(*map(z3.IntVal, args), Z3)).as_long() == all_modeled_tokens(*args)


def test_anchor_only_share_is_ceiled_in_f64_and_clamped():
    assert [anchor_remaining_tokens(3, secs(1), millis(t)) for t in (200, 500, 900, 1500)] == [3, 2, 1, 0]
    assert anchor_remaining_tokens(7, None, secs(100)) == 7
    assert anchor_remaining_tokens(7, 0, 0) == 0
    assert secs_f64(secs(1) + 5) == 1.000000005


def test_active_tokens_modes():
    spill = prefill_load_snapshot(queue(PrefillEntry("A", 1000, secs(2)), PrefillEntry("B", 1000, secs(10))))
    assert active_prefill_tokens(spill, secs(3)) == 500
    anchor_only = prefill_load_snapshot(queue(PrefillEntry("A", 1000, secs(2)), PrefillEntry("B", 1000, None)))
    assert active_prefill_tokens(anchor_only, secs(3)) == 1000
    unmodeled_anchor = prefill_load_snapshot(queue(PrefillEntry("A", 1000, None), PrefillEntry("B", 500, secs(1))))
    assert active_prefill_tokens(unmodeled_anchor, secs(2)) == 1500
    zero_anchor = prefill_load_snapshot(queue(PrefillEntry("A", 1000, 0), PrefillEntry("B", 500, secs(2))))
    assert active_prefill_tokens(zero_anchor, secs(3)) == 500
    assert active_prefill_tokens(PrefillLoadSnapshot(), 0) == 0


def test_snapshot_carries_the_anchor_and_the_sum():
    snap = prefill_load_snapshot(queue(A, B, at=secs(1)))
    assert snap == PrefillLoadSnapshot(140, AnchorSnapshot(100, secs(10), secs(1)), 14000)


# ----------------------------------------------------------------------------- one slot


def req(rid, blocks=(), tokens=None, duration=None, track=True):
    return SequenceRequest(rid, W, blocks, track, None, None if tokens is None else PrefillLoadHint(tokens, duration))


def test_blocks_count_prefix_lineages():
    assert set(prompt_paths((1, 2, 3))) == {(1,), (1, 2), (1, 2, 3)}
    assert prompt_paths((1, 2, 3)) == path_set({(1,), (1, 2), (1, 2, 3)})  # one value per set: the longest path
    seq = new_active_sequences(0)
    for rid, blocks in (("a", (5,)), ("b", (1, 2, 3, 5))):
        seq, _ = on_add_request(seq, req(rid, blocks), 0, None)
    assert active_blocks(seq) == 5
    seq = on_free(seq, "a", 0)
    assert active_blocks(seq) == 4


PATHS = hs.lists(hs.integers(1, 3), min_size=1, max_size=4).map(tuple)
QUERY = hs.lists(hs.integers(1, 3), max_size=5).map(tuple)


def held_depth_by_definition(paths, query):
    depth = 0
    while depth < len(query) and query[: depth + 1] in paths:
        depth += 1
    return depth


@given(hs.sets(PATHS, max_size=8), QUERY)
def test_a_path_set_value_is_exactly_the_set_it_was_made_of(paths, query):
    # any set, prefix-closed or not (a broken registry's): one value per set, every read as on the set of tuples
    value = path_set(paths)
    value.check()
    assert sorted(value) == sorted(paths) and len(value) == len(paths) and value == path_set(sorted(paths, reverse=True))
    assert all(p in value for p in paths) and (query in value) == (query in paths)
    assert value.held_depth(query) == st.overlap_depth(value, query) == held_depth_by_definition(paths, query)


@given(hs.lists(hs.lists(hs.integers(1, 3), max_size=4).map(tuple), max_size=5))
def test_the_paths_of_prompts_are_every_prefix_of_each_without_gaps(prompts):
    every_prefix = {p[: i + 1] for p in prompts for i in range(len(p))}
    value = lineage_paths(prompts)
    assert value == path_set(every_prefix) and not value.gaps and len(value) == len(every_prefix)


def test_a_path_set_check_rejects_a_value_that_is_not_canonical():
    PathSet(frozenset({(1, 2), (1, 3)}), frozenset({(1,)})).check()  # {(1, 2), (1, 3)}: the gap (1,) is below both leaves
    for bad, message in (
        (PathSet(frozenset({(1,), (1, 2)})), r"a leaf is a prefix of another leaf"),
        (PathSet(frozenset({(1, 2)}), frozenset({(3,)})), r"gap \(3,\) is below no leaf"),
        (PathSet(frozenset({(1, 2)}), frozenset({(1, 2)})), r"gap \(1, 2\) is below no leaf"),  # a leaf is not a gap
        (PathSet(frozenset({(1, 2)}), frozenset({()})), r"gap \(\) is below no leaf"),
        (PathSet(frozenset({()})), r"an empty leaf"),  # the empty path is no block
        (PathSet(frozenset({(1,), ()})), r"an empty leaf"),
    ):
        with pytest.raises(AssertionError, match=rf"^{message}(\n|$)"):
            bad.check()


def test_a_path_set_iterates_each_of_its_paths_once():
    assert sorted(lineage_paths([(1, 2), (1, 3), (1, 2, 4)])) == [(1,), (1, 2), (1, 2, 4), (1, 3)]  # (1,) is below all three
    assert sorted(path_set({(1, 2), (1, 3)})) == [(1, 2), (1, 3)]  # the shared gap (1,) is not a path


def test_an_admitted_request_is_recorded_with_its_blocks_start_and_expected_output_tokens():
    # sequences.md §2 state: RequestState{blocks, started_at, expected_output_tokens} (stored, unused by the load maths)
    seq, _ = on_add_request(new_active_sequences(0), SequenceRequest("a", W, (1, 2), True, 7, None), secs(3), None)
    seq, _ = on_add_request(seq, SequenceRequest("b", W, None, True, None, None), secs(4), None)
    assert dict(seq.requests) == {"a": RequestRecord((1, 2), secs(3), 7), "b": RequestRecord((), secs(4), None)}


def test_duplicate_add_at_the_slot_changes_nothing_not_even_expiry():
    seq, _ = on_add_request(new_active_sequences(0), req("a", (1,), 10), 0, secs(2))
    again, expired = on_add_request(seq, req("a", (2,), 99), secs(40), secs(2))
    assert again is seq and expired == ()


def test_free_completes_the_prefill_implicitly():
    seq, _ = on_add_request(new_active_sequences(0), req("a", (1,), 10, secs(1)), 0, None)
    seq = on_free(seq, "a", secs(1))
    assert not seq.prefill.order and not seq.requests


def test_mark_of_an_unknown_or_completed_request_is_a_no_op():
    seq, _ = on_add_request(new_active_sequences(0), req("a", (1,), 10), 0, None)
    done = on_mark_prefill_completed(seq, "a", 1)
    assert on_mark_prefill_completed(done, "a", 2) == done
    assert on_mark_prefill_completed(done, "zz", 2) == done


def test_expiry_is_gated_by_the_check_interval_and_frees_at_now():
    seq, _ = on_add_request(new_active_sequences(0), req("a", (1,), 10, secs(1000)), 0, None)
    seq, _ = on_add_request(seq, req("b", (2,), 30, secs(100)), secs(20), None)
    same, expired = on_force_expiry(seq, CHECK_EXPIRY_FREQUENCY - 1, secs(1))
    assert same is seq and expired == ()
    after, expired = on_force_expiry(seq, secs(61), secs(60))
    assert expired == ("a",) and after.prefill.anchor_since == secs(61) and after.last_expiry_check == secs(61)


def test_expiry_frees_commute():
    seq = new_active_sequences(0)
    for rid, at, d in (("a", 0, secs(10)), ("b", 1, secs(2)), ("c", 2, secs(3)), ("d", secs(40), secs(5))):
        seq, _ = on_add_request(seq, req(rid, (), 10, d), at, None)
    orders = [("b", "c", "a"), ("a", "b", "c"), ("c", "a", "b")]
    results = set()
    for order in orders:
        s = seq
        for rid in order:
            s = on_free(s, rid, secs(45))
        results.add(s.prefill)
    assert len(results) == 1


# ----------------------------------------------------------------------------- tracker


def tracker():
    s = st.on_register_worker(st.new_slot_tracker(), 1, 0, 2, 0)
    return st.on_register_worker(s, 2, 0, 1, 0)


def test_add_rejections_in_order_worker_then_duplicate_then_overflow():
    s = st.on_add_request(tracker(), req("a", (1,), 10), 0)
    with pytest.raises(WorkerNotFound):
        st.on_add_request(s, SequenceRequest("a", WorkerWithDpRank(9, 0)), 0)
    with pytest.raises(DuplicateRequest) as dup:
        st.on_add_request(s, SequenceRequest("a", WorkerWithDpRank(2, 0)), 0)
    assert dup.value.owner == W and dup.value.http_status == 409
    with pytest.raises(TokenLoadOverflow):
        st.on_add_request(s, req("b", (), U64_MAX), 0)


def test_mark_unknown_is_not_found_but_free_unknown_is_a_no_op():
    s = tracker()
    with pytest.raises(RequestNotFound):
        st.on_mark_prefill_completed(s, "x", 0)
    assert st.on_free(s, "x", 0) is s


def test_unregister_drops_the_bookings_and_a_readded_worker_starts_empty():
    s = st.on_add_request(tracker(), req("a", (1,), 10), 0)
    s = st.on_unregister_worker(s, 1)
    assert "a" not in s.request_index and W not in s.sequences
    s = st.on_register_worker(s, 1, 0, 1, 5)
    assert not s.sequences[W].requests and s.sequences[W].last_expiry_check == 5


def test_unregister_removes_exactly_the_workers_slots_and_bookings():
    # sequences.md §1: unregister_worker drops the worker's range, then its slots' request mappings; other workers stay as they were
    s = st.on_register_worker(st.on_register_worker(st.new_slot_tracker(secs(60)), 1, 0, 2, 0), 2, 3, 1, 0)
    other = WorkerWithDpRank(2, 3)
    for rid, worker in (("a", W), ("b", WorkerWithDpRank(1, 1)), ("c", other)):
        s = st.on_add_request(s, SequenceRequest(rid, worker, (1,), True, None, PrefillLoadHint(10, secs(1))), 0)
    after = st.on_unregister_worker(s, 1)
    assert after == st.SlotTrackerState(
        st.WorkerTable(FrozenMap({2: st.DpRange(3, 1)})),
        FrozenMap({"c": other}),
        FrozenMap({other: s.sequences[other]}),
        secs(60),
    )
    assert st.on_unregister_worker(after, 2) == st.new_slot_tracker(secs(60))
    assert st.on_unregister_worker(st.on_register_worker(st.new_slot_tracker(None), 1, 0, 1, 0), 1).expiry is None


def test_a_slot_holds_exactly_u64_max_prefill_tokens_and_refuses_one_more():
    # docs/sequences-findings.md S1: the sum must fit u64 (1.6.1 wraps); u64::MAX itself fits
    s = st.on_add_request(tracker(), req("a", (), U64_MAX), 0)
    assert (
        inv.write_model_violations(s) == []
        and st.read_loads(st.project_prompt_registry(s), 0)[W].active_prefill_tokens == U64_MAX
    )
    with pytest.raises(TokenLoadOverflow):
        st.on_add_request(s, req("b", (), 1), 0)
    s = st.on_add_request(st.on_add_request(tracker(), req("a", (), U64_MAX - 1), 0), req("b", (), 1), 0)
    assert inv.write_model_violations(s) == []


def test_potential_loads_add_uniform_tokens_and_blocks_past_the_overlap():
    s = st.on_add_request(tracker(), req("r1", (1, 2, 3), 48), 0)
    s = st.on_add_request(s, req("r2", (1, 2, 4), 16), 0)
    row = st.read_potential_loads(st.project_prompt_registry(s), (1, 2, 3, 5), 64, 0)[W]
    assert (row.potential_prefill_tokens, row.potential_decode_blocks, row.active_requests) == (128, 5, 2)
    big = st.read_potential_loads(st.project_prompt_registry(s), (), U64_MAX, 0)[W]
    assert big.potential_prefill_tokens == U64_MAX  # saturating (1.6.1 wraps: finding S2)


def test_overlap_depth_follows_one_lineage():
    membership = path_set({(1,), (1, 2), (1, 2, 3), (1, 2, 3, 5), (5,)})
    assert st.overlap_depth(membership, (1, 2, 3, 5)) == 4
    assert st.overlap_depth(membership, (2, 3)) == 0
    assert st.overlap_depth(membership, (5, 9)) == 1


def test_modeled_times_are_per_worker():
    s = st.on_add_request(tracker(), req("a", (), 10, secs(10)), 0)
    s = st.on_add_request(s, SequenceRequest("b", WorkerWithDpRank(2, 0), (), True, None, PrefillLoadHint(10, None)), 0)
    times = st.read_modeled_remaining_prefill_times(st.project_prompt_registry(s), secs(3))
    assert times[W] == 7000 and times[WorkerWithDpRank(2, 0)] == MissingExpectedDuration() and times[WorkerWithDpRank(1, 1)] == 0


# ----------------------------------------------------------------------------- inputs and invariants


def test_units_and_input_checks():
    assert secs(1.5) == 1_500_000_000 and millis(2) == 2_000_000 and floor_ms(1_999_999) == 1
    assert check_duration(2.9) == 2 and check_duration(None) is None
    # a float is nanoseconds truncated toward zero (Duration::from_secs_f64), so 0.0 and 0.5 are both 0; the largest values pass
    assert check_duration(0.0) == check_duration(0.5) == check_instant(0.0) == check_instant(0.5) == 0
    assert check_duration(DURATION_MAX) == DURATION_MAX and check_instant(INSTANT_MAX) == INSTANT_MAX
    refusals = [
        (check_duration, bad, InvalidDuration, f"expected_prefill_duration {message}")
        for bad, message in (
            (-1, "must not be negative, got -1"),
            (-0.1, "must not be negative, got -0.1"),
            (float("nan"), "must be finite, got nan"),
            (float("inf"), "must be finite, got inf"),
            (DURATION_MAX + 1, f"{DURATION_MAX + 1} is past the largest representable value"),
        )
    ]
    refusals += [
        (check_duration, "1s", SequenceArgumentTypeError, "expected_prefill_duration must be an int of nanoseconds, got str"),
        (check_instant, -1, InvalidInstant, "time must not be negative, got -1"),
        (check_instant, -0.5, InvalidInstant, "time must not be negative, got -0.5"),
        (check_instant, INSTANT_MAX + 1, InvalidInstant, f"time {INSTANT_MAX + 1} is past the largest representable value"),
        (check_instant, False, SequenceArgumentTypeError, "time must be an int of nanoseconds, got bool"),
    ]
    for check, bad, error, message in refusals:
        with pytest.raises(error, match=f"^{re.escape(message)}$"):
            check(bad)


def test_a_dp_range_is_one_to_max_dp_size_ranks_ending_within_u32():
    # sequences.md §1 "WorkerTable" (InvalidDpSize, InvalidDpRange), §8.3 (start 4294967294 size 1 is accepted,
    # start 4294967295 size 1 is 400); docs/hostile-input.md H12 (at most MAX_DP_SIZE ranks)
    assert st.check_dp_range(U32_MAX - 1, 1) == st.DpRange(U32_MAX - 1, 1)
    assert st.check_dp_range(0, st.MAX_DP_SIZE) == st.DpRange(0, st.MAX_DP_SIZE)
    for start, size, message in (
        (0, 0, "dp_size must be greater than 0"),
        (0, st.MAX_DP_SIZE + 1, "dp_size 65537 is more than 65536 ranks for one worker (kvproof's bound; H12)"),
        (U32_MAX, 1, "dp range overflows u32: start=4294967295 size=1"),
    ):
        with pytest.raises(InvalidDpRange, match=f"^{re.escape(message)}$"):
            st.check_dp_range(start, size)


def test_every_invariant_predicate_can_fail():
    good = st.on_add_request(tracker(), req("a", (1, 2), 10, secs(1)), 0)
    assert inv.write_model_violations(good) == []
    seq = good.sequences[W]
    lost = st.SlotTrackerState(good.worker_table, FrozenMap(), good.sequences, good.expiry)
    assert not inv.is_request_booked_by_its_slot(lost)
    ghost = st.SlotTrackerState(good.worker_table, good.request_index.set("g", W), good.sequences, good.expiry)
    assert not inv.is_booking_backed_by_slot(ghost)
    twice = st.SlotTrackerState(
        good.worker_table, good.request_index, good.sequences.set(WorkerWithDpRank(1, 1), seq), good.expiry
    )
    assert not inv.is_request_owned_once(twice)
    assert not inv.is_slot_set_registered(st.SlotTrackerState(st.WorkerTable(), FrozenMap(), good.sequences, None))
    assert not inv.is_anchor_present_iff_prefilling(PrefillState((A,), None))
    assert not inv.is_prefill_queued_once(PrefillState((A, A), 0))
    assert not inv.is_prefill_tokens_positive(PrefillState((PrefillEntry("z", 0, None),), 0))
    orphan = type(seq)(FrozenMap(), seq.prefill, 0)
    assert not inv.is_prefill_subset_of_requests(orphan)
    assert not inv.is_block_membership_exact(path_set({(1,)}), seq)
    registry = st.project_prompt_registry(good)
    assert inv.read_model_lag(registry, good) == []
    stale = st.PromptRegistryState(registry.views.set(W, st.WorkerView()))
    assert set(inv.read_model_lag(stale, good)) == {"is_load_snapshot_current(1, 0)", "is_prompt_membership_current(1, 0)"}
    assert inv.read_model_lag(st.PromptRegistryState(), good) == ["is_registry_topology_current"]


def test_the_token_sum_invariant_holds_up_to_u64_max_inclusive():
    seq = new_active_sequences(0)
    full = type(seq)(seq.requests, PrefillState((PrefillEntry("a", U64_MAX - 1, None), PrefillEntry("b", 1, None)), 0), 0)
    assert inv.is_token_sum_in_range(full)
    past = type(seq)(seq.requests, PrefillState((PrefillEntry("a", U64_MAX, None), PrefillEntry("b", 1, None)), 0), 0)
    assert not inv.is_token_sum_in_range(past)


def test_write_model_violations_names_every_broken_predicate_of_every_kind():
    good = st.on_add_request(tracker(), req("a", (1, 2), 10, secs(1)), 0)
    seq = good.sequences[W]
    torn = type(seq)(
        seq.requests, PrefillState(seq.prefill.order + (PrefillEntry("g", 5, None),), None), 0
    )  # no anchor time; g is no request
    state = st.SlotTrackerState(good.worker_table, FrozenMap(), good.sequences.set(W, torn), good.expiry)  # a held but unbooked
    assert inv.write_model_violations(state) == [
        "is_request_booked_by_its_slot",
        "is_anchor_present_iff_prefilling(1, 0)",
        "is_prefill_subset_of_requests(1, 0)",
    ]


def test_f64_rounding_matches_the_oracle_at_the_nominal_times():
    # R15 at 4.9 s: ceil(1000 * (1 - 4.9 / 10)) must be 510, not 511 (f64 seconds, as upstream).
    assert anchor_remaining_tokens(1000, secs(10), secs(4.9)) == 510
    assert math.ceil(1000 * (1 - 4.9 / 10)) == 510

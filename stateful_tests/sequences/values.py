"""Every reference value of the active-sequence state, as replayable scenarios.

Three sources, each scenario naming its own:

- Dynamo's source tests (sequences.md §3, §4, §7): the prefill tracker's credit tests,
  ``single.rs``, ``multi_worker.rs``, ``prompt_registry.rs`` and the slot-tracker registry;
- the experiments on the real 1.6.1 slot tracker (sequences.md §8.3-§8.4, R1-R24 and the
  HTTP, blocks and expiry experiments), at their *nominal* times: the oracle's own readings
  were a few ms late (receive-time anchoring), the nominal values are the ones recorded as
  expected and matched within that jitter;
- the bad inputs, with the typed error each must raise.

Times are seconds (``at``), converted to nanoseconds with ``secs``. ``steps.run_value_scenario``
replays one scenario on any tracker and returns every step whose outcome differs, so the
same values gate the spec, the reference, the implementation and every negative control.
"""

from __future__ import annotations

from ...spec.sequence_inputs import secs
from .steps import (
    MISSING,
    W1,
    W2,
    Add,
    Anchor,
    Blocks,
    Expire,
    Free,
    Mark,
    Ms,
    Owner,
    Potential,
    Register,
    Tokens,
    Unregister,
    ValueScenario,
)

# ----------------------------------------------------------------------------- the values

PT = "sequences.md §7 prefill_tracker.rs"
MW = "sequences.md §7 multi_worker.rs"
SG = "sequences.md §7 single.rs"
EXP = "sequences.md §8.4 experiment"

A10_B4 = [Add("A", 100, 10, 0), Add("B", 40, 4, 0)]

VALUE_SCENARIOS: list[ValueScenario] = [
    # --- prefill_tracker.rs (credit version)
    ValueScenario("snapshot_without_anchor_reports_zero_active_tokens", PT, [Tokens(0, 0), Tokens(100, 0), Anchor(None)]),
    ValueScenario("modeled_remaining_snapshot_without_anchor_reports_zero", PT, [Ms(0, 0), Ms(1000, 0)]),
    ValueScenario(
        "modeled_remaining_no_aic_prefill_returns_missing_duration_error", PT, [Add("r1", 100, None, 0), Ms(0, MISSING)]
    ),
    ValueScenario(
        "modeled_remaining_mixed_modeled_and_unmodeled_prefills_return_error",
        PT,
        [Add("r1", 100, 10, 0), Add("r2", 60, None, 0), Ms(2, MISSING)],
    ),
    ValueScenario("modeled_remaining_single_prefill_clips_at_zero", PT, [Add("r1", 100, 10, 0), Ms(15, 0)]),
    ValueScenario(
        "modeled_remaining_subtracts_elapsed_from_total_modeled_duration (10 s / 6 s spillover)",
        PT,
        [Add("r1", 100, 10, 0), Add("r2", 60, 6, 2), Ms(2, 14000), Ms(12, 4000), Ms(17, 0)],
    ),
    ValueScenario(
        "modeled_remaining_zero_duration_prefill_contributes_no_time",
        PT,
        [Add("A", 100, 0, 0), Add("B", 60, 6, 0), Ms(0, 6000), Ms(3, 3000), Ms(7, 0)],
    ),
    ValueScenario(
        "snapshot_only_decays_oldest_prefill (aggregate spill)",
        PT,
        [Add("r1", 100, 10, 0), Add("r2", 60, 6, 2), Tokens(2, 140), Tokens(5, 110), Tokens(12, 40)],
    ),
    ValueScenario(
        "active_tokens_with_unmodeled_prefills_use_anchor_only_decay",
        PT,
        [Add("r1", 100, 10, 0), Add("r2", 60, None, 0), Tokens(12, 60)],
    ),
    ValueScenario(
        "active_tokens_zero_duration_anchor_only_completes_anchor",
        PT,
        [Add("A", 100, 0, 0), Add("B", 60, 6, 0), Tokens(0, 60), Tokens(3, 60)],
    ),
    ValueScenario(
        "nonfront_modeled_removal_preserves_time_and_token_continuity",
        PT,
        A10_B4 + [Tokens(5, 90), Ms(5, 9000), Mark("B", 5), Tokens(5, 90), Ms(5, 9000), Anchor(4)],
    ),
    ValueScenario(
        "nonfront_modeled_removal_caps_anchor_shift_at_removal_time",
        PT,
        A10_B4 + [Mark("B", 2), Anchor(2), Tokens(2, 100), Ms(2, 10000), Tokens(3, 90), Ms(3, 9000)],
    ),
    ValueScenario(
        "nonfront_unmodeled_removal_does_not_shift_anchor",
        PT,
        [Add("A", 100, 10, 0), Add("B", 40, None, 0), Mark("B", 2), Anchor(0), Tokens(5, 50)],
    ),
    ValueScenario(
        "removing_anchored_prefill_reanchors_front_and_resets_decay",
        PT,
        [Add("A", 100, 10, 0), Add("B", 40, 8, 0), Mark("A", 3), Anchor(3), Tokens(3, 40), Tokens(5, 30), Ms(5, 6000)],
    ),
    ValueScenario(
        "removing_nonfront_modeled_prefill_shifts_existing_anchor",
        PT,
        [Add("A", 30, 6, 0), Add("B", 20, 4, 0), Mark("B", 2), Anchor(2), Tokens(2, 30), Tokens(4, 20)],
    ),
    ValueScenario(
        "duplicate_cleanup_is_idempotent",
        PT,
        A10_B4
        + [
            Mark("B", 1),
            Mark("B", 2),
            Free("B", 2, freed=True),
            Free("B", 3, freed=False),
            Free("A", 3, freed=True),
            Tokens(3, 0),
            Ms(3, 0),
            Anchor(None),
            Blocks(0, 0),
        ],
    ),
    # --- multi_worker.rs
    ValueScenario(
        "modeled_remaining_prefill_time_loads_follow_multi_worker_projection (re-anchoring)",
        MW,
        [
            Add("r1", 100, 10, 0),
            Add("r2", 40, 4, 1),
            Add("r3", 50, None, 0, worker=W2),
            Ms(3, 11000),
            Ms(3, MISSING, W2),
            Mark("r1", 3),
            Anchor(3),
            Ms(5, 2000),
            Ms(5, MISSING, W2),
        ],
        workers=((1, 0, 1), (2, 0, 1)),
    ),
    ValueScenario(
        "free_nonanchor_modeled_prefill_applies_anchor_credit",
        MW,
        A10_B4 + [Tokens(5, 90), Ms(5, 9000), Free("B", 5, freed=True), Tokens(5, 90), Ms(5, 9000), Anchor(4)],
    ),
    ValueScenario(
        "explicit_decay_time_drives_multi_worker_load_queries_consistently",
        MW,
        [Add("A", 100, 10, 0, blocks=(1, 2)), Tokens(5, 50), Potential((1, 2), 0, 5, (50, 2, 1)), Ms(5, 5000)],
    ),
    ValueScenario(
        "potential_blocks_use_prefix_membership_not_set_membership",
        MW,
        [Add("A", None, None, 0, blocks=(1, 2, 4, 5)), Potential((1, 2, 3, 5), 0, 0, (0, 6, 1))],
    ),
    ValueScenario(
        "lifecycle_preserves_arrival_order_and_strict_admission",
        MW,
        [
            Free("x", 0, freed=False),
            Mark("x", 0, expect="RequestNotFound"),
            Add("x", 10, None, 0, worker=(1, 5), expect="WorkerNotFound"),
            Add("x", 10, None, 0),
            Add("x", 10, None, 1, expect="DuplicateRequest"),
            Owner("x", W1),
            Tokens(1, 10),
        ],
    ),
    ValueScenario(
        "same_id_conflicts_across_workers",
        MW,
        [
            Add("r", 10, None, 0, blocks=(1,)),
            Add("r", 20, None, 0, worker=W2, blocks=(2,), expect="DuplicateRequest"),
            Owner("r", W1),
            Blocks(1, 1),
            Blocks(0, 0, W2),
            Tokens(0, 0, W2),
        ],
        workers=((1, 0, 1), (2, 0, 1)),
    ),
    ValueScenario(
        "free_is_idempotent_after_request_is_removed",
        MW,
        [Add("r", 10, None, 0), Free("r", 1, freed=True), Free("r", 2, freed=False), Blocks(0, 0), Owner("r", None)],
    ),
    ValueScenario(
        "worker_removal_then_readd_starts_with_empty_registry_state",
        MW,
        [
            Add("r", 10, 1, 0, blocks=(1, 2)),
            Unregister(1),
            Owner("r", None),
            Mark("r", 1, expect="RequestNotFound"),
            Free("r", 1, freed=False),
            Register(1, at=1),
            Tokens(1, 0),
            Blocks(0, 0),
            Unregister(9, expect="UnknownWorker"),
        ],
    ),
    ValueScenario(
        "prompt_registry load_only_update_preserves_active_token_projection",
        "sequences.md §7 prompt_registry.rs",
        [Add("A", 10, 10, 0), Add("B", 2, 1, 0), Tokens(3, 9)],
    ),
    # --- single.rs
    ValueScenario(
        "test_mark_prefill_completed",
        SG,
        [
            Add("A", 50, None, 0),
            Tokens(0, 50),
            Mark("A", 1),
            Tokens(1, 0),
            Mark("A", 2),
            Blocks(1, 1),
            Add("B", 30, None, 3, blocks=(8,)),
            Tokens(3, 30),
        ],
    ),
    ValueScenario(
        "test_add_request_without_prefill_tracking_keeps_active_tokens_zero (R10)",
        SG,
        [Add("A", 1000, 5, 0, track=False), Tokens(0.05, 0), Blocks(1, 1), Ms(0, 0)],
    ),
    ValueScenario(
        "test_active_sequences_shared_blocks (lineage counting)",
        SG + "; blocks_exp_out.txt",
        [
            Add("a", None, None, 0, blocks=(5,)),
            Add("b", None, None, 0, blocks=(1, 2, 3, 5)),
            Blocks(5, 2),
            Potential((5, 9), 0, 0, (0, 6, 2)),
            Potential((2, 3), 0, 0, (0, 7, 2)),
            Free("a", 0),
            Blocks(4, 1),
            Add("c", None, None, 0, blocks=(1, 2, 3, 5)),
            Blocks(4, 2),
            Add("d", 0, 5, 0, blocks=()),
            Blocks(4, 3),
            Tokens(0, 0),
        ],
    ),
    ValueScenario(
        "test_force_expiry",
        SG,
        [
            Add("A", 10, None, 0, blocks=(1,)),
            Add("B", 10, None, 10, blocks=(2,)),
            Expire(20),
            Blocks(2, 2),
            Expire(200),
            Blocks(2, 2),
            Expire(311),
            Blocks(0, 0),
            Owner("A", None),
            Add("C", 5, None, 312, blocks=(3,)),
            Blocks(1, 1),
            Tokens(312, 5),
        ],
    ),
    ValueScenario(
        "test_force_expiry_uses_custom_duration",
        SG,
        [Add("A", 10, None, 0), Expire(31), Blocks(1, 1), Expire(61), Blocks(0, 0)],
        expiry=secs(60),
    ),
    ValueScenario(
        "expiry_keeps_a_request_exactly_expiry_old",
        "sequences.md §2 Expiry (started_at < now - expiry)",
        [Add("A", 10, None, 20), Expire(60), Blocks(1, 1), Owner("A", W1)],
        expiry=secs(40),
    ),
    ValueScenario(
        "expiry_frees_a_request_one_ns_past_expiry",
        "sequences.md §2 Expiry (started_at < now - expiry)",
        [Add("A", 10, None, 20), Expire(60.000000001), Blocks(0, 0), Owner("A", None)],
        expiry=secs(40),
    ),
    ValueScenario(
        "expiry_check_is_due_exactly_30_s_after_the_last",
        "sequences.md §2 Expiry (at most once per 30 s)",
        [Add("A", 10, None, 0), Expire(29.999999999), Blocks(1, 1), Expire(30), Blocks(0, 0), Owner("A", None)],
        expiry=secs(1),
    ),
    ValueScenario(
        "test_force_expiry_reanchors_new_oldest_request (reconstructed: 30 tokens, 24 after 20 s of 100 s)",
        SG,
        [
            Add("A", 10, 1000, 0, blocks=(1,)),
            Add("B", 30, 100, 20, blocks=(2,)),
            Expire(61),
            Anchor(61),
            Tokens(61, 30),
            Tokens(81, 24),
            Ms(81, 80000),
        ],
        expiry=secs(60),
    ),
    ValueScenario(
        "expiry on add honours the 30 s check gate (expiry_exp, expiry 2 s)",
        "sequences.md §2 Expiry; expiry_exp_out.txt",
        [
            Add("old", 32, None, 0, blocks=(1, 2)),
            Add("mid", 16, None, 5, blocks=(3,)),
            Tokens(5, 48),
            Blocks(3),
            Add("new", 8, None, 32, blocks=(4,)),
            Tokens(32, 8),
            Blocks(1),
            Mark("old", 32, expect="RequestNotFound"),
            Free("old", 32, freed=False),
            Add("old", 1, None, 32, blocks=(1,)),
            Tokens(32, 9),
            Blocks(2),
        ],
        expiry=secs(2),
    ),
    # --- slot tracker HTTP experiments (unmodeled only)
    ValueScenario(
        "http_exp add / potential_loads / prefill_complete / free",
        "sequences.md §8.3; http_exp_out.txt",
        [
            Add("r1", 48, None, 0, blocks=(1, 2, 3)),
            Tokens(0, 48),
            Blocks(3),
            Add("r1", 48, None, 0, expect="DuplicateRequest"),
            Add("r1", 5, None, 0, worker=(2, 5), expect="DuplicateRequest"),
            Add("rX", 5, None, 0, worker=(99, 0), expect="WorkerNotFound"),
            Add("rY", 5, None, 0, worker=(1, 7), expect="WorkerNotFound"),
            Add("r2", 16, None, 0, blocks=(1, 2, 4)),
            Tokens(2, 64),
            Blocks(4),
            Potential((1, 2, 3, 5), 64, 2, (128, 5, 2)),
            Potential((1, 2, 3, 5), 64, 2, (64, 4, 0), worker=(2, 5)),
            Mark("r2", 3),
            Tokens(3, 48),
            Mark("r2", 3),
            Mark("nope", 3, expect="RequestNotFound"),
            Free("r1", 4, freed=True),
            Tokens(4, 0),
            Blocks(3),
            Free("r1", 4, freed=False),
            Free("nope", 4, freed=False),
            Add("r1", 3, None, 5, worker=(2, 5), blocks=(1,)),
            Mark("r1", 5),
            Tokens(5, 0, (2, 5)),
            Blocks(1, 1, (2, 5)),
        ],
        workers=((1, 0, 2), (2, 5, 1)),
    ),
    ValueScenario(
        "register validates ranges (http_exp)",
        "sequences.md §8.3; http_exp_out.txt",
        [
            Register(1, expect="DuplicateWorker"),
            Register(3, dp_size=0, expect="InvalidDpRange"),
            Register(3, dp_start=2**32 - 1, expect="InvalidDpRange"),
            Register(3, dp_start=2**32 - 2, dp_size=2, expect="InvalidDpRange"),
            Register(3, dp_start=2**32 - 2),
            Blocks(0, 0, (3, 2**32 - 2)),
        ],
    ),
    # --- replica-sync experiments on the real slot tracker (nominal times)
    ValueScenario(
        "R1 single modeled prefill decays linearly",
        EXP,
        [Add("A", 1000, 10, 0), Tokens(0, 1000), Tokens(2, 800), Tokens(5, 500), Tokens(10.3, 0)],
    ),
    ValueScenario(
        "R2 aggregate spillover when all modeled",
        EXP,
        [Add("A", 1000, 2, 0), Add("B", 1000, 10, 0), Tokens(1, 1500), Tokens(3, 500), Tokens(4.5, 0)],
    ),
    ValueScenario(
        "R3 modeled anchor with an unmodeled later prefill: anchor-only",
        EXP,
        [Add("A", 1000, 2, 0), Add("B", 1000, None, 0), Tokens(1, 1500), Tokens(3, 1000)],
    ),
    ValueScenario(
        "R4 zero-duration anchor completes only its own tokens",
        EXP,
        [
            Add("A", 1000, 0, 0),
            Add("B", 500, 2, 0),
            Tokens(0.05, 500),
            Tokens(3, 500),
            Mark("A", 3),
            Tokens(3.1, 475),
            Tokens(4, 250),
        ],
    ),
    ValueScenario(
        "R5 credit on Free of a modeled non-anchor (continuity)",
        EXP,
        [Add("A", 1000, 10, 0), Add("B", 400, 4, 0), Tokens(4.9, 910), Free("B", 5), Tokens(5.1, 890), Tokens(6, 800)],
    ),
    ValueScenario(
        "R6 credit capped at the removal time",
        EXP,
        [Add("A", 1000, 10, 0), Add("B", 400, 4, 0), Mark("B", 2), Tokens(2.05, 995), Tokens(3, 900), Tokens(4, 800)],
    ),
    ValueScenario(
        "R7 removing the anchor re-anchors the next at the removal time",
        EXP,
        [Add("A", 1000, 10, 0), Add("B", 500, 5, 0), Mark("A", 2), Tokens(2.05, 495), Tokens(3, 400), Tokens(7.2, 0)],
    ),
    ValueScenario(
        "R8 unmodeled anchor blocks all decay",
        EXP,
        [Add("A", 1000, None, 0), Add("B", 500, 1, 0), Tokens(0.05, 1500), Tokens(2, 1500)],
    ),
    ValueScenario(
        "R9 zero-token hint is not tracked even with a duration",
        EXP,
        [Add("A", 0, 5, 0), Add("B", 500, 5, 0), Tokens(0.05, 495), Tokens(1, 400), Ms(1, 4000)],
    ),
    ValueScenario(
        "R15 unmodeled non-anchor removal gives no credit",
        EXP,
        [
            Add("A", 1000, 10, 0),
            Add("B", 400, None, 0),
            Tokens(4.9, 910),
            Free("B", 5),
            Anchor(0),
            Tokens(5.1, 490),
            Tokens(6, 400),
        ],
    ),
    ValueScenario(
        "R16 zero-duration non-anchor does not complete at once",
        EXP,
        [Add("A", 1000, 2, 0), Add("B", 400, 0, 0), Tokens(1, 900), Tokens(2.4, 200), Tokens(3, 0)],
    ),
    ValueScenario(
        "R17 spillover runs at the anchor's rate",
        EXP,
        [Add("A", 1000, 1, 0), Add("B", 100, 10, 0), Tokens(0.5, 600), Tokens(1.05, 50), Tokens(1.2, 0)],
    ),
    ValueScenario(
        "R18 removing an overdue anchor re-anchors and the load jumps up",
        EXP,
        [
            Add("A", 1000, 1, 0),
            Add("B", 1000, 10, 0),
            Tokens(1.4, 600),
            Ms(1.5, 9500),
            Mark("A", 1.5),
            Tokens(1.55, 995),
            Tokens(2.5, 900),
            Ms(1.5, 10000),
        ],
    ),
    ValueScenario(
        "R19 repeated credits are each capped",
        EXP,
        [
            Add("A", 1000, 10, 0),
            Add("B", 200, 2, 0),
            Add("C", 200, 2, 0),
            Free("B", 3),
            Anchor(2),
            Free("C", 3),
            Anchor(3),
            Tokens(3.1, 990),
            Tokens(3.5, 950),
            Tokens(4, 900),
        ],
    ),
    ValueScenario(
        "R21 prefill_complete of the anchor at 1 s",
        EXP,
        [Add("A", 1000, 10, 0), Add("B", 500, 5, 0), Mark("A", 1), Tokens(1.05, 495), Tokens(2, 400)],
    ),
    ValueScenario(
        "R22 potential_loads adds new tokens uniformly on decayed tokens",
        EXP,
        [Add("A", 1000, 10, 0, blocks=(1, 2, 3)), Potential((1, 2, 9), 50, 2, (850, 4, 1))],
    ),
    ValueScenario(
        "R23 unmodeled non-anchor behind a modeled anchor: anchor-only",
        EXP,
        [Add("A", 1000, 2, 0), Add("B", 300, None, 0), Add("C", 500, 1, 0), Tokens(1, 1300), Tokens(3, 800)],
    ),
    ValueScenario(
        "R24a floor of completed tokens in aggregate mode",
        EXP,
        [Add("A", 3, 1, 0), Tokens(0.2, 3), Tokens(0.5, 2), Tokens(0.9, 1)],
    ),
    ValueScenario(
        "R24b ceil of remaining tokens in anchor-only mode",
        EXP,
        [Add("A", 3, 1, 0), Add("U", 10, None, 0), Tokens(0.2, 13), Tokens(0.5, 12), Tokens(0.9, 11)],
    ),
    # --- per-request truncation to whole ms
    ValueScenario(
        "per-request truncation: 1.5 ms + 1.5 ms is 2 ms",
        "sequences.md §3 Formula",
        [Add("A", 10, 0.0015, 0), Add("B", 10, 0.0015, 0), Ms(0, 2), Ms(0.0019, 1), Ms(0.002, 0)],
    ),
]

"""Observed behaviours of the real Dynamo tree, as replayable vectors.

Each ``Scenario`` is a list of steps with their expected outcome: the experiments run on
the ai-dynamo-runtime 1.6.1 ``RadixTree`` (crtc.md §13, ``E2`` ... ``E41``), Dynamo's own
sequential tree tests that the single-threaded tree shares (crtc.md §10), and the
grouped-removal repros of the upstream harness. ``steps.run_scenario`` replays one against any
target and returns every step whose outcome differs, so the same vectors gate the
reference, the implementation, the real package, or a user's tree.

Notation follows crtc.md: blocks are ``(block_hash, tokens_hash)``; ``chain(1, 2, 3)`` is
Dynamo's test convention ``[(100, 1), (200, 2), (300, 3)]``; ``seq(1, 2, 20)`` is a chain
whose external hashes are derived from the whole local prefix (``seq_hash``).
"""

from __future__ import annotations

from typing import Any

from ..harness.paths import chain, seq, seq_hash
from ..harness.scenario import Scenario
from .steps import BNF, IBS, PBNF, Clear, ClearAllBlocks, Dump, Query, Remove, RemoveWorker, Store, run_step

C4 = chain(1, 2, 3, 4)
W1, W2 = (1, 0), (2, 0)

SCENARIOS: list[Scenario] = [
    Scenario(
        "E2_unknown_parent",
        "crtc.md §13 E2",
        [
            Store(1, [(100, 1)], parent=999, expect=PBNF),
            Query([1], {}),
        ],
    ),
    Scenario(
        "E16_parent_known_only_to_another_rank",
        "crtc.md §13 E16",
        [
            Store(1, [(100, 1)]),
            Store(2, [(200, 2)], parent=100, expect=PBNF),
            Query([1, 2], {W1: 1}),
        ],
    ),
    Scenario(
        "E3_duplicate_store_is_idempotent",
        "crtc.md §13 E3",
        [
            Store(1, chain(1, 2)),
            Store(1, chain(1, 2)),
            Query([1, 2], {W1: 2}),
            Dump([(1, 0, None, [100, 200])]),
        ],
    ),
    Scenario(
        "E4_remove_unknown_block_never_seen_worker",
        "crtc.md §13 E4",
        [
            Remove(7, [999], expect=BNF),
        ],
    ),
    Scenario(
        "E4_remove_unknown_block_known_worker",
        "crtc.md §13 E4",
        [
            Store(1, chain(1)),
            Remove(1, [999], expect=BNF),
            Query([1], {W1: 1}),
        ],
    ),
    Scenario(
        "E4_partial_removal_applies_valid_hashes",
        "crtc.md §13 E4",
        [
            Store(1, chain(1)),
            Remove(1, [999, 100], expect=BNF),
            Query([1], {}),
        ],
    ),
    Scenario(
        "E39_partial_removal_error_after_valid_hash",
        "crtc.md §13 E39",
        [
            Store(1, chain(1, 2, 3)),
            Remove(1, [200, 999], expect=BNF),
            Query([1, 2, 3], {W1: 1}),
        ],
    ),
    Scenario(
        "E14_self_referencing_store_rejected_whole",
        "crtc.md §13 E14",
        [
            Store(1, [(100, 1)]),
            Store(1, [(100, 1), (200, 2)], parent=100, expect=IBS),
            Query([1, 2], {W1: 1}),
        ],
    ),
    Scenario(
        "E5_mid_chain_remove_then_restore",
        "crtc.md §13 E5",
        [
            Store(1, C4),
            Remove(1, [200]),
            Query([1, 2, 3, 4], {W1: 1}),
            Remove(1, [300], expect=BNF),
            Store(1, [(500, 5)], parent=300, expect=PBNF),
            Store(1, [(200, 2)], parent=100),
            Query([1, 2, 3, 4], {W1: 2}),
            Store(1, [(300, 3), (400, 4)], parent=200),
            Query([1, 2, 3, 4], {W1: 4}),
            Dump([(1, 0, None, [100, 200, 300, 400])]),
        ],
    ),
    Scenario(
        "E5b_restore_does_not_resurrect_orphans",
        "crtc.md §13 E5b",
        [
            Store(1, C4),
            Store(2, C4),
            Remove(1, [200]),
            Query([1, 2, 3, 4], {W1: 1, W2: 4}),
            Store(1, [(200, 2)], parent=100),
            Query([1, 2, 3, 4], {W1: 2, W2: 4}),
        ],
    ),
    Scenario(
        "E5c_divergent_continuation_under_kept_prefix",
        "crtc.md §13 E5c",
        [
            Store(1, C4),
            Remove(1, [200]),
            Store(1, [(250, 5)], parent=100),
            Query([1, 5], {W1: 2}),
            Query([1, 2, 3, 4], {W1: 1}),
            Dump([(1, 0, None, [100, 250])]),
        ],
    ),
    Scenario(
        "E17_batched_and_duplicate_removes",
        "crtc.md §13 E17",
        [
            Store(1, C4),
            Store(2, C4),
            Remove(1, [400, 200]),
            Query([1, 2, 3, 4], {W1: 1, W2: 4}),
            Remove(1, [100, 100]),
            Query([1, 2, 3, 4], {W2: 4}),
        ],
    ),
    Scenario(
        "E7_same_block_hash_under_two_parents",
        "crtc.md §13 E7 (out of contract)",
        [
            Store(1, [(100, 1), (200, 2)]),
            Store(1, [(300, 3), (200, 4)]),
            Query([1, 2], {W1: 2}),
            Query([3, 4], {W1: 2}),
            Remove(1, [200]),
            Query([1, 2], {W1: 2}),
            Query([3, 4], {W1: 1}),
            Remove(1, [200], expect=BNF),
        ],
    ),
    # The two-step cycle (ai-dynamo-runtime 0.6.1 to 1.2.1): the older tree reused the node the worker held for block
    # hash 101, linking 102 -> 101 into a cycle that the dump followed until allocation failed (docs/dynamo-findings.md,
    # "unbounded dump"; observed here on 1.6.1, the reference and the implementation alike, 2026-12-05).
    Scenario(
        "cycle_a_block_hash_stored_again_below_its_own_chain",
        "2026-12-05 releases survey (out of contract)",
        [
            Store(1, [(101, 1), (102, 2)]),
            Store(1, [(101, 3)], parent=102),
            Query([1, 2, 3], {W1: 3}),
            Dump([(1, 0, None, [101, 102, 101])]),
        ],
    ),
    Scenario(
        "E7b_parent_hash_resolves_to_last_store",
        "crtc.md §13 E7b (out of contract)",
        [
            Store(1, chain(1, 2)),
            Store(2, [(300, 3), (200, 4)]),
            Store(2, [(500, 5)], parent=200),
            Query([3, 4, 5], {W2: 3}),
        ],
    ),
    Scenario(
        "E8_same_locals_different_block_hashes",
        "crtc.md §13 E8 (out of contract)",
        [
            Store(1, [(100, 1), (200, 2)]),
            Store(2, [(101, 1), (201, 2)]),
            Query([1, 2], {W1: 2, W2: 2}),
            Store(2, [(301, 3)], parent=201, expect=PBNF),
            Remove(2, [101], expect=BNF),
            Query([1, 2], {W1: 2, W2: 2}),
            Dump([(1, 0, None, [100, 200]), (2, 0, None, [100, 200])]),
        ],
    ),
    Scenario(
        "E8d_stale_entry_left_by_a_failed_removal_goes_with_its_rank",
        "E8, then a cleared event (out of contract)",
        [
            Store(1, [(100, 1), (200, 2)]),
            Store(2, [(101, 1), (201, 2)]),
            Remove(2, [101], expect=BNF),
            Clear(2),
            Query([1, 2], {W1: 2}),
            Remove(2, [101], expect=BNF),
            Store(2, [(301, 3)], parent=201, expect=PBNF),
            Dump([(1, 0, None, [100, 200])]),
        ],
    ),
    Scenario(
        "E8b_divergent_block_hash_credited_on_existing_node",
        "crtc.md §13 E8b (out of contract)",
        [
            Store(2, [(100, 1), (200, 2), (300, 3)]),
            Store(1, [(100, 1)]),
            Store(1, [(999, 2)], parent=100),
            Query([1, 2, 3], {W1: 2, W2: 3}),
            Store(1, [(700, 7)], parent=999, expect=PBNF),
            Remove(1, [999], expect=BNF),
            # The divergent store split the shared node after block 100; w1 is credited on block 200.
            Dump([(1, 0, None, [100]), (2, 0, None, [100]), (1, 0, 100, [200]), (2, 0, 100, [200, 300])]),
        ],
    ),
    Scenario(
        "E8c_leaf_extension_through_foreign_block_hashes",
        "crtc.md §13 E8c (out of contract)",
        [
            Store(1, [(100, 1), (200, 2)]),
            Store(2, [(101, 1), (201, 2), (301, 3)]),
            Query([1, 2, 3], {W1: 2, W2: 3}),
            Dump([(1, 0, None, [100, 200]), (2, 0, None, [100, 200, 301])]),
        ],
    ),
    Scenario(
        "E9_early_exit_credits_the_whole_node",
        "crtc.md §13 E9",
        [
            Store(1, C4),
            Store(2, chain(1, 2, 5)),
            Query([1, 2, 3, 4], {W1: 4, W2: 2}, early_exit=None),
            Remove(2, [100]),
            Query([1, 2, 3, 4], {W1: 4}, early_exit=False),
            Query([1, 2, 3, 4], {W1: 2}, early_exit=True),
        ],
    ),
    Scenario(
        "E10_dp_ranks_cleared_per_rank",
        "crtc.md §13 E10",
        [
            Store(1, chain(1, 2), dp=0),
            Store(1, chain(1, 2, 3), dp=1),
            Store(2, chain(1)),
            Query([1, 2, 3], {(1, 0): 2, (1, 1): 3, (2, 0): 1}),
            Clear(1, dp=1),
            Query([1, 2, 3], {(1, 0): 2, (2, 0): 1}),
            ClearAllBlocks(1),
            Query([1, 2, 3], {(2, 0): 1}),
            Remove(1, [100], dp=0, expect=BNF),
            Clear(77),
        ],
    ),
    Scenario(
        "E10_remove_worker_drops_every_rank",
        "crtc.md §13 E10",
        [
            Store(1, chain(1, 2), dp=0),
            Store(1, chain(1, 2, 3), dp=1),
            Store(2, chain(1)),
            RemoveWorker(1),
            Query([1, 2, 3], {(2, 0): 1}),
            Remove(1, [100], dp=0, expect=BNF),
        ],
    ),
    Scenario(
        "E18_extension_demotion_and_split",
        "crtc.md §13 E18",
        [
            Store(1, chain(1, 2, 3)),
            Store(2, chain(1, 2, 3)),
            Store(1, [(400, 4)], parent=300),
            Query([1, 2, 3, 4], {W1: 4, W2: 3}),
            Dump([(1, 0, None, [100, 200, 300, 400]), (2, 0, None, [100, 200, 300])]),
            Store(2, [(400, 4)], parent=300),
            Query([1, 2, 3, 4], {W1: 4, W2: 4}),
            Store(2, [(500, 5)], parent=300),
            Query([1, 2, 3, 5], {W1: 3, W2: 4}),
            Dump(
                [
                    (1, 0, None, [100, 200, 300]),
                    (2, 0, None, [100, 200, 300]),
                    (1, 0, 300, [400]),
                    (2, 0, 300, [400]),
                    (2, 0, 300, [500]),
                ]
            ),
            Store(1, [(600, 6)], parent=400),
            Query([1, 2, 3, 4, 6], {W1: 5, W2: 4}),
        ],
    ),
    Scenario(
        "E19_store_that_extends_past_an_existing_edge",
        "crtc.md §13 E19",
        [
            Store(1, chain(1, 2, 3)),
            Store(2, chain(1)),
            Store(2, chain(2, 3, 4), parent=100),
            Query([1, 2, 3, 4], {W1: 3, W2: 4}),
            Dump([(1, 0, None, [100, 200, 300]), (2, 0, None, [100, 200, 300, 400])]),
        ],
    ),
    Scenario(
        "E21_children_dropped_when_last_full_holder_leaves",
        "crtc.md §13 E21",
        [
            Store(1, C4),
            Store(2, chain(1, 2, 3, 5)),
            Remove(1, [300]),
            Query([1, 2, 3, 4], {W1: 2, W2: 3}),
            Query([1, 2, 3, 5], {W1: 2, W2: 4}),
            Remove(2, [300]),
            Query([1, 2, 3, 4], {W1: 2, W2: 2}),
            Query([1, 2, 3, 5], {W1: 2, W2: 2}),
            Store(1, [(300, 3)], parent=200),
            Query([1, 2, 3, 4], {W1: 3, W2: 2}),
            Store(1, [(700, 7)], parent=400),
            Query([1, 2, 3, 4, 7], {W1: 3, W2: 2}),
            Remove(1, [400]),
            Store(1, [(400, 4)], parent=300),
            Query([1, 2, 3, 4], {W1: 4, W2: 2}),
        ],
    ),
    Scenario(
        "E22_orphan_store_is_invisible",
        "crtc.md §13 E22 (set-up reconstructed from E21; see docs/dynamo-findings.md F6)",
        [
            Store(1, C4),
            Store(2, chain(1, 2, 3, 5)),
            Remove(1, [100]),
            Remove(2, [100]),
            Query([1, 2, 3, 4], {}),
            Store(1, [(500, 5)], parent=400),  # its entry names the detached [4]: accepted, invisible
            Query([1, 2, 3, 4, 5], {}),
            Remove(1, [300, 400, 500], expect=BNF),  # 300's entry went with the head removal; 400 and 500 still apply
            Store(1, [(600, 6)], parent=500, expect=PBNF),
        ],
    ),
    Scenario(
        "E26_empty_store_query_and_remove",
        "crtc.md §13 E26",
        [
            Store(1, []),
            Query([], {}),
            Remove(1, []),
        ],
    ),
    Scenario(
        "E40_empty_store_under_unknown_parent",
        "crtc.md §13 E40",
        [
            Store(1, [], parent=999, expect=PBNF),
        ],
    ),
    Scenario(
        "E29_E30_root_level_split_and_queries",
        "crtc.md §13 E29, E30",
        [
            Store(1, chain(1, 2, 3)),
            Store(2, [(100, 1), (250, 5)]),
            Query([1, 2, 3], {W1: 3, W2: 1}),
            Query([1, 5], {W1: 1, W2: 2}),
            Query([1, 2, 9], {W1: 2, W2: 1}),
            Query([1, 2, 3, 4, 5], {W1: 3, W2: 1}),
            Query([7], {}),
        ],
    ),
    Scenario(
        "E33_stale_scrub_by_hash_regardless_of_node",
        "crtc.md §13 E33 (out of contract)",
        [
            Store(1, chain(1, 2, 3)),
            Store(1, [(400, 4), (200, 5)]),
            Remove(1, [100]),
            Query([4, 5], {W1: 2}),
            Remove(1, [200], expect=BNF),
            Query([4, 5], {W1: 2}),
        ],
    ),
    Scenario(
        "E34_reverse_order_removal_of_whole_chain",
        "crtc.md §13 E34",
        [
            Store(1, chain(1, 2)),
            Store(2, chain(1, 2)),
            Remove(1, [200, 100]),
            Query([1, 2], {W2: 2}),
        ],
    ),
    Scenario(
        "E35_store_under_interior_parent_of_internal_node",
        "crtc.md §13 E35",
        [
            Store(1, chain(1, 2, 3, 4, 5)),
            Store(2, chain(1, 2, 3, 4, 6)),
            Store(1, [(300, 3), (400, 4), (700, 7)], parent=200),
            Query([1, 2, 3, 4, 7], {W1: 5, W2: 4}),
        ],
    ),
    Scenario(
        "E36_restoring_a_sub_prefix_changes_nothing",
        "crtc.md §13 E36",
        [
            Store(1, chain(1, 2, 3)),
            Store(1, chain(1, 2)),
            Query([1, 2, 3], {W1: 3}),
            Dump([(1, 0, None, [100, 200, 300])]),
        ],
    ),
    Scenario(
        "E37_grouped_removal_repro_five_events",
        "crtc.md §9, §13 E37; harness known_grouped_removal_overcount",
        [
            Store(1, seq(1, 2, 3)),
            Store(1, seq(4, start=[1]), parent=seq_hash([1])),
            Remove(1, [seq_hash([1])]),
            Store(1, seq(1, 2)),
            Remove(1, [seq_hash([1, 2, 3]), seq_hash([1, 2])]),
            Query([1, 2], {W1: 1}),
        ],
    ),
    Scenario(
        "E38_grouped_removal_repro_six_events",
        "crtc.md §9, §13 E38; harness known_grouped_removal_overcount",
        [
            Store(1, seq(1, 30)),
            Store(1, seq(2, 20, 21, start=[1]), parent=seq_hash([1])),
            Remove(1, [seq_hash([1])]),
            Store(1, seq(1)),
            Store(1, seq(2, 20, start=[1]), parent=seq_hash([1])),
            Remove(1, [seq_hash([1, 2, 20, 21]), seq_hash([1, 2, 20])]),
            Query([1, 2, 20], {W1: 2}),
        ],
    ),
    Scenario(
        "E41_single_worker_early_exit",
        "crtc.md §13 E41",
        [
            Store(1, chain(1, 2, 3)),
            Query([1, 2, 3], {W1: 3}, early_exit=None),
        ],
    ),
    Scenario(
        "test_extends_decode_tail_in_place",
        "crtc.md §10 test 22",
        [
            Store(1, chain(1, 2, 3)),
            Store(1, chain(4), parent=300),
            Store(1, chain(5), parent=400),
            Store(1, chain(6), parent=500),
            Query([1, 2, 3, 4, 5, 6], {W1: 6}),
            Dump([(1, 0, None, [100, 200, 300, 400, 500, 600])]),
        ],
    ),
    Scenario(
        "test_extension_downgrade_can_split_later",
        "crtc.md §10 test 23",
        [
            Store(1, chain(1, 2, 3)),
            Store(2, chain(1, 2, 3)),
            Store(1, chain(4, 5, 6), parent=300),
            Query([1, 2, 3, 4, 5, 6], {W1: 6, W2: 3}),
            Store(2, chain(7, 8), parent=300),
            Query([1, 2, 3, 4, 5, 6], {W1: 6, W2: 3}),
            Query([1, 2, 3, 7, 8], {W1: 3, W2: 5}),
            Dump(
                [
                    (1, 0, None, [100, 200, 300]),
                    (2, 0, None, [100, 200, 300]),
                    (1, 0, 300, [400, 500, 600]),
                    (2, 0, 300, [700, 800]),
                ]
            ),
        ],
    ),
    Scenario(
        "test_reuses_prefix_suffix_and_extends_to_nine",
        "crtc.md §10 test 25",
        [
            Store(1, chain(1, 2, 3, 4, 5, 6)),
            Store(2, chain(1, 2, 3)),
            Store(2, chain(4, 5, 6, 7, 8, 9), parent=300),
            Query(list(range(1, 10)), {W1: 6, W2: 9}),
            Dump([(1, 0, None, [100, 200, 300, 400, 500, 600]), (2, 0, None, [x * 100 for x in range(1, 10)])]),
        ],
    ),
    Scenario(
        "test_reuses_internal_suffix_and_extends_leaf_without_split",
        "crtc.md §10 test 26",
        [
            Store(1, chain(*range(1, 36))),
            Store(2, chain(*range(1, 11))),
            Store(2, chain(*range(11, 41)), parent=1000),
            Query(list(range(1, 41)), {W1: 35, W2: 40}),
        ],
    ),
    Scenario(
        "test_remove_multiple_hashes_from_same_compressed_edge",
        "crtc.md §10 test 14",
        [
            Store(0, chain(1, 2, 3, 4, 5, 6)),
            Store(1, chain(1, 2, 3, 4, 5, 6)),
            Remove(0, [300, 400, 500]),
            Query([1, 2, 3, 4, 5, 6], {(0, 0): 2, W1: 6}),
            Store(0, chain(3, 4, 5, 6), parent=200),
            Query([1, 2, 3, 4, 5, 6], {(0, 0): 6, W1: 6}),
        ],
    ),
    Scenario(
        "test_batched_remove_uses_minimum_edge_position",
        "crtc.md §10 test 15",
        [
            Store(0, chain(1, 2, 3, 4, 5, 6)),
            Remove(0, [500, 300, 400]),
            Query([1, 2, 3, 4, 5, 6], {(0, 0): 2}),
            Store(0, chain(3, 4, 5, 6), parent=200),
            Query([1, 2, 3, 4, 5, 6], {(0, 0): 6}),
        ],
    ),
    Scenario(
        "test_restore_after_mid_chain_remove_updates_score",
        "crtc.md §10 test 27",
        [
            Store(1, chain(1, 2, 3)),
            Remove(1, [200]),
            Query([1, 2, 3], {W1: 1}),
            Store(1, chain(2, 3), parent=100),
            Query([1, 2, 3], {W1: 3}),
        ],
    ),
    Scenario(
        "test_partial_node_drops_unreachable_descendants",
        "crtc.md §10 test 28",
        [
            Store(1, chain(1, 2, 3)),
            Store(2, chain(1, 2, 3)),
            Store(1, chain(4, 5), parent=300),
            Store(2, chain(6), parent=300),
            RemoveWorker(2),
            Remove(1, [200]),
            Dump([(1, 0, None, [100])]),
        ],
    ),
    Scenario(
        "test_internal_node_is_not_reopened_for_extension",
        "crtc.md §10 test 30, §4.2; seed 004 sticky internal",
        [
            Store(1, C4),
            Store(2, chain(1, 2, 3, 5)),
            Remove(1, [300]),
            Remove(2, [300]),  # no full holder is left on [1 2 3]: its children are cleared, it stays internal
            Store(1, [(300, 3)], parent=200),
            Store(1, chain(8), parent=300),  # a new child, not an extension of the childless internal node
            Query([1, 2, 3, 8], {W1: 4, W2: 2}),
            Query([1, 2, 3, 8], {W1: 3, W2: 2}, early_exit=True),
            Dump([(1, 0, None, [100, 200, 300]), (2, 0, None, [100, 200]), (1, 0, 300, [800])]),
        ],
    ),
    Scenario(
        "split_moves_cutoffs_at_and_past_the_boundary",
        "crtc.md §3.5; Dynamo test 39, at tree level",
        [
            Store(0, chain(1, 2, 3, 4, 5, 6)),
            Store(300, chain(1, 2, 3, 4, 5, 6)),
            Store(1, chain(1)),
            Store(2, chain(1, 2, 3)),
            Store(3, chain(1, 2, 3, 4, 5)),
            Store(301, chain(1, 2, 3, 4)),
            Query([1, 2, 3, 4, 5, 6], {(0, 0): 6, (300, 0): 6, (1, 0): 1, (2, 0): 3, (3, 0): 5, (301, 0): 4}),
            Store(9, chain(1, 2, 3, 7)),  # splits the shared edge at 3
            Query([1, 2, 3, 4, 5, 6], {(0, 0): 6, (300, 0): 6, (1, 0): 1, (2, 0): 3, (3, 0): 5, (301, 0): 4, (9, 0): 3}),
            Query([1, 2, 3, 7], {(0, 0): 3, (300, 0): 3, (1, 0): 1, (2, 0): 3, (3, 0): 3, (301, 0): 3, (9, 0): 4}),
            Dump(
                [
                    (0, 0, None, [100, 200, 300]),
                    (2, 0, None, [100, 200, 300]),
                    (3, 0, None, [100, 200, 300]),
                    (9, 0, None, [100, 200, 300]),
                    (300, 0, None, [100, 200, 300]),
                    (301, 0, None, [100, 200, 300]),
                    (1, 0, None, [100]),
                    (0, 0, 300, [400, 500, 600]),
                    (300, 0, 300, [400, 500, 600]),
                    (3, 0, 300, [400, 500]),
                    (301, 0, 300, [400]),
                    (9, 0, 300, [700]),
                ]
            ),
        ],
    ),
    Scenario(
        "test_extension_demotes_other_full_ranks_to_the_old_tail",
        "crtc.md §10 test 40",
        [
            Store(1, chain(1, 2, 3)),
            Store(2, chain(1, 2, 3)),
            Store(1, chain(4, 5), parent=300),
            Query([1, 2, 3, 4, 5], {W1: 5, W2: 3}),
        ],
    ),
    Scenario(
        "test_equal_sized_coverage_after_head_first_eviction",
        "crtc.md §10 test 42",
        [
            Store(1, chain(1, 2, 3, 4)),
            Store(2, chain(1, 2, 3, 4)),
            Store(3, chain(1, 2, 5)),
            Remove(1, [100, 200, 300, 400]),
            Query([1, 2, 3, 4], {W2: 4, (3, 0): 2}),
        ],
    ),
    # A hash written twice in one prompt (out of contract) is indexed at its last position on the edge
    # (docs/dynamo-findings.md F9), observed on ai-dynamo-runtime 1.6.1, 2026-12-03:
    Scenario(
        "F9a_removal_of_a_repeated_hash_past_the_rank_s_cutoff_is_lost",
        "docs/dynamo-findings.md F9 (out of contract)",
        [
            Store(2, [(300, 3), (100, 1), (300, 3)]),
            Store(1, [(300, 3)]),
            Remove(
                1, [300, 300]
            ),  # 300 resolves past w1's cutoff: nothing is uncovered, the hash is scrubbed, its repeat skipped
            Remove(1, [300], expect=BNF),
            Query([3, 1, 3], {W1: 1, W2: 3}),
            Dump([(1, 0, None, [300]), (2, 0, None, [300, 100, 300])]),
        ],
    ),
    Scenario(
        "F9b_parent_repeated_on_an_edge_resolves_past_the_rank_s_cutoff",
        "docs/dynamo-findings.md F9 (out of contract)",
        [
            Store(2, [(200, 2)]),
            Store(1, [(200, 2), (200, 2), (100, 1)]),
            Store(2, [(100, 1), (100, 1)], parent=200, expect=PBNF),  # 200 resolves to position 1, past w2's cutoff of 1
            Store(2, [(100, 1)], parent=200, expect=PBNF),  # the refusal dropped w2's entry for 200
            Query([2, 2, 1], {W1: 3, W2: 1}),
            Dump([(1, 0, None, [200, 200, 100]), (2, 0, None, [200])]),
        ],
    ),
]


def replayed(tree: Any, name: str, steps: int | None = None) -> Any:
    """Return ``tree`` after the first ``steps`` steps of the vector ``name`` (all by default), each answered as recorded."""
    for step in next(s for s in SCENARIOS if s.name == name).steps[:steps]:
        problem = run_step(tree, step, 0)
        assert problem is None, f"{name}: {step}: {problem}"
    return tree

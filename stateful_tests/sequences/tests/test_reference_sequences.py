"""Named tests of the tries of reference.sequences: the slot's ``BlockTrie`` reports exactly the paths that appear and
disappear (as runs, not tuples), the registry's ``PathTrie`` is exactly the set its runs make in any order, and each
``check()`` catches a broken trie."""

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as hs

from kvproof.reference.sequences import BlockTrie, PathRun, PathTrie
from kvproof.spec.sequences import lineage_paths, path_set

PROMPT = hs.lists(hs.integers(1, 3), max_size=4).map(tuple)


@given(hs.lists(hs.tuples(hs.booleans(), PROMPT), max_size=12))
def test_the_block_trie_reports_exactly_the_paths_that_appear_and_disappear(steps):
    trie, prompts, owners = BlockTrie(), [], {}
    for acquire, blocks in steps:
        if not acquire and blocks not in prompts:
            continue
        paths = [blocks[: i + 1] for i in range(len(blocks))]
        if acquire:
            expected = [p for p in paths if owners.get(p, 0) == 0]
            run = trie.acquire(blocks)
            prompts.append(blocks)
        else:
            expected = [p for p in paths if owners[p] == 1]
            run = trie.release(blocks)
            prompts.remove(blocks)
        for p in paths:
            owners[p] = owners.get(p, 0) + (1 if acquire else -1)
        assert list(run) == expected and run.blocks is blocks  # the delta names the prompt's own tuple
        trie.check(prompts)
        assert trie.paths() == lineage_paths(prompts)


@given(hs.lists(hs.tuples(hs.booleans(), PROMPT, hs.integers(0, 4)), max_size=12), PROMPT)
@example([(True, (1,), 0), (False, (1, 2), 0)], (1,))  # a remove whose walk leaves the trie: what it unheld is pruned
@example([(True, (1, 2), 0), (False, (1, 3), 1)], (1, 2))  # ... and what it did not unheld is kept
def test_the_registry_trie_is_the_set_its_runs_make_in_any_order(steps, query):
    # a broken pipeline may publish out of order: the trie must still equal the set of tuples, path by path
    trie, paths = PathTrie(), set()
    for store, blocks, start in steps:
        run = PathRun(blocks, min(start, len(blocks)))
        if store:
            trie.store(run)
            paths |= set(run)
        else:
            trie.remove(run)
            paths -= set(run)
        trie.check()
        assert trie.freeze() == path_set(paths)
        assert trie.held_depth(query) == path_set(paths).held_depth(query)


def test_the_block_trie_check_catches_a_broken_trie():
    trie = BlockTrie()
    trie.acquire((1, 2))
    trie.acquire((1, 3))
    trie.check([(1, 2), (1, 3)])
    for prompts, message in (
        ([(1, 2)], "a node at depth 1 has 2 owners, 1 prompts"),  # a path too many
        ([(1, 2), (1, 3), (1, 4)], "a prompt's path of depth 2 is missing"),
        ([(1, 2), (1, 2)], "a node at depth 2 has 1 owners, None prompts"),
    ):  # wrong owners
        with pytest.raises(AssertionError, match=f"^{re.escape(message)}"):
            trie.check(prompts)
    trie.active_blocks += 1
    with pytest.raises(AssertionError, match=r"^active_blocks 4 != 3"):
        trie.check([(1, 2), (1, 3)])
    trie.active_blocks -= 1
    trie.root.children[1].children[3].owners = 0
    with pytest.raises(AssertionError, match=r"^an unowned node at depth 2"):
        trie.check([(1, 2), (1, 3)])


def test_the_registry_trie_check_catches_a_broken_trie():
    trie = PathTrie()
    trie.store(PathRun((1, 2), 0))
    trie.check()
    trie.size += 1
    with pytest.raises(AssertionError, match=r"^size 3 != 2 held paths"):
        trie.check()
    trie.size -= 1
    trie.root.children[1].children[2].held = False  # an unheld node with nothing below it
    with pytest.raises(AssertionError, match=r"^an unheld leaf at depth 2"):
        trie.check()


def sound_tracker():
    """Worker 1 with dp ranks 0 and 1, two requests on rank 0 (one with a modeled prefill, one without)."""
    from kvproof.reference.sequences import SlotTracker
    from kvproof.spec.sequence_inputs import PrefillLoadHint, SequenceRequest, WorkerWithDpRank

    tracker = SlotTracker(None)
    tracker.register_worker(1, 0, 2, 0)
    rank = WorkerWithDpRank(1, 0)
    tracker.add_request(SequenceRequest("a", rank, (1, 2), True, None, PrefillLoadHint(100, 50_000_000)), 1)
    tracker.add_request(SequenceRequest("b", rank, (1, 3), True, None, PrefillLoadHint(40)), 2)
    tracker.check()
    return tracker, tracker.slots[next(r for r in tracker.slots if r.dp_rank == 0)]


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("tokens_sum", "prefill tokens sum drifted"),
        ("unmodeled", "unmodeled count drifted"),
        ("modeled_ms", "modeled ms drifted"),
    ],
)
def test_the_prefill_check_names_the_running_sum_that_drifted(field, message):
    """``check()`` recomputes each running sum of a slot's prefills and names the one that drifted."""
    tracker, slot = sound_tracker()
    setattr(slot.prefill, field, getattr(slot.prefill, field) + 1)
    with pytest.raises(AssertionError, match=f"^{message}"):
        tracker.check()


def test_the_tracker_check_catches_a_broken_write_model_and_a_registry_behind_it():
    """``check()`` runs the write model's invariants (a request booked to a slot that does not hold it) and the
    read model's (a registry view whose load is not the slot's), each named in the failure."""
    tracker, _ = sound_tracker()
    tracker.index["a"] = next(r for r in tracker.slots if r.dp_rank == 1)
    with pytest.raises(AssertionError, match=r"write model violates .*is_request_booked_by_its_slot"):
        tracker.check()
    tracker, _ = sound_tracker()
    view = next(iter(tracker.registry.values()))
    view.load = None
    with pytest.raises(AssertionError, match=r"registry differs from the projection: .*is_load_snapshot_current"):
        tracker.check()


def test_unregistering_names_the_bad_argument_and_the_unknown_worker():
    from kvproof.spec.errors import KvProofError
    from kvproof.spec.sequence_errors import UnknownWorker

    tracker, _ = sound_tracker()
    with pytest.raises(KvProofError, match=r"^worker_id -1 is outside \[0, 18446744073709551615\]$"):
        tracker.unregister_worker(-1)
    with pytest.raises(UnknownWorker, match=r"^worker 7 not found$") as caught:
        tracker.unregister_worker(7)
    assert caught.value.worker_id == 7
    tracker.check()


def test_the_prefill_check_names_an_anchor_that_is_not_the_front():
    """The anchor is the front prefill (sequences.md §2): ``check()`` names an anchor elsewhere, and an anchor time
    kept without an anchor."""
    tracker, slot = sound_tracker()
    slot.prefill.anchor_id = "b"
    with pytest.raises(AssertionError, match=r"^anchor 'b' is not the front 'a'"):
        tracker.check()
    tracker, slot = sound_tracker()
    slot.prefill.anchor_since = None
    with pytest.raises(AssertionError, match=r"^anchor time without an anchor"):
        tracker.check()


def test_a_slot_reports_only_the_paths_that_changed():
    """A slot's deltas for the registry are lists of non-empty runs (reference.sequences ``ActiveSequences``): a
    prompt whose every path is held already stores nothing, and freeing one of its two owners removes nothing."""
    from kvproof.reference.sequences import ActiveSequences
    from kvproof.spec.sequence_inputs import SequenceRequest, WorkerWithDpRank

    slot, rank = ActiveSequences(0), WorkerWithDpRank(1, 0)
    assert slot.add(SequenceRequest("a", rank, (1, 2), False, None, None), 1, None) == ([], [PathRun((1, 2), 0)], [])
    assert slot.add(SequenceRequest("b", rank, (1, 2), False, None, None), 2, None) == ([], [], [])
    assert slot.add(SequenceRequest("c", rank, (1, 2, 3), False, None, None), 3, None) == ([], [PathRun((1, 2, 3), 2)], [])
    assert slot.free("b", 4) == []
    assert slot.free("c", 5) == [PathRun((1, 2, 3), 2)]
    assert slot.free("a", 6) == [PathRun((1, 2), 0)]
    slot.check()


def test_a_slot_ignores_a_request_it_does_not_hold():
    """Freeing, or completing the prefill of, a request the slot does not hold changes nothing and says so (``None``,
    ``False``); so does completing a prefill twice (sequences.md §8.2: a known request that is not prefilling)."""
    from kvproof.reference.sequences import ActiveSequences
    from kvproof.spec.sequence_inputs import PrefillLoadHint, SequenceRequest, WorkerWithDpRank

    slot = ActiveSequences(0)
    slot.add(SequenceRequest("a", WorkerWithDpRank(1, 0), (1, 2), True, None, PrefillLoadHint(100, 50_000_000)), 1, None)
    before = slot.state()
    assert slot.free("zzz", 2) is None
    assert slot.mark_prefill_completed("zzz", 2) is False
    assert slot.state() == before
    assert slot.mark_prefill_completed("a", 3) is True
    after = slot.state()
    assert slot.prefill.remove("a", 4) is False
    assert slot.state() == after
    slot.check()


def test_the_slot_check_names_a_prefill_without_its_request():
    tracker, slot = sound_tracker()
    slot.prefill.insert("ghost", 5, None, 3)  # the prefill's own sums stay exact: only the slot's cross-check fails
    with pytest.raises(AssertionError, match=r"^a prefill without its request"):
        tracker.check()


def test_the_decay_refuses_a_modeled_backlog_whose_anchor_is_unmodeled():
    """A snapshot whose backlog is modeled has no unmodeled prefill, so neither has its anchor; the reference's
    decay asserts it rather than guess (such a snapshot is never published: ``PrefillTracker.snapshot``)."""
    from kvproof.reference.sequences import decayed_tokens
    from kvproof.spec.prefill import AnchorSnapshot, PrefillLoadSnapshot

    with pytest.raises(AssertionError, match=r"^a modeled backlog has no unmodeled prefill"):
        decayed_tokens(PrefillLoadSnapshot(10, AnchorSnapshot(10, None, 0), 5), 1)

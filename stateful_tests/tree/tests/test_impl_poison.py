"""impl/poison.py on the concurrent tree: a write interrupted by an untyped exception leaves the tree sound, or
poisoned so that every later call says so; typed rejections never poison; check() sees a credited block no lane
can find (the fault that made one is why the rule exists)."""

import pytest

from kvproof.impl.node import ConcurrentNode
from kvproof.impl.radix_tree import ConcurrentRadixTree
from kvproof.spec.errors import BlockNotFound, ParentBlockNotFound, Poisoned
from kvproof.spec.events import KvCacheEvent, Removed, Stored
from kvproof.spec.primitives import Block
from kvproof.stateful_tests.tree.impl_mutants import NeverPoisoned


def stored(parent, *locals_):
    return KvCacheEvent(0, Stored(parent, tuple(Block(x, 100 * x) for x in locals_)))


class TreeBoom(Exception):
    pass


def _split_that_faults(monkeypatch):
    """Make the next shape change raise after it began (its version odd): a torn split."""
    real = ConcurrentNode.begin_shape_change

    def begin(node):
        real(node)
        raise TreeBoom("torn")

    monkeypatch.setattr(ConcurrentNode, "begin_shape_change", begin)


def test_a_fault_that_tears_a_split_poisons_the_tree_and_every_later_call_says_so(monkeypatch):
    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2, 3))
    with monkeypatch.context() as mp:
        _split_that_faults(mp)
        with pytest.raises(TreeBoom):
            tree.apply_event(2, stored(None, 1, 5))  # splits [1 2 3] at 1
    assert tree.poisoned is not None and "apply_event" in str(tree.poisoned) and "odd" in str(tree.poisoned)
    for call in (
        lambda: tree.apply_event(3, stored(None, 9)),
        lambda: tree.find_matches([1, 2]),
        lambda: tree.remove_worker(1),
        lambda: tree.clear_all_blocks(1),
        lambda: tree.remove_worker_dp_rank(1, 0),
        tree.dump_tree_as_events,
        tree.snapshot,
    ):
        with pytest.raises(Poisoned, match="TreeBoom interrupted apply_event"):
            call()
    with pytest.raises(AssertionError):  # check() still inspects: it reports the torn state
        tree.check()


def test_a_fault_before_anything_changed_does_not_poison(monkeypatch):
    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2))
    with monkeypatch.context() as mp:
        mp.setattr(ConcurrentRadixTree, "_store", lambda *a: (_ for _ in ()).throw(TreeBoom("early")))
        with pytest.raises(TreeBoom):
            tree.apply_event(1, stored(200, 3))
    assert tree.poisoned is None and tree.find_matches([1, 2]).scores == {(1, 0): 2}


def test_typed_rejections_never_poison():
    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2))
    with pytest.raises(ParentBlockNotFound):
        tree.apply_event(1, stored(999, 3))
    with pytest.raises(BlockNotFound):
        tree.apply_event(1, KvCacheEvent(0, Removed((777,))))
    assert tree.poisoned is None
    tree.check()


def test_an_interrupt_poisons_at_once_without_running_check(monkeypatch):
    tree = ConcurrentRadixTree()
    monkeypatch.setattr(ConcurrentRadixTree, "_store", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    monkeypatch.setattr(ConcurrentRadixTree, "check", lambda self, lookups=True: pytest.fail("check ran"))
    with pytest.raises(KeyboardInterrupt):
        tree.apply_event(1, stored(None, 1))
    assert "no check could run" in str(tree.poisoned)


def torn(tree, monkeypatch):
    """``tree`` after [1 2 3] and a split of it (at 1) that faults half done."""
    tree.apply_event(1, stored(None, 1, 2, 3))
    with monkeypatch.context() as mp:
        _split_that_faults(mp)
        with pytest.raises(TreeBoom):
            tree.apply_event(2, stored(None, 1, 5))
    return tree


def test_the_never_poisoned_control_goes_on_answering_from_a_torn_state(monkeypatch):
    tree = torn(NeverPoisoned(), monkeypatch)
    assert tree.poisoned is None
    tree.find_matches([1, 2])  # answers: exactly what the fault row must catch
    with pytest.raises(AssertionError):
        tree.check()


def test_check_sees_a_credited_block_that_no_lane_can_find():
    tree = ConcurrentRadixTree()
    tree.apply_event(1, stored(None, 1, 2))
    tree.check()
    del tree.lanes[0].lookups[(1, 0)][200]  # the tree still credits (1, 0) with 200, the lane no longer finds it
    with pytest.raises(AssertionError, match=r"\[200\] is credited but has no lane entry"):
        tree.check()


def test_the_poison_says_what_interrupted_which_call_and_the_first_broken_invariant(monkeypatch):
    """The verdict's words: the fault, the call and its message, then the check's first two lines (its title and
    its first problem), or the check's exception type when it has no message."""
    tree = torn(ConcurrentRadixTree(), monkeypatch)
    with pytest.raises(AssertionError) as broken:
        tree.check()
    lines = [line.strip() for line in str(broken.value).splitlines()]
    assert (
        str(tree.poisoned)
        == f"TreeBoom interrupted apply_event (torn) and left the structure inconsistent: {lines[0]} {lines[1]}; rebuild it"
    )

    bare = ConcurrentRadixTree()
    monkeypatch.setattr(ConcurrentRadixTree, "_store", lambda *a: (_ for _ in ()).throw(TreeBoom("late")))
    monkeypatch.setattr(ConcurrentRadixTree, "check", lambda self, lookups=True: (_ for _ in ()).throw(AssertionError()))
    with pytest.raises(TreeBoom):
        bare.apply_event(1, stored(None, 1))
    assert (
        str(bare.poisoned)
        == "TreeBoom interrupted apply_event (late) and left the structure inconsistent: AssertionError; rebuild it"
    )

    long = ConcurrentRadixTree()
    monkeypatch.setattr(
        ConcurrentRadixTree,
        "check",
        lambda self, lookups=True: (_ for _ in ()).throw(AssertionError("check failed:\n  first\n  second\n  third")),
    )
    with pytest.raises(TreeBoom):
        long.apply_event(1, stored(None, 1))
    assert (
        str(long.poisoned)
        == "TreeBoom interrupted apply_event (late) and left the structure inconsistent: check failed: first; rebuild it"
    )


def test_an_interrupt_s_poison_names_the_call_and_the_interrupt(monkeypatch):
    tree = ConcurrentRadixTree()
    monkeypatch.setattr(ConcurrentRadixTree, "_store", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt("stop")))
    with pytest.raises(KeyboardInterrupt):
        tree.apply_event(1, stored(None, 1))
    assert str(tree.poisoned) == "KeyboardInterrupt interrupted apply_event (stop); no check could run after it"


def test_a_typed_rejection_runs_no_check(monkeypatch):
    """A rejection is decided before anything changes: the guard lets it through without the (expensive) check."""
    tree = ConcurrentRadixTree()
    monkeypatch.setattr(ConcurrentRadixTree, "check", lambda self, lookups=True: pytest.fail("check ran"))
    with pytest.raises(ParentBlockNotFound):
        tree.apply_event(1, stored(999, 3))
    assert tree.poisoned is None

"""harness/surface.py: what a target's door cannot carry is refused before it reaches the target, and counted."""

from kvproof.stateful_tests.harness.surface import FULL, LeftOut, NotOnSurface, Surface, lacks, store_not_carried, surface_of


def test_a_tree_that_declares_nothing_has_the_whole_api():
    assert surface_of(object()) is FULL and FULL.gaps() == {}
    assert lacks(object(), "early_exit") is None


def test_a_declared_gap_is_read_from_the_tree():
    class Tree:
        surface = Surface(early_exit="no flag")

    assert lacks(Tree(), "early_exit") == "no flag" and Surface(early_exit="no flag").gaps() == {"early_exit": "no flag"}


def test_a_store_the_converter_rewrites_is_not_carried_by_a_surface_that_says_so():
    zmq = Surface(self_parented="rewritten", duplicate_hashes="rewritten")
    assert isinstance(store_not_carried(zmq, 10, [10, 20]), NotOnSurface)
    assert store_not_carried(zmq, None, [10, 10]).part == "duplicate_hashes"
    assert store_not_carried(zmq, 5, [10, 20]) is None
    assert store_not_carried(FULL, 10, [10, 20]) is None  # negative control: the whole API carries it


def test_left_out_counts_per_part_names_a_few_cases_and_merges():
    a, b = LeftOut(), LeftOut()
    a.add("early_exit", "no flag", 3)
    b.add("early_exit", "no flag", 2, where="vector E1")
    b.add("outcomes", "not reported")
    a.merge(b)
    assert a.lines() == ["left out: 5 early_exit calls (e.g. vector E1): no flag", "left out: 1 outcomes call: not reported"]
    assert a.to_json()["early_exit"] == {"calls": 5, "why": "no flag", "where": ["vector E1"]}
    assert not LeftOut()

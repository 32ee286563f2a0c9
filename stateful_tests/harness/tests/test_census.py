"""The census walk (stateful_tests/harness/census.py): everything reachable, counted by type and by place."""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from kvproof.stateful_tests.harness import census


class Pair(NamedTuple):
    a: int
    b: int


class Slotted:
    __slots__ = ("items", "other")

    def __init__(self) -> None:
        self.items: dict[int, list[int]] = {1: [1, 2], 2: [3]}
        self.other: Plain | None = None


class Plain:
    def __init__(self) -> None:
        self.shared = frozenset({1, 2, 3})
        self.again = self.shared
        self.records = [Pair(1, 2), Pair(3, 4)]
        self.stats: Counter[str] = Counter(x=1)
        self.method = self.walk  # a bound method is not followed back into its object

    def walk(self) -> None:
        pass


def test_counts_slots_dict_items_keys_and_values_by_place() -> None:
    root = Slotted()
    root.other = Plain()
    c = census.take(root)
    assert c.sizes["Slotted.items"] == 2 and c.sizes["Slotted.items[]"] == 3 and c.containers["Slotted.items[]"] == 2
    assert c.count("Slotted", "Plain") == 2


def test_a_shared_container_counts_in_each_place_and_records_are_objects() -> None:
    c = census.take(Plain())
    assert c.sizes["Plain.shared"] == 3 and c.sizes["Plain.again"] == 3
    assert c.instances["Pair"] == 2 and c.sizes["Plain.records"] == 2 and "Plain.records[]" not in c.sizes
    assert c.sizes["Plain.stats"] == 1 and c.instances["Counter"] == 1


def test_growth_in_an_unnamed_field_shows_up() -> None:
    """Negative control: a structure that starts keeping a list under a new attribute is counted there, unasked."""
    plain = Plain()
    before = census.take(plain).quantities()
    plain.graveyard = list(range(100))  # type: ignore[attr-defined]
    after = census.take(plain).quantities()
    assert set(after) - set(before) == {"len Plain.graveyard"} and after["len Plain.graveyard"] == 100


def test_trends_flag_a_figure_growing_per_unit_of_live_content_and_spare_one_that_follows_it() -> None:
    """The trend law: steady per-live ratios pass however the live content swings; a doubling ratio fails, and a
    byte figure gets its own floor."""
    samples = [
        ({"grows": 100.0 * i, "follows": 3.0 * live, "noise bytes": 3000.0 * (i % 2)}, live)
        for i, live in enumerate([100, 50, 100, 50, 100, 50, 100, 50], start=1)
    ]
    assert set(census.trends(samples, warmup=2, window=2, slack=0.25)) == {"grows"}
    assert census.trends(samples[:5], warmup=2, window=2, slack=0.25) == {}  # too few samples to judge

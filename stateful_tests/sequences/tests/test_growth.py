"""Resources: one add of a prompt of n blocks costs O(n) time and memory on every tracker, and so do its free and check.

Each test measures one call on a prompt of 1,000 and of 10,000 blocks (``sequences.growth``:
tracemalloc bytes retained and at peak, and block hashes hashed, which stands for time) and
asserts that 10x the prompt costs at most ``BOUND`` times as much. The negative control is the
representation before issue 12, kept here as ``PrefixTupleTracker``: the same measure finds it
quadratic.

Source: docs/sources.md#kvproof-robustness "Resources" (10^4 blocks took 400 MB; 10x the prompt length may cost at
most ~10x the time and memory of add).
"""

from collections.abc import Callable
from typing import Any

import pytest

from kvproof.reference.sequences import PathRun
from kvproof.reference.sequences import SlotTracker as ReferenceSlotTracker
from kvproof.spec.primitives import Rank, WorkerWithDpRank
from kvproof.spec.sequence_inputs import SequenceRequest
from kvproof.stateful_tests.sequences.growth import Cost, cost_of, counted_past_the_door, growth, prompt_of
from kvproof.stateful_tests.sequences.model import TARGETS

W = WorkerWithDpRank(0, 0)
SMALL, BIG = 1_000, 10_000
BOUND = 15  # 10x the blocks may cost ~10x; the slack covers fixed costs and allocator rounding, not a square (100x)


def request(n: int) -> SequenceRequest:
    return SequenceRequest("r", W, prompt_of(n), False, None, None)


def fresh(make: Callable) -> Any:
    tracker = make(None)
    tracker.register_worker(0, 0, 1, 0)
    return tracker


def add_cost(make: Callable) -> Callable[[int], Cost]:
    """The cost of one ``add_request`` of an n-block prompt on an empty slot."""

    def measure(n: int) -> Cost:
        with counted_past_the_door():
            tracker, req = fresh(make), request(n)
            return cost_of(lambda: tracker.add_request(req, 1))

    return measure


def after_add_cost(make: Callable, call: Callable[[Any], object]) -> Callable[[int], Cost]:
    """The cost of ``call(tracker)`` once an n-block prompt was added."""

    def measure(n: int) -> Cost:
        with counted_past_the_door():
            tracker = fresh(make)
            tracker.add_request(request(n), 1)
            return cost_of(lambda: call(tracker))

    return measure


def free_cost(make: Callable) -> Callable[[int], Cost]:
    return after_add_cost(make, lambda tracker: tracker.free("r", 2))


def check_cost(make: Callable) -> Callable[[int], Cost]:
    return after_add_cost(make, lambda tracker: tracker.check())


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_add_request_is_linear_in_prompt_length(target):
    g = growth(add_cost(TARGETS[target]), SMALL, BIG)
    assert g.worst() <= BOUND, f"{target}: 10x the prompt made one add cost {g}"


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_free_is_linear_in_prompt_length(target):
    g = growth(free_cost(TARGETS[target]), SMALL, BIG)
    assert g.worst() <= BOUND, f"{target}: 10x the prompt made one free cost {g}"


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_check_is_linear_in_prompt_length(target):
    g = growth(check_cost(TARGETS[target]), SMALL, BIG)
    assert g.worst() <= BOUND, f"{target}: 10x the prompt made check() cost {g}"


PER_BLOCK_BYTES, PER_BLOCK_HASHES = 1_000, 10  # a trie node and a registry node per block: about 550 bytes, 4 hashes


def within_per_block(cost: Cost, n: int) -> bool:
    assert cost.hashes > 0, "the measure saw no block hash: the counted hashes did not reach the tracker"
    return cost.retained < PER_BLOCK_BYTES * n and cost.hashes < PER_BLOCK_HASHES * n


def test_one_add_keeps_about_one_node_per_block_in_the_trie_and_the_registry():
    # the absolute figure behind the ratio: 10^4 blocks took 400 MB as prefix tuples; two tries of 10^4 nodes take a few MB
    assert within_per_block(add_cost(ReferenceSlotTracker)(BIG), BIG)


# ----------------------------------------------------------------------------- the negative control


class PrefixTupleTracker(ReferenceSlotTracker):
    """The representation before issue 12: the registry keeps every path as its own tuple, and check() builds every
    prefix of every prompt. Correct, and quadratic in the prompt length (the twin the growth measure must catch)."""

    def __init__(self, expiry=None) -> None:
        super().__init__(expiry)
        self.tuples: dict[Rank, set[tuple[int, ...]]] = {}

    def _publish(self, rank: Rank, stored: list[PathRun], removed: list[PathRun]) -> None:
        super()._publish(rank, stored, removed)
        paths = self.tuples.setdefault(rank, set())
        for run in removed:
            paths.difference_update(run)  # iterating a run builds each of its paths
        for run in stored:
            paths.update(run)

    def check(self) -> None:
        super().check()
        for rank, slot in self.slots.items():
            expected = {r.blocks[: i + 1] for r in slot.requests.values() for i in range(len(r.blocks))}
            assert self.tuples.get(rank, set()) == expected, f"prefix tuples of {rank!r} differ"


@pytest.mark.parametrize("measure", [add_cost, free_cost, check_cost], ids=["add", "free", "check"])
def test_the_growth_measure_catches_a_quadratic_tracker(measure):
    small, big = SMALL // 10, BIG // 10  # a square of 10^4 blocks is 400 MB: a tenth of the sizes shows it too
    quadratic = growth(measure(PrefixTupleTracker), small, big)
    assert quadratic.worst() > BOUND, f"the quadratic twin grew only {quadratic}"
    assert growth(measure(ReferenceSlotTracker), small, big).worst() <= BOUND  # same sizes, same measure: the reference passes


def test_the_per_block_bound_catches_a_quadratic_tracker():
    n = BIG // 10
    assert not within_per_block(add_cost(PrefixTupleTracker)(n), n)

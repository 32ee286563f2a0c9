"""How one tracker call grows with the prompt length: bytes (tracemalloc) and block hashes hashed.

``cost_of(call)`` runs one call and reports what it cost, counted, not timed:

- ``retained``: bytes the call left allocated (the tracker's new state);
- ``peak``: the most bytes allocated at once during the call (transient copies included);
- ``hashes``: how many times a block hash was hashed: every dict or set lookup of a block,
  and every hash of a tuple holding blocks, hashes each of them, so a call that builds and
  stores one prefix tuple per block hashes the square of the prompt length. This is the
  operation count that stands for time (wall clock is noisy on a shared machine).

``growth(measure, small, big)`` is the ratio of each of the three from a prompt of ``small``
blocks to one of ``big``: a call that is O(blocks) grows by about ``big / small``.

Source: docs/sources.md#kvproof-robustness "Resources" (``add_request`` kept every prefix of a prompt as its own
tuple; 10x the prompt length must cost at most ~10x the time and memory of add).
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


class CountedHash(int):
    """A block hash that counts how often it is hashed (``CountedHash.hashes``, shared by all)."""

    hashes = 0

    def __hash__(self) -> int:
        CountedHash.hashes += 1
        return int.__hash__(self)


def prompt_of(n: int) -> tuple[int, ...]:
    """Return a prompt of ``n`` distinct counted block hashes."""
    return tuple(CountedHash(h) for h in range(1, n + 1))


@dataclass(frozen=True)
class Cost:
    """What one call cost: bytes left allocated, the peak bytes during it, and the block hashes it hashed."""

    retained: int
    peak: int
    hashes: int


def cost_of(call: Callable[[], object]) -> Cost:
    """Run ``call`` once and return its ``Cost`` (the garbage collector is paused while it runs)."""
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        CountedHash.hashes = 0
        call()
        hashes = CountedHash.hashes
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        gc.enable()
    return Cost(current - base, peak - base, hashes)


@dataclass(frozen=True)
class Growth:
    """The ratio of each cost from the small prompt to the big one (a zero cost counts as one)."""

    retained: float
    peak: float
    hashes: float

    def worst(self) -> float:
        return max(self.retained, self.peak, self.hashes)


@contextmanager
def counted_past_the_door() -> Iterator[None]:
    """Let ``CountedHash`` blocks into the tracker as they are.

    The trackers' door reads an ``int`` subclass by its value and keeps a plain ``int``
    (``spec.sequence_inputs``: an ``IntEnum`` id must not be kept as an enum, kvproof issue 31),
    which would leave nothing inside the tracker to count. While measuring, the door keeps the
    counted hashes; the conversion itself is checked by its own test
    (``test_bad_input.py::test_an_int_subclass_is_read_by_its_value_and_kept_as_a_plain_int``).
    """
    from ...spec import sequence_inputs

    door = sequence_inputs.int_value
    sequence_inputs.int_value = lambda value: value
    try:
        yield
    finally:
        sequence_inputs.int_value = door


def growth(measure: Callable[[int], Cost], small: int, big: int) -> Growth:
    """Return how ``measure(n)`` (the cost of one call on an n-block prompt) grows from ``small`` to ``big``."""
    with counted_past_the_door():
        a, b = measure(small), measure(big)
    return Growth(*(y / max(x, 1) for x, y in ((a.retained, b.retained), (a.peak, b.peak), (a.hashes, b.hashes))))

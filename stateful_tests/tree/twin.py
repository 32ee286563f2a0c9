"""Run two trees in lockstep and fail on the first observable difference.

``Twin(primary, shadow)`` has the tree API. Every call goes to both trees; the outcome of
every event, the scores of every query (in the mode asked), the snapshot, the dump and the
shape must agree exactly, or ``TwinMismatch`` names the call. Driving a ``Twin`` with the
contract machine (``contract_machine_for(twin_factory)``) checks the primary against the
contract *and* against the shadow at every step. It is how the concurrent implementation is
held to the reference when run sequentially. ``check()`` also compares the shape-rule counters
both trees keep (``SHAPE_RULE_COUNTERS``): run one event at a time, the concurrent tree fires each
shape rule (split, extension, demotion, reuse, cutoff, children-clear, release) exactly as often
as the reference, rejects as many events, and has as many nodes with cutoffs and as many sticky
internal leaves.

``RoutedImpl`` sends each worker's events to lane ``worker_id % lanes`` of one concurrent
tree, so that one lane's splits leave other lanes' lookups stale and lazy repair runs even
in a sequential test.
"""

from __future__ import annotations

from typing import Any

from ..harness import targets
from ..harness.targets import RoutedImpl, canonical, dump_entry

SHAPE_RULE_COUNTERS = (
    "splits",
    "leaf_extensions",
    "demotions",
    "reuses",
    "sticky_refusals",
    "cutoffs_set",
    "children_cleared",
    "released_dead_nodes",
    "rejected",
    "nodes",
)
"""The statistics fields the reference (``TreeStatistics``) and the concurrent tree (``ImplStatistics``) share."""


class TwinMismatch(AssertionError):
    """The two trees answered one call differently."""


class Twin:
    def __init__(self, primary: Any, shadow: Any) -> None:
        self.primary, self.shadow = primary, shadow

    def _both(self, name: str, *args: Any) -> Any:
        results: list[tuple[Any, ...]] = []  # ("ok", value) or ("error", outcome, exception)
        for tree in (self.primary, self.shadow):
            try:
                results.append(("ok", getattr(tree, name)(*args)))
            except Exception as exc:
                results.append(("error", targets.outcome_of(exc), exc))
        a, b = results
        if a[:2] != b[:2] if a[0] == "error" or b[0] == "error" else False:
            raise TwinMismatch(f"{name}{args!r}: primary {a[:2]}, shadow {b[:2]}")
        if a[0] == "error":
            raise a[2]
        return a[1]

    def apply_event(self, worker_id: int, event: Any) -> None:
        self._both("apply_event", worker_id, event)

    def remove_worker(self, worker_id: int) -> None:
        self._both("remove_worker", worker_id)

    def clear_all_blocks(self, worker_id: int) -> None:
        self._both("clear_all_blocks", worker_id)

    def remove_worker_dp_rank(self, worker_id: int, dp_rank: int) -> None:
        self._both("remove_worker_dp_rank", worker_id, dp_rank)

    def find_matches(self, sequence: Any, early_exit: bool = False) -> Any:
        a = self.primary.find_matches(sequence, early_exit)
        b = self.shadow.find_matches(sequence, early_exit)
        if dict(a.scores) != dict(b.scores):
            raise TwinMismatch(f"find_matches({list(sequence)}, early_exit={early_exit}): primary {a.scores}, shadow {b.scores}")
        return a

    def dump_tree_as_events(self) -> list[str]:
        """The primary's dump, once it is the shadow's: the same lines, else the same entries in any order (dump
        order is not part of the contract). Equal lines are not decoded: they are the same dump."""
        lines, theirs = self.primary.dump_tree_as_events(), self.shadow.dump_tree_as_events()
        if lines != theirs:
            a, b = canonical([dump_entry(line) for line in lines]), canonical([dump_entry(line) for line in theirs])
            if a != b:
                raise TwinMismatch(f"dumps differ:\n  primary {a}\n  shadow  {b}")
        return lines

    def snapshot(self) -> dict:
        a, b = self.primary.snapshot(), self.shadow.snapshot()
        if a != b:
            raise TwinMismatch(f"snapshots differ:\n  primary {a}\n  shadow  {b}")
        return a

    def check(self) -> None:
        self.primary.check()
        self.shadow.check()
        a, b = self.primary.shape(), self.shadow.shape()
        if a != b:
            raise TwinMismatch(f"shapes differ:\n  primary {a}\n  shadow  {b}")
        self.dump_tree_as_events()
        ours, theirs = self.primary.statistics(), self.shadow.statistics()
        differ = {
            name: (getattr(ours, name), getattr(theirs, name))
            for name in SHAPE_RULE_COUNTERS
            if getattr(ours, name) != getattr(theirs, name)
        }
        for name in ("cutoff_nodes", "sticky_internal_nodes"):
            counts = getattr(self.primary, name)(), getattr(self.shadow, name)()
            if counts[0] != counts[1]:
                differ[name] = counts
        if differ:
            raise TwinMismatch(f"shape-rule counters differ, as (primary, shadow): {differ}")

    def statistics(self) -> Any:
        return self.shadow.statistics()

    def cutoff_nodes(self) -> int:
        return self.shadow.cutoff_nodes()

    def sticky_internal_nodes(self) -> int:
        return self.shadow.sticky_internal_nodes()


def impl_vs_reference(lanes: int = 3, impl_class: Any = None, reference_class: Any = None):
    """Return a factory of twins: the routed concurrent tree (primary) against the reference (shadow)."""
    from ...impl.radix_tree import ConcurrentRadixTree
    from ...reference import RadixTree

    impl_class = impl_class or ConcurrentRadixTree
    reference_class = reference_class or RadixTree

    def factory() -> Twin:
        return Twin(RoutedImpl(impl_class(lanes=lanes), lanes), reference_class())

    factory.__name__ = f"{impl_class.__name__}_x{lanes}_vs_{reference_class.__name__}"
    return factory

"""Deliberately broken trees: the negative controls of every check kvproof runs.

Each mutant is the reference ``RadixTree`` with exactly one rule broken. A check that no
mutant can fail is a check that cannot fail; ``tree/tests/test_mutants.py`` runs each
mutant through the contract machine, the conformance test and the vectors, and asserts
that the checks listed in ``CAUGHT_BY`` catch it. Each is also a valid ``--target``::

    kvproof check --target kvproof.stateful_tests.tree.mutants:SplitDropsCarriedCutoffs   # exits 1
"""

from __future__ import annotations

from typing import Any

from ...reference.radix_tree import Node, RadixTree
from ...spec.coverage import EdgeState
from ...spec.errors import MalformedEvent
from ...spec.events import Removed
from ...spec.match import OverlapScores, check_query, matched_length
from ...spec.primitives import FrozenMap, FrozenSet, Rank
from ..harness.controls import Expected
from ..harness.isolation import PanicException  # pyo3's panic, by its name (a BaseException)


class SplitDropsCarriedCutoffs(RadixTree):
    """Split rule broken: a cutoff past the split point does not carry its remainder to the suffix."""

    def _split(self, node: Node, p: int) -> None:
        suffix_key = node.state.edge[p].local
        super()._split(node, p)
        suffix = node.children[suffix_key]
        suffix.state = EdgeState(suffix.state.edge, suffix.state.full_edge_workers, FrozenMap())


class SplitCarriesOneTooMany(RadixTree):
    """Split rule broken: a carried cutoff lands one block too deep on the suffix (``k - p + 1``)."""

    def _split(self, node: Node, p: int) -> None:
        suffix_key = node.state.edge[p].local
        super()._split(node, p)
        suffix = node.children[suffix_key]
        s = suffix.state
        full = set(s.full_edge_workers)
        cutoffs = {}
        for rank, k in s.worker_cutoffs.items():
            if k + 1 >= len(s.edge):
                full.add(rank)
            else:
                cutoffs[rank] = k + 1
        suffix.state = EdgeState(s.edge, FrozenSet(full), FrozenMap(cutoffs))


class NoLookupScrub(RadixTree):
    """Removal rule broken: the lookup entries of newly uncovered blocks are not scrubbed."""

    def _scrub(self, lookup, stale, scrubbed) -> None:
        scrubbed.update(stale)


class ChildrenKeptWithoutFullHolder(RadixTree):
    """Removal rule broken: children survive when the last full-edge worker leaves."""

    def _clear_children_if_unheld(self, node: Node) -> None:
        return None


class ExtendsInternalNode(RadixTree):
    """Sticky-internal rule broken: a childless internal node is reopened for leaf extension."""

    def _may_extend(self, node: Node, rank: Rank) -> bool:
        return not node.children and bool(node.state.edge) and rank in node.state.full_edge_workers


class WalkSkipsEqualSizedIntersection(RadixTree):
    """Match rule broken (Dynamo's historical bug): the walk skips the intersection when sizes match.

    A copy of ``spec.match.find_matches_walk`` with that one test changed (the ``elif`` on sizes);
    when the walk changes, change this copy too, or the control tests a walk nobody runs.
    """

    def find_matches(self, sequence, early_exit=False) -> OverlapScores:
        query = check_query(sequence)
        scores: dict[Rank, int] = {}
        node = self.root.children.get(query[0]) if query else None
        active: set[Rank] | None = None
        depth = pos = 0
        while node is not None and pos < len(query):
            state = node.state
            m = matched_length(state, query, pos)
            if active is None:
                active = set(state.full_edge_workers)
                scores.update({r: min(k, m) for r, k in state.worker_cutoffs.items()})
            elif len(active) != len(state.full_edge_workers):
                kept = active & state.full_edge_workers
                for r in active - kept:
                    scores[r] = depth + min(state.worker_cutoffs.get(r, 0), m)
                active = kept
            if not active:
                break
            depth += m
            if m < len(state.edge):
                break
            pos += m
            if early_exit and len(active) == 1:
                break
            node = node.children.get(query[pos]) if pos < len(query) else None
        scores.update({r: depth for r in active or ()})
        return OverlapScores(scores)


class RankRemovalDropsTheWorker(RadixTree):
    """``remove_worker_dp_rank`` drops every rank of the worker, not only the one named."""

    def remove_worker_dp_rank(self, worker_id: int, dp_rank: int) -> None:
        self.remove_worker(worker_id)


# ----------------------------------------------------------------------------- broken on real traffic (the trace's controls)


class IgnoresRemovalBatches(RadixTree):
    """Removal rule broken for batches: a ``removed`` event of more than one hash changes nothing.

    Engines evict in batches, so on a replayed trace the evicted blocks stay credited: an
    over-credit against what the engines hold, and scores that differ from Dynamo's.
    """

    def _apply_removed(self, rank: Rank, removed: Removed) -> None:
        if len(removed.block_hashes) <= 1:
            super()._apply_removed(rank, removed)


class WalkStopsAtDepth(RadixTree):
    """Match rule broken: the walk gives up after ``DEPTH`` blocks, so long prefixes are under-credited.

    It never credits more than a rank holds (no over-credit), so only the comparison with
    another tree catches it.
    """

    DEPTH = 4

    def find_matches(self, sequence, early_exit=False) -> OverlapScores:
        found = super().find_matches(sequence, early_exit)
        return OverlapScores({r: min(n, self.DEPTH) for r, n in found.scores.items()})


TRACE_MUTANTS = [IgnoresRemovalBatches, WalkStopsAtDepth]
"""Broken trees the trace replay must catch (``tree/tests/test_trace_check.py``): over-credit, mismatch."""


# ----------------------------------------------------------------------------- broken API (the API laws' controls)


class DumpDropsLastEvent(RadixTree):
    """The dump loses its last event, so it no longer rebuilds the tree."""

    def dump_tree_as_events(self) -> list[str]:
        return super().dump_tree_as_events()[:-1]


class AcceptsGarbage(RadixTree):
    """A malformed event is silently ignored instead of rejected with a typed error."""

    def apply_event(self, worker_id: int, event: Any) -> None:
        try:
            super().apply_event(worker_id, event)
        except MalformedEvent:
            pass  # the broken rule: garbage is accepted


class BadInputLeavesATrace(RadixTree):
    """A malformed event is rejected, but only after it changed the tree."""

    def apply_event(self, worker_id: int, event: Any) -> None:
        try:
            super().apply_event(worker_id, event)
        except MalformedEvent:
            super().apply_event(9, b'{"event_id": 1, "data": {"stored": {"blocks": [{"block_hash": 100, "tokens_hash": 1}]}}}')
            raise


class EndsItsProcessOnDump(RadixTree):
    """Not a broken rule: a tree that ends the process it lives in when asked for its dump (``os._exit``), as a
    crashing extension would. The control of the gate pool's rule that a row whose process dies is a FAIL naming the
    death, and the rows beside it still run (``kvproof/gate/pool.py``)."""

    def dump_tree_as_events(self) -> list[str]:
        import os

        os._exit(70)


API_MUTANTS = [DumpDropsLastEvent, AcceptsGarbage, BadInputLeavesATrace]


MUTANTS = [
    SplitDropsCarriedCutoffs,
    SplitCarriesOneTooMany,
    NoLookupScrub,
    ChildrenKeptWithoutFullHolder,
    ExtendsInternalNode,
    WalkSkipsEqualSizedIntersection,
    RankRemovalDropsTheWorker,
]

# Which checks must catch each mutant: the contract machine ("machine"), differential
# conformance against the real Dynamo ("conformance"), the observed-behaviour vectors ("vectors").
CAUGHT_BY = {
    SplitDropsCarriedCutoffs: {"machine", "conformance", "vectors"},
    SplitCarriesOneTooMany: {"machine", "conformance", "vectors"},
    NoLookupScrub: {"machine", "conformance", "vectors"},
    ChildrenKeptWithoutFullHolder: {"machine", "conformance", "vectors"},
    ExtendsInternalNode: {"conformance", "vectors"},
    WalkSkipsEqualSizedIntersection: {"conformance", "vectors"},
    RankRemovalDropsTheWorker: {"machine"},  # Dynamo 1.6.1 has no remove_worker_dp_rank to conform with
}

# The failure the contract machine must report for each (a crash for another reason is not a catch).
MACHINE_FAILURE = {
    SplitDropsCarriedCutoffs: Expected(AssertionError, r"check failed:(?s:.*)is_lookup_entry_on_holder"),
    SplitCarriesOneTooMany: Expected(AssertionError, r"snapshot breaks the contract:(?s:.*)indexed blocks it does not hold"),
    NoLookupScrub: Expected(AssertionError, r"check failed:(?s:.*)is_lookup_entry_on_holder"),
    ChildrenKeptWithoutFullHolder: Expected(AssertionError, r"check failed:(?s:.*)is_holderless_childless"),
    RankRemovalDropsTheWorker: Expected(AssertionError, r"unexplained undercount"),
}


class OldApiTree:
    """Not a mutant: a correct tree behind the API of ai-dynamo-runtime 0.6.0 and older.

    Scores are keyed by plain worker id (no data-parallel ranks) and there is no
    ``dump_tree_as_events``. The gate must adapt to it (rows that need the dump or ranks
    are skipped with the reason, conformance streams use dp rank 0) and never crash::

        kvproof check --target kvproof.stateful_tests.tree.mutants:OldApiTree   # skips, never a traceback
    """

    def __init__(self) -> None:
        self._tree = RadixTree()

    def apply_event(self, worker_id: int, payload: Any) -> None:
        self._tree.apply_event(worker_id, payload)

    def find_matches(self, sequence: Any, early_exit: bool = False) -> OverlapScores:
        scores = self._tree.find_matches(sequence, early_exit).scores
        return OverlapScores({rank.worker_id: score for rank, score in scores.items()})  # type: ignore[misc]

    def remove_worker(self, worker_id: int) -> None:
        self._tree.remove_worker(worker_id)

    def clear_all_blocks(self, worker_id: int) -> None:
        self._tree.clear_all_blocks(worker_id)


class PanicsOnClear(RadixTree):
    """Not a mutant of a rule: a tree whose binding panics on every ``cleared`` event, then on every call,
    as a poisoned lock in a native binding does. The gate must report FAIL rows with the reason, never crash::

        kvproof check --target kvproof.stateful_tests.tree.mutants:PanicsOnClear   # exits 1, no traceback
    """

    poisoned = False

    def apply_event(self, worker_id: int, event: Any) -> None:
        if self.poisoned or (isinstance(event, bytes) and b'"cleared"' in event):
            self.poisoned = True
            raise PanicException("called `Result::unwrap()` on an `Err` value: PoisonError")
        super().apply_event(worker_id, event)

    def find_matches(self, sequence: Any, early_exit: bool = False) -> OverlapScores:
        if self.poisoned:
            raise PanicException("called `Result::unwrap()` on an `Err` value: PoisonError")
        return super().find_matches(sequence, early_exit)


class FedAtOnceOverCredits(WalkSkipsEqualSizedIntersection):
    """The equal-size over-credit (Dynamo's concurrent indexer, docs/dynamo-findings.md F10) behind the door of
    Dynamo's indexer: ``send_many`` takes the events of several ranks at once and answers each outcome as the
    indexer's ``/metrics`` label (applied one by one here). The production-mode row's control."""

    def send_many(self, events: Any) -> list[tuple[str, str]]:
        from ..harness.targets import apply

        labels = {
            "ok": "ok",
            "ParentBlockNotFound": "parent_block_not_found",
            "BlockNotFound": "block_not_found",
            "InvalidBlockSequence": "invalid_block",
        }
        return [("event", labels[apply(self, rank.worker_id, event)]) for rank, event in events]


class AllocatesWithoutBound(RadixTree):
    """A target whose dump grows without bound (Dynamo 0.6.1 to 1.2.1 on a cycle): the host's memory limit ends it."""

    def dump_tree_as_events(self) -> list[str]:
        hoard = []
        while True:
            hoard.append(bytearray(1 << 24))


class Aborts(RadixTree):
    """A target whose process aborts in the middle of a query (a Rust panic that aborts, a segfault)."""

    def find_matches(self, sequence: Any, early_exit: Any = False) -> Any:
        import os

        os.abort()


class Hangs(RadixTree):
    """A target that never answers a store (a deadlock): the host's time limit ends it."""

    def apply_event(self, worker_id: Any, event: Any) -> None:
        import time

        while True:
            time.sleep(1)

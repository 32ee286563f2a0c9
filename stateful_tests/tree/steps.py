"""The tree's scenario steps (store, remove, clear, worker removal, query, dump) and their replay.

A step carries its expected outcome: ``"ok"`` or the name of the typed rejection
(``ParentBlockNotFound``, ``BlockNotFound``, ``InvalidBlockSequence``), or the expected scores
of a query, or the expected dump as a multiset. ``run_scenario`` replays a ``Scenario`` of
these steps on a fresh tree of any target; the data lives in ``vectors``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...spec.events import Cleared, KvCacheEvent, Removed, Stored
from ...spec.primitives import Block
from ..harness import targets
from ..harness.scenario import OK, Scenario
from ..harness.surface import LeftOut, NotOnSurface, lacks
from ..harness.targets import canonical_dump

PBNF = "ParentBlockNotFound"
BNF = "BlockNotFound"
IBS = "InvalidBlockSequence"


@dataclass(frozen=True)
class Store:
    worker: int
    blocks: list[tuple[int, int]]
    parent: int | None = None
    dp: int = 0
    expect: str = OK


@dataclass(frozen=True)
class Remove:
    worker: int
    hashes: list[int]
    dp: int = 0
    expect: str = OK


@dataclass(frozen=True)
class Clear:
    worker: int
    dp: int = 0
    expect: str = OK


@dataclass(frozen=True)
class RemoveWorker:
    worker: int


@dataclass(frozen=True)
class ClearAllBlocks:
    worker: int


@dataclass(frozen=True)
class Query:
    sequence: list[int]
    scores: dict[tuple[int, int], int]
    early_exit: bool | None = False  # None: expect the same scores with and without early exit


@dataclass(frozen=True)
class Dump:
    """The dump, as a multiset of ``(worker, dp_rank, parent_hash, [block hashes])``."""

    events: list[tuple[int, int, int | None, list[int]]]


Step = Store | Remove | Clear | RemoveWorker | ClearAllBlocks | Query | Dump


def query_modes(tree: Any, step: Query, left_out: LeftOut | None = None) -> list[bool]:
    """The early_exit modes a query step asks of ``tree``: those it names, less those the tree's surface lacks."""
    modes = [False, True] if step.early_exit is None else [step.early_exit]
    why = lacks(tree, "early_exit")
    if why is not None and True in modes:
        modes.remove(True)
        if left_out is not None:
            left_out.add("early_exit", why)
    return modes


def _outcome_mismatch(tree: Any, step: Store | Remove | Clear, got: str, left_out: LeftOut | None) -> str | None:
    """The step's outcome against its expectation; an outcome the surface does not report is left out."""
    if got == targets.UNOBSERVED:
        if left_out is not None:
            left_out.add("outcomes", lacks(tree, "outcomes") or "")
        return None
    return None if got == step.expect else f"{step}: got {got}"


def run_step(tree: Any, step: Step, event_id: int, left_out: LeftOut | None = None) -> str | None:
    """Apply one step; return a description of the mismatch, or None (early_exit queries the surface lacks: left out)."""
    if isinstance(step, Store):
        blocks = tuple(Block(local, ext) for ext, local in step.blocks)
        got = targets.apply(tree, step.worker, KvCacheEvent(event_id, Stored(step.parent, blocks), step.dp))
        return _outcome_mismatch(tree, step, got, left_out)
    if isinstance(step, Remove):
        got = targets.apply(tree, step.worker, KvCacheEvent(event_id, Removed(tuple(step.hashes)), step.dp))
        return _outcome_mismatch(tree, step, got, left_out)
    if isinstance(step, Clear):
        got = targets.apply(tree, step.worker, KvCacheEvent(event_id, Cleared(), step.dp))
        return _outcome_mismatch(tree, step, got, left_out)
    if isinstance(step, RemoveWorker):
        tree.remove_worker(step.worker)
        return None
    if isinstance(step, ClearAllBlocks):
        tree.clear_all_blocks(step.worker)
        return None
    if isinstance(step, Query):
        for mode in query_modes(tree, step, left_out):
            got_scores = targets.scores(tree, step.sequence, mode)
            if got_scores != step.scores:
                return f"{step} (early_exit={mode}): got {got_scores}"
        return None
    if isinstance(step, Dump):
        want = sorted(((w, d, p, tuple(h)) for w, d, p, h in step.events), key=repr)
        got_dump = canonical_dump(tree)
        return None if got_dump == want else f"{step}: got {got_dump}"
    raise TypeError(step)


def checked_after_every_event(tree_class: type[Any], scenario: Scenario) -> type[Any]:
    """Return ``tree_class`` with ``check()`` after every event.

    Lookup invariants are checked only on in-contract scenarios: colliding hashes strand
    entries in Dynamo too (crtc.md §13 E8, E33).
    """
    lookups = "out of contract" not in scenario.source

    def apply_event(self: Any, worker_id: int, event: Any) -> None:
        try:
            tree_class.apply_event(self, worker_id, event)
        finally:
            self.check(lookups=lookups)

    return type(f"Checked{tree_class.__name__}", (tree_class,), {"apply_event": apply_event})


def run_scenario(factory: Callable[[], Any], scenario: Scenario, left_out: LeftOut | None = None) -> list[str]:
    """Replay ``scenario`` on a fresh tree; return one line per mismatching step (empty: it passed).

    A step the tree's surface cannot carry ends the scenario there (what follows depends on it);
    ``left_out`` counts it under its part's name, with the scenario's name.
    """
    tree = factory()
    problems: list[str] = []
    try:
        for i, step in enumerate(scenario.steps):
            problem = run_step(tree, step, i, left_out)
            if problem:
                problems.append(f"step {i}: {problem}")
    except NotOnSurface as gap:
        if left_out is None:
            raise
        left_out.add(gap.part, gap.why, where=f"vector {scenario.name} from step {i} on")
    finally:
        targets.dispose(tree)
    return problems


def observe_step(tree: Any, step: Step, event_id: int) -> Any:
    """Apply one step and return what it shows: the outcome, the scores (both modes where asked), or the dump."""
    if isinstance(step, Store):
        blocks = tuple(Block(local, ext) for ext, local in step.blocks)
        return targets.apply(tree, step.worker, KvCacheEvent(event_id, Stored(step.parent, blocks), step.dp))
    if isinstance(step, Remove):
        return targets.apply(tree, step.worker, KvCacheEvent(event_id, Removed(tuple(step.hashes)), step.dp))
    if isinstance(step, Clear):
        return targets.apply(tree, step.worker, KvCacheEvent(event_id, Cleared(), step.dp))
    if isinstance(step, (RemoveWorker, ClearAllBlocks)):
        return run_step(tree, step, event_id)
    if isinstance(step, Query):
        return [targets.scores(tree, step.sequence, mode) for mode in query_modes(tree, step)]
    if isinstance(step, Dump):
        return canonical_dump(tree) if targets.has_dump(tree) else None
    raise TypeError(step)


def observations(factory: Callable[[], Any], scenario: Scenario) -> list[Any]:
    """What every step of ``scenario`` shows on a fresh tree of ``factory``."""
    tree = factory()
    try:
        return [observe_step(tree, step, i) for i, step in enumerate(scenario.steps)]
    finally:
        targets.dispose(tree)


def depends_on_rules(scenario: Scenario, reference: Callable[[], Any], under_rules: Callable[[], Any]) -> bool:
    """Whether the reference answers any step of ``scenario`` differently under another rule set."""
    return observations(reference, scenario) != observations(under_rules, scenario)


def run_scenario_against(factory: Callable[[], Any], oracle: Callable[[], Any], scenario: Scenario) -> list[str]:
    """Replay ``scenario`` on the target and on ``oracle``; one line per step whose observations differ.

    Used for a vector whose recorded observation depends on a rule variant: it is then
    judged against the reference under the rule set in force instead.
    """
    got, want = observations(factory, scenario), observations(oracle, scenario)
    return [
        f"step {i} {step}: got {g}, the reference under the rules {w}"
        for i, (step, g, w) in enumerate(zip(scenario.steps, got, want))
        if g != w
    ]


def scenario_ops(scenario: Scenario) -> tuple[list[Any], list[list[list[int]]]]:
    """A scenario as a differential stream: ``(operations, the queries asked after each)``.

    Stores, removals and clears become events, worker removals and clears their calls; each
    query step is asked after the operation before it (every vector starts with an operation).
    Expected outcomes, scores and dumps are dropped: the oracle of the comparison answers
    instead (used where the rule set in force is not exact, ``spec.rules``).
    """
    from .streams import ClearAllBlocksOp, EventOp, RemoveWorkerOp

    ops: list[Any] = []
    queries: list[list[list[int]]] = []
    for i, step in enumerate(scenario.steps):
        if isinstance(step, Query):
            if not queries:
                raise ValueError(f"{scenario.name}: a query before any operation")
            queries[-1].append(list(step.sequence))
            continue
        if isinstance(step, Store):
            blocks = tuple(Block(local, ext) for ext, local in step.blocks)
            ops.append(EventOp(step.worker, KvCacheEvent(i, Stored(step.parent, blocks), step.dp)))
        elif isinstance(step, Remove):
            ops.append(EventOp(step.worker, KvCacheEvent(i, Removed(tuple(step.hashes)), step.dp)))
        elif isinstance(step, Clear):
            ops.append(EventOp(step.worker, KvCacheEvent(i, Cleared(), step.dp)))
        elif isinstance(step, RemoveWorker):
            ops.append(RemoveWorkerOp(step.worker))
        elif isinstance(step, ClearAllBlocks):
            ops.append(ClearAllBlocksOp(step.worker))
        else:  # a dump: the comparison compares the dumps at the end
            continue
        queries.append([])
    return ops, queries

"""Coverage of one compressed edge: full-edge workers, per-worker cutoffs, and their algebra.

A non-root node owns a compressed ``edge``: a non-empty chain of blocks. Which ranks hold
which part of it is recorded in two places:

- ``full_edge_workers``: ranks that hold the whole edge;
- ``worker_cutoffs``: ranks that hold only a prefix. A cutoff ``k`` means the rank holds
  ``edge[0:k]``, with ``0 < k < len(edge)``.

A rank is never in both. A rank in neither holds nothing of this edge.

Worked example (docs/sources.md#crtc-3-5, Dynamo test ``split_moves_cutoffs_at_and_past_the_boundary``)::

    edge      = [b0 b1 b2 b3 b4 b5]          len 6
    full      = {0, 300}                     hold b0..b5
    cutoffs   = {1: 1, 2: 3, 3: 5, 301: 4}   rank 2 holds b0..b2, rank 3 holds b0..b4

``current_cutoff`` reads coverage as one number (``len`` for full ranks, 0 for strangers);
``cover_prefix`` only ever raises it; ``remove_at`` only ever lowers it. ``removal_run``
groups a removal batch into one cut per node and ``stale_hashes`` names the lookup entries
a cut scrubs. Everything in this module is a pure function of frozen data (given pure
accessors), except ``remove_batch``: it states the batch rule by driving the tree's own
removal callback.

Source: docs/sources.md#crtc-2 "Coverage helpers", docs/sources.md#crtc-4-1; docs/sources.md#dynamo-crtc-readme "Node
State", "Removal".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .arith import PY, Arith
from .errors import BlockNotFound
from .primitives import EMPTY_MAP, EMPTY_SET, Block, FrozenMap, FrozenSet, Rank
from .rules import DEFAULT_RULES, RuleSet, Variant


@dataclass(frozen=True, slots=True)
class EdgeState:
    """The edge of one node and who holds how much of it.

    Both holder records are persistent (``primitives.FrozenSet``, ``FrozenMap``): a rank joining,
    leaving or moving its cutoff costs O(log ranks), not a copy of every holder (docs/sources.md#kvproof-crowd).
    """

    edge: tuple[Block, ...]
    full_edge_workers: FrozenSet[Rank] = field(default=EMPTY_SET)
    worker_cutoffs: FrozenMap[Rank, int] = field(default=EMPTY_MAP)

    def __post_init__(self) -> None:
        if not isinstance(self.full_edge_workers, FrozenSet):  # a plain set or frozenset, from a caller or a test
            object.__setattr__(self, "full_edge_workers", FrozenSet(self.full_edge_workers))
        if not isinstance(self.worker_cutoffs, FrozenMap):
            object.__setattr__(self, "worker_cutoffs", FrozenMap(self.worker_cutoffs))

    def __repr__(self) -> str:
        return (
            f"EdgeState(edge={[tuple(b) for b in self.edge]!r}, "
            f"full_edge_workers={set(self.full_edge_workers) or set()!r}, "
            f"worker_cutoffs={dict(self.worker_cutoffs)!r})"
        )


def new_edge(blocks: tuple[Block, ...], rank: Rank) -> EdgeState:
    """Return the state of a freshly inserted node: ``rank`` holds the whole edge.

    Source: docs/sources.md#crtc-3-3 step 3 ("build a new node from remaining with full = {slot}").
    """
    return EdgeState(tuple(blocks), EMPTY_SET.add(rank), EMPTY_MAP)


def current_cutoff(state: EdgeState, rank: Rank) -> int:
    """Return how many leading blocks of the edge ``rank`` holds: ``len`` if full, its cutoff, or 0.

    Source: docs/sources.md#crtc-2 ``current_cutoff``; docs/sources.md#dynamo-crtc-readme "Removal".
    """
    if rank in state.full_edge_workers:
        return len(state.edge)
    return state.worker_cutoffs.get(rank, 0)


def covers(state: EdgeState, rank: Rank, pos: int) -> bool:
    """Check if ``rank`` holds the block at edge position ``pos``.

    Source: docs/sources.md#crtc-2 ``covers_pos``.
    """
    return pos < current_cutoff(state, rank)


def holders(state: EdgeState) -> frozenset[Rank]:
    """Return every rank that holds at least one block of the edge (O(ranks): ``is_held`` asks only whether any does)."""
    return frozenset(state.full_edge_workers) | frozenset(state.worker_cutoffs)


def is_held(state: EdgeState) -> bool:
    """Check if any rank holds a block of the edge (``holders`` is not empty), in O(1)."""
    return bool(state.full_edge_workers) or bool(state.worker_cutoffs)


def promote(state: EdgeState, rank: Rank) -> EdgeState:
    """Return ``state`` with ``rank`` holding the whole edge (its own cutoff, if any, deleted).

    Source: docs/sources.md#crtc-7 ``promote_full``.
    """
    if rank in state.full_edge_workers:
        return state
    return EdgeState(state.edge, state.full_edge_workers.add(rank), state.worker_cutoffs.delete(rank))


def raised_cutoff(current: Any, c: Any, n: Any, ops: Arith = PY) -> Any:
    """Return a rank's cutoff after it is told it holds ``edge[0:c]`` of an ``n``-block edge: it only ever rises.

    ``c`` at or below the current cutoff (``c == 0`` included) changes nothing; ``c >= n``
    makes the rank full (cutoff ``n``); otherwise the cutoff becomes ``c``. The kernel of
    ``cover_prefix``; ``proofs/`` proves it for all integers.

    Source: docs/sources.md#crtc-2 ``cover_prefix``.
    """
    return ops.ite(c <= current, current, ops.ite(c >= n, n, c))


def cover_prefix(state: EdgeState, rank: Rank, c: int) -> EdgeState:
    """Return ``state`` with ``rank`` holding at least ``edge[0:c]``; coverage only ever rises.

    - ``c == 0``: no change.
    - ``c >= len``: the rank becomes full.
    - the rank is full, or already has a cutoff ``>= c``: no change.
    - otherwise its cutoff becomes ``c``.

    Source: docs/sources.md#crtc-2 ``cover_prefix``; docs/sources.md#crtc-13 E36 (re-storing a sub-prefix changes
    nothing).
    """
    assert c >= 0
    current = current_cutoff(state, rank)
    new = raised_cutoff(current, c, len(state.edge))
    return state if new == current else with_cutoff(state, rank, new)


def with_cutoff(state: EdgeState, rank: Rank, k: int) -> EdgeState:
    """Return ``state`` with ``rank`` holding exactly ``edge[0:k]`` (dropped at 0, full at ``len``)."""
    assert 0 <= k <= len(state.edge)
    full = state.full_edge_workers.discard(rank)
    cutoffs = state.worker_cutoffs.delete(rank)
    if k == len(state.edge):
        full = full.add(rank)
    elif k > 0:
        cutoffs = cutoffs.set(rank, k)
    return EdgeState(state.edge, full, cutoffs)


def drop_worker(state: EdgeState, rank: Rank) -> EdgeState:
    """Return ``state`` with ``rank`` holding nothing of the edge.

    Source: docs/sources.md#crtc-4-3 "remove the bit and the cutoff".
    """
    if rank not in state.full_edge_workers and rank not in state.worker_cutoffs:
        return state
    return with_cutoff(state, rank, 0)


def removal_cutoff(old_cutoff: Any, pos: Any, ops: Arith = PY) -> Any:
    """Return the cutoff after removing the block at ``pos`` from a rank holding ``old_cutoff`` blocks.

    The removal cutoff rule: a block at or past the current cutoff is already gone (no-op);
    otherwise the rank keeps exactly the blocks before it. ``proofs/`` proves it never raises
    coverage and is idempotent, for all integers.

    Source: docs/sources.md#dynamo-crtc-readme "Removal"; docs/sources.md#crtc-4-1.
    """
    return ops.ite(pos < old_cutoff, pos, old_cutoff)


def remove_at(state: EdgeState, rank: Rank, pos: int) -> tuple[EdgeState, range]:
    """Remove ``rank``'s block at ``pos``; return the new state and the newly uncovered positions.

    The uncovered range is ``[new_cutoff, old_cutoff)``: the lookup entries a removal must
    scrub (docs/sources.md#crtc-4-1, PR #10836 scrubs only the *newly* uncovered suffix).

    Source: docs/sources.md#dynamo-crtc-readme "Removal"; docs/sources.md#crtc-4-1
    ``remove_worker_for_leading_hashes``.
    """
    old = current_cutoff(state, rank)
    new = removal_cutoff(old, pos)
    if new == old:
        return state, range(old, old)
    return with_cutoff(state, rank, new), range(new, old)


def removal_run(
    hashes: Sequence[int],
    i: int,
    positions: Mapping[int, int],
    cutoff: int,
    same_node: Callable[[int], bool],
) -> tuple[int, int]:
    """Return ``(end, low)``: ``hashes[i:end]`` is removed from one node with one cut at position ``low``.

    ``hashes[i]`` is on the node's edge at ``positions[hashes[i]]`` (the node's edge index); the
    rank holds the edge's first ``cutoff`` blocks (``current_cutoff``), so it covers a position
    ``p`` when ``p < cutoff`` (``covers``). If the rank covers ``hashes[i]``, the run absorbs each following hash that names the same node (``same_node``), is on the
    edge and is covered there, and stops at the first that is not; a hash already in the
    run ends it too (its lookup entry is gone with the first occurrence). The cut is at the
    lowest position of the run, so a batch that lists a chain tail-first uncovers it in one
    step. If the rank does not cover ``hashes[i]``, the run is that hash alone.

    Source: docs/sources.md#crtc-4-1 ``remove_worker_for_leading_hashes`` (grouped removal); docs/dynamo-findings.md
    F3.
    """
    low = positions.get(hashes[i])
    assert low is not None, "the run starts at a hash on the node's edge"
    end = i + 1
    if low < cutoff:
        seen = {hashes[i]}
        position_of = positions.get
        while end < len(hashes) and hashes[end] not in seen and same_node(hashes[end]):
            p = position_of(hashes[end])
            if p is None or p >= cutoff:
                break
            seen.add(hashes[end])
            low = min(low, p)
            end += 1
    return end, low


def stale_hashes(edge: tuple[Block, ...], uncovered: range, removed: int) -> list[int]:
    """Return the hashes whose lookup entries a removal scrubs: the newly uncovered blocks, or the removed hash.

    After a cut, the entries of the blocks in ``uncovered`` (``[new, old)`` cutoff, from
    ``remove_at``) are scrubbed by hash, whichever node they name; a removal that uncovered
    nothing (the block was already gone) scrubs the removed hash alone.

    Source: docs/sources.md#crtc-12 item 4, docs/sources.md#crtc-13 E33; Dynamo PR
    https://github.com/ai-dynamo/dynamo/pull/10836 (only the newly uncovered suffix); docs/dynamo-findings.md F3.
    """
    if uncovered:
        return [block.ext for block in edge[uncovered.start : uncovered.stop]]
    return [removed]


def remove_batch(
    rank: Rank,
    hashes: Sequence[int],
    remove_from: Callable[[int, set[int]], int | None],
    rules: RuleSet = DEFAULT_RULES,
    rank_known: bool = True,
) -> None:
    """Apply a ``removed`` batch: every hash the rank holds is removed first, then the first one it did not hold is reported.

    ``rules``: under ``Variant.REMOVAL_SKIPS_UNKNOWN`` (the concurrent indexer of 1.1.0 to 1.6.1) a hash the
    rank does not hold is skipped and nothing is reported, provided the tree has seen the rank
    (``rank_known``); a rank it has never seen still gets ``BlockNotFound``. The single-threaded tree
    of every release reports.

    ``remove_from(i, scrubbed)`` removes the run that starts at ``hashes[i]`` and returns how
    many hashes it consumed (at least 1), or None when the rank does not hold ``hashes[i]``;
    ``scrubbed`` collects the hashes this batch has scrubbed so far (a hash with no entry
    that is in it was removed by this batch and is skipped silently). After the whole
    batch, the first hash not held raises ``BlockNotFound``: the one non-atomic rejection
    (Dynamo's RadixTree applies the valid hashes of a batch before it fails).

    Source: docs/sources.md#crtc-12 item 4, docs/sources.md#crtc-13 experiments E4 and E39; spec/errors.py.
    """
    scrubbed: set[int] = set()
    missing: int | None = None
    i = 0
    while i < len(hashes):
        consumed = remove_from(i, scrubbed)
        if consumed is None:
            missing = hashes[i] if missing is None else missing
            consumed = 1
        i += consumed
    if missing is not None and not (rules.has(Variant.REMOVAL_SKIPS_UNKNOWN) and rank_known):
        raise BlockNotFound(f"Failed to find block {missing} for {rank}")

"""Prefix matching: the overlap score of every rank along a query of local hashes.

The walk starts at the root's child keyed by the query's first local hash and follows
children while whole edges match. It keeps ``active``, the ranks that hold every node so
far in full:

- on the first node, ``active`` is the node's full set, and each cutoff rank scores
  ``min(cutoff, m)`` where ``m`` is the matched length on the edge;
- on every later node, ``active`` is *always* intersected with the node's full set (an
  older walk that skipped the intersection when sizes matched overcounted); each rank that
  drops out scores the depth so far plus ``min(its cutoff here, m)``;
- the walk stops when ``active`` empties, when an edge matches only partly, or, with
  ``early_exit``, as soon as one rank is left. The survivor is credited the whole node it
  is on, not a per-block depth.

Only ranks scoring at least 1 appear in the result.

Source: docs/sources.md#crtc-5 "find_matches semantics" and "early_exit granularity"; Dynamo test
``slot_walk_matches_hash_set_walk_on_random_coverage``; docs/sources.md#crtc-13 E9.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from .arith import PY, Arith
from .coverage import EdgeState
from .errors import InvalidArgument, InvalidArgumentType
from .primitives import U64_MAX, Rank, integer_of, is_numpy_bool, read_items, show_int


class RootView(Protocol):
    """What the walk reads of the root: its children by first local hash (the root has no edge)."""

    def child(self, local: int) -> NodeView | None: ...


class NodeView(RootView, Protocol):
    """What the walk reads of a node: its edge state and its children by first local hash."""

    def edge_state(self) -> EdgeState: ...


def matched_length(state: EdgeState, query: Sequence[int], pos: int) -> int:
    """Return how many blocks of the edge match ``query[pos:]`` by local hash (at least 1).

    The first block matches by construction: the node was found by ``query[pos]``.
    """
    edge = state.edge
    limit = min(len(edge), len(query) - pos)
    m = 1
    while m < limit and edge[m][0] == query[pos + m]:  # edge[m].local
        m += 1
    return m


def find_matches_walk(root: RootView, query: Sequence[int], early_exit: bool = False) -> dict[Rank, int]:
    """Return ``{rank: score}`` for every rank scoring at least 1 along ``query``.

    Source: docs/sources.md#crtc-5, steps 1-4.
    """
    scores: dict[Rank, int] = {}
    if not query:
        return scores
    node = root.child(query[0])
    active: set[Rank] = set()
    depth = 0
    pos = 0
    first = True
    length = len(query)
    while node is not None and pos < length:
        state = node.edge_state()
        m = matched_length(state, query, pos)
        if first:
            active = set(state.full_edge_workers)
            for rank, k in state.worker_cutoffs.items():
                held = k if k < m else m  # min(cutoff, matched)
                if held > 0:
                    scores[rank] = held
            first = False
        else:
            kept = active & state.full_edge_workers
            if len(kept) != len(active):
                cutoff = state.worker_cutoffs.get
                for rank in active - kept:
                    k = cutoff(rank, 0)
                    scores[rank] = depth + (k if k < m else m)
            active = kept
        if not active:
            break
        depth += m
        if m < len(state.edge):
            break
        pos += m
        if early_exit and len(active) == 1:
            break
        node = node.child(query[pos]) if pos < length else None
    for rank in active:
        scores[rank] = depth
    return scores


def chain_score(lengths: Sequence[Any], matched: Sequence[Any], cutoffs: Sequence[Any], ops: Arith = PY) -> Any:
    """Return one rank's score along a chain of nodes, from its cutoff on each.

    Node ``i`` has an edge of ``lengths[i]`` blocks, of which the query matches
    ``matched[i]`` (the walk reaches node ``i + 1`` only if node ``i`` matched whole), and the
    rank holds ``cutoffs[i]`` of them (``lengths[i]``: full). While the rank holds every node
    so far in full it is credited each node's matched length; on the first node it does not
    hold in full it is credited ``min(cutoff, matched)`` and drops out. This is the per-rank
    statement of ``find_matches_walk`` (a law in ``stateful_tests/tree/laws.py`` checks they agree);
    ``proofs/`` proves it never exceeds what the rank holds along the query.
    """
    score, alive = 0, True
    for n, m, c in zip(lengths, matched, cutoffs):
        full = c == n
        score = score + ops.ite(alive, ops.ite(full, m, ops.min(c, m)), 0)
        alive = ops.all(alive, full, m == n)
    return score


def early_exit_agrees(full: dict[Rank, int], early: dict[Rank, int]) -> bool:
    """Check the early-exit law: same ranks, same scores, except one survivor that may score less.

    With ``early_exit`` the walk stops once a single rank is active and credits it the whole
    node it stands on; every rank that dropped out earlier was scored exactly as in the full
    walk.

    Source: docs/sources.md#crtc-5 "early_exit granularity"; docs/sources.md#crtc-13 E9, E41.
    """
    if set(full) != set(early):
        return False
    differing = [r for r in full if full[r] != early[r]]
    return len(differing) <= 1 and all(1 <= early[r] <= full[r] for r in differing)


@dataclass(slots=True)
class OverlapScores:
    """The result of ``find_matches``: ``scores`` maps ``(worker_id, dp_rank)`` to a score of at least 1.

    ``frequencies`` is the legacy field that Dynamo's current indexers leave empty.

    Source: docs/sources.md#crtc-1 "OverlapScores"; docs/sources.md#dynamo-crtc-readme "Wire Compatibility".
    """

    scores: dict[Rank, int]
    frequencies: list[int] = field(default_factory=list)


BYTES_LIKE = (str, bytes, bytearray, memoryview)


def is_query_container(sequence: object) -> bool:
    """Check if ``sequence`` can be a query: a ``Sequence`` or a one-dimensional array, never text or bytes.

    What ``dynamo._core.RadixTree.find_matches`` takes as its ``Vec<u64>``: lists, tuples,
    ranges, numpy arrays. A ``set`` or ``dict`` (no order) and a generator (no length) are
    refused by the binding and here. The binding also reads ``bytes`` as one hash per byte;
    kvproof refuses any bytes-like query (docs/hostile-input.md H10).
    """
    if isinstance(sequence, BYTES_LIKE):
        return False
    if isinstance(sequence, Sequence):
        return True
    try:  # an object's own attribute lookup may raise anything: then it is no array
        return hasattr(sequence, "__array__") and getattr(sequence, "ndim", None) == 1
    except Exception:
        return False


def check_query(sequence: object) -> list[int]:
    """Return ``sequence`` as a list of u64 local hashes (``is_query_container``, ``integer_of``); a typed error otherwise."""
    if type(sequence) in (list, tuple):  # the common case, checked in bulk: plain ints in range
        plain = cast(list[int], sequence)
        if not plain:
            return []
        if set(map(type, plain)) == {int} and min(plain) >= 0 and max(plain) <= U64_MAX:
            return list(plain)
    if not is_query_container(sequence):
        raise InvalidArgumentType(f"sequence must be a sequence of ints, got {type(sequence).__name__}")
    query = []
    items = read_items(cast(Iterable[object], sequence), "sequence", InvalidArgumentType)  # a Sequence or a 1-d array
    for i, x in enumerate(items):
        value = integer_of(x)
        if value is None:
            raise InvalidArgumentType(f"sequence[{i}] must be an int, got {type(x).__name__}")
        if not 0 <= value <= U64_MAX:
            raise InvalidArgument(f"sequence[{i}] = {show_int(value)} is not a u64")
        query.append(value)
    return query


def check_early_exit(value: object) -> bool:
    """Return ``early_exit`` as a bool; a ``bool`` or ``numpy.bool_`` only, as the binding takes (``InvalidArgumentType``)."""
    if isinstance(value, bool):
        return value
    if is_numpy_bool(value):
        return bool(value)
    raise InvalidArgumentType(f"early_exit must be a bool, got {type(value).__name__}")

"""Property checks of the spec's node rules, for random edges and coverage.

Each ``law_*`` is a Hypothesis test over the pure functions of ``spec.coverage``,
``spec.shape`` and ``spec.match``; its docstring states the law. The gate runs them all
(``kvproof check``, layer ``spec``) and ``tree/tests/test_laws.py`` runs each as a test. The Z3
proofs of the same rules for *all* inputs live in ``proofs/``; these are the sampled,
executable statements of them.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from ...spec.coverage import EdgeState, cover_prefix, current_cutoff, drop_worker, promote, remove_at
from ...spec.invariants import NODE_PREDICATES
from ...spec.match import chain_score, early_exit_agrees, find_matches_walk
from ...spec.primitives import Block, FrozenMap, FrozenSet, Rank
from ...spec.shape import (
    CoverPrefix,
    InsertBelow,
    PassThrough,
    Reuse,
    ReuseAndExtend,
    SplitAndAttach,
    SplitThenInsert,
    extend_leaf,
    plan_descend,
    plan_store_at,
    split_at,
)
from ..harness.seeding import law_settings, run_given

RANKS = [Rank(w, d) for w in (1, 2, 3) for d in (0, 1)]


def law(*strategies: st.SearchStrategy) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Declare a law: its plain body and the strategies of its arguments.

    Each run wraps the body afresh (``fresh``), so settings and a seed can be applied to every
    run; decorating one shared ``@given`` function would allow only a single run per process.
    """

    def declare(body: Callable[..., None]) -> Callable[..., None]:
        body.strategies = strategies  # type: ignore[attr-defined]
        return body

    return declare


def fresh(body: Callable[..., None]) -> Callable[[], None]:
    """Return a new Hypothesis test of a law's body (see ``law``)."""
    return given(*body.strategies)(body)  # type: ignore[attr-defined]


EXAMPLES = {"count": 0}


@st.composite
def edge_states(draw, min_len: int = 1, max_len: int = 8) -> EdgeState:
    """Draw a valid edge: blocks with distinct external hashes, each rank full, cut, or absent."""
    n = draw(st.integers(min_len, max_len))
    locals_ = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    edge = tuple(Block(x, 1000 + i) for i, x in enumerate(locals_))
    full, cutoffs = set(), {}
    for rank in RANKS:
        kind = draw(st.sampled_from(["full", "cut", "none"]))
        if kind == "full":
            full.add(rank)
        elif kind == "cut" and n > 1:
            cutoffs[rank] = draw(st.integers(1, n - 1))
    return EdgeState(edge, FrozenSet(full), FrozenMap(cutoffs))


def valid(state: EdgeState) -> bool:
    return all(p(state) for p in NODE_PREDICATES)


def _count() -> None:
    EXAMPLES["count"] += 1


@law(edge_states(), st.sampled_from(RANKS), st.integers(0, 10))
def law_cover_prefix_only_raises(state: EdgeState, rank: Rank, c: int) -> None:
    """cover_prefix never lowers any rank's coverage, sets the rank to at least min(c, len), and keeps the invariants."""
    _count()
    after = cover_prefix(state, rank, c)
    assert valid(after)
    assert current_cutoff(after, rank) >= current_cutoff(state, rank)
    assert current_cutoff(after, rank) >= min(c, len(state.edge))
    assert all(current_cutoff(after, r) == current_cutoff(state, r) for r in RANKS if r != rank)


@law(edge_states(), st.sampled_from(RANKS), st.data())
def law_removal_never_raises_and_is_idempotent(state: EdgeState, rank: Rank, data) -> None:
    """remove_at lowers the cutoff to the removed position or leaves it, uncovers exactly [new, old), and a repeat changes nothing."""
    _count()
    pos = data.draw(st.integers(0, len(state.edge) - 1))
    old = current_cutoff(state, rank)
    after, uncovered = remove_at(state, rank, pos)
    new = current_cutoff(after, rank)
    assert valid(after)
    assert new == min(old, pos)
    assert uncovered == range(new, old) or (new == old and not uncovered)
    assert remove_at(after, rank, pos)[0] == after
    assert all(current_cutoff(after, r) == current_cutoff(state, r) for r in RANKS if r != rank)


@law(edge_states(min_len=2), st.data())
def law_split_preserves_every_ranks_coverage(state: EdgeState, data) -> None:
    """Splitting at p keeps each rank's covered prefix of the concatenated edge, and both halves keep the invariants."""
    _count()
    p = data.draw(st.integers(1, len(state.edge) - 1))
    prefix, suffix = split_at(state, p)
    assert prefix.edge + suffix.edge == state.edge
    assert valid(prefix) and valid(suffix)
    for rank in RANKS:
        head = current_cutoff(prefix, rank)
        covered = head if head < p else p + current_cutoff(suffix, rank)
        assert covered == current_cutoff(state, rank), (rank, covered, current_cutoff(state, rank))
        # A rank holds the suffix only if it holds the prefix in full (no coverage below a gap).
        assert current_cutoff(suffix, rank) == 0 or head == p


@law(edge_states(), st.sampled_from(RANKS), st.integers(1, 3))
def law_extension_keeps_other_ranks_coverage_of_the_old_edge(state: EdgeState, rank: Rank, n: int) -> None:
    """Leaf extension makes the storing rank full and leaves every other rank exactly the blocks it held."""
    _count()
    tail = tuple(Block(9, 5000 + i) for i in range(n))
    after = extend_leaf(state, rank, tail)
    assert valid(after)
    assert after.full_edge_workers == {rank}
    for r in RANKS:
        if r != rank:
            assert current_cutoff(after, r) == current_cutoff(state, r)


@law(edge_states(), st.sampled_from(RANKS))
def law_promote_and_drop_keep_the_invariants(state: EdgeState, rank: Rank) -> None:
    """promote makes a rank full; drop_worker removes it; both keep every other rank and the invariants."""
    _count()
    up, down = promote(state, rank), drop_worker(state, rank)
    assert valid(up) and valid(down)
    assert current_cutoff(up, rank) == len(state.edge) and current_cutoff(down, rank) == 0
    for r in RANKS:
        if r != rank:
            assert current_cutoff(up, r) == current_cutoff(down, r) == current_cutoff(state, r)


@law(edge_states(min_len=1), st.data())
def law_store_plan_is_consistent(state: EdgeState, data) -> None:
    """plan_store_at picks reuse only for blocks already on the edge, extension only on leaves, and splits strictly inside."""
    _count()
    internal = data.draw(st.booleans())
    pos = data.draw(st.integers(0, len(state.edge) - 1))
    suffix = state.edge[pos + 1 :]
    keep = data.draw(st.integers(0, len(suffix)))
    extra = tuple(Block(data.draw(st.integers(1, 4)), 7000 + i) for i in range(data.draw(st.integers(0, 3))))
    blocks = suffix[:keep] + extra
    if not blocks:
        return
    plan = plan_store_at(state, internal, pos, blocks)
    if isinstance(plan, InsertBelow):
        assert pos == len(state.edge) - 1
    elif isinstance(plan, Reuse):
        assert state.edge[pos + 1 : plan.cutoff] == blocks and plan.cutoff <= len(state.edge)
    elif isinstance(plan, ReuseAndExtend):
        assert not internal and suffix + plan.tail == blocks
    else:
        assert isinstance(plan, SplitThenInsert) and 0 < plan.at < len(state.edge)


@law(edge_states(min_len=1), st.lists(st.integers(1, 4), min_size=1, max_size=8))
def law_descend_plan_matches_by_local_hash(state: EdgeState, more: list[int]) -> None:
    """plan_descend covers, splits or passes exactly as the common local prefix dictates."""
    _count()
    remaining = (Block(state.edge[0].local, 1),) + tuple(Block(x, 2 + i) for i, x in enumerate(more))
    plan = plan_descend(state.edge, remaining)
    m = 0
    while m < min(len(state.edge), len(remaining)) and state.edge[m].local == remaining[m].local:
        m += 1
    if m == len(state.edge):
        assert isinstance(plan, PassThrough)
    elif m == len(remaining):
        assert plan == CoverPrefix(m)
    else:
        assert plan == SplitAndAttach(m)


class _ChainNode:
    """A node of a straight chain, for the match-walk law."""

    def __init__(self, state: EdgeState, child: _ChainNode | None) -> None:
        self.state, self.next = state, child

    def edge_state(self) -> EdgeState:
        return self.state

    def child(self, local: int) -> _ChainNode | None:
        return self.next if self.next is not None and self.next.state.edge[0].local == local else None


class _Root:
    """The chain's root: a ``RootView`` (the walk asks the root for a child, never for an edge)."""

    def __init__(self, first: _ChainNode) -> None:
        self.first = first

    def child(self, local: int) -> _ChainNode | None:
        return self.first if self.first.state.edge[0].local == local else None


def model_score(chain: list[EdgeState], query: list[int], rank: Rank) -> int:
    """Score one rank with the spec's per-rank kernel ``chain_score`` over the nodes the query reaches."""
    lengths, matched, cutoffs, pos = [], [], [], 0
    for state in chain:
        if pos >= len(query) or state.edge[0].local != query[pos]:
            break
        m = 1
        while m < min(len(state.edge), len(query) - pos) and state.edge[m].local == query[pos + m]:
            m += 1
        lengths.append(len(state.edge))
        matched.append(m)
        cutoffs.append(current_cutoff(state, rank))
        if m < len(state.edge):
            break
        pos += m
    return chain_score(lengths, matched, cutoffs)


@law(st.lists(edge_states(min_len=1, max_len=4), min_size=1, max_size=5), st.data())
def law_match_walk_equals_the_per_rank_model(chain: list[EdgeState], data) -> None:
    """The match walk equals the per-rank kernel ``chain_score`` (always intersecting), and early exit differs only for one survivor."""
    _count()
    path = [b.local for s in chain for b in s.edge]
    n = data.draw(st.integers(1, len(path)))
    query = path[:n]
    if data.draw(st.booleans()):
        query[data.draw(st.integers(0, n - 1))] = 9  # a wrong block somewhere
    # Link the chain (coverage is arbitrary: not prefix-closed, equal sizes allowed, as in Dynamo test 41).
    node: _ChainNode | None = None
    for state in reversed(chain):
        node = _ChainNode(state, node)
    assert node is not None, "the chain strategy draws at least one edge"
    root = _Root(node)
    full = find_matches_walk(root, query, False)
    expected = {r: model_score(chain, query, r) for r in RANKS}
    assert full == {r: s for r, s in expected.items() if s >= 1}, (full, expected)
    assert early_exit_agrees(full, find_matches_walk(root, query, True))


LAWS: list[Callable[..., None]] = [
    law_cover_prefix_only_raises,
    law_removal_never_raises_and_is_idempotent,
    law_split_preserves_every_ranks_coverage,
    law_extension_keeps_other_ranks_coverage_of_the_old_edge,
    law_promote_and_drop_keep_the_invariants,
    law_store_plan_is_consistent,
    law_descend_plan_matches_by_local_hash,
    law_match_walk_equals_the_per_rank_model,
]


def run_law(law: Callable[..., None], examples: int, seed: int | None = None) -> int:
    """Run one law for ``examples`` examples; return how many ran. Raises on a counterexample."""
    before = EXAMPLES["count"]
    run_given(fresh(law), law_settings(examples), seed)
    return EXAMPLES["count"] - before

"""The abstract contract of the index, stated without reference to tree shape.

For every rank the contract keeps two sets of external block hashes:

- **held**: every block the rank stored and has not removed since, with the parent it was
  stored under;
- **reachable**: the held blocks whose chain from the root was stored through reachable
  parents and has not been cut since. It is prefix-closed: a reachable block's parent is
  reachable (or the block hangs from the root).

Along a query (a chain of external hashes, one per position) the *held score* is the
longest prefix whose blocks are all held, the *reachable score* the longest prefix whose
blocks are all reachable. The laws every index must obey:

1. **No overcount**: a rank's score never exceeds its held score.
2. **No unexplained undercount**: a rank's score (without ``early_exit``) is at least its
   reachable score.
3. Hence **exactness without holes**: where held and reachable agree along the query, the
   score equals both.
4. A store under a reachable parent (or from the root) is accepted; a store under a parent
   the rank does not hold is rejected; anything in between may go either way.
5. A removal naming only reachable blocks is accepted.

**The hole undercount.** A *hole* is a held block that is not reachable: its chain was cut
by an earlier removal and only part of it was stored again. Compression lets a removal
shorten one rank's cutoff on one node without touching that rank's coverage below it, and
a later re-store raises coverage only up to the blocks it names. The index may therefore
score a rank anywhere between the reachable and the held score. This is accepted because
the score is advisory (a router's hint about cached prefixes), an undercount only costs a
less-than-ideal routing choice, and repairing it would mean re-validating descendants on
every eviction: exactly the cost the compressed tree exists to avoid (docs/sources.md#crtc-4-2, the
``TODO(CORRECTNESS)`` in ``remove.rs``). An overcount, by contrast, would route a request
to a worker that must recompute what the router promised was cached, and is never allowed.

Source: docs/sources.md#crtc-10 "Differential harness", docs/sources.md#crtc-14 "Oracle";
docs/sources.md#dynamo-crtc-readme "Concurrency Model" ("must not ... return a match past a valid reachable prefix").
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .events import Cleared, EventData, Removed, Stored
from .primitives import EMPTY_MAP, FrozenMap, Rank
from .rules import DEFAULT_RULES, RuleSet, Variant


@dataclass(frozen=True, slots=True)
class RankHoldings:
    """What one rank holds: ``held`` maps each block to its parent (None: the root)."""

    held: FrozenMap[int, int | None] = field(default=EMPTY_MAP)
    reachable: frozenset[int] = frozenset()


ContractState = FrozenMap[Rank, RankHoldings]
EMPTY_CONTRACT: ContractState = EMPTY_MAP


class Verdict(enum.Enum):
    """What the contract demands of an index given an event."""

    MUST_APPLY = "must apply"
    MAY_REJECT = "may reject"
    MUST_REJECT = "must reject"


def holdings(state: ContractState, rank: Rank) -> RankHoldings:
    """Return what ``rank`` holds (nothing if unknown)."""
    return state.get(rank, RankHoldings())


def is_reachable_parent(h: RankHoldings, parent: int | None) -> bool:
    """Check if a store under ``parent`` continues a reachable chain (the root always does)."""
    return parent is None or parent in h.reachable


def store_verdict(state: ContractState, rank: Rank, stored: Stored) -> Verdict:
    """Return whether an index must apply, may reject, or must reject ``stored`` for ``rank``.

    Source: docs/sources.md#crtc-10 "Stored ... Apply iff the parent is reachable; otherwise MayReject";
    docs/sources.md#crtc-13 E2/E16 (a parent the rank does not hold is always rejected).
    """
    h = holdings(state, rank)
    if is_reachable_parent(h, stored.parent_hash):
        return Verdict.MUST_APPLY
    if stored.parent_hash not in h.held:
        return Verdict.MUST_REJECT
    return Verdict.MAY_REJECT


def remove_verdict(state: ContractState, rank: Rank, removed: Removed) -> Verdict:
    """Return ``MUST_APPLY`` if every named block is reachable, else ``MAY_REJECT``.

    A rejected removal still applies its valid hashes (E4, E39), so the contract state
    changes the same way whatever the index answers.
    """
    h = holdings(state, rank)
    if all(x in h.reachable for x in removed.block_hashes):
        return Verdict.MUST_APPLY
    return Verdict.MAY_REJECT


def prefix_closed(held: Mapping[int, int | None], candidates: Iterable[int]) -> frozenset[int]:
    """Return the largest subset of ``candidates`` whose every member's parent chain stays inside it."""
    pool = set(candidates)
    verdict: dict[int, bool] = {}

    def ok(x: int) -> bool:
        chain = []
        while x not in verdict:
            if x not in pool:
                verdict[x] = False
                break
            chain.append(x)
            parent = held.get(x)
            if parent is None:
                verdict[x] = True
                break
            if parent in chain:  # a cycle cannot reach the root
                verdict[x] = False
                break
            x = parent
        result = verdict[x]
        for y in chain:
            verdict[y] = result
        return result

    return frozenset(x for x in pool if ok(x))


def on_stored(state: ContractState, rank: Rank, stored: Stored, accepted: bool) -> ContractState:
    """Return the contract state after ``rank`` stored ``stored`` (``accepted``: the index took it).

    An accepted store adds every block to ``held``; the blocks are reachable iff the parent
    is reachable. A rejected store changes nothing.
    """
    if not accepted or not stored.blocks:
        return state
    h = holdings(state, rank)
    held = dict(h.held)
    parent = stored.parent_hash
    reachable_chain = is_reachable_parent(h, parent)
    reachable = set(h.reachable)
    for block in stored.blocks:
        held[block.ext] = parent
        if reachable_chain:
            reachable.add(block.ext)
        parent = block.ext
    return state.set(rank, RankHoldings(FrozenMap(held), frozenset(reachable)))


def on_removed(state: ContractState, rank: Rank, removed: Removed) -> ContractState:
    """Return the contract state after ``rank`` evicted ``removed``: the blocks leave ``held``
    and ``reachable``, and reachable blocks whose chain is now broken are pruned."""
    h = holdings(state, rank)
    gone = set(removed.block_hashes)
    if not gone & set(h.held):
        return state
    held = {x: p for x, p in h.held.items() if x not in gone}
    reachable = prefix_closed(held, h.reachable - gone)
    return state.set(rank, RankHoldings(FrozenMap(held), reachable))


def on_cleared(state: ContractState, rank: Rank, rules: RuleSet = DEFAULT_RULES) -> ContractState:
    """Return the contract state after a ``cleared`` event from ``rank``: the ranks of ``cleared_ranks`` dropped everything."""
    return on_remove_worker(state, rank.worker_id) if clears_whole_worker(rules) else state.delete(rank)


def clears_whole_worker(rules: RuleSet = DEFAULT_RULES) -> bool:
    """Check if a ``cleared`` event from ``(worker, dp_rank)`` empties every rank of the worker, not that rank alone.

    It empties the one rank from 1.4.0 on; under ``Variant.CLEARED_CLEARS_WORKER`` (0.6.1 to 1.3.1) the
    whole worker. What the event *means* changes, so the contract follows the same rule as the tree.

    Source: spec/rules.py (``Variant.CLEARED_CLEARS_WORKER``); docs/releases.md.
    """
    return rules.has(Variant.CLEARED_CLEARS_WORKER)


def cleared_ranks(rank: Rank, worker_ranks: Sequence[Rank], rules: RuleSet = DEFAULT_RULES) -> list[Rank]:
    """Return the ranks a ``cleared`` event from ``rank`` empties in a tree that knows ``worker_ranks`` of its worker.

    The rank itself; or, where the event clears the whole worker (``clears_whole_worker``), every rank
    of the worker the tree knows (the sender alone when it knows none).

    >>> from kvproof.spec.contract import cleared_ranks
    >>> from kvproof.spec.primitives import Rank
    >>> from kvproof.spec.rules import RULE_SETS
    >>> known = [Rank(1, 0), Rank(1, 1)]
    >>> cleared_ranks(Rank(1, 1), known), cleared_ranks(Rank(1, 1), known, RULE_SETS["dynamo-1.3"])
    ([(1, 1)], [(1, 0), (1, 1)])
    """
    if clears_whole_worker(rules):
        return list(worker_ranks) or [rank]
    return [rank]


def on_remove_worker_dp_rank(state: ContractState, rank: Rank) -> ContractState:
    """Return the contract state after ``remove_worker_dp_rank`` dropped the one ``rank``; the worker's
    other ranks keep what they hold (docs/sources.md#crtc-1, the binding's ``remove_worker_dp_rank``)."""
    return state.delete(rank)


def on_remove_worker(state: ContractState, worker_id: int) -> ContractState:
    """Return the contract state after every rank of ``worker_id`` was dropped."""
    return FrozenMap({r: h for r, h in state.items() if r.worker_id != worker_id})


def on_event(state: ContractState, rank: Rank, data: EventData, accepted: bool, rules: RuleSet = DEFAULT_RULES) -> ContractState:
    """Dispatch one event to its handler (``rules``: see ``on_cleared``)."""
    if isinstance(data, Stored):
        return on_stored(state, rank, data, accepted)
    if isinstance(data, Removed):
        return on_removed(state, rank, data)
    if isinstance(data, Cleared):
        return on_cleared(state, rank, rules)
    raise TypeError(f"not an event: {data!r}")


def longest_prefix_in(chain: Iterable[int], blocks: frozenset[int] | Mapping[int, object]) -> int:
    """Return the length of the longest prefix of ``chain`` whose blocks are all in ``blocks``."""
    n = 0
    for x in chain:
        if x not in blocks:
            break
        n += 1
    return n


def held_score(state: ContractState, rank: Rank, chain: Sequence[int]) -> int:
    """Return the longest prefix of ``chain`` that ``rank`` holds."""
    return longest_prefix_in(chain, holdings(state, rank).held)


def reachable_score(state: ContractState, rank: Rank, chain: Sequence[int]) -> int:
    """Return the longest prefix of ``chain`` that is reachable for ``rank``."""
    return longest_prefix_in(chain, holdings(state, rank).reachable)


class ScoreVerdict(enum.Enum):
    """How one observed score relates to the contract."""

    EXACT = "exact"
    HOLE_UNDERCOUNT = "hole undercount (allowed)"
    OVERCOUNT = "overcount"
    UNEXPLAINED_UNDERCOUNT = "unexplained undercount"


def score_verdict(got: int, held: int, reachable: int) -> ScoreVerdict:
    """Classify an observed score against the held and reachable scores.

    Source: docs/sources.md#crtc-10 "Verdict" table.
    """
    if got > held:
        return ScoreVerdict.OVERCOUNT
    if got < reachable:
        return ScoreVerdict.UNEXPLAINED_UNDERCOUNT
    if got < held:
        return ScoreVerdict.HOLE_UNDERCOUNT
    return ScoreVerdict.EXACT


def has_holes(state: ContractState, rank: Rank) -> bool:
    """Check if ``rank`` holds a block that is not reachable."""
    h = holdings(state, rank)
    return len(h.held) != len(h.reachable)


def index_verdict(state: ContractState, index: Mapping[Rank, frozenset[int]]) -> list[str]:
    """Return every way an index's abstract state breaks the contract (empty: it holds).

    ``index`` maps each rank to the blocks a query can credit it with (``snapshot()`` of a
    tree). It must lie between the reachable and the held set of every rank.
    """
    problems = []
    for rank in set(index) | set(state):
        got = index.get(rank, frozenset())
        h = holdings(state, rank)
        over = got - set(h.held)
        if over:
            problems.append(f"{rank}: indexed blocks it does not hold: {sorted(over)}")
        missing = h.reachable - got
        if missing:
            problems.append(f"{rank}: reachable blocks not indexed: {sorted(missing)}")
    return problems

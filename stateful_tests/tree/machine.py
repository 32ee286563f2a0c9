"""A Hypothesis state machine that holds any radix tree to the spec's abstract contract.

``TreeContractMachine`` drives a tree (the reference by default; any target through
``contract_machine_for``) with stores, removals, clears and worker removals drawn from
small universes, and after every step checks:

- the tree's own ``check()`` (every structural invariant), when it has one;
- ``snapshot()`` against the contract (every rank's indexed blocks lie between its
  reachable and its held blocks), when the tree has one;
- every query over every path stored so far: no rank scores past what it holds (no
  overcount), none below its reachable chain (no unexplained undercount), ``early_exit``
  differs only in one survivor's score, and the scores agree with the snapshot;
- acceptance: a store under a reachable parent is accepted, one under a parent the rank
  does not hold is rejected, a removal of reachable blocks is accepted.

The universes are tiny (three local hashes, four ranks over three workers, paths of at
most six blocks) so that splits, cutoffs, demotions, holes and sticky internal nodes
happen in most runs; ``phenomena`` counts them (see ``tree/tests/test_machine.py``).

Source: spec/contract.py; docs/sources.md#crtc-10 "Differential harness", docs/sources.md#crtc-14 "Oracle";
docs/sources.md#aesthetics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ...spec import contract
from ...spec.events import Cleared, KvCacheEvent, Removed, Stored
from ...spec.match import early_exit_agrees
from ...spec.primitives import Block, Rank
from ...spec.rules import DEFAULT_RULES, RuleSet
from ..harness import targets
from ..harness.paths import ext, held_prefix
from ..harness.surface import LeftOut, lacks

LOCALS = st.integers(1, 3)
RANKS = st.sampled_from([Rank(1, 0), Rank(1, 1), Rank(2, 0), Rank(3, 0)])
MAX_DEPTH = 6

PHENOMENA = (
    "splits",
    "cutoffs",
    "cutoffs_set",
    "demotions",
    "holes",
    "sticky_internal",
    "sticky_refusals",
    "children_cleared",
    "rejected",
)


def _by_rank(scores: dict[tuple[int, int], int]) -> dict[Rank, int]:
    """``targets.scores`` keys plain ``(worker_id, dp_rank)`` tuples; the spec's laws take ``Rank`` keys (equal, same hash)."""
    return {Rank(*rank): score for rank, score in scores.items()}


class TreeContractMachine(RuleBasedStateMachine):
    """Drive ``factory()`` against ``spec.contract`` (see the module docstring)."""

    factory: ClassVar[Callable[[], Any]]
    runs: ClassVar[list[Counter]]
    left_out: ClassVar[LeftOut] = LeftOut()  # early_exit queries the target's surface lacks (harness.surface)
    contract_rules: ClassVar[RuleSet] = DEFAULT_RULES  # the rule set whose contract judges (spec.contract.on_cleared)

    def __init__(self) -> None:
        super().__init__()
        self.tree = type(self).factory()
        self.state: contract.ContractState = contract.EMPTY_CONTRACT
        self.path_of: dict[int, tuple[int, ...]] = {}
        self.stored: set[tuple[int, ...]] = set()
        self.seen: Counter[str] = Counter()
        self.after_start: Counter[str] = Counter()
        self.event_id = 0
        self.checked = 0  # score verdicts checked (the gate's "checks" column)

    # ------------------------------------------------------------------ helpers

    def _held_paths(self, rank: Rank) -> list[tuple[int, ...]]:
        return sorted(self.path_of[x] for x in contract.holdings(self.state, rank).held)

    def _send(self, rank: Rank, data) -> str:
        self.event_id += 1
        return targets.apply(self.tree, rank.worker_id, KvCacheEvent(self.event_id, data, rank.dp_rank))

    def _evict(self, rank: Rank, blocks: list[int]) -> None:
        removed = Removed(tuple(blocks))
        verdict = contract.remove_verdict(self.state, rank, removed)
        outcome = self._send(rank, removed)
        if verdict is contract.Verdict.MUST_APPLY:
            assert outcome == targets.OK, f"{rank} {removed!r} must be accepted (blocks reachable), got {outcome}"
        self.state = contract.on_removed(self.state, rank, removed)

    def _store(self, rank: Rank, path: tuple[int, ...], cut: int) -> None:
        for i in range(len(path)):
            self.path_of[ext(path[: i + 1])] = path[: i + 1]
        stored = Stored(
            ext(path[:cut]) if cut else None,
            tuple(Block(path[i], ext(path[: i + 1])) for i in range(cut, len(path))),
        )
        verdict = contract.store_verdict(self.state, rank, stored)
        outcome = self._send(rank, stored)
        if verdict is contract.Verdict.MUST_APPLY:
            assert outcome == targets.OK, f"{rank} {stored!r} must be accepted (parent reachable), got {outcome}"
        if verdict is contract.Verdict.MUST_REJECT:
            assert outcome != targets.OK, f"{rank} {stored!r} must be rejected (parent not held)"
        accepted = outcome == targets.OK
        if not accepted:
            self.seen["rejected"] += 1
        self.state = contract.on_stored(self.state, rank, stored, accepted)
        if accepted:
            self.stored.add(path)

    # ------------------------------------------------------------------ rules

    @initialize(
        base=st.lists(LOCALS, min_size=3, max_size=5).map(tuple),
        ranks=st.permutations([Rank(1, 0), Rank(1, 1), Rank(2, 0), Rank(3, 0)]),
        tails=st.lists(st.lists(LOCALS, min_size=1, max_size=2).map(tuple), min_size=3, max_size=3),
        data=st.data(),
    )
    def warm_start(self, base: tuple[int, ...], ranks: list[Rank], tails: list[tuple[int, ...]], data: st.DataObject) -> None:
        """Plant every interesting shape, with drawn hashes, before the free-running rules take over.

        Two ranks share a leaf and one extends it (a demotion); a third branches inside the
        shared edge (a split); one evicts a block mid-chain (a cutoff and a hole); every holder
        evicts one block of the shared prefix (its children are cleared and it stays internal:
        the sticky case); then one rank refills that prefix and stores below it, which must add
        a child rather than extend (a sticky refusal). Each step is drawn, so the shapes differ
        run to run.
        """
        a, b, c = ranks[:3]
        leaf = base + tails[0]
        self._store(a, leaf, 0)
        self._store(b, leaf, 0)
        self._store(a, leaf + tails[1], len(leaf))
        self._check_now()
        at = data.draw(st.integers(2, len(base) - 1), label="branch_at")
        other = data.draw(st.sampled_from([x for x in (1, 2, 3) if x != base[at]]), label="branch_local")
        self._store(c, base[:at] + (other,) + tails[2], 0)
        self._check_now()
        mid = data.draw(st.integers(1, len(leaf) - 1), label="evict_at")
        self._evict(b, [ext(leaf[: mid + 1])])
        self._check_now()
        # Evicted at position 1 or later, so the holders keep a cutoff: the node stays alive (a node
        # nobody holds would be released on the next store, not refused).
        shared = ext(base[: data.draw(st.integers(2, at), label="shared_depth")])
        for rank in sorted(r for r, h in self.state.items() if shared in h.held):
            self._evict(rank, [shared])
        self._check_now()
        # Refill the evicted prefix and store below it: the node is internal and childless now,
        # so the store must add a child instead of extending it (a sticky refusal).
        self._store(a, base[:at], 0)
        self._store(a, base[:at] + (other,) + tails[1], at)
        self._check_now()
        self.seen_at_start = self._phenomena()

    @rule(rank=RANKS, path=st.lists(LOCALS, min_size=1, max_size=MAX_DEPTH).map(tuple), data=st.data())
    def store_anywhere(self, rank: Rank, path: tuple[int, ...], data: st.DataObject) -> None:
        """Store the tail of any path: exercises rejected parents and fresh prefixes."""
        cut = data.draw(st.integers(0, len(path) - 1), label="cut")
        self._store(rank, path, cut)

    def _holder(self, data: st.DataObject) -> Rank:
        return data.draw(st.sampled_from(sorted(r for r, h in self.state.items() if h.held)), label="rank")

    @precondition(lambda self: any(h.held for h in self.state.values()))
    @rule(tail=st.lists(LOCALS, min_size=1, max_size=3).map(tuple), data=st.data())
    def store_below_held(self, tail: tuple[int, ...], data: st.DataObject) -> None:
        """Continue one of the rank's held blocks: decode extension, suffix reuse, splits."""
        rank = self._holder(data)
        held = self._held_paths(rank)
        if not held:
            return
        # Mostly continue a chain's end (decode extension); sometimes branch from inside it.
        ends = [p for p in held if not any(q[: len(p)] == p and len(q) > len(p) for q in held)]
        base = data.draw(st.sampled_from(ends if data.draw(st.integers(0, 3), label="end") else held), label="parent")
        path = (base + tail)[:MAX_DEPTH]
        if len(path) > len(base):
            self._store(rank, path, len(base))

    @precondition(lambda self: bool(self.state))
    @rule(rank=RANKS, data=st.data())
    def restore_known_path(self, rank: Rank, data: st.DataObject) -> None:
        """Store (part of) a path some rank stored before: shared prefixes, duplicates, refills of holes."""
        path = data.draw(st.sampled_from(sorted(self.stored)), label="path")
        cut = data.draw(st.integers(0, len(path) - 1), label="cut")
        stop = data.draw(st.integers(cut + 1, len(path)), label="stop")
        self._store(rank, path[:stop], cut)

    @precondition(lambda self: any(h.held for h in self.state.values()))
    @rule(data=st.data(), stranger=st.booleans())
    def remove(self, data: st.DataObject, stranger: bool) -> None:
        """Evict held blocks in any order, sometimes naming a block the rank does not hold."""
        rank = self._holder(data)
        held = sorted(contract.holdings(self.state, rank).held)
        if not held:
            return
        chosen = data.draw(st.lists(st.sampled_from(held), min_size=1, max_size=4, unique=True), label="blocks")
        chosen = list(data.draw(st.permutations(chosen), label="order"))
        if stranger:
            others = sorted(set(self.path_of) - set(held))
            if others:
                chosen.append(data.draw(st.sampled_from(others), label="stranger"))
        self._evict(rank, chosen)

    @precondition(lambda self: any(h.held for h in self.state.values()))
    @rule(data=st.data())
    def remove_run(self, data: st.DataObject) -> None:
        """Evict a contiguous run of a held chain (a tail, a head, or one block mid-chain), in any order."""
        rank = self._holder(data)
        paths = [p for p in sorted(self.stored) if ext(p[:1]) in contract.holdings(self.state, rank).held]
        if not paths:
            return
        path = data.draw(st.sampled_from(paths), label="path")
        held = contract.holdings(self.state, rank).held
        n = held_prefix(path, held)
        start = data.draw(st.integers(0, n - 1), label="start")
        stop = data.draw(st.integers(start + 1, n), label="stop")
        run = [ext(path[: i + 1]) for i in range(start, stop)]
        self._evict(rank, list(data.draw(st.permutations(run), label="order")))

    @precondition(lambda self: bool(self.stored))
    @rule(data=st.data())
    def evict_everywhere(self, data: st.DataObject) -> None:
        """Every rank holding one block of a stored chain evicts it (cluster-wide memory pressure).

        This is what strips a shared node of its last full holder, clears its children and leaves
        it internal but childless: the sticky case.
        """
        path = data.draw(st.sampled_from(sorted(self.stored)), label="path")
        block = ext(path[: data.draw(st.integers(1, len(path)), label="depth")])
        for rank in sorted(r for r, h in self.state.items() if block in h.held):
            self._evict(rank, [block])

    @rule(rank=RANKS, how=st.sampled_from(["cleared", "remove_worker", "clear_all_blocks"]))
    def worker_churn(self, rank: Rank, how: str) -> None:
        """Drop a rank (``cleared`` event) or a whole worker (``remove_worker``, ``clear_all_blocks``)."""
        if how == "cleared":
            outcome = self._send(rank, Cleared())
            assert outcome == targets.OK, f"cleared for {rank} must be accepted, got {outcome}"
            self.state = contract.on_cleared(self.state, rank, self.contract_rules)
        else:
            getattr(self.tree, how)(rank.worker_id)
            self.state = contract.on_remove_worker(self.state, rank.worker_id)

    @precondition(lambda self: callable(getattr(self.tree, "remove_worker_dp_rank", None)))
    @rule(rank=RANKS)
    def remove_one_rank(self, rank: Rank) -> None:
        """Drop one rank (``remove_worker_dp_rank``), where the target has it: the worker's other ranks keep theirs.

        Dynamo 1.6.1's binding has no such method, so against it the rule never runs.
        """
        self.tree.remove_worker_dp_rank(rank.worker_id, rank.dp_rank)
        self.state = contract.on_remove_worker_dp_rank(self.state, rank)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def structure_holds(self) -> None:
        check = getattr(self.tree, "check", None)
        if check is not None:
            check()

    @invariant()
    def snapshot_within_contract(self) -> None:
        snapshot = getattr(self.tree, "snapshot", None)
        if snapshot is None:
            return
        problems = contract.index_verdict(self.state, snapshot())
        assert not problems, "snapshot breaks the contract:\n  " + "\n  ".join(problems)

    @invariant()
    def scores_within_contract(self) -> None:
        snapshot = self.tree.snapshot() if hasattr(self.tree, "snapshot") else None
        queries = {p[:n] for p in self.stored for n in range(1, len(p) + 1)}
        queries |= {p + (4,) for p in self.stored}
        ordered = sorted(queries)
        no_early_exit = lacks(self.tree, "early_exit")
        for query, full in zip(ordered, targets.scores_many(self.tree, [list(q) for q in ordered])):
            chain = [ext(query[: i + 1]) for i in range(len(query))]
            if no_early_exit is None:
                early = targets.scores(self.tree, list(query), True)
                assert early_exit_agrees(_by_rank(full), _by_rank(early)), f"early_exit law broken on {query}: {full} vs {early}"
            else:
                type(self).left_out.add("early_exit", no_early_exit)
            for rank in set(full) | set(self.state):
                rank = Rank(*rank)
                got = full.get(rank, 0)
                held = contract.held_score(self.state, rank, chain)
                reachable = contract.reachable_score(self.state, rank, chain)
                verdict = contract.score_verdict(got, held, reachable)
                self.checked += 1
                assert verdict in (contract.ScoreVerdict.EXACT, contract.ScoreVerdict.HOLE_UNDERCOUNT), (
                    f"{verdict.value}: {rank} scores {got} on {list(query)} (held prefix {held}, reachable prefix {reachable})"
                )
                if snapshot is not None:
                    indexed = contract.longest_prefix_in(chain, snapshot.get(rank, frozenset()))
                    assert got == indexed, f"{rank} scores {got} on {list(query)} but its snapshot credits {indexed}"

    def _phenomena(self) -> Counter:
        """Return the current counts of each phenomenon (cumulative statistics and present shapes)."""
        seen: Counter = Counter(rejected=self.seen["rejected"])
        seen["holes"] = sum(contract.has_holes(self.state, r) for r in self.state)
        stats = getattr(self.tree, "statistics", None)
        if stats is not None:
            s = stats()
            for name in ("splits", "cutoffs_set", "demotions", "children_cleared", "sticky_refusals"):
                seen[name] = getattr(s, name)
        for gauge, name in (("sticky_internal_nodes", "sticky_internal"), ("cutoff_nodes", "cutoffs")):
            read = getattr(self.tree, gauge, None)
            if read is not None:
                seen[name] = read()
        return seen

    def _check_now(self) -> None:
        """Run every invariant now (Hypothesis checks invariants only after the warm start has finished)."""
        self.structure_holds()
        self.snapshot_within_contract()
        self.scores_within_contract()
        self._observe()

    def _observe(self) -> None:
        """Fold the current phenomena into the run's record (whole run, and rules-only after the warm start)."""
        now = self._phenomena()
        start = getattr(self, "seen_at_start", None)
        for name, value in now.items():
            if name != "rejected":
                self.seen[name] = max(self.seen[name], value)
            if start is not None and value > start.get(name, 0):
                self.after_start[name] = 1

    @invariant()
    def count_phenomena(self) -> None:
        self._observe()

    def teardown(self) -> None:
        targets.dispose(self.tree)
        runs = getattr(type(self), "runs", None)
        if runs is not None:
            runs.append(Counter({k: v for k, v in self.seen.items() if v}) + Counter(_checks=self.checked))
        rule_runs = getattr(type(self), "rule_runs", None)
        if rule_runs is not None:
            rule_runs.append(Counter(self.after_start))
        for name in PHENOMENA:
            if self.seen[name]:
                event(f"phenomenon: {name}")


def contract_machine_for(
    factory: Callable[[], Any], name: str | None = None, rules: RuleSet = DEFAULT_RULES
) -> type[TreeContractMachine]:
    """Return a ``TreeContractMachine`` subclass that drives trees made by ``factory``.

    ``rules``: the rule set in force; the contract follows it where a variant changes what an event
    means (``spec.contract.on_cleared``).
    """
    cls_name = name or f"ContractMachine_{getattr(factory, '__name__', 'tree')}"
    return type(
        cls_name,
        (TreeContractMachine,),
        {"factory": staticmethod(factory), "runs": [], "rule_runs": [], "contract_rules": rules, "left_out": LeftOut()},
    )

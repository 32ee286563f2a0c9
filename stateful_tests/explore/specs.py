"""The sequential specifications the linearizability checker holds histories to: the reference layers.

- ``TreeSpec``: ``reference.RadixTree``. Writes (``event``, ``remove_worker``,
  ``clear_all_blocks``, ``remove_worker_dp_rank``, ``batch``) are exact. ``find_matches`` is
  judged by the contract's bound: never above what the rank would score in some state that
  existed while the read ran (per rank, so different ranks may be judged at different states),
  and exact when no write overlapped it. ``snapshot`` (the credited index, read at quiescence)
  is exact. The history partitions by worker: a rank's outcomes and scores depend only on its
  own events (spec/contract.py), so each worker's calls are checked alone, reads projected
  onto that worker's ranks.
- ``TrackerSpec``: ``reference.sequences.SlotTracker``. Writes (``add_request``, ``free``,
  ``mark_prefill_completed``, ``force_expiry``) are exact; each slot's row of ``loads`` is the
  row of one state the read overlapped (each slot's load is one snapshot, never torn, but two
  slots may come from different moments); ``potential_loads`` may also pair one moment's load
  with another moment's overlap depth ([Relaxed: torn read], impl/slot_tracker.py), so each
  field of a row is judged alone. Both read the eventually consistent registry: a slot's row may
  miss writes still in flight, but never one that changed the slot and returned before the read
  began (a write publishes before it returns, in mutation order); ``snapshot`` and ``registry`` (at quiescence) are exact.
  It does not partition: a request's outcomes depend on its slot's whole load.

A state is the reference object together with the tuple of writes applied to it (the memo
key: sound, because equal sequences give equal states).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Hashable, Sequence
from typing import Any, cast

from ...reference import RadixTree
from ...reference.sequences import SlotTracker
from ...spec import slot_tracker
from ...spec.errors import KvCacheEventError, Poisoned
from ...spec.events import KvCacheEvent, Removed, Stored
from ...spec.sequence_errors import SequenceError
from ...spec.token_load import active_prefill_tokens
from .history import Call, outcome
from .linearizability import Seen


def scores_of(result: Any) -> tuple[tuple[Any, int], ...]:
    """Normalize ``OverlapScores`` to sorted ``(rank, score)`` pairs."""
    return tuple(sorted(result.scores.items()))


def index_of(snapshot: dict) -> tuple:
    return tuple(sorted((rank, tuple(sorted(blocks))) for rank, blocks in snapshot.items()))


TREE_ERRORS: tuple[type[BaseException], ...] = (KvCacheEventError, Poisoned)
TRACKER_ERRORS: tuple[type[BaseException], ...] = (SequenceError, Poisoned)


class _Spec:
    """What both specs share: states are (reference, applied writes)."""

    typed: tuple[type[BaseException], ...] = ()

    def fresh(self) -> Any:
        raise NotImplementedError

    def initial(self) -> Any:
        return (self.fresh(), ())

    def fingerprint(self, state: Any) -> Hashable:
        return state[1]

    def copy_of(self, subject: Any) -> Any:
        """A copy of a state's reference object that the write tried next cannot reach back through."""
        return copy.deepcopy(subject)

    def apply(self, state: Any, call: Call) -> tuple[Any, Hashable]:
        subject = self.copy_of(state[0])
        result = outcome(lambda: self.write(subject, call), self.typed)
        return (subject, (*state[1], (call.call, call.op))), result

    def write(self, subject: Any, call: Call) -> Any:
        raise NotImplementedError

    def partials(self, state: Any, call: Call) -> list[Any]:
        """The states a write interrupted by a fault may leave besides none or all of its effect (none by default)."""
        return []


class TreeSpec(_Spec):
    typed = TREE_ERRORS

    def __init__(self, rules: Any = None, torn: bool = False) -> None:
        self.rules = rules
        self.torn = torn

    def partials(self, state: Any, call: Call) -> list[Any]:
        """A pool's batch interrupted by a fault was submitted event by event: any proper prefix of it may have been
        applied. With ``torn``, an interrupted event may have applied part of itself, as a shorter event would have.

        A store: any proper prefix of its chain (the chain is stored from its parent down). A removal:
        any proper, non-empty subset of its hashes (a batch is applied hash by hash, in runs). Each part is
        itself a legal event, so the state it leaves is one the reference can reach: *torn but consistent*.
        """
        if call.op == "batch":  # a batch is submitted event by event: a fault may stop it after any prefix
            worker, events = call.args
            out = []
            for k in range(1, len(events)):
                tree = self.copy_of(state[0])
                for e in events[:k]:
                    outcome(functools.partial(tree.apply_event, worker, e), self.typed)
                out.append((tree, (*state[1], (call.call, call.op, "prefix", k))))
            return out
        if not self.torn or call.op != "event" or not isinstance(call.args[1], KvCacheEvent):
            return []
        worker, event = call.args[0], call.args[1]
        data = event.data
        parts: list[KvCacheEvent] = []
        if isinstance(data, Stored):
            parts = [
                KvCacheEvent(event.event_id, Stored(data.parent_hash, data.blocks[:k]), event.dp_rank)
                for k in range(1, len(data.blocks))
            ]
        elif isinstance(data, Removed) and len(data.block_hashes) <= 6:
            hashes = data.block_hashes
            parts = [
                KvCacheEvent(event.event_id, Removed(tuple(h for i, h in enumerate(hashes) if mask >> i & 1)), event.dp_rank)
                for mask in range(1, (1 << len(hashes)) - 1)
            ]
        out = []
        for k, part in enumerate(parts):
            tree = self.copy_of(state[0])
            outcome(functools.partial(tree.apply_event, worker, part), self.typed)
            out.append((tree, (*state[1], (call.call, call.op, "part", k))))
        return out

    def fresh(self) -> RadixTree:
        return RadixTree() if self.rules is None else RadixTree(self.rules)

    def copy_of(self, subject: Any) -> Any:
        return subject.copy()  # RadixTree.copy: the nodes copied, the frozen edge states shared

    def write(self, tree: Any, call: Call) -> Any:
        op, args = call.op, call.args
        if op == "event":
            return tree.apply_event(*args)
        if op == "batch":
            worker, events = args
            return tuple(outcome(functools.partial(tree.apply_event, worker, e), self.typed) for e in events)
        if op in ("remove_worker", "clear_all_blocks", "remove_worker_dp_rank"):
            return getattr(tree, op)(*args)
        raise ValueError(f"TreeSpec: unknown write {op!r}")

    def observe(self, state: Any, call: Call) -> Hashable:
        worker = _projected_worker(call)
        args = call.args[:-1] if worker is not None else call.args
        tree = state[0]
        if call.op == "find_matches":
            value: Hashable = ("ok", scores_of(tree.find_matches(*args)))
        elif call.op == "snapshot":
            value = ("ok", index_of(tree.snapshot()))
        else:
            raise ValueError(f"TreeSpec: unknown read {call.op!r}")
        return _restrict(value, worker)

    def admits(self, call: Call, seen: Seen, quiescent: bool) -> bool:
        during = seen.during
        if quiescent or call.op != "find_matches":
            return all(s == call.result for s in during)
        if call.result[0] != "ok":  # type: ignore[index]
            return call.result in during
        bound: dict[Any, int] = {}
        for s in during:
            for rank, score in s[1]:  # type: ignore[index]
                bound[rank] = max(bound.get(rank, 0), score)
        return all(score <= bound.get(rank, 0) for rank, score in call.result[1])  # type: ignore[index]

    def partition(self, calls: Sequence[Call]) -> list[list[Call]]:
        """One part per worker that wrote (its writes, and every read restricted to its ranks), and a last part of
        every read restricted to the ranks of workers that never wrote (which nothing may credit)."""
        workers = sorted({_worker_of(c) for c in calls if not c.read})
        parts = []
        for w in workers:
            part = [c for c in calls if not c.read and _worker_of(c) == w]
            part += [_project(c, w) for c in calls if c.read]
            parts.append(part)
        others = [_project(c, frozenset(workers)) for c in calls if c.read]
        if others:
            parts.append(others)
        return parts


def _worker_of(call: Call) -> int:
    return call.args[0]


def _project(call: Call, worker: int | frozenset[int]) -> Call:
    """A read's result restricted to one worker's ranks (or, given a set, to the ranks of every *other* worker)."""
    return Call(call.thread, call.call, call.ret, call.op, (*call.args, ("worker", worker)), _restrict(call.result, worker), True)


def _projected_worker(call: Call) -> int | frozenset[int] | None:
    """The worker a projected read is restricted to (its last argument), None for a whole read."""
    last = call.args[-1] if call.args else None
    return last[1] if isinstance(last, tuple) and len(last) == 2 and last[0] == "worker" else None


def _restrict(value: Hashable, worker: int | frozenset[int] | None) -> Hashable:
    if worker is None:
        return value
    status, items = cast(tuple[str, Any], value)
    if status != "ok":
        return value
    if isinstance(worker, frozenset):
        return (status, tuple(item for item in items if item[0].worker_id not in worker))
    return (status, tuple(item for item in items if item[0].worker_id == worker))


def _first_unmissable(states: list[dict], completed: tuple[bool, ...], slot: Any) -> int:
    """The oldest state a registry read of ``slot`` may still show: the one after the last write that changed the
    slot and returned before the read began (each slot's publications land in mutation order, before the write
    returns)."""
    first = 0
    for k in range(1, len(states)):
        if completed[k] and states[k].get(slot) != states[k - 1].get(slot):
            first = k
    return first


def _torn_pairs(candidates: list[Any]) -> list[tuple[Any, Any]]:
    """Every (load, membership) a torn read can pair: the load of one state, the membership of the same or a later one."""
    present = [c for c in candidates if c is not None]
    return [(present[i][0], present[j][1]) for i in range(len(present)) for j in range(i, len(present))]


def _potential_row(call: Call, load: Any, membership: Any) -> Any:
    q, isl, now = slot_tracker.check_potential_loads_args(*call.args)
    return slot_tracker.potential_load_row(
        active_prefill_tokens(load.prefill, now), load, q, slot_tracker.overlap_depth(membership, q), isl
    )


class TrackerSpec(_Spec):
    typed = TRACKER_ERRORS

    def __init__(self, expiry: Any = None) -> None:
        self.expiry = expiry

    def fresh(self) -> SlotTracker:
        return SlotTracker(self.expiry)

    def write(self, tracker: Any, call: Call) -> Any:
        if call.op in ("add_request", "free", "mark_prefill_completed", "force_expiry", "register_worker", "unregister_worker"):
            return getattr(tracker, call.op)(*call.args)
        raise ValueError(f"TrackerSpec: unknown write {call.op!r}")

    def observe(self, state: Any, call: Call) -> Hashable:
        tracker = state[0]
        if call.op == "loads":
            return ("ok", tuple(sorted(tracker.loads(*call.args).items())))
        if call.op == "potential_loads":  # the parts a torn read may pair: each slot's load and membership
            views = tracker.registry_snapshot().views
            return ("parts", tuple(sorted((rank, (v.load, v.membership)) for rank, v in views.items())))
        if call.op == "snapshot":
            return ("ok", tracker.snapshot())
        if call.op == "registry":
            return ("ok", tracker.registry_snapshot())
        raise ValueError(f"TrackerSpec: unknown read {call.op!r}")

    def admits(self, call: Call, seen: Seen, quiescent: bool) -> bool:
        if call.op not in ("loads", "potential_loads"):
            return all(s == call.result for s in seen.during)
        status, rows = cast(tuple[str, Any], call.result)
        if status != "ok":
            return call.result in seen.during
        states = [dict(s[1]) for s in seen.states]  # type: ignore[index]
        if quiescent:
            states = states[-1:]
        if not any(set(dict(rows)) == set(s) for s in states):  # the slots of some state (workers may come and go)
            return False
        for slot, row in rows:
            candidates = [r.get(slot) for r in states[_first_unmissable(states, seen.completed, slot) if not quiescent else 0 :]]
            if call.op == "loads":
                if row not in candidates:
                    return False
            elif not any(_potential_row(call, load, membership) == row for load, membership in _torn_pairs(candidates)):
                return False
        return True

    def partition(self, calls: Sequence[Call]) -> list[list[Call]]:
        return [list(calls)]

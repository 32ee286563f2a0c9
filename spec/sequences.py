"""One worker's ActiveSequences: the authoritative request, prefill and block state of a slot.

Every (worker_id, dp_rank) slot has its own ``ActiveSequencesState``:

- ``requests``: request id -> ``RequestRecord`` (its prompt blocks, when it started, its
  expected output tokens, which are stored but never used by the load arithmetic);
- ``prefill``: the FIFO prefill queue and its anchor (``spec.prefill``);
- ``last_expiry_check``: when expiry last ran (set when the slot is created).

Events, each with an explicit time ``now``:

- **add**: a duplicate id is ignored (the RequestIndex rejects it before it gets here);
  otherwise expiry runs first, then the request is stored, and its prefill is queued when
  tracked (``prefill.is_prefill_tracked``);
- **mark prefill completed**: the prefill leaves the queue (credit or re-anchor); unknown
  or non-prefilling requests are a no-op;
- **free**: the implicit prefill completion first (same credit and re-anchor rules), then
  the request and its blocks leave; freeing twice is a no-op;
- **expiry**: at most once per ``CHECK_EXPIRY_FREQUENCY``, every request started more than
  ``expiry`` ago is freed at ``now``.

**Blocks are counted by prefix lineage.** A block is a position in a prompt together with
everything before it, so a prompt ``[h0, h1, h2]`` holds the paths ``(h0,)``, ``(h0, h1)``
and ``(h0, h1, h2)``. ``active_blocks`` counts the distinct paths over every request of the
worker: prompts ``[5]`` and ``[1, 2, 3, 5]`` hold five blocks, not four, and ``[1, 2, 3]``
plus ``[1, 2, 4]`` hold four. The same paths are the worker's prompt membership, which the
PromptRegistry projects for overlap queries. A set of paths is held as a ``PathSet``, its
longest paths (a prompt of n blocks is one tuple, not n prefixes), so every function here
is O(total prompt length) in time and memory.

Source: docs/sources.md#sequences-2 (state and every mutation, expiry, snapshot), "Blocks";
docs/sources.md#sequences-8-3 and docs/sources.md#sequences-oracle (the blocks experiment) (lineage counting on
1.6.1); docs/sources.md#dynamo-sequences-readme "Source of truth".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .prefill import (
    EMPTY_PREFILL,
    PrefillEntry,
    PrefillLoadSnapshot,
    PrefillState,
    elapsed_since,
    is_prefill_tracked,
    on_prefill_insert,
    on_prefill_remove,
    prefill_load_snapshot,
)
from .primitives import EMPTY_MAP, U64_MAX, FrozenMap
from .sequence_inputs import SequenceRequest, secs

DEFAULT_EXPIRY = secs(300)
"""Requests older than this are freed by expiry (newest source; older versions used 3600 s)."""

CHECK_EXPIRY_FREQUENCY = secs(30)
"""Expiry looks at the requests at most once per this interval, counted from the last check."""

Path = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One active request of a worker: its prompt blocks, start time and expected output tokens."""

    blocks: tuple[int, ...]
    started_at: int
    expected_output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ActiveSequencesState:
    """The authoritative state of one (worker, dp_rank) slot."""

    requests: FrozenMap[str, RequestRecord]
    prefill: PrefillState
    last_expiry_check: int


@dataclass(frozen=True, slots=True)
class WorkerLoadSnapshot:
    """The whole load of one worker as the registry publishes it (a small, copyable value).

    Source: docs/sources.md#sequences-2 "Snapshot" (``WorkerLoadSnapshot{active_blocks, active_requests, prefill}``).
    """

    active_blocks: int = 0
    active_requests: int = 0
    prefill: PrefillLoadSnapshot = PrefillLoadSnapshot()  # noqa: RUF009 - frozen, so one shared default is safe


IDLE_LOAD = WorkerLoadSnapshot()


def new_active_sequences(now: int) -> ActiveSequencesState:
    """Return the state of a slot created at ``now`` (its expiry clock starts then).

    Source: docs/sources.md#sequences-2 "Expiry" (``last_expiry_check_time`` is set at construction).
    """
    return ActiveSequencesState(EMPTY_MAP, EMPTY_PREFILL, now)


# ----------------------------------------------------------------------------- blocks


@dataclass(frozen=True, slots=True)
class PathSet:
    """A finite set of block paths held by its longest paths: O(total prompt length), not its square.

    ``leaves`` are the paths of the set that are no proper prefix of another one; ``gaps`` are
    the proper prefixes of leaves that are *not* in the set. The set is every non-empty prefix
    of a leaf except the gaps, so each set has exactly one value and ``==`` is set equality.
    A slot's membership is prefix-closed (a prompt holds every prefix of itself), so it has no
    gaps and costs the length of its distinct longest prompts; only a broken registry can
    publish a set with gaps (a path without one of its prefixes), which this value still
    represents exactly, so a check can tell it apart.

    Reads walk the leaves (O(total leaf length)); ``__iter__`` builds every path as a tuple
    (the square of the length: for tests and small sets only).
    """

    leaves: frozenset[Path] = frozenset()
    gaps: frozenset[Path] = frozenset()

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, tuple) or not path or path in self.gaps:
            return False
        return any(leaf[: len(path)] == path for leaf in self.leaves)

    def __len__(self) -> int:
        return _count_prefixes(self.leaves) - len(self.gaps)

    def __iter__(self) -> Iterator[Path]:
        seen: set[Path] = set()
        for leaf in self.leaves:
            for i in range(len(leaf)):
                path = leaf[: i + 1]
                if path not in seen and path not in self.gaps:
                    seen.add(path)
                    yield path

    def held_depth(self, query: tuple[int, ...]) -> int:
        """Return the largest ``d`` such that ``query[:1]``, ..., ``query[:d]`` are all in the set."""
        depth = max((_common_prefix(leaf, query) for leaf in self.leaves), default=0)
        for gap in self.gaps:
            if len(gap) <= depth and query[: len(gap)] == gap:
                depth = len(gap) - 1
        return depth

    def check(self) -> None:
        """Assert the value is canonical: leaves are non-empty and maximal, gaps are proper prefixes of leaves."""
        assert all(self.leaves), "an empty leaf"
        assert _maximal(self.leaves) == self.leaves, "a leaf is a prefix of another leaf"
        for gap in self.gaps:
            assert gap and any(len(gap) < len(leaf) and leaf[: len(gap)] == gap for leaf in self.leaves), (
                f"gap {gap} is below no leaf"
            )


EMPTY_PATHS = PathSet()


def _common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _count_prefixes(paths: Iterable[Path]) -> int:
    """Return how many distinct non-empty prefixes ``paths`` have (one trie of nested dicts: O(total length))."""
    root: dict = {}
    count = 0
    for path in paths:
        node = root
        for h in path:
            child = node.get(h)
            if child is None:
                child = node[h] = {}
                count += 1
            node = child
    return count


def _maximal(paths: Iterable[Path]) -> frozenset[Path]:
    """Return the non-empty ``paths`` that are no proper prefix of another (one trie of nested dicts: O(total length))."""
    root: dict = {}
    ends = []
    for path in {p for p in paths if p}:
        node = root
        for h in path:
            node = node.setdefault(h, {})
        ends.append((path, node))
    return frozenset(path for path, node in ends if not node)


def path_set(paths: Iterable[Path]) -> PathSet:
    """Return the value of an explicit set of block paths (its longest paths and the gaps below them).

    It builds every proper prefix of every leaf to find the gaps: for tests and small sets (a
    slot's membership is built by ``lineage_paths``, in O(total prompt length)).
    """
    held = {p for p in paths if p}
    leaves = _maximal(held)
    gaps = {leaf[:i] for leaf in leaves for i in range(1, len(leaf))} - held
    return PathSet(leaves, frozenset(gaps))


def lineage_paths(prompts: Iterable[tuple[int, ...]]) -> PathSet:
    """Return the block paths a set of prompts holds: every non-empty prefix of each (O(total prompt length))."""
    return PathSet(_maximal(prompts))


def prompt_paths(blocks: tuple[int, ...]) -> PathSet:
    """Return the lineage paths of a prompt: every non-empty prefix of its block hashes."""
    return lineage_paths((blocks,))


def block_membership(state: ActiveSequencesState) -> PathSet:
    """Return every block path held by some request of the worker (its prompt membership).

    O(total prompt length): the value keeps the longest prompts, not every prefix.

    Source: docs/sources.md#sequences-2 "Blocks" (a compressed prefix trie keyed by hash lineage).
    """
    return lineage_paths(record.blocks for record in state.requests.values())


def active_blocks(state: ActiveSequencesState) -> int:
    """Return the number of distinct block paths the worker's requests hold."""
    return len(block_membership(state))


def prefill_tokens_sum(state: ActiveSequencesState) -> int:
    """Return the full (undecayed) tokens of every active prefill of the worker."""
    return sum(e.tokens for e in state.prefill.order)


def would_overflow_tokens(state: ActiveSequencesState, request: SequenceRequest) -> bool:
    """Check if admitting ``request`` would push the worker's prefill token sum past u64.

    1.6.1 wraps the sum and then panics on every load read (docs/sequences-findings.md S1);
    the spec rejects such a request instead, leaving the state unchanged.
    """
    hint = request.prefill_load_hint
    if not is_prefill_tracked(request.track_prefill_tokens, hint):
        return False
    return prefill_tokens_sum(state) + hint.initial_effective_prefill_tokens > U64_MAX  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- expiry


def is_expiry_due(state: ActiveSequencesState, now: int) -> bool:
    """Check if at least ``CHECK_EXPIRY_FREQUENCY`` has passed since the last expiry check.

    Source: docs/sources.md#sequences-2 "Expiry" ("at most once every 30 s"); docs/sources.md#sequences-oracle (the
    expiry experiment).
    """
    return elapsed_since(state.last_expiry_check, now) >= CHECK_EXPIRY_FREQUENCY


def is_expired(started_at: int, now: int, expiry: int) -> bool:
    """Check if a request started at ``started_at`` is stale at ``now``: started *strictly* more than
    ``expiry`` ago (a sweep exactly ``expiry`` after the start keeps it; one nanosecond later frees it).

    Source: docs/sources.md#sequences-2 "Expiry" ("frees every request with started_at < now - expiry").
    """
    return started_at < now - expiry


def expired_request_ids(state: ActiveSequencesState, now: int, expiry: int) -> tuple[str, ...]:
    """Return the requests ``is_expired`` at ``now``, in admission order.

    Source: docs/sources.md#sequences-2 "Expiry".
    """
    return tuple(rid for rid, r in state.requests.items() if is_expired(r.started_at, now, expiry))


def on_force_expiry(state: ActiveSequencesState, now: int, expiry: int | None) -> tuple[ActiveSequencesState, tuple[str, ...]]:
    """Return the state after an expiry check at ``now`` and the ids it freed.

    Nothing happens when expiry is disabled (``None``) or the last check is under
    ``CHECK_EXPIRY_FREQUENCY`` ago. Otherwise every expired request is freed at ``now`` (so
    credit and re-anchoring apply at ``now``; the order of the frees does not matter, because
    credits compose as ``min(since + d1 + d2, now)``) and the check time becomes ``now``.

    Source: docs/sources.md#sequences-2 "Expiry"; test_force_expiry_reanchors_new_oldest_request.
    """
    if expiry is None or not is_expiry_due(state, now):
        return state, ()
    expired = expired_request_ids(state, now, expiry)
    for rid in expired:
        state = on_free(state, rid, now)
    return ActiveSequencesState(state.requests, state.prefill, now), expired


# ----------------------------------------------------------------------------- events


def on_add_request(
    state: ActiveSequencesState, request: SequenceRequest, now: int, expiry: int | None
) -> tuple[ActiveSequencesState, tuple[str, ...]]:
    """Return the state after admitting ``request`` at ``now``, and the ids expiry freed first.

    A duplicate id changes nothing (not even expiry). Otherwise expiry runs, the request is
    stored with ``started_at = now`` and an absent ``token_sequence`` as an empty prompt, and
    its prefill is queued if tracked.

    Source: docs/sources.md#sequences-2 "Add" steps 1-6.
    """
    if request.request_id in state.requests:
        return state, ()
    state, expired = on_force_expiry(state, now, expiry)
    record = RequestRecord(request.token_sequence or (), now, request.expected_output_tokens)
    prefill = state.prefill
    hint = request.prefill_load_hint
    if is_prefill_tracked(request.track_prefill_tokens, hint):
        assert hint is not None
        entry = PrefillEntry(request.request_id, hint.initial_effective_prefill_tokens, hint.expected_prefill_duration)
        prefill = on_prefill_insert(prefill, entry, now)
    return ActiveSequencesState(state.requests.set(request.request_id, record), prefill, state.last_expiry_check), expired


def on_mark_prefill_completed(state: ActiveSequencesState, request_id: str, now: int) -> ActiveSequencesState:
    """Return the state after ``request_id``'s prefill completes at ``now`` (a no-op if it is not prefilling).

    Source: docs/sources.md#sequences-2 "MarkPrefillCompleted".
    """
    return ActiveSequencesState(state.requests, on_prefill_remove(state.prefill, request_id, now), state.last_expiry_check)


def on_free(state: ActiveSequencesState, request_id: str, now: int) -> ActiveSequencesState:
    """Return the state after freeing ``request_id`` at ``now``: implicit prefill completion, then its blocks leave.

    Source: docs/sources.md#sequences-2 "Free" steps 1-3; docs/sources.md#dynamo-sequences-readme ("Free keeps its
    existing implicit prefill-completion cleanup behavior and applies the same credit").
    """
    prefill = on_prefill_remove(state.prefill, request_id, now)
    return ActiveSequencesState(state.requests.delete(request_id), prefill, state.last_expiry_check)


# ----------------------------------------------------------------------------- snapshot


def worker_load_snapshot(state: ActiveSequencesState) -> WorkerLoadSnapshot:
    """Return the load snapshot of the worker: blocks, request count and the prefill snapshot.

    Source: docs/sources.md#sequences-2 "Snapshot" (``worker_load_snapshot``).
    """
    return WorkerLoadSnapshot(active_blocks(state), len(state.requests), prefill_load_snapshot(state.prefill))

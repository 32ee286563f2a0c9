"""What a ``--target`` must provide: the tree API and the slot-tracker API, as typing Protocols.

The checks drive every target through these methods only, so any object that has them can
be checked: ``dynamo._core.RadixTree``, the reference and concurrent trees, the thread-pool
indexer, or a user's own class named as ``module.path:Factory``. The Protocols state the
contract; they are ``runtime_checkable``, so ``isinstance(target, KvTree)`` tells whether
an object has the methods (by name only: Python cannot check signatures at run time)::

    >>> class OnlyEvents:
    ...     def apply_event(self, worker_id, event): ...
    >>> isinstance(OnlyEvents(), KvTree)
    False

Trees
-----
``KvTree`` is what every tree target implements. ``apply_event`` takes Dynamo's
``KvCacheEvent`` JSON (``spec.events``) and raises on rejection; the checks map the errors
onto one vocabulary (``spec.errors``: ``ParentBlockNotFound``, ``BlockNotFound``,
``InvalidBlockSequence`` as ``RuntimeError``; ``MalformedEvent`` as ``ValueError``; bad
arguments as ``TypeError`` / ``OverflowError``), and a rejected event must leave the tree as
it was (except a ``removed`` batch, ``spec.coverage.remove_batch``). ``find_matches``
returns an object whose ``scores`` maps ``(worker_id, dp_rank)`` to the number of leading
query blocks credited to that rank (``spec.match``). ``dump_tree_as_events`` returns
``RouterEvent`` JSON strings that, applied in order to an empty tree, rebuild it
(``spec.dump``).

Optional: ``remove_worker_dp_rank`` (``DpRankRemoval``; the thread-pool indexer has none),
and ``check()`` / ``snapshot()`` (``CheckedTree``), which the checks use when present:
``check`` raises ``AssertionError`` when an invariant fails, ``snapshot`` returns the
abstract index (rank -> the external hashes a query can credit it with).

Slot trackers
-------------
``SlotTrackerAPI`` is what every sequence target implements (the spec driven as a tracker,
the reference, the concurrent tracker). Times and durations are int nanoseconds
(``spec.sequence_inputs``); every call validates its arguments first and raises a typed
error from ``spec.sequence_errors`` without changing anything. ``SlotTrackerModel`` adds the
abstraction the state machines compare: ``snapshot`` (the authoritative
``SlotTrackerState``), ``registry_snapshot`` (the derived ``PromptRegistryState``) and
``check``.

Source: docs/sources.md#crtc-1 (the ``RadixTree`` binding's API), docs/sources.md#crtc-13 "Harness";
docs/sources.md#sequences-1 to docs/sources.md#sequences-5, docs/sources.md#sequences-8-2 (the tracker's routes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from .primitives import Rank


@runtime_checkable
class Scores(Protocol):
    """What ``find_matches`` returns: ``scores[(worker_id, dp_rank)]`` is the rank's overlap, in blocks."""

    @property
    def scores(self) -> Mapping[Any, int]: ...


@runtime_checkable
class KvTree(Protocol):
    """The tree API every ``--target`` provides (``dynamo._core.RadixTree``'s)."""

    def apply_event(self, worker_id: int, event: bytes) -> None:
        """Apply one KV event (``KvCacheEvent`` JSON bytes) from ``worker_id``; raise a typed error if it is rejected."""
        ...

    def find_matches(self, sequence: Iterable[int], early_exit: bool = False) -> Scores:
        """Return every rank's overlap along ``sequence`` (local block hashes); ``early_exit`` may stop at one winner."""
        ...

    def remove_worker(self, worker_id: int) -> None:
        """Drop every rank of ``worker_id`` and everything it holds."""
        ...

    def clear_all_blocks(self, worker_id: int) -> None:
        """Drop every block of every rank of ``worker_id``; the ranks stay registered."""
        ...

    def dump_tree_as_events(self) -> list[str]:
        """Return ``RouterEvent`` JSON strings that rebuild the tree when applied in order to an empty one."""
        ...


@runtime_checkable
class DpRankRemoval(Protocol):
    """Optional: drop one data-parallel rank."""

    def remove_worker_dp_rank(self, worker_id: int, dp_rank: int) -> None:
        """Drop the one rank ``(worker_id, dp_rank)`` and everything it holds."""
        ...


@runtime_checkable
class CheckedTree(Protocol):
    """Optional: a tree that can assert its own invariants and show its abstract index."""

    def check(self) -> None:
        """Raise ``AssertionError`` if an invariant fails (a no-op when the tree is sound)."""
        ...

    def snapshot(self) -> dict[Rank, frozenset[int]]:
        """Return, per rank, the external hashes a query can credit it with (``spec.dump.credited_index``)."""
        ...


@runtime_checkable
class SlotTrackerAPI(Protocol):
    """The slot-tracker API every sequence ``--target`` provides (``ActiveSequencesMultiWorker``'s, by route)."""

    def register_worker(self, worker_id: int, dp_start: int, dp_size: int, now: int) -> None:
        """Add a worker whose ranks ``[dp_start, dp_start + dp_size)`` start empty at ``now`` (``DuplicateWorker`` if known)."""
        ...

    def unregister_worker(self, worker_id: int) -> None:
        """Remove a worker, its slots and its requests' bookings (``UnknownWorker`` if unknown)."""
        ...

    def add_request(self, request: Any, now: int) -> None:
        """Admit a ``SequenceRequest`` on its slot at ``now`` (``WorkerNotFound``, ``DuplicateRequest``, ``TokenLoadOverflow``)."""
        ...

    def mark_prefill_completed(self, request_id: str, now: int, worker: Any = None) -> None:
        """Complete the request's prefill at ``now`` (``RequestNotFound`` if unbooked; ``WrongWorker`` if fenced elsewhere)."""
        ...

    def free(self, request_id: str, now: int, worker: Any = None) -> bool:
        """Free the request at ``now``; return whether it was booked (an unbooked id is a no-op)."""
        ...

    def force_expiry(self, now: int) -> None:
        """Run every slot's (gated) expiry sweep at ``now``."""
        ...

    def loads(self, now: int) -> Mapping[Rank, Any]:
        """Return every slot's ``WorkerLoad`` at ``now`` (prefill tokens decayed at read time)."""
        ...

    def potential_loads(self, query: Any, new_isl_tokens: int, now: int) -> Mapping[Rank, Any]:
        """Return every slot's ``PotentialLoad`` if a prompt ``query`` of ``new_isl_tokens`` were routed there."""
        ...

    def modeled_remaining_prefill_times(self, now: int) -> Mapping[Rank, Any]:
        """Return every slot's modeled remaining prefill ms, or its ``MissingExpectedDuration``."""
        ...


@runtime_checkable
class SlotTrackerModel(SlotTrackerAPI, Protocol):
    """A slot tracker that also shows its abstract state, for the state machines and the stress test."""

    def snapshot(self) -> Any:
        """Return the authoritative state as a ``spec.slot_tracker.SlotTrackerState``."""
        ...

    def registry_snapshot(self) -> Any:
        """Return the read model as a ``spec.slot_tracker.PromptRegistryState`` (it may lag while writers run)."""
        ...

    def check(self) -> None:
        """Raise ``AssertionError`` if an invariant fails (call at quiescence)."""
        ...

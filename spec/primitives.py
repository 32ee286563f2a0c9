"""Primitive types of the KV-router index.

Notation
--------
A *block* is one KV-cache page. It is named twice:

- its **local block hash** (``LocalBlockHash``), a hash of the tokens inside the block
  alone. Tree navigation uses only this hash: children are keyed by the first local hash of
  their edge, and queries are sequences of local hashes.
- its **external sequence block hash** (``ExternalBlockHash``), a hash of the whole prefix
  up to and including the block, supplied by the engine and opaque to the router. It names
  parents, removals and the per-rank reverse lookup.

A *rank* is one data-parallel rank of one worker, ``WorkerWithDpRank(worker_id, dp_rank)``
(alias ``Rank``). Every coverage fact, lookup entry and score is per rank. One word per concept,
across every layer:

- **rank**: the ``(worker_id, dp_rank)`` pair, in code and prose alike;
- **worker**: the engine process, ``worker_id`` alone (``remove_worker`` drops all its ranks);
  a field is called ``worker`` while holding a rank only where it mirrors Dynamo's own API or
  wire format (``SequenceRequest.worker``, the slot tracker's JSON);
- **slot**: the active-sequence state the slot tracker keeps *for* a rank (one
  ``ActiveSequences`` per rank, ``spec.slot_tracker``), never the rank itself.

Source: crtc.md §1 "Data model"; Dynamo ``protocols.rs``.

Contract assumption (crtc.md §1, "Spec assumption"): an external hash is a function of the
local-hash chain from the root, so it is unique per position. Streams that break this
(hash collisions, a block stored under two parents) are *out of contract*; see
``spec.contract``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple, NewType, TypeGuard, TypeVar, overload

LocalBlockHash = NewType("LocalBlockHash", int)
"""Hash of the tokens of one block (u64)."""

ExternalBlockHash = NewType("ExternalBlockHash", int)
"""Hash of the whole prefix ending at a block (u64), as the engine names it."""

U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1


class WorkerWithDpRank(NamedTuple):
    """One data-parallel rank of one worker: the unit of coverage and scoring."""

    worker_id: int
    dp_rank: int = 0

    def __repr__(self) -> str:
        # Written as the plain tuple Dynamo uses for score keys, so reprs paste into tests.
        return f"({self.worker_id}, {self.dp_rank})"


Rank = WorkerWithDpRank
"""The one alias of ``WorkerWithDpRank``; every layer imports it from here."""


T = TypeVar("T")


@overload
def is_int(value: object) -> TypeGuard[int]: ...
@overload
def is_int(value: object, kinds: type[T] | tuple[type[T], ...]) -> TypeGuard[T]: ...
def is_int(value: object, kinds: Any = int) -> bool:
    """Check if ``value`` is an instance of ``kinds`` (``int`` unless told) and not a ``bool``.

    ``bool`` is an ``int`` subclass in Python, but neither JSON nor Dynamo's typed APIs take
    ``true`` for ``1``: every argument and wire check rejects it by type.
    """
    return isinstance(value, kinds) and not isinstance(value, bool)


def is_uint(value: object, bound: int = U64_MAX) -> TypeGuard[int]:
    """Check if ``value`` is an unsigned integer of the domain: an ``int``, not a ``bool``, in ``[0, bound]``.

    Every family wraps it in its own raise (the error types rightly differ: wire
    ``MalformedEvent``, tree ``InvalidArgument*``, sequence ``InvalidSequenceArgument``,
    state-layout ``StateArgument*``), raising its type error when ``is_int`` fails and its
    range error otherwise.

        >>> is_uint(0), is_uint(2**64), is_uint(True), is_uint(4, bound=3)
        (True, False, False, False)
    """
    return is_int(value) and 0 <= value <= bound


class Block(NamedTuple):
    """One stored block: ``(local, ext)``; ``tokens_hash`` and ``block_hash`` on the wire."""

    local: int
    ext: int


K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(Mapping[K, V]):
    """An immutable, hashable mapping; the spec's only container for keyed frozen data."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping[K, V] | None = None) -> None:
        self._items: dict[K, V] = dict(items or {})
        self._hash: int | None = None

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other)
        return NotImplemented

    def set(self, key: K, value: V) -> FrozenMap[K, V]:
        """Return a copy with ``key`` bound to ``value``."""
        items = dict(self._items)
        items[key] = value
        return FrozenMap(items)

    def delete(self, key: K) -> FrozenMap[K, V]:
        """Return a copy without ``key`` (unchanged if absent)."""
        if key not in self._items:
            return self
        items = dict(self._items)
        del items[key]
        return FrozenMap(items)

    def __repr__(self) -> str:
        return f"FrozenMap({self._items!r})"


EMPTY_MAP: FrozenMap = FrozenMap()

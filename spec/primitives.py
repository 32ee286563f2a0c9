"""Primitive types of the KV-router index.

Notation
--------
A *block* is one KV-cache page. It is named twice:

- its **local block hash** (``Block.local``, a u64), a hash of the tokens inside the block
  alone. Tree navigation uses only this hash: children are keyed by the first local hash of
  their edge, and queries are sequences of local hashes.
- its **external sequence block hash** (``Block.ext``, a u64), a hash of the whole prefix
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

Source: docs/sources.md#crtc-1 "Data model"; docs/sources.md#dynamo-protocols.

Contract assumption (docs/sources.md#crtc-1, "Spec assumption"): an external hash is a function of the
local-hash chain from the root, so it is unique per position. Streams that break this
(hash collisions, a block stored under two parents) are *out of contract*; see
``spec.contract``.
"""

from __future__ import annotations

import operator
import reprlib
from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from collections.abc import Set as AbstractSet
from typing import Any, NamedTuple, TypeGuard, TypeVar, overload

import immutables

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
S = TypeVar("S")


@overload
def is_int(value: object) -> TypeGuard[int]: ...
@overload
def is_int(value: object, kinds: type[T] | tuple[type[T], ...]) -> TypeGuard[T]: ...
def is_int(value: object, kinds: Any = int) -> bool:
    """Check if ``value`` is an instance of ``kinds`` (``int`` unless told) and not a ``bool``.

    ``bool`` is an ``int`` subclass in Python, but JSON does not take ``true`` for ``1``, and
    kvproof's arguments do not either: every argument and wire check rejects it by type. (The
    tree binding does take ``True`` as ``1``; kvproof refuses it deliberately,
    docs/hostile-input.md H9.)
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


def integer_of(value: object) -> int | None:
    """Return ``value`` as an ``int`` if it is an integer the tree's API takes, else ``None``.

    That is an ``int`` or an object that declares itself an integer through ``__index__``
    (numpy's ``int64`` and ``uint64``: ``dynamo._core.RadixTree`` takes them, so the drop-in
    does too), never a ``bool`` (``numpy.bool_`` included) and never a float. The binding takes
    ``True`` as ``1``; kvproof refuses it (docs/hostile-input.md H9). An ``int`` subclass is read
    by its value, as the binding reads it: its own ``__int__`` or ``__index__`` is never called, so
    one that disagrees with the value cannot change what is stored (docs/hostile-input.md)::

        >>> import numpy
        >>> integer_of(7), integer_of(numpy.uint64(7)), integer_of(True), integer_of(7.0)
        (7, 7, None, None)
    """
    if isinstance(value, bool) or is_numpy_bool(value):
        return None
    if isinstance(value, int):
        return int_value(value)
    if isinstance(value, float) or not hasattr(type(value), "__index__"):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except Exception:  # an __index__ that raises is not an integer
        return None


def int_value(value: int) -> int:
    """The plain ``int`` an ``int`` (or an ``int`` subclass, ``IntEnum`` members included) holds, read without
    calling the subclass's own ``__int__`` or ``__index__``.

        >>> import enum
        >>> class Liar(int):
        ...     def __int__(self): return 7
        >>> Color = enum.IntEnum("Color", "RED")
        >>> int_value(Liar(5)), type(int_value(Color.RED)).__name__
        (5, 'int')
    """
    return operator.index(value) if type(value) is not int else value  # index() on an int subclass copies the value


def read_items(value: Iterable[T], what: str, error: Callable[[str], Exception]) -> tuple[T, ...]:
    """The items of an argument, read once; an exception its own ``__iter__``/``__next__``/``__len__`` raises becomes
    ``error`` naming the argument (it never escapes untyped, docs/hostile-input.md).

        >>> class Broken(list):
        ...     def __iter__(self): raise RuntimeError("no")
        >>> read_items(Broken([1]), "sequence", ValueError)
        Traceback (most recent call last):
        ValueError: sequence could not be read: its own iteration raised RuntimeError('no')
    """
    try:
        return tuple(value)
    except Exception as exc:
        raise error(f"{what} could not be read: its own iteration raised {show_exception(exc)}") from None


def show_exception(exc: BaseException) -> str:
    """``TypeName('message')``, the message cut to a few hundred characters."""
    return f"{type(exc).__name__}({_repr.repr(str(exc))})"


def is_numpy_bool(value: object) -> bool:
    """Check if ``value`` is a numpy boolean scalar (``numpy.bool``, formerly ``numpy.bool_``), without importing numpy."""
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")


_HUGE_BITS = 256


class _SafeRepr(reprlib.Repr):
    """``reprlib.Repr`` that never converts a huge int to a string (Python refuses past 4300 digits)."""

    def repr_int(self, x: int, level: int) -> str:
        return show_int(x) if x.bit_length() > _HUGE_BITS else super().repr_int(x, level)


_repr = _SafeRepr()
_repr.maxlevel, _repr.maxstring, _repr.maxother, _repr.maxlong = 3, 60, 60, 80


def show_int(value: int) -> str:
    """Return an int as text for a message; one past 256 bits as its sign and digit count (never ``str`` of it)."""
    if value.bit_length() <= _HUGE_BITS:
        return str(value)
    digits = int(value.bit_length() * 0.30103) + 1
    return f"{'-' if value < 0 else ''}<an integer of about {digits} digits>"


def show(value: object) -> str:
    """Return a short, always computable ``repr`` of any value for an error message.

    Error messages quote what they refuse, and what they refuse may be hostile: an int of
    thousands of digits (``str`` raises), a list nested 100,000 deep (``repr`` recurses), an
    object whose ``__repr__`` raises. ``show`` cuts each of them short::

        >>> show(10**5000), show([[[[[1]]]]]), show("x" * 100)[:12]
        ('<an integer of about 5001 digits>', '[[[[...]]]]', "'xxxxxxxxxxx")
    """
    try:
        return _repr.repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


class Block(NamedTuple):
    """One stored block: ``(local, ext)``; ``tokens_hash`` and ``block_hash`` on the wire."""

    local: int
    ext: int


K = TypeVar("K")
V = TypeVar("V")


SMALL = 16
"""Up to this many entries a ``FrozenMap`` or ``FrozenSet`` is a plain dict copied on write (cheapest for the
few holders most nodes have, and plain Python for CrossHair); past it, a persistent trie (``immutables.Map``)."""


def _grown(items: dict) -> immutables.Map:
    return immutables.Map(items)


def _backing(items: Mapping[Any, Any]) -> Any:
    return dict(items) if len(items) <= SMALL else immutables.Map(items)


def _same_items(a: Any, b: Any) -> bool:
    if type(a) is type(b):
        return bool(a == b)
    return len(a) == len(b) and all(k in b and b[k] == v for k, v in a.items())


class FrozenMap(Mapping[K, V]):
    """An immutable, hashable mapping; the spec's only container for keyed frozen data.

    It is persistent past ``SMALL`` entries: ``set`` and ``delete`` then return a new map in O(log n),
    sharing the rest with the old one (a hash array mapped trie, ``immutables.Map``), so a node's
    coverage costs one rank's update however many ranks hold it (docs/sources.md#kvproof-crowd: thousands of ranks
    on one system prompt). Smaller maps are dicts copied on write. Iteration order is not part of its
    meaning (two equal maps may iterate apart).
    """

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping[K, V] | None = None) -> None:
        self._items: Any = items._items if isinstance(items, FrozenMap) else _backing(items or {})
        self._hash: int | None = None

    @classmethod
    def _of(cls, items: Any) -> FrozenMap[K, V]:
        made = cls.__new__(cls)
        made._items, made._hash = items, None
        return made

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # The Mapping mixins, answered by the backing directly (the walks read cutoffs on every node).
    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: K, default: Any = None) -> Any:
        return self._items.get(key, default)

    def items(self) -> ItemsView[K, V]:
        return ItemsView(self)

    def keys(self) -> KeysView[K]:
        return KeysView(self)

    def values(self) -> ValuesView[V]:
        return ValuesView(self)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return _same_items(self._items, other._items)
        if isinstance(other, Mapping):
            return len(self) == len(other) and all(k in other and other[k] == v for k, v in self._items.items())
        return NotImplemented

    def set(self, key: K, value: V) -> FrozenMap[K, V]:
        """Return a map with ``key`` bound to ``value`` (O(log n) past ``SMALL``; this one is unchanged)."""
        items = self._items
        if type(items) is not dict:
            return FrozenMap._of(items.set(key, value))
        if len(items) < SMALL or key in items:
            copy = dict(items)
            copy[key] = value
            return FrozenMap._of(copy)
        return FrozenMap._of(_grown(items).set(key, value))

    def delete(self, key: K) -> FrozenMap[K, V]:
        """Return a map without ``key`` (unchanged if absent; O(log n) past ``SMALL``)."""
        items = self._items
        if key not in items:
            return self
        if type(items) is not dict:
            return FrozenMap._of(items.delete(key))
        copy = dict(items)
        del copy[key]
        return FrozenMap._of(copy)

    def __repr__(self) -> str:
        return f"FrozenMap({dict(self._items.items())!r})"


class FrozenSet(AbstractSet[K]):
    """An immutable, hashable set, persistent past ``SMALL`` members (``add`` and ``discard`` in O(log n)).

    Equal to any set of the same members (``frozenset`` included); ``|``, ``&`` and ``-`` build a new set
    from their result (O(n)), ``add`` and ``discard`` share the rest. The spec's ranks that hold a whole
    edge (``coverage.EdgeState``) are one: a rank joining or leaving a node costs the same with ten holders
    or ten thousand.
    """

    __slots__ = ("_items", "_cached_hash")

    def __init__(self, members: Iterable[K] = ()) -> None:
        self._items: Any = members._items if isinstance(members, FrozenSet) else _backing(dict.fromkeys(members))
        self._cached_hash: int | None = None

    @classmethod
    def _of(cls, items: Any) -> FrozenSet[K]:
        made = cls.__new__(cls)
        made._items, made._cached_hash = items, None
        return made

    @classmethod
    def _from_iterable(cls, members: Iterable[S]) -> FrozenSet[S]:  # what the Set mixins build |, &, - with
        return FrozenSet(members)

    def __contains__(self, member: object) -> bool:
        return member in self._items

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._cached_hash is None:
            self._cached_hash = hash(frozenset(self._items))
        return self._cached_hash

    def add(self, member: K) -> FrozenSet[K]:
        """Return a set with ``member`` in it (O(log n) past ``SMALL``; this one is unchanged)."""
        items = self._items
        if member in items:
            return self
        if type(items) is not dict:
            return FrozenSet._of(items.set(member, None))
        if len(items) < SMALL:
            copy = dict(items)
            copy[member] = None
            return FrozenSet._of(copy)
        return FrozenSet._of(_grown(items).set(member, None))

    def discard(self, member: K) -> FrozenSet[K]:
        """Return a set without ``member`` (unchanged if absent; O(log n) past ``SMALL``)."""
        items = self._items
        if member not in items:
            return self
        if type(items) is not dict:
            return FrozenSet._of(items.delete(member))
        copy = dict(items)
        del copy[member]
        return FrozenSet._of(copy)

    def __repr__(self) -> str:
        return f"FrozenSet({set(self._items)!r})"


EMPTY_SET: FrozenSet = FrozenSet()


EMPTY_MAP: FrozenMap = FrozenMap()

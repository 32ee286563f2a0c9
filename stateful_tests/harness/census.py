"""A census of everything a data structure holds: every object and container reachable from it, walked.

``take(root)`` walks the object graph from ``root`` through instance attributes (``__dict__``
and every ``__slots__`` of the class's MRO) and the contents of dicts, lists, plain tuples, sets,
frozensets and deques (keys and values), visiting each object once (by identity). It records:

- ``instances[type name]``: how many distinct objects of each type are reachable;
- ``bytes``: ``sys.getsizeof`` summed over every distinct object reached (the scalars too): what
  the walk can account for, to set against what tracemalloc says is allocated;
- ``sizes[label]``: the total length of the containers reached through ``label``, and
  ``containers[label]`` how many there are. A label names *where* a container sits, not its
  type: ``Node.children`` is the child map of every node, ``Lane.lookups`` the per-rank
  registry of every lane, ``Lane.lookups[]`` the per-rank lookups inside it (``[]``: the
  values of a container, ``.keys``: a dict's keys). A NamedTuple (a ``Block``, a ``Rank``) is
  a record: counted as an instance, not as a container.

Nothing is guessed: a structure that grows a new field shows up under a new label, and a
leak that hides in a container nobody named is still counted. The walk stops at modules,
classes, functions and methods, code objects and native locks and threads (it does not
follow a bound method back into its object: the object is reached through its owner's
attributes or not at all), and at the scalars (ints, strings, bytes, floats, None).

Objects reachable only from outside the structure (a module-level cache, a global list) are
invisible here by construction; ``layer_bytes`` (tracemalloc over what kvproof's layers
allocated) is what sees those. ``trends`` is the soaks' no-growth law over census figures.

Source: docs/sources.md#kvproof-robustness ("walk them, do not guess").
"""

from __future__ import annotations

import gc
import statistics
import sys
import threading
import tracemalloc
import types
from collections import Counter, deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SCALARS = (int, float, complex, str, bytes, bytearray, bool, type(None), range, slice)
_OPAQUE = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    types.FrameType,
    types.GeneratorType,
    types.BuiltinMethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    type(threading.Lock()),
    type(threading.RLock()),
    threading.Thread,
)
_CONTAINERS = (dict, list, set, frozenset, deque)  # and plain tuples; a NamedTuple is a record (an object)


@dataclass
class Census:
    """What one walk found: instances per type, container lengths and counts per label."""

    instances: Counter[str] = field(default_factory=Counter)
    sizes: Counter[str] = field(default_factory=Counter)
    containers: Counter[str] = field(default_factory=Counter)
    bytes: int = 0  # sys.getsizeof of every distinct object reached, scalars included

    def size(self, *labels: str) -> int:
        """Return the total length of the containers under any of ``labels``."""
        return sum(self.sizes[label] for label in labels)

    def count(self, *type_names: str) -> int:
        """Return how many reachable objects have one of ``type_names``."""
        return sum(self.instances[name] for name in type_names)

    def quantities(self) -> dict[str, int]:
        """Every figure the census holds, by name: ``len <label>`` and ``# <type>``."""
        return {**{f"len {k}": v for k, v in self.sizes.items()}, **{f"# {k}": v for k, v in self.instances.items()}}


def _attributes(obj: Any) -> Iterator[tuple[str, Any]]:
    """The instance attributes of ``obj``: its ``__dict__`` and the slots of every class in its MRO."""
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        yield from d.items()
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            try:
                yield name, object.__getattribute__(obj, name)
            except AttributeError:
                continue  # an unset slot


def _contents(obj: Any, label: str) -> Iterator[tuple[Any, str]]:
    """The items of a container with their labels: a dict's keys under ``label.keys``, every value under ``label[]``."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k, label + ".keys"
            yield v, label + "[]"
    else:
        yield from ((item, label + "[]") for item in obj)


def _is_container(obj: Any) -> bool:
    return isinstance(obj, _CONTAINERS) or type(obj) is tuple


def take(root: Any) -> Census:
    """Walk everything reachable from ``root`` (see the module docstring) and count it."""
    census = Census()
    seen: set[int] = set()
    counted: set[tuple[int, str]] = set()
    stack: list[tuple[Any, str]] = [(root, type(root).__name__)]
    while stack:
        obj, label = stack.pop()
        if isinstance(obj, _OPAQUE):
            continue
        if isinstance(obj, _SCALARS):
            if id(obj) not in seen:
                seen.add(id(obj))
                census.bytes += sys.getsizeof(obj)
            continue
        owner = type(obj).__name__
        if _is_container(obj) and (id(obj), label) not in counted:
            # a container shared by two places (one frozenset in two edge states) counts in each place
            counted.add((id(obj), label))
            census.sizes[label] += len(obj)
            census.containers[label] += 1
            if id(obj) in seen:
                continue
            stack.extend(_contents(obj, label))
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        census.bytes += sys.getsizeof(obj)
        if _is_container(obj):
            if type(obj) in _CONTAINERS or type(obj) is tuple:
                continue
            # a container subclass (a Counter, an OrderedDict) is also an object with attributes
        elif isinstance(obj, tuple):  # a record (NamedTuple): an object whose fields are its items
            stack.extend((item, f"{owner}[]") for item in obj)
        census.instances[owner] += 1
        stack.extend((value, f"{owner}.{name}") for name, value in _attributes(obj))
    return census


# ----------------------------------------------------------------------------- what the layers allocated

LAYERS = ("spec", "reference", "impl")
"""The folders whose allocations ``layer_bytes`` counts: what a structure of kvproof's allocated."""


def _layer_prefixes() -> tuple[str, ...]:
    root = Path(__file__).resolve().parents[2]
    return tuple(str(root / layer) + "/" for layer in LAYERS)


def layer_bytes() -> int:
    """Bytes allocated from spec/, reference/ and impl/ and still alive (tracemalloc must be tracing)."""
    gc.collect()
    prefixes = _layer_prefixes()
    stats = tracemalloc.take_snapshot().statistics("filename")  # grouped first: one prefix test per file
    return sum(stat.size for stat in stats if stat.traceback[0].filename.startswith(prefixes))


# ----------------------------------------------------------------------------- the trend law


def trends(
    samples: Sequence[tuple[Mapping[str, float], float]],
    warmup: int,
    window: int,
    slack: float,
    floor: float = 64,
    byte_floor: float = 4096,
) -> dict[str, str]:
    """Every figure whose value per unit of live content grew past ``slack`` from the first window to the last.

    ``samples`` are ``(figures, live)`` per epoch, ``live`` the size of the live content (at least
    1). After ``warmup`` samples, a figure passes if ``mean(last window) <= a + slack * |a| + floor /
    live`` where ``a = mean(first window)``, each value divided by its sample's live content (so
    content that is steady but noisy does not read as a trend); a figure named ``... bytes`` gets
    ``byte_floor`` instead of ``floor``. A figure missing from a sample counts 0 there.

    Source: docs/sources.md#kvproof-robustness (compare the last epochs to the first post-warm-up epochs, with slack).
    """
    steady = list(samples[warmup:])
    if len(steady) < 2 * window:
        return {}
    first, last = steady[:window], steady[-window:]
    names = sorted(set().union(*(figures for figures, _ in steady)))
    problems: dict[str, str] = {}
    for name in names:
        a = statistics.fmean(f.get(name, 0) / live for f, live in first)
        b = statistics.fmean(f.get(name, 0) / live for f, live in last)
        allowance = a + slack * abs(a) + (byte_floor if name.endswith("bytes") else floor) / last[-1][1]
        if b > allowance:
            raw_a = statistics.fmean(f.get(name, 0) for f, _ in first)
            raw_b = statistics.fmean(f.get(name, 0) for f, _ in last)
            problems[name] = (
                f"{raw_a:,.0f} -> {raw_b:,.0f} ({b / a if a > 0 else float('inf'):.2f}x per unit of "
                f"live content, allowed {1 + slack:.2f}x)"
            )
    return problems


class GrowthVerdict:
    """What both soaks' reports share: the size laws broken (``sizes``) and the figures that trend up (``trends``)."""

    sizes: dict[str, str]
    trends: dict[str, str]

    @property
    def grew(self) -> bool:
        return bool(self.sizes or self.trends)

    def failed_laws(self) -> set[str]:
        return set(self.sizes) | {f"trend: {name}" for name in self.trends}

    def growth_lines(self) -> list[str]:
        """One line per broken size law (``BROKEN``) and per figure that trends up (``GROWS``)."""
        return [f"BROKEN {law}: {p}" for law, p in self.sizes.items()] + [f"GROWS {f}: {p}" for f, p in self.trends.items()]

"""Paths of local hashes and the blocks they stand for: the one place prefix-derived hashes are made.

A *path* is a tuple of local (tokens) hashes from the root. Its blocks carry external hashes
derived from the whole local prefix (``seq_hash``), as an engine's prefix-aware block hashing
does, so equal prefixes name equal blocks and different prefixes never collide. ``chain`` is
Dynamo's own test convention (``[(100, 1), (200, 2), ...]``). The stream generator, the
contract machine, the stress writers and the vectors all build blocks through these.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from ...spec.contract import longest_prefix_in


def chain(*locals_: int) -> list[tuple[int, int]]:
    """Return Dynamo's test chain: block hash ``100 * local`` for each local hash."""
    return [(100 * x, x) for x in locals_]


def seq_hash(prefix: Sequence[int]) -> int:
    """Return a deterministic external hash for a local-hash prefix (unique per prefix)."""
    h = 1469598103934665603
    for x in prefix:
        h = ((h ^ (x + 0x9E3779B97F4A7C15)) * 1099511628211) % (1 << 63)
    return h


@functools.lru_cache(maxsize=1 << 18)
def ext(path: tuple[int, ...]) -> int:
    """Return the external hash of the last block of ``path`` (memoized: generated paths recur constantly)."""
    return seq_hash(path)


def held_prefix(path: tuple[int, ...], held: Mapping[int, object] | frozenset[int]) -> int:
    """Return how many leading blocks of ``path`` are in ``held`` (by external hash), hashing only as far as needed."""
    # A generator, so that hashing stops at the first block not held (longest_prefix_in reads
    # its chain once, front to back).
    chain = (ext(path[: i + 1]) for i in range(len(path)))
    return longest_prefix_in(chain, held)


def seq(*locals_: int, start: Sequence[int] = ()) -> list[tuple[int, int]]:
    """Return blocks for ``locals_`` continuing the local prefix ``start``, with prefix-derived hashes."""
    prefix = list(start)
    out = []
    for x in locals_:
        prefix.append(x)
        out.append((seq_hash(prefix), x))
    return out

"""What a target's door cannot carry, so that a row checks the rest and says what it left out.

kvproof's trees and the ``RadixTree`` binding offer the whole tree API. A target reached through
another surface (Dynamo's standalone indexer over ZMQ and HTTP, the selection service through
peer recovery, a process speaking the wire protocol) may lack parts of it: no ``early_exit``, no
per-rank removal, no JSON door for malformed payloads, stores its converter rewrites. Such a
target declares a ``Surface``: for each missing part, why. A call the surface cannot carry
raises ``NotOnSurface`` before it touches the target, and the rows skip that call (on both trees
of a comparison) and count it under its part's name in the report. Nothing left out is counted
as checked.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


class NotOnSurface(Exception):
    """The target's surface cannot carry this call; ``part`` names the missing part, the message says why."""

    def __init__(self, part: str, why: str) -> None:
        super().__init__(f"not on the target's surface ({part}): {why}")
        self.part, self.why = part, why


@dataclass(frozen=True)
class Surface:
    """Each field: why that part of the tree API is missing from the target's door (None: it is there)."""

    early_exit: str | None = None  # find_matches(..., early_exit=True)
    rank_removal: str | None = None  # remove_worker_dp_rank
    wire: str | None = None  # malformed JSON payloads reach the target (the bad-input and fuzz rows)
    self_parented: str | None = None  # a store whose parent is among its own blocks
    duplicate_hashes: str | None = None  # a store that lists a block hash twice
    outcomes: str | None = None  # an event's outcome (accepted, or which rejection) comes back from apply_event

    def gaps(self) -> dict[str, str]:
        """The missing parts, by name, with why."""
        return {f.name: why for f in fields(self) if (why := getattr(self, f.name)) is not None}


FULL = Surface()
"""The whole tree API: kvproof's trees, the binding, any target that declares nothing."""


def surface_of(tree: Any) -> Surface:
    """The surface a tree (or its class) declares, else ``FULL``."""
    declared = getattr(tree, "surface", None)
    return declared if isinstance(declared, Surface) else FULL


def lacks(tree: Any, part: str) -> str | None:
    """Why ``tree``'s surface lacks ``part`` (a field name of ``Surface``), or None when it has it."""
    return getattr(surface_of(tree), part)


def store_not_carried(surface: Surface, parent_hash: int | None, hashes: list[int]) -> NotOnSurface | None:
    """The refusal a store with ``parent_hash`` and block ``hashes`` meets on ``surface`` (None: it is carried)."""
    if surface.self_parented is not None and parent_hash is not None and parent_hash in hashes:
        return NotOnSurface("self_parented", surface.self_parented)
    if surface.duplicate_hashes is not None and len(set(hashes)) != len(hashes):
        return NotOnSurface("duplicate_hashes", surface.duplicate_hashes)
    return None


class LeftOut:
    """What a run did not ask of a target because its surface lacks it: per part, the calls left out, why, and where."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.why: dict[str, str] = {}
        self.where: dict[str, list[str]] = {}

    def add(self, part: str, why: str, n: int = 1, where: str = "") -> None:
        """Count ``n`` calls of ``part`` left out; ``where`` names the case (the first few are kept)."""
        self.counts[part] = self.counts.get(part, 0) + n
        self.why.setdefault(part, why)
        if where and len(self.where.setdefault(part, [])) < 3:
            self.where[part].append(where)

    def merge(self, other: LeftOut) -> None:
        for part, n in other.counts.items():
            self.add(part, other.why[part], n)
            for where in other.where.get(part, []):
                if len(self.where.setdefault(part, [])) < 3:
                    self.where[part].append(where)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def lines(self) -> list[str]:
        """One line per part: ``left out: 12 early_exit calls: the indexer's /query has no early_exit``."""
        out = []
        for part, n in sorted(self.counts.items()):
            where = self.where.get(part)
            shown = f" (e.g. {'; '.join(where)})" if where else ""
            out.append(f"left out: {n} {part} call{'s' if n != 1 else ''}{shown}: {self.why[part]}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            part: {"calls": n, "why": self.why[part], "where": self.where.get(part, [])}
            for part, n in sorted(self.counts.items())
        }

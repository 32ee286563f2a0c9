"""What kind of difference two trees show, and whether it is a known finding.

A differential run compares a *subject* with an *oracle*; every difference it finds gets
one of five kinds, from the most to the least severe:

- ``contract``: the subject breaks the contract of ``spec/contract.py`` whatever the oracle
  says: it over-credits a rank (a score above the prefix the rank holds), or it accepts a
  store under a parent the rank does not hold. Always a bug.
- ``oracle-contract``: the trees' scores differ and the *oracle's* breaks the contract (an
  over-credit or an unexplained undercount) while the subject's keeps it: the finding is the
  oracle's (Dynamo's concurrent indexer over-credits, docs/dynamo-findings.md F10). It fails a
  run as a contract break does: the run found a bug, in the tree it trusted.
- ``outcome``: the two trees answer an operation differently (accepted vs rejected, or a
  different error kind).
- ``score``: a plain ``find_matches`` score differs (within the contract).
- ``dump``: ``dump_tree_as_events`` differs, as a multiset of events.
- ``early-exit``: only ``find_matches(..., early_exit=True)`` differs, and the subject's
  answer obeys the early-exit law (``spec.match.early_exit_agrees``; one that breaks it is a
  ``contract`` difference). The early-exit walk stops at node boundaries, so its answer
  depends on how a tree cut its edges: known finding F7, reported, and failed under
  ``strict_shape`` (or ``strict``, which fails every known finding).

After a ``contract``, ``outcome`` or ``score`` difference the two trees hold different
state, so a run stops comparing that stream there; after a ``dump`` or ``early-exit``
difference it goes on (the state may still agree).

**Known findings.** A difference that a finding of ``docs/*-findings.md`` explains is
labelled with the finding's id by its recognizer (``KNOWN``) and tolerated unless
``strict``. A recognizer is a pure predicate over the difference's evidence; it never
widens a kind (a known dump difference is still a dump difference).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..harness.targets import DumpEntry, canonical, replayable

CONTRACT, ORACLE_CONTRACT, OUTCOME, SCORE, DUMP, EARLY_EXIT = (
    "contract",
    "oracle-contract",
    "outcome",
    "score",
    "dump",
    "early-exit",
)
KINDS = (CONTRACT, ORACLE_CONTRACT, OUTCOME, SCORE, DUMP, EARLY_EXIT)
"""Every kind of difference, most severe first."""


@dataclass(frozen=True)
class Difference:
    """One difference between subject and oracle: its kind, where, what, and the finding that explains it."""

    kind: str
    op_index: int
    detail: str
    known: str | None = None
    oracle_only: bool = False  # the known finding is the oracle's alone: the subject does not show it

    def fails(self, strict: bool = False, strict_shape: bool = False) -> bool:
        """Whether this difference fails a run: early-exit only under ``strict_shape``, known ones only under
        ``strict``, and a known finding that only the oracle shows never (the subject is not at fault)."""
        if self.kind == EARLY_EXIT:
            return strict_shape or strict
        if self.known is not None and self.oracle_only:
            return False
        return self.known is None or strict

    def label(self) -> str:
        return label(self.kind, self.known, self.oracle_only)


def label(kind: str, known: str | None, oracle_only: bool = False) -> str:
    """How a difference is named in reports: ``dump (known: F2, the oracle)``."""
    return f"{kind} (known: {known}{', the oracle' if oracle_only else ''})" if known else kind


def severity(kind: str) -> int:
    """0 for the most severe kind (``contract``)."""
    return KINDS.index(kind)


def worst(differences: list[Difference], strict: bool = False, strict_shape: bool = False) -> Difference | None:
    """The most severe failing difference, or None if none fails."""
    failing = [d for d in differences if d.fails(strict, strict_shape)]
    return min(failing, key=lambda d: (severity(d.kind), d.op_index)) if failing else None


# ----------------------------------------------------------------------------- known findings


def unreplayable_only(subject_dump: list[DumpEntry], oracle_dump: list[DumpEntry]) -> bool:
    """F2: the dumps differ only by entries that a fresh tree would refuse, in the dump that has them.

    Dynamo writes a ``stored`` event for a rank below a parent the rank no longer holds
    (docs/dynamo-findings.md F2); no tree can replay such an event, so a tree that leaves
    it out is not wrong, and neither is one that writes it.
    """
    kept_a, _ = replayable(subject_dump)
    kept_b, _ = replayable(oracle_dump)
    return canonical(kept_a) == canonical(kept_b)


DumpRecognizer = Callable[[list[DumpEntry], list[DumpEntry]], bool]

KNOWN_DUMP: dict[str, DumpRecognizer] = {"F2": unreplayable_only}
"""Recognizers of known dump findings, by finding id (docs/dynamo-findings.md)."""


def dump_difference(op_index: int, subject_dump: list[DumpEntry], oracle_dump: list[DumpEntry]) -> Difference | None:
    """Compare two dumps as multisets; label the difference with a known finding when one explains it."""
    a, b = canonical(subject_dump), canonical(oracle_dump)
    if a == b:
        return None
    only_a = [e for e in a if e not in b]
    only_b = [e for e in b if e not in a]
    detail = (
        f"at end: dump differs: only in subject {only_a[:4]}{' ...' if len(only_a) > 4 else ''}; "
        f"only in oracle {only_b[:4]}{' ...' if len(only_b) > 4 else ''}"
    )
    known = next((name for name, recognize in KNOWN_DUMP.items() if recognize(subject_dump, oracle_dump)), None)
    oracle_only = known is not None and not replayable(subject_dump)[1]
    return Difference(DUMP, op_index, detail, known, oracle_only)


@dataclass
class KindCounts:
    """How many streams showed each kind of difference (a stream counts once per kind)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    known: dict[str, int] = field(default_factory=dict)

    def add(self, differences: list[Difference]) -> None:
        for kind in {d.kind for d in differences}:
            self.counts[kind] += 1
        for name in {d.known for d in differences if d.known}:
            self.known[name] = self.known.get(name, 0) + 1

    def line(self) -> str:
        kinds = " ".join(f"{k}={v}" for k, v in self.counts.items())
        known = ",".join(f"{k}:{v}" for k, v in sorted(self.known.items())) or "none"
        return f"{kinds} known={known}"


CONCURRENT_OVERCREDIT = (
    "this is the over-credit of Dynamo's concurrent indexer (docs/dynamo-findings.md F10): its match walk skips the "
    "intersection of the active ranks with a child's holders when the two sets have equal size, so a rank is carried "
    "into a child it does not hold; in every release from 1.1.0 to 1.6.1, fixed upstream after 1.6.1 (nightly "
    "1.6.0.dev20261014). A bug under every rule set, so the row fails"
)


def named_finding(component: str | None, detail: str) -> str:
    """The line naming the known Dynamo bug a failure shows, when kvproof knows it ("" otherwise): an over-credit by
    Dynamo's concurrent tree is F10."""
    if component == "concurrent" and ("over-credit" in detail or "overcount" in detail):
        return CONCURRENT_OVERCREDIT
    return ""

"""Rule variants: where Dynamo's tree behaves differently between releases *by intent*.

kvproof's reference states one rule set exactly (the newest release it pins). Where an
earlier release of ``ai-dynamo-runtime`` behaved differently on purpose, the alternative is
a named **variant**: a documented rule with its upstream reference, which the reference
tree can be asked to follow instead. A **rule set** is a named combination of variants,
one per release line whose behaviour kvproof has established (docs/releases.md).

Variants change what is *exact*, never what is *safe*: the contract of
``spec/contract.py`` (no overcount, no unexplained undercount, no store under an unheld
parent) is the same under every rule set, and a release that breaks it has a bug whatever
rule set it is judged by.

The variants are the members of ``Variant`` (named in reports as below). Each is a parameter of the
spec rule it changes, whose docstring says which releases follow which rule; the trees hold a
``RuleSet`` and pass it through, and never branch on a variant themselves:

- ``reuse-dead-nodes`` (``spec.shape.is_released_by_store``, ``is_released_at_eviction``): a node that has lost every holder is reused (split, extended) by a
  later store that passes through it, instead of being released and rebuilt
  (docs/dynamo-findings.md F1). The shape differs, so ``early_exit`` answers, the dump's
  cut into events, and which lookup entries a later removal scrubs differ too.
- ``cleared-clears-worker`` (``spec.contract.clears_whole_worker``, ``cleared_ranks``): a ``cleared`` event from ``(worker, dp_rank)`` empties every
  rank of the worker, not just the one that sent it (the contract's ``on_cleared`` follows
  the same variant: what the event *means* changes, not what is safe).
- ``self-parent-allowed`` (``spec.shape.check_store_parent``): a store whose parent is its own first block is not refused as
  an invalid sequence; it is handled like any other store.
- ``blocks-as-arrays`` (wire format; no tree rule, the bad-input law's ``VALID_UNDER``): a stored block may be written as the array
  ``[block_hash, tokens_hash]`` instead of an object; the reference refuses it as malformed.
- ``per-block-nodes`` (``spec.shape.attached_edges``, ``may_extend_leaf``, ``should_clear_children``,
  ``is_released_at_eviction``; ``spec.dump.merges_chains``; ``spec.invariants.is_holderless_childless``): every node holds exactly one block (no compressed edges), and a
  removal never clears the children of a node nobody holds; the tree of releases before
  the compressed radix tree. ``early_exit`` then stops after the
  first *block* where one rank is left, and the dump writes one event per block.
- ``removal-skips-unknown`` (the concurrent tree; ``spec.coverage.remove_batch``): a removal skips a hash the rank does not
  hold and the event succeeds (a rank the tree has never seen still gets ``BlockNotFound``);
  the single-threaded tree removes the held ones and then reports ``BlockNotFound``.

A rule set is **exact** when the reference answers every call as the release does. The
concurrent tree's is not: where the contract leaves an answer open (a store under a parent
the rank holds but cannot reach, a removal naming a block it cannot reach, a score between
the reachable and the held prefix, dump entries below an eviction's cut), it keeps or clears
subtrees on rules of its own, so there a difference that keeps the contract is known finding
F11 (docs/dynamo-findings.md), not a failure; every contract break still fails.

A rule set also names its **component**: ``tree`` for the single-threaded ``RadixTree`` (the
binding, ``KvIndexer``), ``concurrent`` for ``ThreadPoolIndexer<ConcurrentRadixTreeCompressed>``
(the standalone indexer with two or more threads, the selection service, the frontend router).

Source: observed on every release of ai-dynamo-runtime from 0.6.1 to 1.6.1
(``kvproof releases``; docs/releases.md); upstream references in ``Variant``'s members.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from packaging.version import InvalidVersion, Version


class UnknownVariant(KeyError):
    """A variant that kvproof does not know: a misspelt name, or a string where a ``Variant`` is due.

    A typo is an error, never ``False``: ``Variant.named`` refuses a name no member has, and a
    ``RuleSet`` refuses anything in its variants (or asked of ``has``) that is not a ``Variant``.
    """


class UnknownRuleSet(KeyError):
    """A rule set name that ``RULE_SETS`` does not hold (``rule_set_named``)."""


@functools.total_ordering
class Variant(Enum):
    """One intended alternative to a rule of the reference, with where it comes from.

    The member's value is its name as the reports print it (``reuse-dead-nodes``); its fields say the
    ``rule`` of the reference it replaces, its ``statement`` (what it says instead), the ``upstream``
    change that ended it (or introduced the reference's rule), the ``releases`` that follow it,
    whether the tree follows it (``tree``; False: a wire-format variant, consulted by the bad-input
    law only) and the Dynamo ``component`` that does (``RuleSet.component``). The spec function
    whose rule a variant changes takes the rule set and states there which releases follow which
    rule; the trees only pass their rule set through. Members order by name, as the reports list them.
    """

    rule: str
    statement: str
    upstream: str
    releases: str
    tree: bool
    component: str

    def __new__(
        cls, label: str, rule: str, statement: str, upstream: str, releases: str, tree: bool = True, component: str = "tree"
    ) -> Variant:
        member = object.__new__(cls)
        member._value_ = label
        member.rule, member.statement, member.upstream, member.releases = rule, statement, upstream, releases
        member.tree, member.component = tree, component
        return member

    REUSE_DEAD_NODES = (
        "reuse-dead-nodes",
        "a store releases a node nobody holds and builds a fresh one (F1)",
        "a node that has lost every holder is reused by a later store that passes through it: split at the "
        "divergence or covered again, like any other node",
        "ended by ai-dynamo/dynamo PR #14878 (release unowned radix branches after eviction), first in 1.6.0",
        "1.3.0.post1 to 1.5.1",
    )
    CLEARED_CLEARS_WORKER = (
        "cleared-clears-worker",
        "a cleared event empties only the (worker, dp_rank) that sent it",
        "a cleared event empties every dp rank of the sending worker (stated as intended by a maintainer on "
        "ai-dynamo/dynamo PR #3597, dp rank routing)",
        "ended in 1.4.0 by the per-rank clear (upstream PR not identified)",
        "0.6.1 to 1.3.1",
    )
    SELF_PARENT_ALLOWED = (
        "self-parent-allowed",
        "a store whose parent_hash is its own first block hash is an InvalidBlockSequence (docs/sources.md#crtc-12 item 1, E14)",
        "a store whose parent is its own first block is handled like any other store: refused as "
        "ParentBlockNotFound when the rank does not hold that block, applied when it does",
        "ended with the compressed tree of ai-dynamo/dynamo PR #10542, first in 1.3.0",
        "0.6.1 to 1.2.1",
    )
    BLOCKS_AS_ARRAYS = (
        "blocks-as-arrays",
        "a stored block is an object {block_hash, tokens_hash, ...}; anything else is malformed",
        "a stored block may also be the two-element array [block_hash, tokens_hash] (the decoder's default "
        "sequence form of a record)",
        "ended in 1.6.0 (observed; upstream change not identified)",
        "0.6.1 to 1.5.1",
        False,
    )
    PER_BLOCK_NODES = (
        "per-block-nodes",
        "nodes carry compressed edges of many blocks, cut only where ranks diverge",
        "every node holds one block: a store attaches a chain of one-block nodes, early_exit stops after the first "
        "block with a single rank left, the dump writes one event per block, and a removal never clears the "
        "children of a node nobody holds",
        "ended by ai-dynamo/dynamo PR #10542 (compress single-threaded radix recovery dumps), first in 1.3.0",
        "0.6.1 to 1.2.1 (and earlier)",
    )
    REMOVAL_SKIPS_UNKNOWN = (
        "removal-skips-unknown",
        "a removal naming a block the rank does not hold removes the held ones, then fails BlockNotFound",
        "a removal skips every hash the rank does not hold and succeeds: the concurrent tree deletes the "
        "(absent) lookup entry and moves on (docs/sources.md#crtc-4-1)",
        "the concurrent tree's rule since it was written (ai-dynamo/dynamo PR #10542 era); the single-threaded "
        "tree keeps BlockNotFound",
        "the concurrent indexer of 1.1.0 to 1.6.1",
        True,
        "concurrent",
    )

    def __str__(self) -> str:
        return str(self.value)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Variant):
            return NotImplemented
        return str(self.value) < str(other.value)

    @classmethod
    def named(cls, name: str) -> Variant:
        """The variant called ``name``; an unknown name is an ``UnknownVariant`` listing the known ones."""
        for variant in cls:
            if variant.value == name:
                return variant
        raise UnknownVariant(f"unknown variants [{name!r}]: use {', '.join(v.value for v in cls)}")


def variants_named(names: Iterable[str]) -> frozenset[Variant]:
    """The variants called ``names`` (``Variant.named`` each): an unknown name is an ``UnknownVariant``."""
    return frozenset(Variant.named(name) for name in names)


def check_variants(variants: Iterable[object]) -> None:
    """Raise ``UnknownVariant`` if anything in ``variants`` is not a ``Variant`` (a name, misspelt or not, included)."""
    strays = [v for v in variants if not isinstance(v, Variant)]
    if strays:
        raise UnknownVariant(
            f"unknown variants [{', '.join(sorted(map(repr, strays)))}]: a rule set holds Variant members "
            f"(Variant.named looks one up by name: {', '.join(v.value for v in Variant)})"
        )


@dataclass(frozen=True, slots=True)
class RuleSet:
    """A named combination of variants, and the releases it describes (``first`` to ``last``, inclusive).

    Only ``Variant`` members make one: a string among ``variants`` (a name, misspelt or not) is an
    ``UnknownVariant``, and so is asking ``has`` of anything but a ``Variant``.
    """

    name: str
    variants: frozenset[Variant]
    first: str
    last: str
    summary: str
    component: str = "tree"  # "tree": the single-threaded RadixTree; "concurrent": ThreadPoolIndexer over the CRTC
    exact: bool = True  # False: where the contract leaves an answer open, the tree may differ from the reference (F11)

    def __post_init__(self) -> None:
        check_variants(self.variants)

    def has(self, variant: Variant) -> bool:
        """Whether the rule set follows ``variant``; anything but a ``Variant`` is an ``UnknownVariant``."""
        if not isinstance(variant, Variant):
            raise UnknownVariant(f"not a variant: {variant!r} (Variant.named to look one up by name)")
        return variant in self.variants

    def describe(self) -> str:
        return f"{self.name} ({', '.join(map(str, sorted(self.variants))) or 'no variants: the reference as written'})"


_V = Variant
RULE_SETS: dict[str, RuleSet] = {
    r.name: r
    for r in (
        RuleSet("dynamo-1.6", frozenset(), "1.6.0", "1.6.1", "the compressed tree that releases dead nodes"),
        RuleSet(
            "dynamo-1.4",
            frozenset({_V.REUSE_DEAD_NODES, _V.BLOCKS_AS_ARRAYS}),
            "1.4.0",
            "1.5.1",
            "the compressed tree that reuses dead nodes",
        ),
        RuleSet(
            "dynamo-1.3",
            frozenset({_V.REUSE_DEAD_NODES, _V.BLOCKS_AS_ARRAYS, _V.CLEARED_CLEARS_WORKER}),
            "1.3.0.post1",
            "1.3.1",
            "the compressed tree whose cleared event empties the whole worker",
        ),
        RuleSet(
            "dynamo-0.6",
            frozenset({_V.PER_BLOCK_NODES, _V.BLOCKS_AS_ARRAYS, _V.CLEARED_CLEARS_WORKER, _V.SELF_PARENT_ALLOWED}),
            "0.1.1",
            "1.2.1",
            "the per-block tree (with (worker, dp_rank) scores and a dump from 0.6.1)",
        ),
        RuleSet(
            "dynamo-1.6-concurrent",
            frozenset({_V.REMOVAL_SKIPS_UNKNOWN, _V.SELF_PARENT_ALLOWED}),
            "1.4.0",
            "1.6.1",
            "the concurrent indexer (ThreadPoolIndexer over the CRTC)",
            "concurrent",
            exact=False,
        ),
        RuleSet(
            "dynamo-1.3-concurrent",
            frozenset({_V.REMOVAL_SKIPS_UNKNOWN, _V.SELF_PARENT_ALLOWED, _V.CLEARED_CLEARS_WORKER}),
            "1.3.0.post1",
            "1.3.1",
            "the concurrent indexer whose cleared event empties the whole worker",
            "concurrent",
            exact=False,
        ),
    )
}
"""Every rule set, newest first. ``dynamo-1.6`` is the reference as written."""

DEFAULT_RULES = RULE_SETS["dynamo-1.6"]


def version_key(version: str) -> Version:
    """Order release strings as PEP 440 does (``packaging``), a local label (``+cu128``) set aside.

    ``1.6`` is ``1.6.0``; ``1.3.0.post1`` follows ``1.3.0`` and post numbers compare as numbers; a pre-
    or dev release (``1.6.1rc1``, ``1.6.1.dev3``) comes before its release; a local build of a release
    (``1.6.1+local``) is that release. A string that is not a version raises ``InvalidVersion``.

    Source: PEP 440 "Version scheme" (https://peps.python.org/pep-0440/) (the package index orders ai-dynamo-runtime's releases so).
    """
    return Version(Version(version).public)


def rule_set_for(version: str, component: str = "tree") -> RuleSet | None:
    """The rule set describing ``component`` of release ``version``, or None when kvproof has not established one
    (or it is no version)."""
    try:
        key = version_key(version)
    except InvalidVersion:
        return None
    for rules in RULE_SETS.values():
        if rules.component == component and version_key(rules.first) <= key <= version_key(rules.last):
            return rules
    return None


def rule_set_named(name: str) -> RuleSet:
    """Look a rule set up by name; an unknown name is an ``UnknownRuleSet`` (a ``KeyError``) listing the known ones."""
    if name in RULE_SETS:
        return RULE_SETS[name]
    raise UnknownRuleSet(f"unknown rule set {name!r}: use {', '.join(RULE_SETS)}")


def with_variants(variants: frozenset[Variant]) -> RuleSet:
    """The rule set (named after its variants) that follows exactly ``variants``; anything in ``variants``
    that is not a ``Variant`` is an ``UnknownVariant`` (``variants_named`` turns names into variants)."""
    check_variants(variants)
    for rules in RULE_SETS.values():
        if rules.variants == variants:
            return rules
    name = "+".join(map(str, sorted(variants))) or "reference"
    return RuleSet(name, variants, "", "", "an explanatory combination of variants")

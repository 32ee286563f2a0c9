"""What guards each rule, read off the code: its proofs, its laws, its gate rows, its variants.

The site's tables come from here (``ext.py`` renders them), so they are the registries the
commands run, never a list kept by hand:

- **proofs**: ``proofs.registry.Z3_PROOFS`` (each names the spec kernels it is about; the
  site proves them again at build time, with their negative controls) and the CrossHair
  contracts and ``diffbehavior`` pairs of ``proofs.contracts``;
- **laws**: the Hypothesis laws of each room (``stateful_tests/{tree,sequences,deepinfer}``);
  a law *checks* a rule when its body names the rule's function;
- **gate rows**: ``kvproof.gate.all_checks()`` with their controls;
- **variants and rule sets**: ``spec.rules``.

A rule is *proved by* a proof that names the function itself or a spec kernel the function
calls (``split_at`` calls ``prefix_cutoff`` and ``suffix_cutoff``, which the split theorem is about).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

FAMILIES = ("tree", "sequences", "deepinfer")

SPEC = "kvproof.spec."


def qualified(dotted: str) -> str:
    """``spec.shape.split_at`` (the proofs' spelling) as ``kvproof.spec.shape.split_at``."""
    dotted = dotted.strip()
    return dotted if dotted.startswith("kvproof.") else f"kvproof.{dotted}"


def resolve(dotted: str) -> Any:
    """The object named ``kvproof.module.attr``."""
    module, _, name = qualified(dotted).rpartition(".")
    return getattr(importlib.import_module(module), name)


def names_in(function: Callable[..., Any]) -> set[str]:
    """Every name and attribute a function's source mentions."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError):
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return found


def kernels_of(dotted: str) -> set[str]:
    """The rule itself and the spec functions its body calls, by qualified name."""
    function = resolve(dotted)
    called = {qualified(dotted)}
    for name in names_in(function):
        target = getattr(function, "__globals__", {}).get(name)
        module = getattr(target, "__module__", "") or ""
        if inspect.isfunction(target) and module.startswith(SPEC):
            called.add(f"{module}.{target.__name__}")
    return called


# ----------------------------------------------------------------------------- proofs


@dataclass(frozen=True)
class ProofEntry:
    """One proof or contract check: what it claims, about which kernels, by which method, within which bounds."""

    name: str
    claim: str
    functions: tuple[str, ...]
    method: str
    bounds: str
    family: str


@cache
def proofs() -> tuple[ProofEntry, ...]:
    """Every Z3 proof and every CrossHair check, in ``kvproof prove``'s order."""
    from ..proofs import contracts
    from ..proofs.registry import Z3_PROOFS

    def family_of(functions: tuple[str, ...]) -> str:
        module = functions[0].removeprefix(SPEC).split(".")[0]
        return {"coverage": "tree", "shape": "tree", "match": "tree", "prefill": "sequences", "token_load": "sequences"}.get(
            module, "deepinfer"
        )

    entries = [
        ProofEntry(p.name, p.claim, tuple(qualified(f) for f in p.functions.split(",")), "Z3", p.bounds, p.family)
        for p in Z3_PROOFS
    ]
    for name, functions in contracts.CHECKED.items():
        claim = (getattr(contracts, name).__doc__ or name).strip().splitlines()[0]
        fs = tuple(qualified(f) for f in functions.split(","))
        entries.append(ProofEntry(name, claim, fs, "CrossHair check", "symbolic", family_of(fs)))
    for left, _, claim in contracts.DIFF_PAIRS:
        fs = (qualified(claim.split(" vs ")[0]),)
        entries.append(ProofEntry(left, claim, fs, "CrossHair diffbehavior", "symbolic", family_of(fs)))
    return tuple(entries)


def proofs_of(dotted: str) -> list[ProofEntry]:
    """The proofs about the rule ``dotted`` or about a spec kernel it calls."""
    kernels = kernels_of(dotted)
    return [p for p in proofs() if kernels & set(p.functions)]


@dataclass(frozen=True)
class ProvedRow:
    """A Z3 proof as run at build time: its verdict and its negative control's verdict and model."""

    claim: str
    functions: str
    bounds: str
    result: str
    control: str
    witness: str


def prove_family(family: str) -> list[ProvedRow]:
    """Run every Z3 proof of ``family`` with its negative control (a fraction of a second in all)."""
    from ..proofs.harness import run
    from ..proofs.registry import Z3_PROOFS

    rows = []
    for proof in Z3_PROOFS:
        if proof.family == family:
            r = run(proof)
            rows.append(ProvedRow(proof.claim, proof.functions, proof.bounds, r.result, r.control, r.counterexample))
    return rows


# ----------------------------------------------------------------------------- laws


@dataclass(frozen=True)
class LawEntry:
    """One sampled law: its name, its statement, and the names its body mentions."""

    name: str
    statement: str
    names: frozenset[str]


def _first_paragraph(doc: str | None) -> str:
    return " ".join(inspect.cleandoc(doc or "").split("\n\n")[0].split())


@cache
def laws(family: str) -> tuple[LawEntry, ...]:
    """The Hypothesis laws of a room, as the gate runs them."""
    if family == "tree":
        from ..stateful_tests.tree import laws as tree_laws

        return tuple(LawEntry(f.__name__, _first_paragraph(f.__doc__), frozenset(names_in(f))) for f in tree_laws.LAWS)
    if family == "sequences":
        from ..stateful_tests.sequences import laws as seq_laws

        return tuple(
            LawEntry(law.name, _first_paragraph(law.body.__doc__), frozenset(names_in(law.body))) for law in seq_laws.LAWS
        )
    if family == "deepinfer":
        from ..stateful_tests.deepinfer import roundtrip_laws

        return tuple(
            LawEntry(
                f"{law.name} {law.run.__name__}",
                f"{law.title}. {_first_paragraph(law.run.__doc__)}",
                frozenset(names_in(law.run)),
            )
            for law in roundtrip_laws.LAWS
        )
    raise KeyError(f"unknown family {family!r}: use {', '.join(FAMILIES)}")


def laws_of(dotted: str) -> list[LawEntry]:
    """The laws, of every room, whose body names the rule's function."""
    name = qualified(dotted).rpartition(".")[2]
    return [law for family in FAMILIES for law in laws(family) if name in law.names]


# ----------------------------------------------------------------------------- gate rows, variants


def gate_rows(family: str) -> list[tuple[str, str, str, str]]:
    """``(layer, row, what it checks, its control)`` for each gate row of ``family``."""
    from ..gate import all_checks
    from ..gate.controls import CONTROLS

    control = {c.row: c.describe() for c in CONTROLS}
    return [(c.layer, c.name, c.what, control.get(c.name, "-")) for c in all_checks() if c.family == family]


def variant_rows() -> list[tuple[str, str, str, str, str]]:
    """``(variant, the rule it replaces, what it says instead, upstream, releases)`` from ``spec.rules.Variant``."""
    from ..spec.rules import Variant

    return [(str(v), v.rule, v.statement, v.upstream, v.releases) for v in Variant]


def rule_set_rows() -> list[tuple[str, str, str, str]]:
    """``(rule set, releases, variants, summary)`` from ``spec.rules.RULE_SETS``, newest first."""
    from ..spec.rules import RULE_SETS

    return [
        (r.name, f"{r.first} to {r.last}", ", ".join(map(str, sorted(r.variants))) or "none: the reference as written", r.summary)
        for r in RULE_SETS.values()
    ]

"""Every proof and contract check, as one table: ``kvproof prove`` prints it, the gate runs it,
``proofs/README.md`` is generated from it (``kvproof.docs``; a test fails if the committed file drifts).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass

from . import deepinfer, prefill, tree_rules
from .harness import Proof, run

Z3_PROOFS: list[Proof] = tree_rules.PROOFS + deepinfer.PROOFS + prefill.PROOFS


@dataclass
class ProofRow:
    property: str
    function: str
    method: str
    bounds: str
    seconds: float
    result: str
    control: str
    counterexample: str

    @builtins.property  # the field `property` shadows the builtin in this class body (for mypy; not at run time)
    def ok(self) -> bool:
        return self.result in ("proved", "confirmed", "not refuted", "no difference") and self.control == "caught"


@dataclass(frozen=True)
class Budget:
    z3_timeout_ms: int = 10_000
    crosshair_condition_s: float = 1.0
    crosshair_diff_s: float = 2.0


CI = Budget()
DEEP = Budget(z3_timeout_ms=60_000, crosshair_condition_s=10.0, crosshair_diff_s=30.0)


def run_z3(budget: Budget = CI) -> list[ProofRow]:
    """Run every Z3 proof with its negative control."""
    rows = []
    for proof in Z3_PROOFS:
        r = run(proof, budget.z3_timeout_ms)
        shown = ", ".join(part for part in r.counterexample.split(", ") if not part.startswith(("div0", "mod0")))
        rows.append(
            ProofRow(
                proof.claim,
                proof.functions,
                "Z3",
                proof.bounds,
                r.seconds,
                r.result,
                r.control,
                f"control ({proof.broken_rule}): {shown}" if r.result == "proved" else shown,
            )
        )
    return rows


def run_crosshair(budget: Budget = CI) -> list[ProofRow]:
    """Run every CrossHair contract and diffbehavior pair with its broken twin."""
    from .crosshair_runner import contract_checks, diff_checks, run_checks

    return [
        ProofRow(
            c.claim,
            c.functions,
            c.method,
            c.bounds,
            c.seconds,
            c.result,
            c.control,
            f"control: {c.counterexample}" if c.control == "caught" else c.counterexample,
        )
        for c in run_checks(contract_checks(budget.crosshair_condition_s) + diff_checks(budget.crosshair_diff_s))
    ]


def run_all(budget: Budget = CI, crosshair: bool = True) -> list[ProofRow]:
    """Run every Z3 proof and, unless told not to, every CrossHair check."""
    return run_z3(budget) + (run_crosshair(budget) if crosshair else [])


HEADERS = ("property", "spec function", "method", "bounds", "seconds", "result")


def table_rows(rows: list[ProofRow]) -> list[tuple[str, ...]]:
    """The table ``kvproof prove`` prints: property, spec function, method, bounds, seconds, result and control."""
    return [(r.property, r.function, r.method, r.bounds, f"{r.seconds:.2f}", f"{r.result}; control {r.control}") for r in rows]


def summary_line(rows: list[ProofRow]) -> str:
    total = sum(r.seconds for r in rows)
    z3 = sum(r.seconds for r in rows if r.method == "Z3")
    return f"{len(rows)} checks, {sum(r.ok for r in rows)} ok, total {total:.1f} s (Z3 {z3:.2f} s)"

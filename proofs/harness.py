"""How a proof is stated, run, and shown to be able to fail.

A ``Proof`` is a theorem about one spec kernel: a builder that, given the rule functions,
returns ``(hypotheses, claim)`` over Z3 terms. ``run`` asserts the hypotheses and the
*negation* of the claim and requires ``unsat`` (tooling.md §6: a ``Solver`` with a timeout,
never ``prove()``, which only prints). Every proof names a deliberately wrong rule; running
the same builder with it must give ``sat``, and the model is the counterexample the table
and the tests print. A proof whose control comes back ``unsat`` is a proof that cannot fail:
the gate reports it as a failure.

The rule functions are the spec's own kernels, called with ``Z3`` (an ``spec.arith.Arith``
whose ``ite`` builds ``If``), so what is proved is the code the trees run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import z3


class Z3Arith:
    """``spec.arith.Arith`` over Z3 terms."""

    @staticmethod
    def ite(cond: Any, then: Any, otherwise: Any) -> Any:
        return z3.If(cond, then, otherwise)

    @staticmethod
    def min(a: Any, b: Any) -> Any:
        return z3.If(a <= b, a, b)

    @staticmethod
    def max(a: Any, b: Any) -> Any:
        return z3.If(a >= b, a, b)

    @staticmethod
    def floordiv(a: Any, b: Any) -> Any:
        # SMT integer division is Euclidean; it equals Python's // for a >= 0 and b > 0,
        # the only domain the kernels use it on (each proof asserts that domain).
        return a / b

    @staticmethod
    def all(*conds: Any) -> Any:
        return z3.And(*conds)


Z3 = Z3Arith()

Builder = Callable[..., tuple[list[Any], Any]]


@dataclass
class Proof:
    """A claim about spec kernels, proved for all inputs in ``bounds`` by Z3."""

    name: str
    claim: str
    functions: str
    bounds: str
    build: Builder
    broken: dict[str, Callable[..., Any] | bool]  # the builder's keyword arguments for the negative control: wrong rules or flags
    broken_rule: str
    family: str = "tree"
    method: str = "Z3"


@dataclass
class ProofResult:
    proof: Proof
    result: str  # "proved" | "FAILED" | "unknown"
    control: str  # "caught" | "MISSED" | "unknown"
    seconds: float
    counterexample: str = ""  # the control's model (or, for a failed proof, the proof's)
    detail: str = field(default="")

    @property
    def ok(self) -> bool:
        return self.result == "proved" and self.control == "caught"


def _check(hypotheses: list[Any], claim: Any, timeout_ms: int) -> tuple[str, str]:
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*hypotheses)
    solver.add(z3.Not(claim))
    verdict = solver.check()
    if verdict == z3.unsat:
        return "unsat", ""
    if verdict == z3.sat:
        model = solver.model()
        shown = ", ".join(f"{d.name()}={model[d]}" for d in sorted(model.decls(), key=lambda d: d.name()))
        return "sat", shown
    return "unknown", solver.reason_unknown()


def run(proof: Proof, timeout_ms: int = 10_000) -> ProofResult:
    """Prove ``proof`` (expect unsat) and run its negative control (expect sat)."""
    started = time.perf_counter()
    verdict, model = _check(*proof.build(), timeout_ms)
    control, witness = _check(*proof.build(**proof.broken), timeout_ms)
    seconds = time.perf_counter() - started
    result = {"unsat": "proved", "sat": "FAILED"}.get(verdict, "unknown")
    caught = {"sat": "caught", "unsat": "MISSED"}.get(control, "unknown")
    shown = model if verdict == "sat" else witness
    return ProofResult(proof, result, caught, seconds, shown, detail=model if verdict == "unknown" else "")

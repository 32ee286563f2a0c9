"""Every proof and contract check, as one table: ``kvproof prove`` prints it, the gate runs it,
``proofs/README.md`` is generated from it (and a test fails if the committed file drifts).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import deepinfer, prefill, tree_rules
from .harness import Proof, run

Z3_PROOFS: list[Proof] = tree_rules.PROOFS + deepinfer.PROOFS + prefill.PROOFS


@dataclass
class Row:
    property: str
    function: str
    method: str
    bounds: str
    seconds: float
    result: str
    control: str
    counterexample: str

    @property
    def ok(self) -> bool:
        return self.result in ("proved", "confirmed", "not refuted", "no difference") and self.control == "caught"


@dataclass(frozen=True)
class Budget:
    z3_timeout_ms: int = 10_000
    crosshair_condition_s: float = 1.0
    crosshair_diff_s: float = 2.0


CI = Budget()
DEEP = Budget(z3_timeout_ms=60_000, crosshair_condition_s=10.0, crosshair_diff_s=30.0)


def run_z3(budget: Budget = CI) -> list[Row]:
    """Run every Z3 proof with its negative control."""
    rows = []
    for proof in Z3_PROOFS:
        r = run(proof, budget.z3_timeout_ms)
        shown = ", ".join(part for part in r.counterexample.split(", ") if not part.startswith(("div0", "mod0")))
        rows.append(Row(proof.claim, proof.functions, "Z3", proof.bounds, r.seconds, r.result, r.control,
                        f"control ({proof.broken_rule}): {shown}" if r.result == "proved" else shown))
    return rows


def run_crosshair(budget: Budget = CI) -> list[Row]:
    """Run every CrossHair contract and diffbehavior pair with its broken twin."""
    from .crosshair_runner import run_contracts, run_diffs

    return [
        Row(c.claim, c.functions, c.method, c.bounds, c.seconds, c.result, c.control,
            f"control: {c.counterexample}" if c.control == "caught" else c.counterexample)
        for c in run_contracts(budget.crosshair_condition_s) + run_diffs(budget.crosshair_diff_s)
    ]


def run_all(budget: Budget = CI, crosshair: bool = True) -> list[Row]:
    """Run every Z3 proof and, unless told not to, every CrossHair check."""
    return run_z3(budget) + (run_crosshair(budget) if crosshair else [])


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def table(rows: list[Row]) -> str:
    """Return the table: property, spec function, method, bounds, seconds, result (and the control's verdict)."""
    widths = (54, 44, 22, 44)
    head = ("property", "spec function", "method", "bounds")
    lines = ["  ".join(f"{h:<{w}}" for h, w in zip(head, widths)) + f"  {'seconds':>7}  result"]
    for r in rows:
        cells = (r.property, r.function, r.method, r.bounds)
        lines.append(
            "  ".join(f"{_cut(c, w):<{w}}" for c, w in zip(cells, widths))
            + f"  {r.seconds:>7.2f}  {r.result}; control {r.control}"
        )
    total = sum(r.seconds for r in rows)
    lines.append(f"{len(rows)} checks, {sum(r.ok for r in rows)} ok, total {total:.1f} s "
                 f"(Z3 {sum(r.seconds for r in rows if r.method == 'Z3'):.2f} s)")
    return "\n".join(lines)


README_PATH = Path(__file__).resolve().parent / "README.md"
"""The generated table, beside this module wherever the package is installed (``kvproof prove --write-readme``)."""

README_HEAD = """# proofs/

Proofs, for all inputs in the stated bounds rather than sampled ones, of the laws `spec/`
states. **This file is generated** by `kvproof prove --write-readme` from the same table
`kvproof prove` prints; `test_proofs.py` fails if it drifts.

- **Z3** proofs are about the spec's own kernels (`spec/arith.py`): the functions the
  reference and the implementation call are called again with Z3 terms, and the solver must
  answer `unsat` for the negation of the claim (`proofs/harness.py`; never `prove()`, which
  cannot fail a test). Each proof is run again over a deliberately wrong rule, which must
  come back `sat`; its model is the counterexample shown.
- **CrossHair** checks PEP 316 contracts on the pure kernels (`proofs/contracts.py`) and
  compares each kernel with an independent statement of its rule (`crosshair
  diffbehavior`); the same contracts over broken rules (`proofs/contracts_broken.py`) must be
  refuted. CrossHair never sees threaded code.

| Property | Spec function | Method | Bounds | Result | Negative control |
|---|---|---|---|---|---|
"""

README_TAIL = """
## What is not proved

- Only the arithmetic kernels are proved for all inputs; the data-structure code around
  them (edge states, trees, lookups, threads) is checked by sampling: the Hypothesis state
  machines, the differential conformance with Dynamo, the lockstep twin and the real-thread
  stress (README.md).
- The match proof bounds chains at four nodes; longer chains are covered by the Hypothesis
  law that the walk equals the kernel, not by Z3.
- The layout-size proof bounds the layout at four segments.
- CrossHair rows marked "not refuted" found no counterexample within their time but did not
  exhaust every path; "confirmed" rows did. The state-construction contract builds real edge
  states and is only sampled this way.
- The GPU round trip, the service queue simulation and the acceptance lab are checked by
  their golden numbers and laws (docs/deepinfer.md), not proved.
"""


def _result_cell(r: Row) -> str:
    # CrossHair may or may not exhaust every path within its time; `kvproof prove` says which.
    return "no counterexample" if r.result in ("confirmed", "not refuted") else r.result


def readme_rows(rows: list[Row]) -> list[str]:
    """The README's table rows without the counterexample values (the part that must not drift)."""
    return [f"| {r.property} | `{r.function}` | {r.method} | {r.bounds} | {_result_cell(r)} | {r.control}" for r in rows]


def readme(rows: list[Row]) -> str:
    body = []
    for stable, r in zip(readme_rows(rows), rows):
        witness = r.counterexample.split(": ", 1)[-1] if r.control == "caught" else "-"
        body.append(f"{stable}: {witness.replace('|', '/')} |")
    return README_HEAD + "\n".join(body) + "\n" + README_TAIL

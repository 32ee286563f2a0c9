"""Run CrossHair over ``proofs.contracts`` and its broken twins, every command in one process.

Each ``check_*`` contract is checked on its own (``crosshair check module.function``), so each gets
a row with its time; ``--report_all`` says whether every condition was "Confirmed over all paths"
(exhaustive) or merely not refuted within the timeout. The same-named function in
``contracts_broken`` must be refuted, or the row fails. Each ``DIFF_PAIRS`` entry runs ``crosshair
diffbehavior``; the broken pairs must differ. ``proofs.crosshair_batch`` runs all these commands one
after another in one process, and ends a broken pair's search at its first difference.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from dataclasses import dataclass
from types import ModuleType

from . import contracts, contracts_broken

PACKAGE = "kvproof.proofs"
DIFF = "CrossHair diffbehavior"


@dataclass
class CrossHairRow:
    name: str
    claim: str
    functions: str
    method: str
    bounds: str
    result: str  # "confirmed" | "not refuted" | "REFUTED" | "differs" | "no difference" | "error"
    control: str  # "caught" | "MISSED" | "none"
    seconds: float
    counterexample: str = ""

    @property
    def ok(self) -> bool:
        return self.result in ("confirmed", "not refuted", "no difference") and self.control == "caught"


@dataclass(frozen=True)
class CrossHairCheck:
    """A row to be: the CrossHair command over a kernel and the same over its broken twin (``None``: none)."""

    name: str
    claim: str
    functions: str
    method: str  # "CrossHair check" | DIFF
    seconds: float  # per condition
    command: list[str]
    twin: list[str] | None


Outcome = tuple[int, str, float]
"""A command's exit code (0 holds, 1 refuted or differs, 2 error), its output and its seconds."""


def contract_checks(per_condition_timeout: float = 1.0) -> list[CrossHairCheck]:
    """Every ``check_*`` contract, each with its same-named broken twin in ``contracts_broken``."""

    def command(module: ModuleType, name: str) -> list[str]:
        timeout = str(per_condition_timeout)
        return ["check", f"{module.__name__}.{name}", "--analysis_kind", "PEP316", "--per_condition_timeout", timeout]

    names = [name for name, f in vars(contracts).items() if name.startswith("check_") and inspect.isfunction(f)]
    return [
        CrossHairCheck(
            name,
            (getattr(contracts, name).__doc__ or name).strip().splitlines()[0],
            contracts.CHECKED[name],
            "CrossHair check",
            per_condition_timeout,
            [*command(contracts, name), "--report_all"],
            command(contracts_broken, name) if hasattr(contracts_broken, name) else None,
        )
        for name in names
    ]


def diff_checks(per_condition_timeout: float = 2.0, module: ModuleType = contracts) -> list[CrossHairCheck]:
    """Every pair of ``module.DIFF_PAIRS`` under ``crosshair diffbehavior``, each with its broken twin.

    ``module`` is ``contracts``; a control passes ``contracts_broken`` to show that the row fails when
    the kernels are their broken twins.
    """

    def command(module: ModuleType, left: str, right: str) -> list[str]:
        timeout = str(per_condition_timeout)
        return ["diffbehavior", f"{module.__name__}.{left}", f"{module.__name__}.{right}", "--per_condition_timeout", timeout]

    broken = contracts_broken.DIFF_PAIRS  # pair i's broken twin is broken[i]
    return [
        CrossHairCheck(
            f"{left} = {right}",
            claim,
            claim.split(" vs ")[0],
            DIFF,
            per_condition_timeout,
            command(module, left, right),
            command(contracts_broken, *broken[i][:2]) if i < len(broken) else None,
        )
        for i, (left, right, claim) in enumerate(module.DIFF_PAIRS)
    ]


def run_checks(checks: list[CrossHairCheck]) -> list[CrossHairRow]:
    """Run every check and its twin in one batch: the kernels' commands, then the twins', a diffbehavior twin
    until its first difference (the difference is the twin's whole verdict)."""
    twins = {c.name: (c.twin, c.method == DIFF) for c in checks if c.twin}
    budget = sum(c.seconds * (1 + bool(c.twin)) for c in checks)
    jobs = [(c.command, False) for c in checks] + list(twins.values())
    outcomes = _batch(jobs, timeout=60 + 20 * budget)  # a hang's guard
    twin_of = dict(zip(twins, outcomes[len(checks) :]))
    return [_row(c, outcome, twin_of.get(c.name)) for c, outcome in zip(checks, outcomes)]


def _batch(jobs: list[tuple[list[str], bool]], timeout: float) -> list[Outcome]:
    """Each job's outcome from one ``crosshair_batch`` process (every one an error if the process fails)."""
    command = [sys.executable, "-m", f"{PACKAGE}.crosshair_batch"]
    try:
        done = subprocess.run(command, input=json.dumps(jobs), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [(2, f"timed out after {timeout:g} s", timeout)] * len(jobs)
    if done.returncode != 0:
        return [(2, done.stderr.strip(), 0.0)] * len(jobs)
    return [(code, out, seconds) for code, out, seconds in json.loads(done.stdout)]


def _result(method: str, code: int, out: str) -> str:
    """A kernel's verdict; a check that holds is "confirmed" only if every condition was confirmed over all paths."""
    if code == 2:
        return "error"
    if method == DIFF:
        return "differs" if code else "no difference"
    if code:
        return "REFUTED"
    infos = [line for line in out.splitlines() if ": info: " in line]
    return "confirmed" if infos and all("Confirmed over all paths" in line for line in infos) else "not refuted"


def _evidence(out: str) -> str:
    """The counterexample a command printed (check's first error, diffbehavior's first ``Given:``), else its last line."""
    lines = out.splitlines()
    for line in lines:
        if ": error: " in line:
            return line.partition(": error: ")[2]
        if line.startswith("Given: "):
            return line
    return lines[-1] if lines else ""


def _row(check: CrossHairCheck, outcome: Outcome, twin: Outcome | None) -> CrossHairRow:
    code, out, seconds = outcome
    result = _result(check.method, code, out)
    holds = result in ("confirmed", "not refuted", "no difference")
    control = "none" if twin is None else "caught" if twin[0] == 1 else "MISSED"
    detail = _evidence(out) if not holds else _evidence(twin[1]) if twin else ""  # the kernel's failure, else the twin's
    return CrossHairRow(
        check.name,
        check.claim,
        check.functions,
        check.method,
        f"symbolic, {check.seconds:g} s per condition",
        result,
        control,
        seconds + (twin[2] if twin else 0.0),
        detail,
    )

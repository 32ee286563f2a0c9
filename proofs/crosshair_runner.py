"""Run CrossHair over ``proofs.contracts`` and its broken twins, one target per subprocess.

Each ``check_*`` contract is checked on its own (``crosshair check module.function``), so
each gets a row with its time; ``--report_all`` says whether every condition was
"Confirmed over all paths" (exhaustive) or merely not refuted within the timeout. The
same-named function in ``contracts_broken`` must be refuted, or the row fails. Each
``DIFF_PAIRS`` entry runs ``crosshair diffbehavior``; the broken pairs must differ.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import time
from dataclasses import dataclass
from types import ModuleType

from . import contracts, contracts_broken

PACKAGE = "kvproof.proofs"


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


def _crosshair(*args: str, timeout: float) -> tuple[int, str]:
    command = [sys.executable, "-m", "crosshair", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 2, "timed out"
    return done.returncode, (done.stdout + done.stderr).strip()


def _line_ranges(module) -> dict[str, range]:
    ranges = {}
    for name, function in vars(module).items():
        if name.startswith("check_") and inspect.isfunction(function):
            lines, start = inspect.getsourcelines(function)
            ranges[name] = range(start, start + len(lines))
    return ranges


def _messages(module, out: str) -> dict[str, list[str]]:
    """Group CrossHair's ``file:line: kind: message`` lines by the contract function they belong to."""
    ranges = _line_ranges(module)
    grouped: dict[str, list[str]] = {}
    path = inspect.getsourcefile(module)
    for line in out.splitlines():
        head, _, rest = line.partition(": ")
        file, _, number = head.rpartition(":")
        if not number.isdigit() or file != path:
            continue
        for name, lines in ranges.items():
            if int(number) in lines:
                grouped.setdefault(name, []).append(rest)
    return grouped


def run_contracts(per_condition_timeout: float = 1.0) -> list[CrossHairRow]:
    """Check every contract in one CrossHair run, and every broken twin in another."""
    started = time.perf_counter()
    args = ["--analysis_kind", "PEP316", "--per_condition_timeout", str(per_condition_timeout)]
    budget = 120 + 40 * per_condition_timeout
    _, out = _crosshair("check", f"{PACKAGE}.contracts", "--report_all", *args, timeout=budget)
    _, broken_out = _crosshair("check", f"{PACKAGE}.contracts_broken", *args, timeout=budget)
    found, refuted = _messages(contracts, out), _messages(contracts_broken, broken_out)
    names = list(_line_ranges(contracts))
    share = (time.perf_counter() - started) / max(1, len(names))
    rows = []
    for name in names:
        messages = found.get(name, [])
        if any(m.startswith("error:") for m in messages):
            result = "REFUTED"
        elif messages and all("Confirmed over all paths" in m for m in messages):
            result = "confirmed"
        else:
            result = "not refuted"
        control, witness = "none", ""
        if name in _line_ranges(contracts_broken):
            errors = [m for m in refuted.get(name, []) if m.startswith("error:")]
            control = "caught" if errors else "MISSED"
            witness = errors[0].removeprefix("error: ") if errors else ""
        claim = (getattr(contracts, name).__doc__ or name).strip().splitlines()[0]
        detail = witness if result != "REFUTED" else next(m for m in messages if m.startswith("error:"))
        rows.append(
            CrossHairRow(
                name,
                claim,
                contracts.CHECKED[name],
                "CrossHair check",
                f"symbolic, {per_condition_timeout:g} s per condition",
                result,
                control,
                share,
                detail,
            )
        )
    return rows


def run_diffs(per_condition_timeout: float = 2.0, module: ModuleType = contracts) -> list[CrossHairRow]:
    """Run ``crosshair diffbehavior`` on every pair of ``module.DIFF_PAIRS``, each with its broken twin.

    ``module`` is ``contracts``; a control passes ``contracts_broken`` to show that the row fails when
    the kernels are their broken twins.
    """
    rows = []
    broken = contracts_broken.DIFF_PAIRS  # pair i's broken twin is broken[i]
    for i, (left, right, claim) in enumerate(module.DIFF_PAIRS):
        started = time.perf_counter()
        code, out = _crosshair(
            "diffbehavior",
            f"{module.__name__}.{left}",
            f"{module.__name__}.{right}",
            "--per_condition_timeout",
            str(per_condition_timeout),
            timeout=60 + 20 * per_condition_timeout,
        )
        result = "no difference" if code == 0 else "differs" if code == 1 else "error"
        control, witness = "none", ""
        if i < len(broken):
            bl, br, _ = broken[i]
            bcode, bout = _crosshair(
                "diffbehavior",
                f"{PACKAGE}.contracts_broken.{bl}",
                f"{PACKAGE}.contracts_broken.{br}",
                "--per_condition_timeout",
                str(per_condition_timeout),
                timeout=60 + 20 * per_condition_timeout,
            )
            control = "caught" if bcode == 1 else "MISSED"
            witness = " ".join(bout.splitlines()[:1])
        rows.append(
            CrossHairRow(
                f"{left} = {right}",
                claim,
                claim.split(" vs ")[0],
                "CrossHair diffbehavior",
                f"symbolic, {per_condition_timeout:g} s per condition",
                result,
                control,
                time.perf_counter() - started,
                witness if result == "no difference" else out[:200],
            )
        )
    return rows

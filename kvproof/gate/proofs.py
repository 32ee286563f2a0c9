"""Gate rows of ``proofs/``: the Z3 proofs and the CrossHair checks, each with its negative control."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..stateful_tests.harness.profiles import Profile
from . import Check, Context, Failed, Row

if TYPE_CHECKING:
    from ..proofs.registry import Budget


def budget_of(profile: Profile) -> Budget:
    """The solver and CrossHair budgets of a profile."""
    from ..proofs.registry import Budget

    b = profile.proofs
    return Budget(b.z3_timeout_ms, b.crosshair_condition_s, b.crosshair_diff_s)


def _report(rows, row: Row) -> None:
    row.checks = 2 * len(rows)  # each proof and its control
    row.examples = len(rows)
    failed = [r for r in rows if not r.ok]
    if failed:
        r = failed[0]
        raise Failed(f"{len(failed)} of {len(rows)} failed; first: {r.property}: {r.result}, control {r.control} {r.counterexample}")


def _z3(ctx: Context, row: Row) -> None:
    from ..proofs.registry import run_z3

    _report(run_z3(budget_of(ctx.profile)), row)


def _crosshair(ctx: Context, row: Row) -> None:
    from ..proofs.registry import run_crosshair

    _report(run_crosshair(budget_of(ctx.profile)), row)


CHECKS = [
    Check("proofs", "proofs", "Z3 proofs, controls sat", _z3,
          what="every Z3 theorem over spec/'s arithmetic kernels is unsat, and its broken rule is sat"),
    Check("proofs", "proofs", "CrossHair contracts and diffs", _crosshair,
          what='CrossHair contracts and diffbehavior on the kernels hold, and their broken twins are refuted'),
]

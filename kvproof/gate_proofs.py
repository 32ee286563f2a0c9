"""Gate rows of ``proofs/``: the Z3 proofs and the CrossHair checks, each with its negative control."""

from __future__ import annotations

from .gate import Check, Context, Failed, Row


def _budget(ctx: Context):
    from .proofs.registry import CI, DEEP

    return DEEP if ctx.profile.name == "deep" else CI


def _report(rows, row: Row) -> None:
    row.checks = 2 * len(rows)  # each proof and its control
    row.examples = len(rows)
    failed = [r for r in rows if not r.ok]
    if failed:
        r = failed[0]
        raise Failed(f"{len(failed)} of {len(rows)} failed; first: {r.property}: {r.result}, control {r.control} {r.counterexample}")


def _z3(ctx: Context, row: Row) -> None:
    from .proofs.registry import run_z3

    _report(run_z3(_budget(ctx)), row)


def _crosshair(ctx: Context, row: Row) -> None:
    from .proofs.registry import run_crosshair

    _report(run_crosshair(_budget(ctx)), row)


CHECKS = [
    Check("proofs", "Z3 proofs, controls sat", _z3),
    Check("proofs", "CrossHair contracts and diffs", _crosshair),
]

"""Gate rows of ``proofs/``: the Z3 proofs and the CrossHair checks, each with its negative control."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

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
        raise Failed(
            f"{len(failed)} of {len(rows)} failed; first: {r.property}: {r.result}, control {r.control} {r.counterexample}"
        )


def _z3(ctx: Context, row: Row) -> None:
    from ..proofs.registry import run_z3

    _report(run_z3(budget_of(ctx.profile)), row)


def _crosshair(ctx: Context, row: Row) -> None:
    from ..proofs.registry import run_crosshair

    _report(run_crosshair(budget_of(ctx.profile)), row)


CHECKS = [
    Check(
        "proofs",
        "proofs",
        "Z3 proofs, controls sat",
        _z3,
        what="every Z3 theorem over spec/'s arithmetic kernels is unsat, and its broken rule is sat",
    ),
    Check(
        "proofs",
        "proofs",
        "CrossHair contracts and diffs",
        _crosshair,
        what="CrossHair contracts and diffbehavior on the kernels hold, and their broken twins are refuted",
    ),
]


@dataclass
class ProveRun:
    """``kvproof prove``: every Z3 proof and CrossHair check with its negative control, as one table."""

    rows: list[Any]  # proofs.registry rows
    verbose: bool
    wrote: str = ""
    kind = "prove"
    skipped = ""

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        from ..proofs.registry import HEADERS, table_rows

        table(HEADERS, table_rows(self.rows), numeric=(4,))
        for r in self.rows if self.verbose else []:
            say(
                f"\n{r.property}\n  {r.method} on {r.function}; bounds: {r.bounds}\n  {r.result}; control {r.control}: "
                f"{r.counterexample}"
            )
        if self.wrote:
            say(f"wrote {self.wrote}")
        for r in self.rows:
            if not r.ok:
                say(f"FAILED: {r.property} ({r.method}): {r.result}; control {r.control}; {r.counterexample}")

    def summary_line(self) -> str:
        from ..proofs.registry import summary_line

        return str(summary_line(self.rows))

    def to_json(self) -> dict[str, Any]:
        return {"rows": [asdict(r) | {"ok": r.ok} for r in self.rows]}


def run_prove(profile: str | None, crosshair: bool, write_readme: bool, verbose: bool) -> ProveRun:
    """Run every proof under the profile's budgets; with ``write_readme``, rewrite ``proofs/README.md`` from the rows."""
    from .. import docs
    from ..proofs.registry import run_all
    from ..stateful_tests.harness.profiles import profile_named

    run = ProveRun(run_all(budget_of(profile_named(profile)), crosshair=crosshair), verbose)
    if write_readme:
        path = docs.proofs_readme_path()
        path.write_text(docs.proofs_readme(run.rows))
        run.wrote = str(path)
    return run

"""`kvproof prove`: the Z3 proofs and CrossHair checks."""

from __future__ import annotations

import sys

import click

from .. import report as out
from ..report import EXIT_FAIL, EXIT_PASS
from .app import main
from .options import (
    json_option,
    profile_option,
)

# ----------------------------------------------------------------------------- prove


@main.command()
@profile_option("the proof budgets: quick, ci (default) or deep (longer solver and CrossHair budgets)")
@json_option
@click.option("--no-crosshair", is_flag=True, help="Z3 proofs only")
@click.option("--write-readme", is_flag=True, help="regenerate proofs/README.md from the table (in a checkout)")
@click.option("-v", "--verbose", is_flag=True, help="also print each claim in full with its counterexample")
def prove(profile: str | None, json_path: str | None, no_crosshair: bool, write_readme: bool, verbose: bool) -> None:
    """Every Z3 proof and CrossHair check, each with its negative control."""
    from dataclasses import asdict

    from .. import docs
    from ..gate.proofs import budget_of
    from ..proofs.registry import HEADERS, run_all, summary_line, table_rows
    from ..stateful_tests.harness.profiles import profile_named

    rows = run_all(budget_of(profile_named(profile)), crosshair=not no_crosshair)
    out.print_table(HEADERS, table_rows(rows), numeric=(4,))
    click.echo(summary_line(rows))
    if verbose:
        for r in rows:
            click.echo(f"\n{r.property}\n  {r.method} on {r.function}; bounds: {r.bounds}\n  {r.result}; control {r.control}: {r.counterexample}")
    if json_path:
        out.write_json(json_path, "prove", {"rows": [asdict(r) | {"ok": r.ok} for r in rows]})
    if write_readme:
        path = docs.proofs_readme_path()
        path.write_text(docs.proofs_readme(rows))
        click.echo(f"wrote {path}")
    failed = [r for r in rows if not r.ok]
    for r in failed:
        click.echo(f"FAILED: {r.property} ({r.method}): {r.result}; control {r.control}; {r.counterexample}")
    sys.exit(EXIT_FAIL if failed else EXIT_PASS)

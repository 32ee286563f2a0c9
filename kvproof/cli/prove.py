"""`kvproof prove`: the Z3 proofs and CrossHair checks."""

from __future__ import annotations

import click

from ..report import finish
from .app import main
from .options import (
    json_option,
    profile_option,
)

# ----------------------------------------------------------------------------- prove


@main.command()
@profile_option("the proof budgets: quick, ci or deep (longer solver and CrossHair budgets)")
@json_option
@click.option("--no-crosshair", is_flag=True, help="Z3 proofs only")
@click.option("--write-readme", is_flag=True, help="regenerate proofs/README.md from the table (in a checkout)")
@click.option("-v", "--verbose", is_flag=True, help="also print each claim in full with its counterexample")
def prove(profile: str | None, json_path: str | None, no_crosshair: bool, write_readme: bool, verbose: bool) -> None:
    """Every Z3 proof and CrossHair check, each with its negative control."""
    from ..gate.proofs import run_prove

    finish(run_prove(profile, not no_crosshair, write_readme, verbose), json_path)

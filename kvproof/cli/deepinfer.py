"""`kvproof roundtrip` and `kvproof deepinfer-labs`: DeepInfer chapter 11."""

from __future__ import annotations

import click

from ..report import finish
from .app import main
from .options import (
    allow_skip_option,
    json_option,
    seed_option,
)

# ----------------------------------------------------------------------------- deepinfer


@main.command()
@click.option(
    "--backend",
    type=click.Choice(["numpy", "torch", "cuda", "cupy"]),
    default="numpy",
    show_default=True,
    help="the arrays the round trip runs on (cuda and cupy need a GPU)",
)
@seed_option()
@click.option("--count", type=int, default=60, show_default=True, help="cases (the fixed ones first, then random)")
@click.option("--case", type=int, default=None, help="replay one case of the run")
@click.option("--controls", is_flag=True, help="also run the negative controls with catch rates")
@json_option
@allow_skip_option
def roundtrip(
    backend: str, seed: int, count: int, case: int | None, controls: bool, json_path: str | None, allow_skip: bool
) -> None:
    """The state round-trip laws on one array backend, as a pass/fail table."""
    from ..stateful_tests.deepinfer.roundtrip_laws import run_roundtrip

    finish(run_roundtrip(backend, seed, count, case, controls), json_path, allow_skip=allow_skip)


@main.command("deepinfer-labs")
def deepinfer_labs() -> None:
    """The DeepInfer chapter 11 lab outputs as the spec computes them, line by line against the book."""
    from ..stateful_tests.deepinfer.golden import run_labs

    finish(run_labs())

"""`kvproof roundtrip` and `kvproof deepinfer-labs`: DeepInfer chapter 11."""

from __future__ import annotations

import sys

import click

from .. import report as out
from ..report import EXIT_FAIL, EXIT_PASS, EXIT_SKIPPED
from .app import main
from .options import (
    allow_skip_option,
    json_option,
    seed_option,
)

# ----------------------------------------------------------------------------- deepinfer


@main.command()
@click.option("--backend", type=click.Choice(["numpy", "torch", "cuda", "cupy"]), default="numpy", show_default=True,
              help="the arrays the round trip runs on (cuda and cupy need a GPU)")
@seed_option()
@click.option("--count", type=int, default=60, show_default=True, help="cases (the fixed ones first, then random)")
@click.option("--case", type=int, default=None, help="replay one case of the run")
@click.option("--controls", is_flag=True, help="also run the negative controls with catch rates")
@json_option
@allow_skip_option
def roundtrip(backend: str, seed: int, count: int, case: int | None, controls: bool, json_path: str | None, allow_skip: bool) -> None:
    """The state round-trip laws on one array backend, as a pass/fail table."""
    from ..stateful_tests.deepinfer.mutants import ControlResult, run_controls
    from ..stateful_tests.deepinfer.roundtrip_laws import SuiteReport, run_suite

    result = run_suite(backend, seed=seed, count=count, only_case=case)
    click.echo(f"kvproof roundtrip: backend={backend} seed={seed} cases={result.cases}" + (f" (case {case} only)" if case is not None else ""))
    out.print_table(SuiteReport.HEADERS, result.table_rows(), numeric=(2, 3))
    for law_result in result.failed:
        for c, message in law_result.problems[:3]:
            click.echo(f"\nFAIL {law_result.law.name} ({law_result.law.title}) case {c.index} [{c.name}]\n  {message}")
            click.echo(f"  replay: {result.replay(c)} --count {count}")
    control_results: list[ControlResult] = []
    if controls and not result.skipped:
        backends = ("numpy", backend) if backend != "numpy" else ("numpy", "torch")
        control_results = run_controls(seed=seed, count=count, backends=backends, rates=True)
        click.echo(f"\nnegative controls (seed {seed}, {count} cases; caught = cases where a listed law fails)")
        for control in control_results:
            rate = f"{control.caught_cases:>3}/{control.cases:<3}" if control.cases else "   -   "
            click.echo(f"  {'pass' if control.ok else 'SKIP' if control.skipped else 'FAIL'}  {rate}  {control.name}: {control.detail}")
    if json_path:
        out.write_json(json_path, "roundtrip", {
            "backend": backend, "seed": seed, "cases": result.cases, "skipped": result.skipped,
            "laws": [{"law": r.law.name, "title": r.law.title, "cases": r.cases, "checks": r.checks,
                      "result": "pass" if r.passed else "FAIL", "problems": [f"case {c.index}: {m}" for c, m in r.problems[:5]]}
                     for r in result.results],
            "controls": [c.__dict__ for c in control_results],
        })
    failed = len(result.failed) + sum(not c.ok and not c.skipped for c in control_results)
    if result.skipped:
        click.echo(f"\nkvproof roundtrip: SKIP backend={backend}: {result.skipped}")
        if allow_skip:
            sys.exit(EXIT_PASS)
        click.echo("kvproof roundtrip: a skipped backend is not a pass; pass --allow-skip to accept it")
        sys.exit(EXIT_SKIPPED)
    passed = len(result.results) - len(result.failed)
    click.echo(f"\nkvproof roundtrip: {passed} laws passed, {len(result.failed)} failed, {result.checks} checks "
               f"(backend={backend} seed={seed} cases={result.cases})")
    if failed:
        sys.exit(EXIT_FAIL)
    skipped_controls = [c for c in control_results if c.skipped]
    if skipped_controls:
        click.echo(f"kvproof roundtrip: {len(skipped_controls)} controls skipped: {skipped_controls[0].skipped}")
        if not allow_skip:
            click.echo("kvproof roundtrip: a skipped control is not a pass; pass --allow-skip to accept it")
            sys.exit(EXIT_SKIPPED)
    sys.exit(EXIT_PASS)


@main.command("deepinfer-labs")
def deepinfer_labs() -> None:
    """The DeepInfer chapter 11 lab outputs as the spec computes them, line by line against the book."""
    from ..stateful_tests.deepinfer.golden import GOLDENS, golden_problems

    bad = 0
    for golden in GOLDENS:
        compared, problems = golden_problems(golden)
        bad += len(problems)
        click.echo(f"== {golden.name} ({golden.source}): {compared} lines, {len(problems)} differ")
        for line in golden.render():
            click.echo(f"   {line}")
        for p in problems:
            click.echo(f"   DIFFERS: {p}")
    sys.exit(EXIT_FAIL if bad else EXIT_PASS)

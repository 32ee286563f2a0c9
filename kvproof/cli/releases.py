"""`kvproof releases`: every Dynamo release through the gate."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from .. import report as out
from ..report import EXIT_FAIL, EXIT_PASS
from .app import main
from .options import (
    json_option,
    profile_option,
)


@main.command()
@click.option("--versions", default=None, help="comma-separated releases (default: 0.6.0 and every release 0.6.1 to 1.6.1)")
@click.option("--cache", type=click.Path(file_okay=False), default=".kvproof-releases", show_default=True,
              help="where wheels are downloaded and unpacked (throwaway; reused between runs)")
@profile_option("the gate profile each release runs under (default quick)")
@click.option("--timeout", type=float, default=600.0, show_default=True, help="seconds per release")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="write the table (docs/releases.md's) here")
@json_option
@click.option("--component", "components", multiple=True, type=click.Choice(["tree", "indexer", "selection"]),
              help="the Dynamo trees to check (repeatable; default: every one a release ships): tree (the binding), "
                   "indexer (python -m dynamo.indexer, from 1.1.0), selection (SelectionService, from 1.4.0)")
def releases(versions: str | None, cache: str, profile: str | None, timeout: float, markdown_path: str | None,
             json_path: str | None, components: tuple[str, ...]) -> None:
    """Run `kvproof check` on every Dynamo tree of every release of ai-dynamo-runtime, one child process each.

    Each release's wheel comes from the package index (pip download --no-deps), is unpacked
    into --cache, and is put first on the child's PYTHONPATH, so the child detects the
    release and its rule set. The last line is `releases: N releases: P pass, B upstream bug,
    D differs, U not checkable`.
    """
    from packaging.version import InvalidVersion

    from ..spec.rules import version_key
    from ..stateful_tests.tree.releases import RELEASES, markdown, survey, write_between_markers

    chosen = [v.strip() for v in versions.split(",")] if versions else list(RELEASES)
    for version in chosen:
        try:
            version_key(version)
        except InvalidVersion:
            raise click.UsageError(f"--versions: {version!r} is not a release (PEP 440), e.g. 1.6.1 or 0.8.1.post3") from None
    profile_name = profile or "quick"
    cmd = ("kvproof releases" + (f" --versions {versions}" if versions else "") + (f" --profile {profile}" if profile else "")
           + "".join(f" --component {c}" for c in components))

    def on_result(r: Any) -> None:
        failing = ", ".join(row["name"] for row in r.failing())
        click.echo(f"{r.version:<12} {r.component:<10} {r.rules:<22} {r.verdict:<14} {r.seconds:5.0f} s"
                   + (f"  failing: {failing}" if failing else "") + (f"  ({r.note})" if r.note and not r.rows else ""))
        for finding in r.findings():
            click.echo(f"{'':<12} {r.component:<10} {finding}")

    results = survey(chosen, Path(cache).resolve(), profile_name, timeout, on_result, components or None)
    if markdown_path:
        click.echo(f"wrote {write_between_markers(Path(markdown_path), markdown(results, cmd))}")
    if json_path:
        out.write_json(json_path, "releases", {"profile": profile_name, "releases": [r.to_json() for r in results]})
    counts = {v: sum(r.verdict == v for r in results) for v in ("pass", "upstream bug", "differs", "not checkable")}
    click.echo(f"releases: {len(results)} releases: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    # A difference nobody explains fails the survey; so does a survey that could check nothing (no index, a typo).
    sys.exit(EXIT_FAIL if counts["differs"] or counts["not checkable"] == len(results) else EXIT_PASS)

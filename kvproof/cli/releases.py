"""`kvproof releases`: every Dynamo release through the gate."""

from __future__ import annotations

from pathlib import Path

import click

from ..report import finish
from .app import main
from .options import (
    json_option,
    profile_option,
)


@main.command(
    epilog="""
\b
Examples:
  kvproof releases --version 1.6.1 --component tree
  kvproof releases --profile quick --markdown docs/releases.md
"""
)
@click.option(
    "--version",
    "versions",
    multiple=True,
    metavar="VERSION",
    help="a release to survey (repeatable; default: 0.6.0 and every release 0.6.1 to 1.6.1)",
)
@click.option(
    "--cache",
    type=click.Path(file_okay=False),
    default=".kvproof-releases",
    show_default=True,
    help="where wheels are downloaded and unpacked (throwaway; reused between runs)",
)
@profile_option("the gate profile each release runs under (docs/releases.md's table: quick)")
@click.option("--timeout", type=float, default=600.0, show_default=True, help="seconds per release")
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="write the table (docs/releases.md's) here",
)
@json_option
@click.option(
    "--component",
    "components",
    multiple=True,
    type=click.Choice(["tree", "indexer", "selection"]),
    help="the Dynamo trees to check (repeatable; default: every one a release ships): tree (the binding), "
    "indexer (python -m dynamo.indexer, from 1.1.0), selection (SelectionService, from 1.4.0)",
)
def releases(
    versions: tuple[str, ...],
    cache: str,
    profile: str | None,
    timeout: float,
    markdown_path: str | None,
    json_path: str | None,
    components: tuple[str, ...],
) -> None:
    """Run `kvproof check` on every Dynamo tree of every release of ai-dynamo-runtime, one child process each.

    Each release's wheel comes from the package index (pip download --no-deps), is unpacked
    into --cache, and is put first on the child's PYTHONPATH, so the child detects the
    release and its rule set. The last line is `releases: N releases: P pass, B upstream bug,
    D differs, U not checkable`.
    """
    from ..stateful_tests.tree.releases import run_releases

    report = run_releases(versions, Path(cache), profile, timeout, markdown_path, components, say=click.echo)
    finish(report, json_path)

"""`kvproof docs`: the reference site."""

from __future__ import annotations

import click

from ..report import finish
from .app import main


@main.command(
    "docs",
    epilog="""
\b
Examples:
  kvproof docs                         (build/docs/html/index.html)
  kvproof docs --check-browser
  kvproof docs --write                 (regenerate the gate table, the command reference, docs/figures.md, proofs/README.md)
""",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="where to build: DIR/html is the site (default: build/docs in the checkout)",
)
@click.option(
    "--check-browser",
    is_flag=True,
    help="then open every page in headless Chromium (/usr/bin/chromium): "
    "pictures rendered, no console errors, no failed requests; screenshots saved",
)
@click.option(
    "--screenshots",
    "screenshots_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="where --check-browser saves one PNG per page, whole where it has pictures, else its first screen (default: build/docs-screenshots in the checkout)",
)
@click.option("--no-doctest", is_flag=True, help="skip Sphinx's doctest builder (the worked examples)")
@click.option(
    "--write",
    is_flag=True,
    help="instead: regenerate every generated document (the gate table of docs/gate.md, "
    "the command reference of docs/commands.md, docs/figures.md, proofs/README.md) from the code, and build nothing",
)
@click.option("--no-proofs", is_flag=True, help="with --write: leave proofs/README.md (regenerating it runs every proof)")
def docs_command(
    out_dir: str | None, check_browser: bool, screenshots_dir: str | None, no_doctest: bool, write: bool, no_proofs: bool
) -> None:
    """Build the reference site from the code: Sphinx, warnings as errors, the examples as doctests, the links checked.

    One page per rule family (tree, sequences, DeepInfer) with each rule's docstring, its source,
    its worked example (a doctest), pictures drawn from the rules at build time, the variants and
    releases, the Z3 theorems (proved again while building) and the laws and gate rows that
    check it; plus the findings and release pages of docs/. Needs the docs extra
    (pip install -e '.[docs]') and a checkout. Exit 0 built (and, with --check-browser, every page
    rendered clean), 1 a warning, a failing example, a broken link or a page with a problem,
    2 it cannot build here.
    """
    if write:
        from ..docs import write_generated

        finish(write_generated(proofs=not no_proofs))
    from ..docs_site.run import run_docs

    finish(run_docs(out_dir, not no_doctest, check_browser, screenshots_dir, say=click.echo))

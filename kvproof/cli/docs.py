"""`kvproof docs`: the reference site."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ..report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from .app import main


@main.command("docs")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="where to build: DIR/html is the site (default: build/docs in the checkout)")
@click.option("--check-browser", is_flag=True, help="then open every page in headless Chromium (/usr/bin/chromium): "
              "pictures rendered, no console errors, no failed requests; screenshots saved")
@click.option("--screenshots", "screenshots_dir", type=click.Path(file_okay=False), default=None,
              help="where --check-browser saves one PNG per page (default: build/docs-screenshots in the checkout)")
@click.option("--no-doctest", is_flag=True, help="skip Sphinx's doctest builder (the worked examples)")
def docs_command(out_dir: str | None, check_browser: bool, screenshots_dir: str | None, no_doctest: bool) -> None:
    """Build the reference site from the code: Sphinx, warnings as errors, the examples as doctests, the links checked.

    One page per rule family (tree, sequences, DeepInfer) with each rule's docstring, its source,
    its worked example (a doctest), pictures drawn from the rules at build time, the variants and
    releases, the Z3 theorems (proved again while building) and the laws and gate rows that
    check it; plus the findings and release pages of docs/. Needs the docs extra
    (pip install -e '.[docs]') and a checkout. Exit 0 built (and, with --check-browser, every page
    rendered clean), 1 a warning, a failing example, a broken link or a page with a problem,
    2 it cannot build here.
    """
    from ..docs_site import browser
    from ..docs_site.build import DocsError, build_site, checkout_root

    try:
        built = build_site(Path(out_dir) if out_dir else None, doctest=not no_doctest)
    except DocsError as exc:
        click.echo(f"kvproof docs: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    for step in built.steps:
        for line in step.messages if not step.ok else []:
            click.echo(f"  {step.name}: {line}")
    click.echo(built.summary())
    if not built.ok:
        sys.exit(EXIT_FAIL)
    if check_browser:
        why = browser.unavailable()
        if why:
            click.echo(f"kvproof docs --check-browser: {why}", err=True)
            sys.exit(EXIT_USAGE)
        shots = Path(screenshots_dir) if screenshots_dir else checkout_root() / "build" / "docs-screenshots"
        started = time.perf_counter()
        checks = browser.check_pages(built.html, browser.site_pages(built.html), shots)
        bad = [c for c in checks if c.problems]
        for c in bad:
            for problem in c.problems:
                click.echo(f"  {c.page}: {problem}")
        click.echo(f"browser: pages={len(checks)} pictures={sum(c.images for c in checks)} problems={sum(len(c.problems) for c in bad)} "
                   f"screenshots={shots} ({time.perf_counter() - started:.1f} s)")
        sys.exit(EXIT_FAIL if bad else EXIT_PASS)
    sys.exit(EXIT_PASS)

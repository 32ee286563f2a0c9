"""The site's worked examples, run with the standard ``doctest`` module (no Sphinx needed).

A page's examples are its ```` ```{doctest} ```` blocks. Sphinx's doctest builder runs them as
one group per page (one namespace, in order); so does ``run_page``, so an example that
passes here passes there. Each example is named by the label (``(example-split)=``) that
precedes it on the page, so a failure says which worked example broke.

The flags are Sphinx's doctest defaults: ``ELLIPSIS``, ``IGNORE_EXCEPTION_DETAIL`` and
``DONT_ACCEPT_TRUE_FOR_1``.
"""

from __future__ import annotations

import doctest
import io
import re
from dataclasses import dataclass
from pathlib import Path

FLAGS = doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL | doctest.DONT_ACCEPT_TRUE_FOR_1

_FENCE = re.compile(r"^```\{doctest\}[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
_LABEL = re.compile(r"^\((?P<label>[A-Za-z0-9_-]+)\)=[ \t]*$", re.M)

WORKED_EXAMPLES = ("example-split", "example-extension", "example-removal", "example-spillover", "example-credit", "example-ring")
"""The labels of the issue's worked examples; each must carry at least one example that runs."""


def site_pages(root: Path) -> list[Path]:
    """The site's own pages, ``docs/site/*.md``."""
    return sorted((root / "docs" / "site").glob("*.md"))


@dataclass(frozen=True)
class DoctestBlock:
    """One ``{doctest}`` block: the label it sits under, its line, its text."""

    label: str
    line: int
    text: str


def blocks(page: Path) -> list[DoctestBlock]:
    """Every ``{doctest}`` block of ``page``, in order, each under the nearest label above it."""
    text = page.read_text()
    labels = [(m.start(), m["label"]) for m in _LABEL.finditer(text)]
    found = []
    for m in _FENCE.finditer(text):
        label = next((name for at, name in reversed(labels) if at < m.start()), page.stem)
        found.append(DoctestBlock(label, text.count("\n", 0, m.start("body")) + 1, m["body"]))
    return found


@dataclass
class PageRun:
    """What running one page's examples gave: per label, examples tried and failed; the runner's report."""

    page: Path
    tried: dict[str, int]
    failed: dict[str, int]
    report: str

    @property
    def failures(self) -> int:
        return sum(self.failed.values())


def run_page(page: Path) -> PageRun:
    """Run a page's blocks in order in one namespace (Sphinx's default group) and count by label."""
    parser = doctest.DocTestParser()
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    globs: dict[str, object] = {"__name__": f"kvproof_docs_{page.stem}"}
    tried: dict[str, int] = {}
    failed: dict[str, int] = {}
    for block in blocks(page):
        test = parser.get_doctest(block.text, globs, f"{page.name}:{block.label}", str(page), block.line)
        test.globs = globs  # get_doctest copies the namespace; the page's blocks share one, as in Sphinx
        result = runner.run(test, out=out.write, clear_globs=False)
        tried[block.label] = tried.get(block.label, 0) + result.attempted
        failed[block.label] = failed.get(block.label, 0) + result.failed
    return PageRun(page, tried, failed, out.getvalue())


def run_site(root: Path) -> list[PageRun]:
    """Run every page's examples."""
    return [run_page(page) for page in site_pages(root)]

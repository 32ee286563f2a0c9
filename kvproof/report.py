"""One report module: the terminal tables, the generated markdown tables, versioned JSON and JUnit XML.

Every table kvproof prints or writes goes through here, from plain rows (a header tuple and
row tuples): ``rich`` draws them on a terminal (a fixed width when output is not a terminal,
so CI logs stay stable), ``markdown_table`` renders the markdown tables that the README files carry
(generated, so a test can fail on drift; unpadded, so each row's text stands alone). JSON files carry ``"schema": "kvproof.<kind>/<n>"``;
``write_junit`` writes one testcase per gate row for CI systems that ingest JUnit XML.

Exit codes of every ``kvproof`` command (``EXIT_*``):

- 0: everything ran and passed;
- 1: a check failed (a law falsified, a mismatch, a caught bug);
- 2: usage error, or a target or oracle that cannot be loaded here;
- 3: nothing failed but something was skipped, and ``--allow-skip`` was not given.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_SKIPPED = 0, 1, 2, 3
JSON_SCHEMA_VERSION = 1
CI_WIDTH = 160  # the width tables are drawn at when output is not a terminal


def console(file: Any = None) -> Console:
    """A console on ``file`` (stdout): live and sized to the terminal, or fixed-width plain text in a log."""
    out = file or sys.stdout
    terminal = hasattr(out, "isatty") and out.isatty()
    return Console(file=out, width=None if terminal else CI_WIDTH, highlight=False, soft_wrap=False,
                   force_terminal=terminal, no_color=not terminal)


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None,
                numeric: Sequence[int] = (), out: Console | None = None) -> None:
    """Draw a table; the columns at indexes ``numeric`` are right-aligned."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None, header_style="bold")
    for i, h in enumerate(headers):
        table.add_column(h, justify="right" if i in numeric else "left", overflow="fold")
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    (out or console()).print(table)


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Render a GitHub markdown table, unpadded so that a row's text does not depend on its neighbours."""
    def line(cells: Iterable[Any]) -> str:
        return "| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |"

    return "\n".join([line(headers), "|" + "---|" * len(headers), *(line(r) for r in rows)])


class Progress:
    """Progress of a long run on stderr: a line at every tenth of the work, with the time elapsed and an
    estimate of the time left (the elapsed time per unit done, times the units left)."""

    def __init__(self, what: str, unit: str) -> None:
        self.what, self.unit, self.shown = what, unit, -1

    def __call__(self, done: int, total: int, seconds: float) -> None:
        tenth = 10 * done // max(total, 1)
        if done == 0 or tenth == self.shown or total < 10:
            return
        self.shown = tenth
        left = seconds / done * (total - done)
        print(f"{self.what}: {done}/{total} {self.unit} ({100 * done // total}%), {seconds:.0f} s elapsed, about {left:.0f} s left",
              file=sys.stderr, flush=True)


def with_schema(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """Return ``body`` with its schema tag first: ``kvproof.<kind>/<version>``."""
    return {"schema": f"kvproof.{kind}/{JSON_SCHEMA_VERSION}", **body}


def write_json(path: str | Path, kind: str, body: dict[str, Any]) -> None:
    """Write a report as JSON with its schema tag."""
    Path(path).write_text(json.dumps(with_schema(kind, body), indent=1, default=str))


def write_junit(path: str | Path, suite: str, cases: Iterable[dict[str, Any]]) -> None:
    """Write JUnit XML: one testcase per entry (``classname``, ``name``, ``seconds``, ``result``, ``detail``).

    ``result`` is ``pass``, ``FAIL`` or ``SKIP``; a failure carries its detail and replay line.
    """
    from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

    test_suite = TestSuite(suite)
    for c in cases:
        case = TestCase(c["name"], classname=c["classname"], time=round(c["seconds"], 3))
        if c["result"] == "FAIL":
            case.result = [Failure(c["detail"].splitlines()[0][:200] if c["detail"] else "failed")]
            case.result[0].text = c["detail"]
        elif c["result"] == "SKIP":
            case.result = [Skipped(c["detail"])]
        test_suite.add_testcase(case)
    xml = JUnitXml()
    xml.add_testsuite(test_suite)
    xml.write(str(path), pretty=True)

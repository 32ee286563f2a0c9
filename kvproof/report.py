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

Every command ends the same way: the room's ``run_*()`` returns a ``CommandReport`` and ``finish`` prints it, writes its
JSON (and JUnit, for the gate) and exits with the code above.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol

from rich.console import Console
from rich.table import Table

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_SKIPPED = 0, 1, 2, 3
JSON_SCHEMA_VERSION = 1
CI_WIDTH = 160  # the width tables are drawn at when output is not a terminal


def console(file: Any = None) -> Console:
    """A console on ``file`` (stdout): live and sized to the terminal, or fixed-width plain text in a log."""
    out = file or sys.stdout
    terminal = hasattr(out, "isatty") and out.isatty()
    return Console(
        file=out,
        width=None if terminal else CI_WIDTH,
        highlight=False,
        soft_wrap=False,
        force_terminal=terminal,
        no_color=not terminal,
    )


def print_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    title: str | None = None,
    numeric: Sequence[int] = (),
    out: Console | None = None,
) -> None:
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
        print(
            f"{self.what}: {done}/{total} {self.unit} ({100 * done // total}%), {seconds:.0f} s elapsed, about {left:.0f} s left",
            file=sys.stderr,
            flush=True,
        )


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


Say = Callable[[str], None]
"""Where a report's lines go (``click.echo`` on a terminal, a list in a test)."""

DrawTable = Callable[..., None]
"""Where a report's tables go: called as ``print_table`` is, ``(headers, rows, numeric=..., title=...)``."""


class CommandReport(Protocol):
    """What a campaign returns, whichever room runs it: the one protocol ``finish`` ends every command with.

    The rooms' report classes satisfy it by their shape (they may not import this module: the layering rules);
    ``render`` takes where to print and where to draw tables, so a room never draws with rich itself.
    """

    @property
    def kind(self) -> str:
        """The JSON schema's kind: the file says ``kvproof.<kind>/1``."""

    @property
    def ok(self) -> bool:
        """Nothing failed (a skip is not a failure, and not a pass either: see ``skipped``)."""

    @property
    def skipped(self) -> str:
        """Empty when nothing was skipped, else the line said before exiting 3 (unless ``--allow-skip``)."""

    def summary_line(self) -> str:
        """The last line of the output, in the form the command's docs promise."""

    def render(self, say: Say, table: DrawTable) -> None:
        """Everything printed before the summary line that was not already said while the campaign ran."""

    def to_json(self) -> dict[str, Any]:
        """The body of the ``--json`` file (``write_json`` adds the schema tag)."""


def draw_table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = (), title: str | None = None
) -> None:
    """``print_table`` on stdout, in the argument order a report's ``render`` calls its ``table`` with."""
    print_table(headers, rows, title=title, numeric=numeric)


def finish(
    report: CommandReport, json_path: str | Path | None = None, junit_path: str | Path | None = None, allow_skip: bool = False
) -> NoReturn:
    """End a command: print the report and its summary line, write its JSON (and JUnit), exit with its code.

    Exit 1 when the report is not ok; 3 when something was skipped and ``allow_skip`` is not set (the report's
    ``skipped`` line said last); else 0. JUnit needs a report with ``junit()``: the suite name and its cases.
    """
    import click

    report.render(click.echo, draw_table)
    if json_path:
        write_json(json_path, report.kind, report.to_json())
    if junit_path:
        write_junit(junit_path, *report.junit())  # type: ignore[attr-defined]
    click.echo(report.summary_line())
    if not report.ok:
        sys.exit(EXIT_FAIL)
    if report.skipped and not allow_skip:
        click.echo(report.skipped)
        sys.exit(EXIT_SKIPPED)
    sys.exit(EXIT_PASS)

"""``docs/figures.md``, generated: every figure kvproof quotes, with the command that measured it and the date.

The stored inputs are ``docs/figures.json``: one compact entry per figure (``what``, ``command``, ``date``, and
either ``report``, the summary this module took from the command's ``--json`` report, or ``result``, the
line the command printed, transcribed when that run kept no report; ``block`` holds a command's printed
table where the figure is one). Regenerate the page with::

    python -m kvproof.figures                                  # docs/figures.md from docs/figures.json
    python -m kvproof.figures record WHAT DATE REPORT.json -- COMMAND ...   # a figure from a --json report

``record`` overwrites the entry of the same ``what``. ``kvproof/tests/test_figures.py`` fails when the page
drifts from its inputs, or an entry lacks its command or date.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ROOT / "docs" / "figures.json"
PAGE = ROOT / "docs" / "figures.md"
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}( \d{2}:\d{2})?$")

HEAD = """# Figures

What kvproof's commands measured, each with its command and date. **This page is generated** by
`kvproof docs --write` from `docs/figures.json` (each entry the summary of the command's `--json`
report, or its printed line where that run kept no report); `kvproof/tests/test_docs.py` fails when
it drifts. Unless a row says otherwise: a 2-core machine shared with other sessions, Python 3.11,
ai-dynamo-runtime 1.6.1; the machine's speed varied by day (early on 2026-12-02 it ran every unchanged
gate row about 2x slower than on 2026-12-01, later that day about 3x faster than early on), so wall
times compare only within a row. A date is the run's where its output gave one, else the day the
figure was recorded.

"""


def summarize(report: Mapping[str, Any]) -> dict[str, Any]:
    """The compact part of a ``--json`` report a figure keeps (``kvproof.mutate/1``: each layer's verdict)."""
    schema = report.get("schema")
    if schema == "kvproof.mutate/1":
        return {
            "schema": schema,
            "passed": report["passed"],
            "median_ttd_s": report["median_ttd_s"],
            "p90_ttd_s": report.get("p90_ttd_s"),
            "layers": [
                {k: layer[k] for k in ("name", "total", "killed", "timeout", "survived", "equivalent", "no_tests", "score")}
                for layer in report["layers"]
            ],
        }
    raise ValueError(f"no figure summary for reports of schema {schema!r}")


def result_of(entry: Mapping[str, Any]) -> str:
    """The figure's text: its summary rendered, or the line recorded."""
    report = entry.get("report")
    if report is None:
        return str(entry["result"])
    if report["schema"] == "kvproof.mutate/1":
        layers = "; ".join(
            f"{layer['name']}/ **{100 * layer['score']:.1f}%** ({layer['total']:,} mutants: {layer['killed']:,} killed, "
            f"{layer['timeout']} timeouts, {layer['survived']} survived, {layer['equivalent']} equivalents, "
            f"{layer['no_tests']} gaps)"
            for layer in report["layers"]
        )
        ttd = report["median_ttd_s"]
        return f"{layers}; median time to detection {ttd:.3f} s; exit {0 if report['passed'] else 1}"
    raise ValueError(f"no figure text for reports of schema {report['schema']!r}")


def _code(command: str) -> str:
    """A command as code; one already written as markdown (several commands, each in backticks) as it is."""
    return command if "`" in command else f"`{command}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(entries: Sequence[Mapping[str, Any]]) -> str:
    """The page: a table of the one-line figures, then each figure with a printed block under its own heading."""
    lines = [HEAD, "| What | Command | Date | Result |", "|---|---|---|---|"]
    for e in entries:
        if "block" not in e:
            lines.append(f"| {_cell(e['what'])} | {_cell(_code(e['command']))} | {e['date']} | {_cell(result_of(e))} |")
    for e in entries:
        if "block" in e:
            lines += [
                "",
                f"## {e['what']}",
                "",
                f"{_code(e['command'])} ({e['date']}): {result_of(e)}",
                "",
                "```",
                e["block"].rstrip("\n"),
                "```",
            ]
            if e.get("note"):
                lines += ["", e["note"]]
    return "\n".join(lines) + "\n"


def check_entry(entry: Mapping[str, Any]) -> list[str]:
    """What an entry lacks (empty: nothing): a name, a command, a date, and a result or a report."""
    problems = [f"no {key}" for key in ("what", "command") if not entry.get(key)]
    if not DATE.match(str(entry.get("date", ""))):
        problems.append(f"date {entry.get('date')!r} is not YYYY-MM-DD[ HH:MM]")
    if ("report" in entry) == ("result" in entry):
        problems.append("needs exactly one of result and report")
    return problems


def load(path: Path = INPUTS) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text()))


def dump(entries: Sequence[Mapping[str, Any]], path: Path = INPUTS) -> None:
    """One entry a line, so a changed figure is a one-line diff."""
    path.write_text("[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in entries) + "\n]\n")


def record(entries: list[dict[str, Any]], what: str, date: str, command: str, report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``entries`` with the figure ``what`` taken from ``report`` (replacing an entry of that name in place)."""
    entry = {"what": what, "command": command, "date": date, "report": summarize(report)}
    problems = check_entry(entry)
    if problems:
        raise ValueError(f"figure {what!r}: {'; '.join(problems)}")
    names = [e["what"] for e in entries]
    if what in names:
        return [entry if e["what"] == what else e for e in entries]
    return [*entries, entry]


def main(argv: Sequence[str]) -> int:
    if argv[:1] == ["record"]:
        if len(argv) < 6 or argv[4] != "--":
            print("usage: python -m kvproof.figures record WHAT DATE REPORT.json -- COMMAND ...", file=sys.stderr)
            return 2
        _, what, date, report, _, *command = argv
        dump(record(load(), what, date, " ".join(command), json.loads(Path(report).read_text())))
    elif argv:
        print("usage: python -m kvproof.figures [record WHAT DATE REPORT.json -- COMMAND ...]", file=sys.stderr)
        return 2
    PAGE.write_text(render(load()))
    print(f"wrote {PAGE.relative_to(ROOT)} from {INPUTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

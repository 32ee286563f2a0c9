"""The documents kvproof generates from its own tables, and the one way to regenerate them all.

``GENERATED`` lists them: the gate table of ``docs/gate.md`` (from the checks and their controls), the command
reference of ``docs/commands.md`` (from the commands' click declarations),
``docs/figures.md`` (from ``docs/figures.json``, ``kvproof.figures``) and ``proofs/README.md`` (from a run of
every proof, ``kvproof prove``). ``kvproof docs --write`` (or ``python -m kvproof.docs``) rewrites every one;
``kvproof/tests/test_docs.py`` fails when a committed copy drifts (``proofs/README.md``, whose witnesses vary from
run to run, by its stable cells in ``proofs/test_proofs.py``, where the proofs are run anyway).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .report import markdown_table

PROOFS_HEADERS = ("Property", "Spec function", "Method", "Bounds", "Result", "Negative control")

README_HEAD = """# proofs/

Proofs, for all inputs in the stated bounds rather than sampled ones, of the laws `spec/`
states. **This file is generated** by `kvproof docs --write` from the same table
`kvproof prove` prints; `test_proofs.py` fails if it drifts.

- **Z3** proofs are about the spec's own kernels (`spec/arith.py`): the functions the
  reference and the implementation call are called again with Z3 terms, and the solver must
  answer `unsat` for the negation of the claim (`proofs/harness.py`; never `prove()`, which
  cannot fail a test). Each proof is run again over a deliberately wrong rule, which must
  come back `sat`; its model is the counterexample shown.
- **CrossHair** checks PEP 316 contracts on the pure kernels (`proofs/contracts.py`) and
  compares each kernel with an independent statement of its rule (`crosshair
  diffbehavior`); the same contracts over broken rules (`proofs/contracts_broken.py`) must be
  refuted. CrossHair never sees threaded code.

"""

README_TAIL = """
## What is not proved

- Only the arithmetic kernels are proved for all inputs; the data-structure code around
  them (edge states, trees, lookups, threads) is checked by sampling: the Hypothesis state
  machines, the differential conformance with Dynamo, the lockstep twin and the real-thread
  stress (docs/verified.md).
- The match proof bounds chains at four nodes; longer chains are covered by the Hypothesis
  law that the walk equals the kernel, not by Z3.
- The layout-size proof bounds the layout at four segments.
- CrossHair rows marked "not refuted" found no counterexample within their time but did not
  exhaust every path; "confirmed" rows did. The state-construction contract builds real edge
  states and is only sampled this way.
- The GPU round trip, the service queue simulation and the acceptance lab are checked by
  their golden numbers and laws (docs/deepinfer.md), not proved.
"""


def proofs_readme_path() -> Path:
    """``proofs/README.md`` next to the installed ``kvproof.proofs`` package (the checkout's, in an editable install)."""
    from . import proofs

    return Path(proofs.__file__).resolve().parent / "README.md"


def _result_cell(result: str) -> str:
    # CrossHair may or may not exhaust every path within its time; `kvproof prove` says which.
    return "no counterexample" if result in ("confirmed", "not refuted") else result


def proofs_readme_cells(rows: list) -> list[tuple[str, ...]]:
    """One row per proof: the stable cells, then the control's verdict with its witness."""
    cells: list[tuple[str, ...]] = []
    for r in rows:
        witness = r.counterexample.split(": ", 1)[-1] if r.control == "caught" else "-"
        cells.append((r.property, f"`{r.function}`", r.method, r.bounds, _result_cell(r.result), f"{r.control}: {witness}"))
    return cells


def proofs_readme_rows(rows: list) -> list[str]:
    """Each README table row up to the control's verdict: the part that must not drift (witnesses may vary)."""
    stable = [(*cells[:-1], r.control) for cells, r in zip(proofs_readme_cells(rows), rows)]
    return [line.removesuffix(" |") for line in markdown_table(PROOFS_HEADERS, stable).splitlines()[2:]]


def proofs_readme(rows: list) -> str:
    return README_HEAD + markdown_table(PROOFS_HEADERS, proofs_readme_cells(rows)) + "\n" + README_TAIL


GATE_BEGIN = "<!-- gate-rows: generated from kvproof.gate by `kvproof docs --write`; a test fails on drift -->"
GATE_END = "<!-- /gate-rows -->"
GATE_HEADERS = ("Family", "Layer", "Row", "What it checks", "Fails on (its control)")


def gate_table() -> str:
    """The table of gate rows in ``docs/gate.md``, from the checks themselves and their controls (``gate.controls``)."""
    from .gate import all_checks
    from .gate.controls import CONTROLS

    control = {c.row: c.describe() for c in CONTROLS}
    return markdown_table(GATE_HEADERS, [(c.family, c.layer, c.name, c.what, control[c.name]) for c in all_checks()])


def between_markers(page: str, begin: str, end: str, text: str, what: str) -> str:
    """``page`` with the text between its ``begin`` and ``end`` markers replaced by ``text`` (a ValueError naming
    ``what`` when the page has no such markers)."""
    head, _, rest = page.partition(begin)
    _, _, tail = rest.partition(end)
    if not rest:
        raise ValueError(f"the page has no {what} markers")
    return f"{head}{begin}\n{text}\n{end}{tail}"


def with_gate_table(page: str) -> str:
    """``page`` with the text between the gate-rows markers replaced by ``gate_table()``."""
    return between_markers(page, GATE_BEGIN, GATE_END, gate_table(), "gate-rows")


def gate_page_path() -> Path:
    """``docs/gate.md`` of the checkout."""
    return Path(__file__).resolve().parent.parent / "docs" / "gate.md"


COMMANDS_BEGIN = "<!-- commands: generated from the command's own help by `kvproof docs --write`; a test fails on drift -->"
COMMANDS_END = "<!-- /commands -->"


def _help_paragraphs(text: str) -> str:
    """A command's help as markdown: click's no-rewrap markers dropped, its indented lines kept as written."""
    import inspect

    return "\n".join(line for line in inspect.cleandoc(text).splitlines() if line.strip() != "\b").strip()


def _command_sections(command: Any, path: tuple[str, ...], depth: int) -> list[str]:
    """The section of ``command`` (and of each subcommand, in the order ``--help`` lists them): what it does, its usage
    line, and every option with its help and default, as ``--help`` prints them."""
    import click

    name = " ".join(("kvproof", *path))
    ctx = click.Context(command, info_name=name)
    lines = [f"{'#' * depth} `{name}`", "", _help_paragraphs(command.help or ""), ""]
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            lines += _command_sections(command.commands[sub], (*path, sub), depth + 1)
        return lines
    records = [p.get_help_record(ctx) for p in command.get_params(ctx)]
    rows = [(f"`{opt}`", text) for opt, text in (r for r in records if r) if "--help" not in opt.split(", ")]
    usage = " ".join(command.collect_usage_pieces(ctx))
    return lines + [f"Usage: `{name} {usage}`", "", markdown_table(("Option", "What it does"), rows), ""]


def commands_reference() -> str:
    """Every command of ``kvproof`` in ``--help``'s workflow order, each with its help and every option's help and
    default: generated from the click declarations, so the page says what ``--help`` says."""
    from .cli import main

    ctx = main.make_context("kvproof", [], resilient_parsing=True)
    return "\n".join(
        line for name in main.list_commands(ctx) for line in _command_sections(main.commands[name], (name,), 3)
    ).strip()


def with_commands_reference(page: str) -> str:
    """``page`` with the text between the commands markers replaced by ``commands_reference()``."""
    return between_markers(page, COMMANDS_BEGIN, COMMANDS_END, commands_reference(), "commands")


def commands_page_path() -> Path:
    """``docs/commands.md`` of the checkout."""
    return Path(__file__).resolve().parent.parent / "docs" / "commands.md"


@dataclass(frozen=True)
class GeneratedDocument:
    """A document kvproof writes: where it lies, and ``regenerate`` (its committed text -> what it should be)."""

    name: str
    path: Callable[[], Path]
    regenerate: Callable[[str], str]
    runs_proofs: bool = False  # regenerating it runs every proof (a minute or two), so the drift test leaves it out


def _figures_page(_: str) -> str:
    from . import figures

    return figures.render(figures.load())


def _figures_path() -> Path:
    from . import figures

    return figures.PAGE


def _proofs_readme_now(committed: str) -> str:
    """The README from a run of every proof; the committed text when it already holds every stable row (the
    counterexamples a solver prints vary from run to run, so rewriting them would be a change that says nothing)."""
    from .gate.proofs import budget_of
    from .proofs.registry import run_all
    from .stateful_tests.harness.profiles import profile_named

    return proofs_readme_over(committed, run_all(budget_of(profile_named(None))))


def proofs_readme_over(committed: str, rows: list) -> str:
    """The README of ``rows``, or ``committed`` itself when it differs from that only in the counterexamples."""
    fresh = proofs_readme(rows)
    same = (
        committed.startswith(README_HEAD)
        and committed.endswith(README_TAIL)
        and committed.count("\n| ") == fresh.count("\n| ")
        and all(row in committed for row in proofs_readme_rows(rows))
    )
    return committed if same else fresh


GENERATED = (
    GeneratedDocument("the gate table of docs/gate.md", gate_page_path, with_gate_table),
    GeneratedDocument("the command reference of docs/commands.md", commands_page_path, with_commands_reference),
    GeneratedDocument("docs/figures.md", _figures_path, _figures_page),
    GeneratedDocument("proofs/README.md", proofs_readme_path, _proofs_readme_now, runs_proofs=True),
)


def stale(documents: Iterable[GeneratedDocument]) -> list[str]:
    """The names of the documents whose committed text is not what regenerating them writes."""
    return [d.name for d in documents if d.regenerate(d.path().read_text()) != d.path().read_text()]


@dataclass
class WrittenDocuments:
    """``kvproof docs --write``: the generated documents rewritten (the ``report.CommandReport`` shape)."""

    written: list[tuple[str, Path, bool]] = field(default_factory=list)  # name, path, changed
    kind = "docs-write"
    ok = True
    skipped = ""

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        for name, path, changed in self.written:
            say(f"{'wrote' if changed else 'unchanged'} {path} ({name})")

    def summary_line(self) -> str:
        return f"docs: generated={len(self.written)} changed={sum(changed for _, _, changed in self.written)}"

    def to_json(self) -> dict[str, Any]:
        return {"documents": [{"name": n, "path": str(p), "changed": c} for n, p, c in self.written]}


def write_generated(proofs: bool = True) -> WrittenDocuments:
    """Regenerate every generated document (``proofs``: also ``proofs/README.md``, which runs every proof)."""
    done = WrittenDocuments()
    for document in GENERATED:
        if document.runs_proofs and not proofs:
            continue
        path = document.path()
        before = path.read_text()
        after = document.regenerate(before)
        if after != before:
            path.write_text(after)
        done.written.append((document.name, path, after != before))
    return done


if __name__ == "__main__":
    import sys

    written = write_generated(proofs="--no-proofs" not in sys.argv[1:])
    written.render(print, lambda *args, **kwargs: None)
    print(written.summary_line())

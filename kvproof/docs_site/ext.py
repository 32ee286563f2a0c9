"""The site's Sphinx extension: pictures drawn from the rules, and tables read from the registries.

Directives (written in the MyST pages as ```` ```{name} argument ````):

- ``kvproof-figure NAME``: runs ``figures.FIGURES[NAME]`` (the rules, then the drawing) and
  places the PNG as a figure; ``:alt:`` is required, the content is the caption. The PNG is
  written under the build folder (``<doctrees>/../figures``), never into the sources, and
  Sphinx copies it to ``_images/``.
- ``kvproof-guards QUALNAME``: what guards one rule: the proofs about it or the kernels it calls,
  and the laws whose body names it (``catalog``).
- every ``docs/sources.md#anchor`` in a rule's docstring becomes a link to that anchor of the
  sources page (``docs/sources.md``, ``kvproof.sources``);
- ``kvproof-table KIND [FAMILY]``: ``proofs`` (the family's Z3 theorems, proved again while the
  site builds, each with its negative control's verdict), ``checks`` (its CrossHair checks),
  ``laws``, ``gate``, ``variants``, ``rule-sets``.

A failure inside a directive (a figure that raises, a proof that is not proved, an unknown
name) is a Sphinx error at the page and line, so a ``-W`` build fails on it.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from .. import sources
from . import catalog, figures


def _para(*parts: nodes.Node | str) -> nodes.paragraph:
    para = nodes.paragraph()
    for part in parts:
        para += nodes.Text(part) if isinstance(part, str) else part
    return para


def _literal(text: str) -> nodes.literal:
    return nodes.literal(text, text)


def table(headers: tuple[str, ...], rows: Sequence[tuple[str, ...]], widths: tuple[int, ...] | None = None) -> nodes.table:
    """A docutils table of plain-text cells (``code`` spans in backticks become literals)."""
    tab = nodes.table(classes=["kvproof-table"])
    group = nodes.tgroup(cols=len(headers))
    tab += group
    for w in widths or (1,) * len(headers):
        group += nodes.colspec(colwidth=w)
    head, body = nodes.thead(), nodes.tbody()
    group += head
    group += body

    def row_of(cells: tuple[str, ...]) -> nodes.row:
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            para = nodes.paragraph()
            for i, piece in enumerate(str(cell).split("`")):
                if piece:
                    para += _literal(piece) if i % 2 else nodes.Text(piece)
            entry += para
            row += entry
        return row

    head += row_of(headers)
    for r in rows:
        body += row_of(r)
    return tab


class FigureDirective(SphinxDirective):
    """``kvproof-figure NAME``: a picture computed from the rules at build time."""

    required_arguments = 1
    has_content = True
    option_spec: ClassVar[dict[str, Any]] = {"alt": directives.unchanged_required}

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        if name not in figures.FIGURES:
            raise self.error(f"unknown figure {name!r}: use {', '.join(figures.FIGURES)}")
        if "alt" not in self.options:
            raise self.error(f"figure {name!r} needs an :alt: text")
        out = Path(self.env.doctreedir).parent / "figures"
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"{name}.png"
        try:
            fig = figures.figure(name)
        except Exception as exc:  # the rules behind a picture failed: the build must say so
            raise self.error(f"figure {name!r}: {type(exc).__name__}: {exc}") from exc
        fig.savefig(target, dpi=100, metadata={"Software": None})
        # An image URI is relative to the page; Sphinx copies the file to _images/.
        page_dir = Path(self.env.doc2path(self.env.docname)).parent
        uri = Path(os.path.relpath(target, page_dir)).as_posix()
        self.env.note_dependency(str(target))
        figure = nodes.figure(classes=["kvproof-figure"], ids=[f"figure-{name}"])
        figure += nodes.image(uri=uri, alt=self.options["alt"], candidates={"*": uri})
        parsed = self.parse_content_to_nodes() if self.content else []
        if parsed and isinstance(parsed[0], nodes.paragraph):
            figure += nodes.caption(parsed[0].rawsource, "", *parsed[0].children)
            if parsed[1:]:
                figure += nodes.legend("", *parsed[1:])
        return [figure]


class GuardsDirective(SphinxDirective):
    """``kvproof-guards QUALNAME``: the proofs and the laws that guard one rule."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        dotted = self.arguments[0]
        try:
            catalog.resolve(dotted)
        except (ImportError, AttributeError) as exc:
            raise self.error(f"no rule {dotted!r}: {exc}") from exc
        proved = catalog.proofs_of(dotted)
        checked = catalog.laws_of(dotted)
        box = nodes.container(classes=["kvproof-guards"])
        items = nodes.bullet_list()
        if proved:
            for p in proved:
                items += nodes.list_item(
                    "",
                    _para(
                        f"{p.method}: ",
                        _literal(p.name),
                        f" ({p.claim}; about ",
                        _literal(", ".join(f.removeprefix("kvproof.") for f in p.functions)),
                        ")",
                    ),
                )
        else:
            items += nodes.list_item(
                "", _para("No proof is about this rule or a kernel it calls: it is checked by sampling only.")
            )
        if checked:
            for law in checked:
                items += nodes.list_item("", _para("law: ", _literal(law.name), f" ({law.statement})"))
        else:
            items += nodes.list_item(
                "", _para("No law names this function; the room's laws below check it through the trackers and trees.")
            )
        box += _para(nodes.strong("", "Guarded by"), " (read off the proof registry and the law sources):")
        box += items
        return [box]


class TableDirective(SphinxDirective):
    """``kvproof-table KIND [FAMILY]``: a table read from the code."""

    required_arguments = 1
    optional_arguments = 1

    def run(self) -> list[nodes.Node]:
        kind = self.arguments[0]
        family = self.arguments[1] if len(self.arguments) > 1 else ""
        if kind == "proofs":
            rows = catalog.prove_family(family)
            failed = [r.claim for r in rows if r.result != "proved" or r.control != "caught"]
            if not rows or failed:
                raise self.error(f"the {family} proofs do not all hold with their controls caught: {failed or 'none found'}")
            return [
                table(
                    ("theorem", "spec kernels", "bounds", "at build time", "negative control (its model)"),
                    [(r.claim, f"`{r.functions}`", r.bounds, r.result, f"{r.control}: {r.witness}") for r in rows],
                    (5, 3, 3, 1, 3),
                )
            ]
        if kind == "checks":
            entries = [p for p in catalog.proofs() if p.family == family and p.method != "Z3"]
            return [
                table(
                    ("CrossHair", "claim", "spec kernels"),
                    [
                        (
                            p.method.removeprefix("CrossHair "),
                            p.claim,
                            "`" + ", ".join(f.removeprefix("kvproof.") for f in p.functions) + "`",
                        )
                        for p in entries
                    ],
                    (1, 4, 2),
                )
            ]
        if kind == "laws":
            return [table(("law", "statement"), [(f"`{law.name}`", law.statement) for law in catalog.laws(family)], (2, 5))]
        if kind == "gate":
            return [
                table(("layer", "gate row", "what it checks", "fails on (its control)"), catalog.gate_rows(family), (1, 2, 5, 3))
            ]
        if kind == "variants":
            return [
                table(
                    ("variant", "the reference's rule", "the variant", "upstream", "releases"),
                    catalog.variant_rows(),
                    (2, 3, 4, 3, 2),
                )
            ]
        if kind == "rule-sets":
            return [table(("rule set", "releases", "variants", "what it describes"), catalog.rule_set_rows(), (1, 1, 3, 3))]
        raise self.error(f"unknown table {kind!r}: use proofs, checks, laws, gate, variants, rule-sets")


def link_sources(app: Sphinx, what: str, name: str, obj: object, options: object, lines: list[str]) -> None:
    """``autodoc-process-docstring``: each ``docs/sources.md#anchor`` of a rule's docstring links to the sources page.

    Source: docs/sources.md#kvproof-design-card (every ``Source:`` resolves, and the site follows it).
    """
    here = posixpath.dirname(app.env.docname)
    page = posixpath.relpath("sources", here or ".") + ".html"
    lines[:] = [sources.link_anchors(line, page) for line in lines]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("autodoc-process-docstring", link_sources)
    app.add_directive("kvproof-figure", FigureDirective)
    app.add_directive("kvproof-guards", GuardsDirective)
    app.add_directive("kvproof-table", TableDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

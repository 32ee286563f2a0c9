"""Every ``Source:`` line resolves: to a repository path, an anchor of ``docs/sources.md``, or a URL.

The law: a reader outside the team can follow every source a rule, law or tool cites. A
``Source:`` block (the line that starts ``Source:`` in a docstring, with its continuation lines
up to a blank line) must name at least one resolvable reference, and everything in it that
looks like a reference must resolve:

- ``docs/sources.md#anchor``: the page has ``<a id="anchor"></a>``;
- a file-like token (``docs/dynamo-findings.md``, ``spec/errors.py``): the file exists in the
  checkout (a bare ``crtc.md`` or ``blocks_exp_out.txt`` is a note outside it, so it fails);
- a URL (``https://...``): taken as written (the checker has no network);

and it must not cite the team's notes the old way: a ``§`` section, a ``seed NNN``, an
``issue N`` or "the design card" (their public equivalents are anchors of the sources page).

``kvproof.docs_site.ext`` turns each ``docs/sources.md#anchor`` of a rule's docstring into a
link to the site's sources page.

Source: docs/sources.md#kvproof-design-card; docs/sources.md (the page this law holds).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SOURCES_PAGE = "docs/sources.md"
ROOMS = ("spec", "reference", "impl", "proofs", "stateful_tests", "kvproof")

ANCHOR = re.compile(r"docs/sources\.md#([A-Za-z0-9][\w-]*)")
URL = re.compile(r"https?://[^\s<>\"'`]+[^\s<>\"'`.,;:)]")
FILE = re.compile(r"(?<![\w/.#-])((?:[\w.-]+/)*[\w-]+\.(?:py|md|toml|txt|json|jsonl|rs|csv))(?![\w/-])")
OLD_CITATION = re.compile(r"§|\bseeds? \d{3}\b|\bissues? #?\d+|\bdesign card\b", re.IGNORECASE)
PAGE_ANCHOR = re.compile(r"""<a\s+id=["']([\w-]+)["']""")


@dataclass(frozen=True)
class Citation:
    """One ``Source:`` block: where it is and its text (continuation lines joined by spaces)."""

    where: str  # path:line of the docstring's owner
    text: str


def source_blocks(doc: str) -> list[str]:
    """The ``Source:`` blocks of one docstring, each joined into one line."""
    lines = doc.splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if re.match(r"\s*Sources?:", line):
            block = [line.strip()]
            for more in lines[i + 1 :]:
                if not more.strip():
                    break
                block.append(more.strip())
            blocks.append(" ".join(block))
    return blocks


def citations(root: Path, rooms: tuple[str, ...] = ROOMS) -> Iterator[Citation]:
    """Every ``Source:`` block of every docstring (module, class, function) in the project's rooms."""
    for room in rooms:
        for path in sorted((root / room).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    doc = ast.get_docstring(node)
                    for text in source_blocks(doc or ""):
                        yield Citation(f"{path.relative_to(root)}:{getattr(node, 'lineno', 1)}", text)


def page_anchors(root: Path) -> set[str]:
    """The anchors of the sources page (``<a id="..."></a>``)."""
    page = root / SOURCES_PAGE
    return set(PAGE_ANCHOR.findall(page.read_text())) if page.is_file() else set()


def unresolved(text: str, root: Path, anchors: set[str]) -> list[str]:
    """Why one ``Source:`` block does not resolve (empty: it resolves)."""
    problems = [f"no anchor #{a} in {SOURCES_PAGE}" for a in ANCHOR.findall(text) if a not in anchors]
    rest = URL.sub(" ", ANCHOR.sub(" ", text))
    problems += [f"no file {f} in the repository" for f in FILE.findall(rest) if not (root / f).is_file()]
    problems += [f"an old-style citation {m.group(0)!r} (cite {SOURCES_PAGE}#anchor)" for m in OLD_CITATION.finditer(rest)]
    resolved = ANCHOR.search(text) or URL.search(text) or any((root / f).is_file() for f in FILE.findall(rest))
    if not resolved:
        problems.append("nothing in it resolves (name a repository path, an anchor of the sources page or a URL)")
    return problems


def check_sources(root: Path, rooms: tuple[str, ...] = ROOMS) -> list[str]:
    """One line per ``Source:`` block that does not resolve (``path:line: why: text``); empty when all do."""
    anchors = page_anchors(root)
    return [
        f"{c.where}: {'; '.join(why)}: {c.text}" for c in citations(root, rooms) if (why := unresolved(c.text, root, anchors))
    ]


def link_anchors(text: str, page_url: str) -> str:
    """A docstring with each ``docs/sources.md#anchor`` made a reST link to ``page_url#anchor``."""
    return ANCHOR.sub(lambda m: f"`{m.group(0)} <{page_url}#{m.group(1)}>`__", text)

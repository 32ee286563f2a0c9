"""The internal link check: every relative ``href`` and ``src`` of a built site resolves.

Sphinx itself reports a reference it cannot resolve (``nitpicky``, ``-W``); this check reads
the HTML it wrote, so that a link written as a plain path (markdown, a template, a theme) is
held to the same rule: the target file exists inside the site and, when the link has a
fragment, the target page has an element with that ``id``. External links (a scheme or
``//``) are not followed: the build machine has no network, and they are not the site's.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []  # (attribute, value)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name") and (name == "id" or tag == "a"):
                self.ids.add(value)
            elif name in ("href", "src"):
                self.links.append((name, value))


def _read(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def is_external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme) or url.startswith("//")


def check_site(html: Path) -> list[str]:
    """Return one line per broken internal link (``page: attr="value": why``); empty when all resolve."""
    html = html.resolve()
    pages = {p: _read(p) for p in sorted(html.rglob("*.html"))}
    broken = []
    for path, page in pages.items():
        for attr, value in page.links:
            if is_external(value) or value.startswith("data:"):
                continue
            parts = urlsplit(value)
            target = path if not parts.path else (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            where = f'{path.relative_to(html)}: {attr}="{value}"'
            if not target.is_relative_to(html):
                broken.append(f"{where}: leaves the site")
            elif not target.is_file():
                broken.append(f"{where}: no file {target.relative_to(html)}")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _read(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where}: no element id={parts.fragment!r} in {target.relative_to(html)}")
    return broken

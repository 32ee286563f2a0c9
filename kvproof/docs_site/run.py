"""``kvproof docs`` as a library call: build the site, then (when asked) open every page in headless Chromium.

``run_docs`` returns a ``SiteRun`` (the ``report.CommandReport`` shape). A machine that cannot build the site (no
checkout, no docs extra) or cannot run the browser check (no playwright, no Chromium) is
``harness.errors.Unavailable``: exit 2, as the README promises for an environment problem.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..stateful_tests.harness.errors import Unavailable
from .build import SiteBuild

Say = Callable[[str], None]


@dataclass
class SiteRun:
    """A built site, and the browser's verdict on each page when it was checked."""

    built: SiteBuild
    checks: list[Any] | None = None  # browser.PageCheck, one per page; None: not checked
    shots: Path | None = None
    seconds: float = 0.0
    kind = "docs"
    skipped = ""

    @property
    def bad(self) -> list[Any]:
        return [c for c in self.checks or [] if c.problems]

    @property
    def ok(self) -> bool:
        return self.built.ok and not self.bad

    def render(self, say: Say, table: Callable[..., None]) -> None:
        for c in self.bad:
            for problem in c.problems:
                say(f"  {c.page}: {problem}")

    def summary_line(self) -> str:
        if self.checks is None:
            return self.built.summary()
        return (
            f"browser: pages={len(self.checks)} pictures={sum(c.images for c in self.checks)} "
            f"problems={sum(len(c.problems) for c in self.bad)} screenshots={self.shots} ({self.seconds:.1f} s)"
        )

    def to_json(self) -> dict[str, Any]:
        pages = (
            None if self.checks is None else [{"page": c.page, "images": c.images, "problems": c.problems} for c in self.checks]
        )
        return self.built.to_json() | {"pages": pages}


def run_docs(out_dir: str | None, doctest: bool, check_browser: bool, screenshots_dir: str | None, say: Say) -> SiteRun:
    """Build the site into ``out_dir`` (default build/docs); with ``check_browser``, open every page in Chromium and
    save a screenshot of each into ``screenshots_dir`` (default build/docs-screenshots)."""
    from . import browser
    from .build import DocsError, build_site, checkout_root

    try:
        built = build_site(Path(out_dir) if out_dir else None, doctest=doctest)
    except DocsError as exc:
        raise Unavailable(f"kvproof docs: {exc}") from None
    for step in built.steps:
        for line in step.messages if not step.ok else []:
            say(f"  {step.name}: {line}")
    if not check_browser or not built.ok:
        return SiteRun(built)
    say(built.summary())
    why = browser.unavailable()
    if why:
        raise Unavailable(f"kvproof docs --check-browser: {why}")
    shots = Path(screenshots_dir) if screenshots_dir else checkout_root() / "build" / "docs-screenshots"
    started = time.perf_counter()
    checks = browser.check_pages(built.html, browser.site_pages(built.html), shots)
    return SiteRun(built, checks, shots, time.perf_counter() - started)

"""Build the reference site: Sphinx's html builder with warnings as errors, its doctest builder, the link check.

``build_site(out)`` is what ``kvproof docs`` runs, from a checkout (the sources are
``docs/``, the configuration ``docs/site/conf.py``):

0. the previous output is removed (Sphinx's viewcode would keep a source page it believes
   current, with anchors of an older build);
1. ``html``: ``-W --keep-going -n -E`` (every warning is an error, every one is reported,
   nitpicky about references, a fresh environment so every picture and table is computed
   again from the code);
2. ``doctest``: every ``{doctest}`` block and every docstring example the pages include;
3. ``links.check_site``: every internal ``href`` and ``src`` of the built pages resolves to a
   file and, with a fragment, to an element with that id.

Output: ``<out>/html`` (the site), ``<out>/doctrees``, ``<out>/figures`` (the PNGs as drawn),
``<out>/doctest/output.txt``.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MISSING_EXTRA = "the docs extra is not installed: pip install -e '.[docs]'"


def checkout_root() -> Path:
    """The checkout ``kvproof`` is installed from (the site's sources are not part of a wheel)."""
    return Path(__file__).resolve().parent.parent.parent


def missing_packages() -> list[str]:
    """The docs extra's packages that cannot be imported here."""
    import importlib.util

    return [name for name in ("sphinx", "myst_parser", "matplotlib") if importlib.util.find_spec(name) is None]


@dataclass
class SiteStep:
    name: str
    seconds: float
    ok: bool
    messages: list[str] = field(default_factory=list)


@dataclass
class SiteBuild:
    html: Path
    steps: list[SiteStep]

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {"html": str(self.html), "steps": [asdict(s) for s in self.steps]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SiteBuild:
        return cls(Path(data["html"]), [SiteStep(**s) for s in data["steps"]])

    def summary(self) -> str:
        parts = ", ".join(f"{s.name} {s.seconds:.1f} s{'' if s.ok else ' FAILED'}" for s in self.steps)
        return f"docs: {'built' if self.ok else 'FAILED'} {self.html} ({parts})"


class DocsError(Exception):
    """The site cannot be built here (no sources, no extra); the message says what to do."""


def _sphinx(builder: str, source: Path, conf: Path, doctrees: Path, out: Path, fresh: bool) -> tuple[int, list[str]]:
    from sphinx.cmd.build import build_main

    warning_file = out.parent / f"{builder}-warnings.txt"
    out.mkdir(parents=True, exist_ok=True)
    argv = ["-b", builder, "-W", "--keep-going", "-n", "-q", "-c", str(conf), "-d", str(doctrees), "-w", str(warning_file)]
    if fresh:
        argv.append("-E")
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        # myst-parser 5.2 reads an attribute Sphinx 9 deprecates for 11: the library's notice, not the site's warning
        warnings.filterwarnings("ignore", message=".*MystReferenceResolver.app' is deprecated")
        code = build_main([*argv, str(source), str(out)])
    lines = [
        line for line in (warning_file.read_text() if warning_file.exists() else stderr.getvalue()).splitlines() if line.strip()
    ]
    return code, lines


def build_site(out: Path | None = None, root: Path | None = None, doctest: bool = True) -> SiteBuild:
    """Build the site into ``out`` (default ``build/docs`` in the checkout); never raises for a failing page."""
    missing = missing_packages()
    if missing:
        raise DocsError(f"{MISSING_EXTRA} (missing: {', '.join(missing)})")
    root = root or checkout_root()
    source, conf = root / "docs", root / "docs" / "site"
    if not (conf / "conf.py").is_file():
        raise DocsError(f"no site sources at {conf}: run kvproof docs from a checkout of kvproof")
    out = (out or root / "build" / "docs").resolve()
    doctrees, html = out / "doctrees", out / "html"
    for stale in (html, doctrees, out / "figures", out / "doctest"):
        # A fresh build every time: viewcode keeps a source page it thinks up to date, with stale anchors.
        shutil.rmtree(stale, ignore_errors=True)
    import matplotlib

    matplotlib.use("Agg")  # no display; the pictures are files
    steps = []
    started = time.perf_counter()
    code, messages = _sphinx("html", source, conf, doctrees, html, fresh=True)
    steps.append(SiteStep("html", time.perf_counter() - started, code == 0, messages))
    if doctest:
        started = time.perf_counter()
        code, messages = _sphinx("doctest", source, conf, doctrees, out / "doctest", fresh=False)
        report = out / "doctest" / "output.txt"
        if code != 0 and report.exists():
            messages += [line for line in report.read_text().splitlines() if line.strip()][-40:]
        steps.append(SiteStep("doctest", time.perf_counter() - started, code == 0, messages))
    from .links import check_site

    started = time.perf_counter()
    broken = check_site(html) if html.is_dir() else [f"{html}: not built"]
    steps.append(SiteStep("links", time.perf_counter() - started, not broken, broken))
    return SiteBuild(html, steps)


def build_site_apart(out: Path, timeout_s: float = 900.0) -> SiteBuild:
    """``build_site(out)`` in a fresh interpreter, as ``kvproof docs`` runs it: nothing an earlier caller did to this
    process (a patched rule, an imported module, a leftover thread) can reach the build. The child's whole output is
    the failing step's message when it does not report."""
    try:
        ran = subprocess.run(
            [sys.executable, "-m", "kvproof.docs_site.build", str(out)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return SiteBuild(
            out / "html", [SiteStep("html", timeout_s, False, [f"the build ran past {timeout_s:.0f} s and was stopped"])]
        )
    lines = ran.stdout.strip().splitlines()
    try:
        return SiteBuild.from_json(json.loads(lines[-1]))
    except (IndexError, ValueError, KeyError, TypeError):
        said = [line for line in (ran.stdout + ran.stderr).splitlines() if line.strip()][-60:]
        return SiteBuild(
            out / "html", [SiteStep("html", 0.0, False, [f"the build process exited {ran.returncode} without a report:", *said])]
        )


if __name__ == "__main__":
    # python -m kvproof.docs_site.build OUT: build into OUT and print the steps as one JSON line (build_site_apart).
    print(json.dumps(build_site(Path(sys.argv[1])).to_json()))

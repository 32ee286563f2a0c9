"""Open every page of a built site in headless Chromium: it renders, its pictures load, nothing errs.

The site is served by ``http.server`` on 127.0.0.1 (an ephemeral port, a daemon thread) and
driven by playwright with the system's Chromium (``/usr/bin/chromium``, Debian's package;
playwright is never asked to download a browser). For each page: every ``<img>`` finished
loading with a natural width above zero, no console message of type ``error``, no uncaught
page error, no failed request and no response of status 400 or more. A screenshot of each
page is saved: the whole page where it has pictures, else its first screen (a whole-page
capture of all 25 pages was two thirds of the check's time: 17 of 26 s, kvproof issue 32).
The browser and the server are closed on every path out, so neither outlives the check.

playwright starts Chromium headless with a fresh profile in a temporary folder of its own
(it refuses ``--user-data-dir`` among the arguments: ``launch`` always uses a new one);
``FLAGS`` are the rest of the hardening.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("KVPROOF_CHROMIUM", "/usr/bin/chromium")

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def unavailable() -> str | None:
    """Why the browser check cannot run here, or None."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed: pip install -e '.[docs]'"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM}: apt-get install -y chromium"
    return None


@dataclass
class PageCheck:
    """What one page did in the browser."""

    page: str
    images: int = 0
    problems: list[str] = field(default_factory=list)
    screenshot: Path | None = None
    failed: list[tuple[str, str, str | None]] = field(default_factory=list)  # (url, failure, referer), judged on landing


def left_behind(failure: str, referer: str | None, landed: str) -> bool:
    """Whether a failed request was cancelled by its page navigating away, not refused by the server.

    A page that leads elsewhere (the site's root, ``REDIRECTS``) can leave before its favicon has
    loaded; Chromium then aborts that request (``net::ERR_ABORTED``), about one time in six here.
    Only such an abort, asked for by a document other than the one the page landed on, is left out;
    every other failure is a problem, and a missing file is an HTTP 404 whichever page asked.
    """
    return failure == "net::ERR_ABORTED" and referer is not None and referer != landed


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the check reports what matters
        pass


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1 for the duration of the block; yield its base URL."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="kvproof-docs-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


REDIRECTS = {"index.html": "site/index.html"}
"""Pages that only lead elsewhere (the site's root leads to its front page): checked where they land."""

_IMAGES = "els => els.map(e => [e.getAttribute('src'), e.complete, e.naturalWidth])"


def _listen(page: Any, check: PageCheck) -> None:
    """Record on ``check`` every console error, uncaught error and error response of ``page``, and every failed
    request, which ``check_pages`` judges once the page has landed (``left_behind``)."""

    def console(message: Any) -> None:
        if message.type == "error":
            check.problems.append(f"console {message.type}: {message.text}")

    def page_error(error: Any) -> None:
        check.problems.append(f"page error: {error}")

    def request_failed(request: Any) -> None:
        check.failed.append((request.url, str(request.failure), request.headers.get("referer")))

    def response(reply: Any) -> None:
        if reply.status >= 400:
            check.problems.append(f"HTTP {reply.status}: {reply.url}")

    page.on("console", console)
    page.on("pageerror", page_error)
    page.on("requestfailed", request_failed)
    page.on("response", response)


def check_pages(html: Path, pages: list[str], screenshots: Path | None = None, timeout_ms: int = 20_000) -> list[PageCheck]:
    """Open each of ``pages`` (paths relative to ``html``) in Chromium; return what each did."""
    from playwright.sync_api import sync_playwright

    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
    results = []
    with serve(html) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
            for name in pages:
                check = PageCheck(name)
                page = context.new_page()
                _listen(page, check)
                response = page.goto(base + name, wait_until="load", timeout=timeout_ms)
                if response is None or not response.ok:
                    check.problems.append(f"page did not load: {None if response is None else response.status}")
                if name in REDIRECTS:
                    try:
                        page.wait_for_url(base + REDIRECTS[name], wait_until="load", timeout=timeout_ms)
                    except Exception as exc:  # playwright's TimeoutError: the redirect did not happen
                        check.problems.append(f"did not lead to {REDIRECTS[name]}: {type(exc).__name__}")
                check.problems += [
                    f"request failed: {url} ({failure})"
                    for url, failure, referer in check.failed
                    if not left_behind(failure, referer, page.url)
                ]
                for src, complete, width in page.eval_on_selector_all("img", _IMAGES):
                    check.images += 1
                    if not complete or width == 0:
                        check.problems.append(f"picture did not render: {src}")
                if screenshots is not None:
                    check.screenshot = screenshots / (name.replace("/", "__").removesuffix(".html") + ".png")
                    page.screenshot(path=str(check.screenshot), full_page=check.images > 0)
                page.close()
                results.append(check)
            context.close()
        finally:
            browser.close()
    return results


def site_pages(html: Path) -> list[str]:
    """Every page of the built site except the generated source listings, index and search (``_modules``, ``genindex``, ``search``)."""
    skip = ("_modules/", "genindex.html", "search.html", "py-modindex.html")
    return [
        p.relative_to(html).as_posix()
        for p in sorted(html.rglob("*.html"))
        if not p.relative_to(html).as_posix().startswith(skip)
    ]

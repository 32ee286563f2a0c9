"""Every page of the built site opened in headless Chromium: it renders, its pictures load, nothing errs.

Needs Debian's chromium at /usr/bin/chromium and the docs extra (playwright); without them the
test is skipped, or fails when ``KVPROOF_REQUIRE_CHROMIUM`` is set (CI sets it). Screenshots
of every page go to ``build/docs-screenshots/`` in the checkout (the CI artifact): a page with pictures
whole, any other its first screen.
"""

import os
import threading
from pathlib import Path

import pytest

from kvproof.docs_site import browser
from kvproof.stateful_tests.harness.optional import skip_or_fail

# The site is built once per worker that asks for it (``built_site``, a session fixture): one worker runs every test
# that needs it.
pytestmark = pytest.mark.xdist_group("docs-site")

ROOT = Path(__file__).resolve().parent.parent.parent
SHOTS = ROOT / "build" / "docs-screenshots"
PICTURES = {"site/tree.html": 2, "site/sequences.html": 1, "site/deepinfer.html": 1}


@pytest.fixture(autouse=True)
def chromium():
    skip_or_fail(browser.unavailable(), "KVPROOF_REQUIRE_CHROMIUM")


def _descendants() -> list[str]:
    """The command lines of every live process below this one (read from /proc)."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            names[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            continue  # a zombie has exited
        children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    found, todo = [], [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(names.get(child, "?"))
            todo.append(child)
    return found


def _png_height(path: Path) -> int:
    """The height of a PNG, from its header (the IHDR chunk: width, then height, big-endian)."""
    return int.from_bytes(path.read_bytes()[20:24], "big")


def test_every_page_renders_with_its_pictures_and_no_console_errors(built_site):
    assert built_site.ok, built_site.summary() + "\n" + "\n".join(m for s in built_site.steps for m in s.messages)
    pages = browser.site_pages(built_site.html)
    assert set(PICTURES) <= set(pages) and len(pages) >= 15
    checks = browser.check_pages(built_site.html, pages, SHOTS)
    problems = [f"{c.page}: {p}" for c in checks for p in c.problems]
    assert not problems, "\n".join(problems)
    images = {c.page: c.images for c in checks}
    assert all(images[page] >= n for page, n in PICTURES.items()), images
    assert all(c.screenshot and c.screenshot.stat().st_size > 10_000 for c in checks)
    heights = {c.page: _png_height(c.screenshot) for c in checks if c.screenshot}
    assert all(heights[page] > 900 for page in PICTURES), heights  # a page with pictures: all of it, pictures included
    assert all(heights[c.page] == 900 for c in checks if not c.images), heights  # else its first screen
    # Nothing outlives the check: no browser below this process, no server thread.
    assert not [p for p in _descendants() if "chrom" in p], _descendants()
    assert not [t for t in threading.enumerate() if t.name == "kvproof-docs-server"]


def test_negative_control_a_missing_picture_a_console_error_and_a_404_are_reported(tmp_path):
    """The check can fail: a page whose picture is missing, whose script logs an error and throws, and that asks for a missing file."""
    (tmp_path / "bad.html").write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
        '<img src="missing.png" alt="gone"><script src="nope.js"></script>'
        '<script>console.error("broken on purpose"); throw new Error("thrown on purpose")</script></body></html>'
    )
    (tmp_path / "good.html").write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body><p>fine</p></body></html>'
    )
    checks = {c.page: c for c in browser.check_pages(tmp_path, ["bad.html", "good.html"])}
    bad = "\n".join(checks["bad.html"].problems)
    assert "picture did not render: missing.png" in bad
    assert "broken on purpose" in bad and "thrown on purpose" in bad
    assert "HTTP 404" in bad and "nope.js" in bad
    assert checks["good.html"].problems == []


def test_only_a_request_its_page_left_behind_is_not_a_failure():
    """The root page leads to the front page at once and its favicon request may be aborted (one run in six):
    that abort is not a broken resource; an abort asked for by the page that is shown still is."""
    base = "http://127.0.0.1:8000/"
    assert browser.left_behind("net::ERR_ABORTED", base + "index.html", base + "site/index.html")
    assert not browser.left_behind("net::ERR_ABORTED", base + "site/index.html", base + "site/index.html")
    assert not browser.left_behind("net::ERR_CONNECTION_REFUSED", base + "index.html", base + "site/index.html")
    assert not browser.left_behind("net::ERR_ABORTED", None, base + "site/index.html")

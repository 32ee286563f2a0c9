"""Every ``Source:`` line resolves (``kvproof.sources``): to a repository path, an anchor of docs/sources.md, or a URL."""

import textwrap
from pathlib import Path

from kvproof.sources import check_sources, link_anchors, page_anchors, source_blocks, unresolved

ROOT = Path(__file__).resolve().parent.parent.parent


def test_every_source_line_in_the_project_resolves():
    assert check_sources(ROOT) == []


def test_the_sources_page_has_the_anchors_the_project_cites():
    anchors = page_anchors(ROOT)
    assert {"crtc-2", "sequences-3", "dynamo-crtc-readme", "dynamo-sequences-readme", "deepinfer-11-2-1"} <= anchors


def test_negative_control_a_citation_to_a_missing_anchor_fails():
    doc = textwrap.dedent("""\
        The rule.

        Source: docs/sources.md#crtc-2 "Coverage helpers";
        docs/sources.md#no-such-anchor.
    """)
    [block] = source_blocks(doc)
    assert unresolved(block, ROOT, page_anchors(ROOT)) == ["no anchor #no-such-anchor in docs/sources.md"]


def test_negative_control_old_style_notes_missing_files_and_bare_text_fail():
    anchors = page_anchors(ROOT)
    assert any("old-style" in why for why in unresolved("Source: crtc.md §2; seed 004.", ROOT, anchors))
    assert any("no file crtc.md" in why for why in unresolved("Source: crtc.md.", ROOT, anchors))
    assert any("issue" in why for why in unresolved("Source: docs/sources.md#crtc-2; kvproof issue 12.", ROOT, anchors))
    assert any("nothing in it resolves" in why for why in unresolved("Source: the team's notes.", ROOT, anchors))
    for good in (
        "Source: docs/dynamo-findings.md F3.",
        "Source: https://peps.python.org/pep-0440/.",
        "Source: docs/sources.md#crtc-4-1; spec/errors.py.",
    ):
        assert unresolved(good, ROOT, anchors) == [], good


def test_negative_control_a_module_with_a_broken_source_is_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "sources.md").write_text('<a id="here"></a>\n')
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "m.py").write_text(
        '"""M.\n\nSource: docs/sources.md#here.\n"""\n\ndef f():\n    """F.\n\n    Source: docs/sources.md#gone.\n    """\n'
    )
    [report] = check_sources(tmp_path, ("spec",))
    assert report.startswith("spec/m.py:6:") and "#gone" in report


def test_the_site_links_each_anchor_to_the_sources_page():
    text = "Source: docs/sources.md#crtc-2 and docs/sources.md#sequences-3."
    assert link_anchors(text, "../sources.html") == (
        "Source: `docs/sources.md#crtc-2 <../sources.html#crtc-2>`__ and "
        "`docs/sources.md#sequences-3 <../sources.html#sequences-3>`__."
    )

"""The reference site: its pictures come from the rules, its tables from the registries, its build is strict, its links resolve."""

import shutil
from pathlib import Path

import pytest

from kvproof.docs_site import catalog, figures, links

# The site is built once per worker that asks for it (``built_site``, a session fixture): one worker runs every test
# that needs it.
pytestmark = pytest.mark.xdist_group("docs-site")

ROOT = Path(__file__).resolve().parent.parent.parent


# ----------------------------------------------------------------------------- pictures


def test_the_split_picture_is_what_split_at_computes():
    from kvproof.spec.coverage import current_cutoff
    from kvproof.spec.shape import split_at

    before, prefix, suffix = figures.split_data()
    pre, suf = split_at(figures.split_example_state(), 3)
    assert prefix.held == {r: current_cutoff(pre, r) for r in figures.SPLIT_RANKS}
    assert suffix.held == {r: current_cutoff(suf, r) for r in figures.SPLIT_RANKS}
    assert before.held == {(0, 0): 6, (300, 0): 6, (1, 0): 1, (2, 0): 3, (3, 0): 5, (301, 0): 4}


def test_negative_control_a_broken_split_changes_the_picture(monkeypatch):
    """The picture runs the rule: a split that carries one block too many into the suffix draws differently."""
    import kvproof.spec.shape as shape

    honest = figures.split_data()
    monkeypatch.setattr(shape, "suffix_cutoff", lambda c, p, ops=None: c - p + 1 if c >= p else 0)
    assert figures.split_data()[2].held != honest[2].held


def test_the_repair_picture_shows_a_stale_entry_repaired():
    rows, repairs = figures.repair_data()
    stale = [[ext for ext, _, ok in row.entries if not ok] for row in rows]
    assert stale == [[], [300, 400], [300]] and repairs == 1


def test_the_timeline_reads_the_upstream_values():
    spill, capped = figures.prefill_data()
    at = {t: ms for t, ms in zip(spill.times, spill.remaining_ms)}
    assert (at[2.0], at[12.0], at[17.0]) == (14000, 4000, 0)  # the 10 s / 6 s spillover
    at = {t: (ms, a) for t, ms, a in zip(capped.times, capped.remaining_ms, capped.anchor_since)}
    assert at[2.0] == (10000, 2.0) and at[3.0][0] == 9000  # the credit capped at the removal time


def test_the_ring_picture_round_trips_with_s_below_r():
    ring = figures.ring_data()
    assert ring.transfer_rows < ring.rows and ring.window == [5, 6, 7, 8] and ring.round_trip_equal
    assert [ring.slots[p % ring.rows] for p in ring.window] == ring.window


@pytest.mark.parametrize("name", sorted(figures.FIGURES))
def test_every_picture_draws(name):
    pytest.importorskip("matplotlib")
    fig = figures.figure(name)
    assert fig.axes and fig.get_size_inches()[0] > 0


# ----------------------------------------------------------------------------- tables


def test_the_split_rule_is_guarded_by_its_theorem_and_its_law():
    assert "split_preserves_every_ranks_coverage" in [p.name for p in catalog.proofs_of("spec.shape.split_at")]
    assert "law_split_preserves_every_ranks_coverage" in [law.name for law in catalog.laws_of("spec.shape.split_at")]
    assert catalog.proofs_of("spec.coverage.holders") == []  # a rule no proof is about says so


def test_every_family_has_proofs_that_hold_and_laws():
    for family in catalog.FAMILIES:
        rows = catalog.prove_family(family)
        assert rows and all(r.result == "proved" and r.control == "caught" for r in rows)
        assert catalog.laws(family) and catalog.gate_rows(family)


def test_the_variant_table_is_spec_rules():
    from kvproof.spec.rules import RULE_SETS, Variant

    assert [r[0] for r in catalog.variant_rows()] == [v.value for v in Variant]
    assert [r[0] for r in catalog.rule_set_rows()] == list(RULE_SETS)


# ----------------------------------------------------------------------------- links


def _site(tmp_path, body):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.html").write_text(f'<html><body><h1 id="top">A</h1>{body}</body></html>')
    (tmp_path / "sub" / "b.html").write_text('<html><body><p id="here">B</p><a href="../a.html#top">a</a></body></html>')
    (tmp_path / "x.png").write_bytes(b"png")
    return tmp_path


def test_internal_links_that_resolve_pass(tmp_path):
    site = _site(
        tmp_path, '<a href="sub/b.html#here">b</a><img src="x.png"><a href="#top">t</a><a href="https://example.org/">e</a>'
    )
    assert links.check_site(site) == []


def test_negative_control_broken_internal_links_are_reported(tmp_path):
    site = _site(
        tmp_path, '<a href="sub/c.html">c</a><a href="sub/b.html#gone">g</a><img src="y.png"><a href="../../out.html">o</a>'
    )
    broken = links.check_site(site)
    assert len(broken) == 4, broken
    assert any("no file sub/c.html" in b for b in broken) and any("id='gone'" in b for b in broken)
    assert any("leaves the site" in b for b in broken)


# ----------------------------------------------------------------------------- the build


def test_the_site_builds_with_warnings_as_errors_and_every_example_passing(built_site):
    assert built_site.ok, "\n".join(m for s in built_site.steps for m in s.messages)
    html = built_site.html
    for page in (
        "site/index.html",
        "site/tree.html",
        "site/sequences.html",
        "site/deepinfer.html",
        "site/findings.html",
        "site/releases.html",
        "dynamo-findings.html",
        "releases.html",
        "index.html",
    ):
        assert (html / page).is_file(), page
    assert sorted(p.name for p in (html / "_images").glob("*.png")) == sorted(f"{n}.png" for n in figures.FIGURES)
    assert "proved" in (html / "site" / "tree.html").read_text()
    assert (html / "sources.html").is_file()  # each rule's sources link to it (the link check holds the anchors)
    assert 'href="../sources.html#crtc-2"' in (html / "site" / "tree.html").read_text()
    output = (html.parent / "doctest" / "output.txt").read_text()
    assert "0 failures in tests" in output and "site/tree" in output


def test_negative_control_a_broken_reference_and_a_broken_rule_fail_the_build(tmp_path, monkeypatch, built_site):
    """A page with a reference to no document fails the -W html build; a broken rule fails the doctest builder."""
    import kvproof.spec.prefill as prefill
    from kvproof.docs_site.build import build_site

    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    index = tmp_path / "docs" / "site" / "index.md"
    index.write_text(index.read_text() + "\nSee {doc}`no-such-page`.\n")
    monkeypatch.setattr(prefill, "credited_anchor_since", lambda since, d, now, ops=None: since + d)  # no cap
    broken = build_site(tmp_path / "out", root=tmp_path)
    steps = {s.name: s for s in broken.steps}
    assert not broken.ok and not steps["html"].ok and not steps["doctest"].ok
    assert any("no-such-page" in m for m in steps["html"].messages), steps["html"].messages
    assert any("site/sequences" in m or "sequences.md" in m for m in steps["doctest"].messages), steps["doctest"].messages


def test_a_build_apart_that_gives_no_report_or_runs_too_long_is_a_failed_step_saying_so(tmp_path, monkeypatch):
    """The suite's build runs in a fresh interpreter; a child that dies without its report, or outlives its limit,
    is a failed step with the child's words, never a pass and never a traceback in the test."""
    import kvproof.docs_site.build as build

    timed_out = build.build_site_apart(tmp_path / "slow", timeout_s=0.01)
    assert not timed_out.ok and "ran past 0 s and was stopped" in timed_out.steps[0].messages[0]
    monkeypatch.setattr(build.sys, "executable", "/bin/false")
    silent = build.build_site_apart(tmp_path / "silent")
    assert not silent.ok and silent.steps[0].messages == ["the build process exited 1 without a report:"]
    assert "FAILED" in silent.summary()


# ----------------------------------------------------------------------------- the command


def test_kvproof_docs_without_the_extra_says_which_install_fixes_it(kvproof_cli, monkeypatch):
    import kvproof.docs_site.build as build

    monkeypatch.setattr(build, "missing_packages", lambda: ["sphinx"])
    ran = kvproof_cli("docs")
    assert ran.code == 2 and "pip install -e '.[docs]'" in ran.out and "Traceback" not in ran.out


def test_kvproof_docs_outside_a_checkout_is_a_clean_error(kvproof_cli, monkeypatch, tmp_path):
    import kvproof.docs_site.build as build

    monkeypatch.setattr(build, "missing_packages", lambda: [])
    monkeypatch.setattr(build, "checkout_root", lambda: tmp_path)
    ran = kvproof_cli("docs")
    assert ran.code == 2 and "from a checkout" in ran.out and "Traceback" not in ran.out

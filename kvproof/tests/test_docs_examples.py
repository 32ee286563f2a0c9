"""The site's worked examples run as doctests with the standard doctest module (fast, no Sphinx, no browser)."""

from pathlib import Path
from typing import Any

import pytest

from kvproof.docs_site import examples

ROOT = Path(__file__).resolve().parent.parent.parent


def test_every_worked_example_on_the_site_passes():
    runs = examples.run_site(ROOT)
    failed = {r.page.name: r.failed for r in runs if r.failures}
    assert not failed, "\n".join(r.report for r in runs if r.failures)
    tried = {label: n for r in runs for label, n in r.tried.items()}
    assert sum(tried.values()) >= 40


@pytest.mark.parametrize("label", examples.WORKED_EXAMPLES)
def test_each_worked_example_of_the_issue_is_on_the_site_and_runs(label):
    tried = {name: n for r in examples.run_site(ROOT) for name, n in r.tried.items()}
    assert tried.get(label, 0) >= 3, f"{label}: {tried.get(label, 0)} examples"


def _broken_split(state, p):
    """A split that forgets the cutoff a rank carries into the suffix (every suffix cutoff dropped)."""
    from kvproof.spec.coverage import EdgeState

    prefix, suffix = ORIGINAL["split_at"](state, p)
    return prefix, EdgeState(suffix.edge, suffix.full_edge_workers)


def _uncapped_credit(anchor_since, duration, now, ops=None):
    """A credit without the cap at the removal time."""
    return anchor_since + duration


def _select_mod_s(ring, rows, transfer_rows, row_bytes, lhp):
    """A select that reads slot p mod S instead of p mod R (invisible when S = R)."""
    out = bytearray(transfer_rows * row_bytes)
    for j, p in enumerate(range(lhp - transfer_rows + 1, lhp + 1)):
        if p >= 0:
            at = (p % transfer_rows) * row_bytes
            out[j * row_bytes : (j + 1) * row_bytes] = ring[at : at + row_bytes]
    return bytes(out)


ORIGINAL: dict[str, Any] = {}


@pytest.mark.parametrize(
    ("module", "name", "broken", "page", "label"),
    [
        ("kvproof.spec.shape", "split_at", _broken_split, "tree.md", "example-split"),
        ("kvproof.spec.prefill", "credited_anchor_since", _uncapped_credit, "sequences.md", "example-credit"),
        ("kvproof.spec.state_layout", "select_state_slice", _select_mod_s, "deepinfer.md", "example-ring"),
    ],
    ids=["split-drops-suffix-cutoffs", "credit-uncapped", "select-mod-S"],
)
def test_negative_control_a_broken_rule_fails_its_worked_example(monkeypatch, module, name, broken, page, label):
    """Negative control: the examples call the real rule, so breaking the rule makes its example report failures."""
    import importlib

    target = importlib.import_module(module)
    ORIGINAL[name] = getattr(target, name)
    monkeypatch.setattr(target, name, broken)
    run = examples.run_page(ROOT / "docs" / "site" / page)
    assert run.failed.get(label, 0) >= 1, run.report
    assert f"{page}:{label}" in run.report


def test_negative_control_a_wrong_expected_value_is_reported(tmp_path):
    """The runner is not vacuous: a page whose example states a wrong value fails, under its label."""
    page = tmp_path / "page.md"
    page.write_text("(example-wrong)=\n## Wrong\n\n```{doctest}\n>>> 1 + 1\n3\n```\n")
    run = examples.run_page(page)
    assert (run.tried, run.failed) == ({"example-wrong": 1}, {"example-wrong": 1})

"""The generated documents do not drift from the code that generates them."""

import pytest

from kvproof import docs


def test_the_gate_pages_table_is_generated_from_the_checks():
    text = docs.gate_page_path().read_text()
    assert docs.with_gate_table(text) == text, "docs/gate.md's gate table is stale: run python -m kvproof.docs"


def test_every_gate_row_says_what_it_checks():
    from kvproof.gate import all_checks

    assert all(len(c.what) > 20 for c in all_checks())


def test_the_drift_check_catches_a_stale_table():
    """Negative control: a page whose table lost a row differs from the regenerated one."""
    text = docs.gate_page_path().read_text()
    stale = text.replace(docs.gate_table().splitlines()[-1] + "\n", "")
    assert stale != text and docs.with_gate_table(stale) != stale
    with pytest.raises(ValueError):
        docs.with_gate_table("no markers here")

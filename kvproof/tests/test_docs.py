"""The generated documents do not drift from the code that generates them."""

import pytest

from kvproof import docs


def test_no_generated_document_drifts():
    """The one drift test: every generated document is what ``kvproof docs --write`` writes (``proofs/README.md`` by its
    stable cells in proofs/test_proofs.py, where every proof runs anyway)."""
    cheap = [d for d in docs.GENERATED if not d.runs_proofs]
    assert {d.name for d in cheap} >= {
        "the gate table of docs/gate.md",
        "the command reference of docs/commands.md",
        "docs/figures.md",
    }
    assert docs.stale(cheap) == [], "stale: run kvproof docs --write"


def test_the_drift_test_catches_each_kind_of_stale_document(tmp_path):
    """Negative control: a copy of each generated document with its last table row dropped is reported stale."""
    for d in docs.GENERATED:
        if d.runs_proofs:
            continue
        text = d.path().read_text()
        row = [line for line in text.splitlines() if line.startswith("| ")][-1]
        copy = tmp_path / d.path().name
        copy.write_text(text.replace(row + "\n", "", 1))
        moved = docs.GeneratedDocument(d.name, lambda copy=copy: copy, d.regenerate)
        assert docs.stale([moved]) == [d.name]


def test_write_regenerates_every_cheap_document_and_leaves_them_as_committed(kvproof_cli):
    ran = kvproof_cli("docs", "--write", "--no-proofs")
    assert ran.code == 0 and ran.last == "docs: generated=3 changed=0", ran.out


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


def test_regenerating_the_proofs_readme_keeps_it_when_only_a_counterexample_differs():
    """``proofs_readme_over``: a solver's counterexamples vary from run to run, so a run whose stable cells are the
    committed ones leaves the file as it is; a changed result or a new row rewrites it (the negative controls)."""
    from kvproof.proofs.registry import ProofRow

    rows = [
        ProofRow("a claim", "`spec.f`", "Z3", "all integers", 0.1, "proved", "caught", "x=1"),
        ProofRow("another", "`spec.g`", "Z3", "all integers", 0.1, "proved", "caught", "y=2"),
    ]
    committed = docs.proofs_readme(rows)
    witness_moved = [rows[0], ProofRow(*(list(vars(rows[1]).values())[:-1] + ["y=3"]))]
    assert docs.proofs_readme_over(committed, witness_moved) == committed
    broken = [rows[0], ProofRow("another", "`spec.g`", "Z3", "all integers", 0.1, "FAILED", "caught", "y=2")]
    assert docs.proofs_readme_over(committed, broken) == docs.proofs_readme(broken) != committed
    grown = [*rows, ProofRow("a third", "`spec.h`", "Z3", "all integers", 0.1, "proved", "caught", "z=0")]
    assert docs.proofs_readme_over(committed, grown) == docs.proofs_readme(grown)

"""Every proof proves, every negative control is caught, and proofs/README.md is the table."""

import pytest
import z3

from kvproof.docs import proofs_readme_path, proofs_readme_rows
from kvproof.proofs import harness
from kvproof.proofs.harness import run
from kvproof.proofs.registry import CI, Z3_PROOFS, run_all

# One xdist worker runs this module, so ``all_rows`` (every proof and CrossHair check, 20 s) runs once.
pytestmark = pytest.mark.xdist_group("proofs-all-rows")


@pytest.mark.parametrize("proof", Z3_PROOFS, ids=lambda p: p.name)
def test_z3_proof_holds_and_its_control_is_caught(proof):
    result = run(proof)
    print(f"{proof.name}: {result.result}; control {result.control}: {result.counterexample}")
    assert result.result == "proved", result.counterexample
    assert result.control == "caught", "the proof cannot fail: its broken rule is proved too"
    assert result.counterexample  # the control's counterexample is shown


def test_the_harness_reports_a_false_claim_as_failed():
    x = z3.Int("x")
    assert harness._check([x >= 0], x > 0, 1000)[0] == "sat"


@pytest.fixture(scope="module")
def all_rows():
    return run_all(CI, crosshair=True)


def test_every_crosshair_check_passes_and_every_control_is_refuted(all_rows):
    crosshair = [r for r in all_rows if r.method != "Z3"]
    assert len(crosshair) >= 12
    for r in crosshair:
        print(f"{r.method}: {r.property}: {r.result}; control {r.control}: {r.counterexample}")
        assert r.ok, (r.property, r.result, r.control, r.counterexample)


def test_proofs_readme_is_generated_from_the_table(all_rows):
    committed = proofs_readme_path().read_text()
    for row in proofs_readme_rows(all_rows):
        assert row in committed, f"proofs/README.md is stale (run kvproof docs --write): missing {row}"
    assert committed.count("\n| ") == len(all_rows) + 1  # header + one row per check, nothing else

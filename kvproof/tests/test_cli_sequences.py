"""The slot-tracker command and the gate rows of the active-sequence state."""

import pytest

from kvproof.report import EXIT_PASS


def test_gate_rows_are_registered():
    from kvproof.gate import all_checks

    names = [c.name for c in all_checks() if c.family == "sequences"]
    for row in ("rule laws", "three-way state machine", "upstream values",
                "stress (real threads)", "vs dynamo.slot_tracker"):
        assert row in names


@pytest.mark.dynamo
def test_conform_slot_tracker_prints_the_summary_last(slot_tracker_oracle, kvproof_cli, tmp_path):
    out = tmp_path / "report.json"
    ran = kvproof_cli("conform", "slot-tracker", "--scenarios", "2", "--seed", "5", "--parallel", "2", "--json", str(out))
    assert ran.code == EXIT_PASS
    assert ran.last.startswith("conform: scenarios=2 reads=") and ran.last.endswith(" mismatches=0")
    assert out.exists()


def test_an_unknown_model_is_a_usage_error(kvproof_cli):
    ran = kvproof_cli("stress", "sequences", "--model", "nope")
    assert ran.code == 2 and "not of the form module.path:Factory" in ran.out


def test_the_conformance_row_skips_visibly_without_the_package(monkeypatch):
    import importlib.util

    from kvproof.gate import Row, Skip, make_context
    from kvproof.gate.sequences import CHECKS
    from kvproof.stateful_tests.harness.profiles import PROFILES
    from kvproof.stateful_tests.sequences import oracle as slot_tracker_oracle

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name.startswith(("dynamo", "zmq")) else real(name, *a))
    reason = slot_tracker_oracle.oracle_unavailable()
    assert reason and "dynamo" in reason and "pip install" in reason
    row = next(c for c in CHECKS if c.layer == "conformance")
    ctx = make_context("reference", lambda: None, PROFILES["ci"], 1)
    assert row.applies(ctx) == reason
    with pytest.raises(Skip):
        row.run(ctx, Row(row.family, row.layer, row.name))

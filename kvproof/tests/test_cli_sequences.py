"""The slot-tracker command and the gate rows of the active-sequence state."""

import pytest

from kvproof.report import EXIT_PASS


def test_gate_rows_are_registered():
    from kvproof.gate import all_checks

    names = [c.name for c in all_checks() if c.family == "sequences"]
    for row in ("rule laws", "three-way state machine", "upstream values", "stress (real threads)", "vs dynamo.slot_tracker"):
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
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.startswith(("dynamo", "zmq")) else real(name, *a)
    )
    reason = slot_tracker_oracle.oracle_unavailable()
    assert reason and "dynamo" in reason and "pip install" in reason
    row = next(c for c in CHECKS if c.layer == "conformance")
    ctx = make_context("reference", lambda: None, PROFILES["ci"], 1)
    assert row.applies(ctx) == reason
    with pytest.raises(Skip):
        row.run(ctx, Row(row.family, row.layer, row.name))


def test_netns_refused_is_a_clear_usage_error(monkeypatch, kvproof_cli):
    from kvproof.stateful_tests.harness import process_guard
    from kvproof.stateful_tests.sequences import oracle

    monkeypatch.setattr(oracle, "oracle_unavailable", lambda: None)
    monkeypatch.setattr(process_guard, "netns_unavailable", lambda: "unshare --net --map-root-user is not permitted here (test)")
    ran = kvproof_cli("conform", "slot-tracker", "--netns", "--scenarios", "1")
    assert ran.code == 2 and "--netns: cannot make a private network namespace: unshare" in ran.out


def test_a_tracker_that_cannot_be_driven_is_a_fail_line_not_a_traceback(monkeypatch, kvproof_cli):
    from kvproof.stateful_tests.sequences import oracle

    def refuse(self, timeout=30.0):
        raise oracle.OracleStartError("the replica subscriber never applied an event (test)")

    monkeypatch.setattr(oracle, "oracle_unavailable", lambda: None)
    monkeypatch.setattr(oracle.SlotTrackerProcess, "start", refuse)
    ran = kvproof_cli("conform", "slot-tracker", "--scenarios", "1")
    assert ran.code == 1 and "Traceback" not in ran.out
    assert "FAIL: the slot tracker of ai-dynamo-runtime" in ran.out and "(test)" in ran.out
    assert ran.out.splitlines()[0].startswith("slot tracker: ai-dynamo-runtime ")

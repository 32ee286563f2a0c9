"""The slot-tracker command and the gate rows of the active-sequence state."""

import pytest

from kvproof.cli import build_parser, main
from kvproof.cli_sequences import CONFORM_SLOT_TRACKER_ARGUMENTS, conform_slot_tracker_main


def test_conform_slot_tracker_parses_its_arguments():
    args = build_parser().parse_args(["conform-slot-tracker", "--scenarios", "3", "--seed", "9", "--json", "x.json"])
    assert args.func is conform_slot_tracker_main
    assert (args.scenarios, args.seed, args.json) == (3, 9, "x.json")
    assert all(hasattr(args, name) for name in CONFORM_SLOT_TRACKER_ARGUMENTS)


def test_gate_rows_are_registered():
    from kvproof.gate import all_checks

    names = [c.name for c in all_checks()]
    for row in ("sequences: rule laws", "sequences: three-way state machine", "sequences: upstream values",
                "sequences: stress (real threads)", "sequences: vs dynamo.slot_tracker"):
        assert row in names


@pytest.mark.dynamo
def test_conform_slot_tracker_prints_the_summary_last(slot_tracker_oracle, capsys, tmp_path):
    out = tmp_path / "report.json"
    assert main(["conform-slot-tracker", "--scenarios", "2", "--seed", "5", "--parallel", "2", "--json", str(out)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("conform: scenarios=2 reads=") and last.endswith(" mismatches=0")
    assert out.exists()


def test_the_conformance_row_skips_visibly_without_the_package(monkeypatch):
    import importlib.util

    from kvproof.gate import PROFILES, Context, Row, Skip
    from kvproof.gate_sequences import CHECKS
    from kvproof.stateful_tests.sequences import oracle as slot_tracker_oracle

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name.startswith(("dynamo", "zmq")) else real(name, *a))
    reason = slot_tracker_oracle.oracle_unavailable()
    assert reason and "dynamo" in reason and "pip install" in reason
    row = next(c for c in CHECKS if c.layer == "conformance")
    ctx = Context("reference", lambda: None, PROFILES["ci"], 1, "kvproof check")
    assert row.applies(ctx) == reason
    with pytest.raises(Skip):
        row.run(ctx, Row(row.layer, row.name))

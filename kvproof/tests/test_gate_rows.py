"""Every gate row can fail for the layer it names: for each row, a control that breaks that layer makes it FAIL.

Each entry of ``CONTROLS`` breaks one layer (a broken tree named as the target, or one rule or
structure swapped for its broken twin) and runs the row through the gate's own runner
(``run_check``), as ``kvproof check`` and ``pytest --kvproof-target`` do. The clean rows pass in
the gate itself (``kvproof check``; the CI run).
"""

from __future__ import annotations

import pytest

from kvproof.gate import Result, all_checks, make_context, run_check
from kvproof.gate.controls import CONTROLS
from kvproof.stateful_tests.deepinfer.backends import required
from kvproof.stateful_tests.harness.profiles import PROFILES
from kvproof.stateful_tests.harness.targets import load_target


def row_named(name: str):
    return next(c for c in all_checks() if c.name == name)


def run_row(name: str, target_name: str = "impl", profile: str = "quick", shrink: bool = True):
    """Run one gate row on ``target_name`` under ``profile``; ``shrink=False``: a failure is reported as found, not
    shrunk (Hypothesis's shrinking time limit and the profile's ``shrink_s`` both 0)."""
    from dataclasses import replace

    target = load_target(target_name)
    assert target.factory is not None, target.reason
    chosen = PROFILES[profile] if shrink else replace(PROFILES[profile], tree=replace(PROFILES[profile].tree, shrink_s=0))
    return run_check(row_named(name), make_context(target_name, target.factory, chosen, 1))


def test_every_gate_row_has_a_control():
    assert {c.row for c in CONTROLS} == {c.name for c in all_checks()}


# The rows that need an oracle, by the suite's fixture that provides (or skips, or fails for) it.
ORACLE_FIXTURES = {
    "differential vs Dynamo": "dynamo_tree",
    "vs dynamo.slot_tracker": "slot_tracker_oracle",
    "vs the selection service's ActiveSequences": "dynamo_tree",
}


@pytest.mark.parametrize("control", CONTROLS, ids=[c.row for c in CONTROLS])
def test_the_row_fails_on_its_control(control, monkeypatch, request):
    name, target, breaks, profile, says = control.row, control.target, control.breaks, control.profile, control.says
    if name in ORACLE_FIXTURES:  # skips visibly without the package, fails under KVPROOF_REQUIRE_DYNAMO
        request.getfixturevalue(ORACLE_FIXTURES[name])
    reason = row_named(name).applies(make_context("impl", object, PROFILES[profile], 1))
    if reason:  # a backend that is not here (torch): visible, and a failure where CI requires it
        if required("torch"):
            pytest.fail(f"{name} cannot run: {reason}")
        pytest.skip(reason)
    if breaks is not None:
        breaks(monkeypatch)
    # The control asks whether the row fails and why, not how far its counterexample shrinks (shrinking is checked
    # where it is the point: test_isolation, test_conformance, the explorer's tests); shrinking took 38 s of these.
    from hypothesis.internal.conjecture import engine

    monkeypatch.setattr(engine, "MAX_SHRINKING_SECONDS", 0)
    row = run_row(name, target, profile, shrink=False)
    assert row.result is Result.FAIL, f"{name} did not fail on its control: {row.result} {row.detail[:300]}"
    assert says in row.detail, f"{name} failed for another reason: {row.detail[:300]}"


def test_the_pool_row_passes_on_the_embedded_implementation():
    assert run_row("pool: pipelined streams, one flush").result is Result.PASS


def test_the_pool_row_fails_on_a_flush_that_does_not_wait():
    row = run_row("pool: pipelined streams, one flush", "kvproof.stateful_tests.tree.impl_mutants:FlushReturnsEarly")
    assert row.result is Result.FAIL and "the reference says" in row.detail, row.detail


def test_the_pool_row_is_left_out_for_a_plain_tree():
    target = load_target("reference")
    ctx = make_context("reference", target.factory, PROFILES["quick"], 1)
    assert not row_named("pool: pipelined streams, one flush").relevant(ctx)


def test_the_sequence_laws_row_runs_on_every_tracker(monkeypatch):
    """The row runs every law once, on the spec, reference and concurrent trackers, not on the spec alone."""
    from kvproof.stateful_tests.sequences import laws
    from kvproof.stateful_tests.sequences.model import TARGETS

    seen = []
    monkeypatch.setattr(laws, "run_laws", lambda group, n, seed=None, makes=(), shrink=True: seen.append((group, makes)) or 1)
    row = run_row("rule laws")
    assert row.result is Result.PASS and all(set(makes) == set(TARGETS.values()) for _, makes in seen)
    assert sorted(law.name for group, _ in seen for law in group) == sorted(law.name for law in laws.LAWS)


def test_time_to_detection_reports_the_first_failing_row_of_a_broken_change():
    """The code path of ``kvproof bench ttd`` on one broken tree (nothing about speed is asserted)."""
    from kvproof.gate.controls import CONTROLS
    from kvproof.gate.ttd import detect, p90, summary

    control = next(c for c in CONTROLS if c.target.endswith(":AcceptsGarbage"))
    seconds = {"tree: bad input is rejected, harmless": 0.0}  # cheapest first: the row that catches it runs first
    found = detect(control, "quick", "cheapest", seconds)
    assert found.first_failing == "tree: bad input is rejected, harmless" and found.rows_run == 1
    assert found.control == "AcceptsGarbage" and found.wall_s > 0
    assert "1 of 1 broken changes reported" in summary([found], "cheapest") and p90([3.0, 1.0, 2.0]) == 3.0

"""Every active-sequence check must be able to fail: each deliberately broken tracker is caught where
sequence_mutants.CAUGHT_BY says. The two the issue names: NoCreditCap and SpilloverWhenUnmodeled."""

import pytest
from hypothesis import Phase

from kvproof.stateful_tests.harness.controls import caught_as_expected
from kvproof.stateful_tests.harness.seeding import run_machine
from kvproof.stateful_tests.sequences.laws import LAWS_BY_NAME, run_laws
from kvproof.stateful_tests.sequences.machine import sequence_machine_for, sequence_machine_settings
from kvproof.stateful_tests.sequences.mutants import (
    CAUGHT_BY,
    LAW_OF,
    MACHINE_FAILURE,
    MUTANTS,
    NoCreditCap,
    SpilloverWhenUnmodeled,
    law_failure,
)
from kvproof.stateful_tests.sequences.steps import run_value_scenario
from kvproof.stateful_tests.sequences.stress import stress
from kvproof.stateful_tests.sequences.values import VALUE_SCENARIOS


def _ids(m):
    return m.__name__


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "machine" in CAUGHT_BY[m]], ids=_ids)
def test_machine_catches(mutant):
    quick = sequence_machine_settings(200, 40)
    quick = quick.__class__(quick, phases=[Phase.explicit, Phase.generate])  # detection only: skip shrinking
    why = caught_as_expected(lambda: run_machine(sequence_machine_for({"mutant": mutant}), quick), MACHINE_FAILURE[mutant])
    assert why is None, f"{mutant.__name__}: {why}"


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "values" in CAUGHT_BY[m]], ids=_ids)
def test_values_catch(mutant):
    failing = [s.name for s in VALUE_SCENARIOS if run_value_scenario(mutant, s)]
    print(f"{mutant.__name__}: {len(failing)} of {len(VALUE_SCENARIOS)} value scenarios fail: {failing[:4]}")
    assert failing


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "laws" in CAUGHT_BY[m]], ids=_ids)
def test_law_catches(mutant):
    law = LAWS_BY_NAME[LAW_OF[mutant]]
    why = caught_as_expected(lambda: run_laws([law], 300, makes=[mutant], shrink=False), law_failure(mutant))
    assert why is None, f"{mutant.__name__}: {why}"


def test_a_control_does_not_count_a_crash_for_another_reason():
    """The controls above count only their expected failure: a tracker that crashes in its own code is no catch."""
    from kvproof.stateful_tests.sequences.model import SpecSlotTracker

    class CrashingTracker(SpecSlotTracker):
        def add_request(self, request, now):
            raise TypeError("a bug in the broken twin itself")

    law = LAWS_BY_NAME[LAW_OF[MUTANTS[0]]]
    why = caught_as_expected(lambda: run_laws([law], 50, makes=[CrashingTracker], shrink=False), law_failure(MUTANTS[0]))
    assert why is not None and "TypeError" in why
    assert caught_as_expected(lambda: None, law_failure(MUTANTS[0])) == "the check passed"


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "stress" in CAUGHT_BY[m]], ids=_ids)
def test_stress_catches(mutant):
    caught = [seed for seed in range(1, 9) if stress(mutant, threads=8, ops=400, seed=seed).problems]
    print(f"{mutant.__name__}: caught in {len(caught)} of 8 stress seeds")
    assert caught


def test_the_required_controls_are_caught_by_machine_and_values():
    for mutant in (NoCreditCap, SpilloverWhenUnmodeled):
        assert {"machine", "values", "laws"} <= CAUGHT_BY[mutant]
        assert any(run_value_scenario(mutant, s) for s in VALUE_SCENARIOS)


def test_every_mutant_is_caught_by_something():
    assert all(CAUGHT_BY[m] for m in MUTANTS)


@pytest.mark.dynamo
@pytest.mark.parametrize("mutant", [NoCreditCap, SpilloverWhenUnmodeled], ids=_ids)
def test_conformance_catches(slot_tracker_process, mutant):
    from kvproof.stateful_tests.sequences.oracle import conform_slot_tracker

    family = 1 if mutant is NoCreditCap else 3  # the "credit" and "mixed" scenario templates
    indices = [i for i in range(60) if i % 5 == family][:8]
    report = conform_slot_tracker(
        len(indices), 1, indices=indices, parallel=8, length=0, oracle=slot_tracker_process, model_factory=mutant
    )
    print(f"{mutant.__name__}: {len({m.scenario for m in report.mismatches})} of {len(indices)} scenarios differ")
    assert report.mismatches

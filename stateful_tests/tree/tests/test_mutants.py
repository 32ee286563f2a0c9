"""Every check must be able to fail: each deliberately broken tree is caught where CAUGHT_BY says."""

import pytest
from hypothesis import Phase

from kvproof.stateful_tests.harness.controls import caught_as_expected
from kvproof.stateful_tests.harness.seeding import machine_settings, run_machine
from kvproof.stateful_tests.tree.conformance import conform
from kvproof.stateful_tests.tree.machine import contract_machine_for
from kvproof.stateful_tests.tree.mutants import CAUGHT_BY, MACHINE_FAILURE, MUTANTS
from kvproof.stateful_tests.tree.steps import run_scenario
from kvproof.stateful_tests.tree.vectors import SCENARIOS


def _ids(m):
    return m.__name__


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "machine" in CAUGHT_BY[m]], ids=_ids)
def test_contract_machine_catches(mutant):
    quick = machine_settings(100, 30)
    quick = quick.__class__(quick, phases=[Phase.explicit, Phase.generate])  # detection only: skip shrinking
    why = caught_as_expected(lambda: run_machine(contract_machine_for(mutant), quick), MACHINE_FAILURE[mutant])
    assert why is None, f"{mutant.__name__}: {why}"


def test_the_machine_control_does_not_count_a_crash_for_another_reason():
    """A broken tree that crashes in its own code fails the machine, but not the way a control expects."""
    from kvproof.reference import RadixTree

    class Crashes(RadixTree):
        def find_matches(self, sequence, early_exit=False):
            raise TypeError("a bug in the broken twin itself")

    quick = machine_settings(5, 5)
    quick = quick.__class__(quick, phases=[Phase.explicit, Phase.generate])
    why = caught_as_expected(lambda: run_machine(contract_machine_for(Crashes), quick), MACHINE_FAILURE[MUTANTS[0]])
    assert why is not None and "TypeError" in why


@pytest.mark.dynamo
@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "conformance" in CAUGHT_BY[m]], ids=_ids)
def test_conformance_catches(dynamo_tree, mutant):
    report = conform(mutant, dynamo_tree, streams=60, seed=1, max_reported=0)
    print(f"{mutant.__name__}: {len(report.mismatches)} of 60 streams differ")
    assert report.mismatches


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "vectors" in CAUGHT_BY[m]], ids=_ids)
def test_vectors_catch(mutant):
    assert any(run_scenario(mutant, s) for s in SCENARIOS)


def test_every_mutant_is_caught_by_something():
    assert all(CAUGHT_BY[m] for m in MUTANTS)

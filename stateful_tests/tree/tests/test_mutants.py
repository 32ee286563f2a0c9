"""Every check must be able to fail: each deliberately broken tree is caught where CAUGHT_BY says."""

import re

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

    class CrashingFind(RadixTree):
        def find_matches(self, sequence, early_exit=False):
            raise TypeError("a bug in the broken twin itself")

    quick = machine_settings(5, 5)
    quick = quick.__class__(quick, phases=[Phase.explicit, Phase.generate])
    why = caught_as_expected(lambda: run_machine(contract_machine_for(CrashingFind), quick), MACHINE_FAILURE[MUTANTS[0]])
    assert why is not None and "TypeError" in why


@pytest.mark.dynamo
@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "conformance" in CAUGHT_BY[m]], ids=_ids)
def test_conformance_catches(dynamo_tree, mutant):
    report = conform(mutant, dynamo_tree, streams=60, seed=1, max_reported=0)
    print(f"{mutant.__name__}: {len(report.mismatches)} of 60 streams differ")
    assert report.mismatches and not [m.detail for m in report.mismatches if is_crash(m.detail)], "no difference, or a crash"


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "vectors" in CAUGHT_BY[m]], ids=_ids)
def test_vectors_catch(mutant):
    problems = [p for s in SCENARIOS for p in run_scenario(mutant, s)]
    assert problems and not [p for p in problems if is_crash(p)], f"no step differs, or the tree crashed: {problems[:3]}"


def is_crash(detail: str) -> bool:
    """A difference that is the broken tree crashing (an outcome outside the typed vocabulary): a control whose
    tree crashes does not count, even where the crash also changes later scores."""
    return bool(re.search(r"\b(TypeError|AttributeError|KeyError|IndexError|NameError|ValueError|RecursionError): ", detail))


def test_a_crash_is_not_a_catch():
    """Negative control of the two above: a tree that crashes on every store shows only crashes."""
    from kvproof.reference import RadixTree

    class CrashingStore(RadixTree):
        def apply_event(self, worker_id, event):
            raise TypeError("a bug in the broken twin itself")

    problems = [p for s in SCENARIOS for p in run_scenario(CrashingStore, s)]
    assert any(is_crash(p) for p in problems)  # so test_vectors_catch would refuse it as a control


def test_every_mutant_is_caught_by_something():
    assert all(CAUGHT_BY[m] for m in MUTANTS)

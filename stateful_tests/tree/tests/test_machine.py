"""The contract state machine on the reference, and proof that it reaches the interesting shapes."""

import pytest

from kvproof.reference import RadixTree
from kvproof.stateful_tests.harness.profiles import profile_named
from kvproof.stateful_tests.harness.seeding import machine_settings, run_machine
from kvproof.stateful_tests.tree.machine import PHENOMENA, contract_machine_for

PROFILE = profile_named()


@pytest.fixture(scope="module")
def reference_machine():
    machine = contract_machine_for(RadixTree)
    run_machine(machine, machine_settings(PROFILE.tree.machine_examples, PROFILE.tree.machine_steps))
    return machine


def test_reference_obeys_the_contract(reference_machine):
    assert len(reference_machine.runs) >= PROFILE.tree.machine_examples


@pytest.mark.parametrize(
    "phenomenon", ["splits", "cutoffs", "demotions", "holes", "sticky_internal", "sticky_refusals", "children_cleared"]
)
def test_shapes_happen_in_most_runs(reference_machine, phenomenon):
    """Each shape the tree's rules exist for occurs in most runs (counted, not assumed)."""
    runs = reference_machine.runs
    share = sum(1 for r in runs if r[phenomenon]) / len(runs)
    print(f"{phenomenon}: {share:.0%} of {len(runs)} runs")
    assert share > 0.5


def test_rules_alone_reach_the_shapes_too(reference_machine):
    """After the warm start, the free-running rules themselves split, cut, demote and clear children.

    (Sticky refusals, which need an eviction by every holder and then a refill, are planted by
    the warm start; the rules reach them only in a few per cent of runs.)
    """
    rule_runs = reference_machine.rule_runs
    shares = {p: sum(1 for r in rule_runs if r[p]) / len(rule_runs) for p in PHENOMENA}
    print(shares)
    for name in ("splits", "cutoffs_set", "demotions", "children_cleared"):
        assert shares[name] > 0.05, name

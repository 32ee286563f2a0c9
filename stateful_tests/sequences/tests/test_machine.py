"""The three-way state machine (spec, reference, concurrent implementation on a fake clock), and proof
that it reaches what the rules exist for: credits capped and not, re-anchoring, spillover and anchor-only
reads, missing durations, expiry, duplicates, unknown workers, fenced frees and malformed input."""

import pytest

from kvproof.stateful_tests.harness.profiles import profile_named
from kvproof.stateful_tests.harness.seeding import run_machine
from kvproof.stateful_tests.sequences.machine import PHENOMENA, sequence_machine_for, sequence_machine_settings

PROFILE = profile_named()
# One xdist worker runs this module, so its module fixture (the machine run, 9 s) runs once, not once per worker.
pytestmark = pytest.mark.xdist_group("sequences-machine")


@pytest.fixture(scope="module")
def machine():
    m = sequence_machine_for()
    run_machine(m, sequence_machine_settings(PROFILE.sequences.machine_examples, PROFILE.sequences.machine_steps))
    return m


def test_spec_reference_and_impl_agree_on_every_read(machine):
    assert len(machine.runs) >= PROFILE.sequences.machine_examples
    assert sum(r["_checks"] for r in machine.runs) > 10_000


@pytest.mark.parametrize("phenomenon", PHENOMENA)
def test_every_rule_is_exercised(machine, phenomenon):
    runs = machine.runs
    hit = sum(1 for r in runs if r[phenomenon])
    print(f"{phenomenon}: {hit} of {len(runs)} runs")
    assert hit >= 3, f"{phenomenon} reached in only {hit} runs"

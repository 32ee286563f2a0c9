"""Every round-trip law can fail: each broken round trip is caught where CAUGHT_BY says, and each weak-test
trap of state_roundtrip.md §5.5 is shown both ways (the weak check passes the mutant, the strong one catches it)."""

from functools import cache

import pytest

from kvproof.stateful_tests.deepinfer.backends import backend, required
from kvproof.stateful_tests.deepinfer.mutants import CAUGHT_BY, MUTANTS, TRAPS, PadsOffHost, trap_cases
from kvproof.stateful_tests.deepinfer.roundtrip_laws import LAWS, catches, make_cases


@cache
def standard_cases():
    return tuple(make_cases(1, 60))


def _backend_for(mutant) -> str:
    if mutant is not PadsOffHost:
        return "numpy"
    if not backend("torch").available:
        if required("torch"):
            pytest.fail(f"torch is required here: {backend('torch').reason}")
        pytest.skip(f"PadsOffHost is only wrong off the host; torch: {backend('torch').reason}")
    return "torch"


@pytest.mark.parametrize(
    "mutant, law",
    [(m, law) for m in MUTANTS for law in CAUGHT_BY[m]],
    ids=lambda x: x if isinstance(x, str) else x.__name__,
)
def test_law_catches_mutant(mutant, law):
    assert catches(mutant, (law,), standard_cases(), _backend_for(mutant)), f"{law} does not catch {mutant.__name__}"


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m is not PadsOffHost], ids=lambda m: m.__name__)
def test_mutant_is_caught_on_torch_too(mutant):
    if not backend("torch").available:
        if required("torch"):
            pytest.fail(backend("torch").reason)
        pytest.skip(backend("torch").reason)
    assert catches(mutant, CAUGHT_BY[mutant], standard_cases(), "torch")


def test_pads_off_host_is_legal_on_numpy():
    """Padding is unspecified: the host path of PadsOffHost satisfies every law; only X1 off the host sees it."""
    assert not catches(PadsOffHost, tuple(law.name for law in LAWS), standard_cases(), "numpy")


@pytest.mark.parametrize("trap", TRAPS, ids=lambda t: t.name)
def test_trap_weak_check_passes_strong_check_catches(trap):
    assert not catches(trap.mutant, trap.weak_laws, trap_cases(trap.weak_cases)), (
        f"the weak check {trap.weak_laws} now catches {trap.mutant.__name__}: the trap is no longer demonstrated"
    )
    assert catches(trap.mutant, trap.strong_laws, trap_cases(trap.strong_cases)), (
        f"{trap.strong_laws} on {trap.strong_cases} cases no longer catch {trap.mutant.__name__}"
    )


def test_every_law_has_a_negative_control():
    covered = {law for laws in CAUGHT_BY.values() for law in laws}
    assert not [law.name for law in LAWS if law.name not in covered]


def test_a_hit_rule_control_stops_at_its_first_witness_and_the_right_rule_has_none():
    """``first_violation``: the gate's controls need one case that breaks a lab 24 law, not the count over the domain
    (``lab24_check``, 69,670 cases per rule). On L <= 262 the right rule walks all 1,578 cases and breaks nothing; never
    backing off first breaks at L = 262, C = 128 without SWA, the search and backoff laws (the negative control)."""
    from kvproof.spec.hit_length import HitCase, hit_law_violations, hit_lengths
    from kvproof.stateful_tests.deepinfer.mutants import first_violation, hit_no_backoff

    assert first_violation(hit_lengths, 262) == (1578, {}, 0)
    walked, broken, failing = first_violation(hit_no_backoff, 262)
    witness = HitCase(262, 128, False)
    assert failing == 1 and walked < 1578 and broken == {"search": repr(witness), "backoff": repr(witness)}
    assert hit_law_violations(witness, rule=hit_no_backoff) == ["search", "backoff"]

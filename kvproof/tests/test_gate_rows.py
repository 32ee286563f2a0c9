"""Gate rows fail on the control that breaks the layer they are named after (and pass on the clean code)."""

import pytest

from kvproof.gate import Result, all_checks, make_context, run_check
from kvproof.stateful_tests.harness.profiles import PROFILES
from kvproof.stateful_tests.harness.targets import load_target
from kvproof.stateful_tests.tree.impl_mutants import POOL_MUTANTS


def row_named(name):
    return next(c for c in all_checks() if c.name == name)


def run_row(target_name, name, profile="quick"):
    target = load_target(target_name)
    assert target.factory is not None, target.reason
    return run_check(row_named(name), make_context(target_name, target.factory, PROFILES[profile], 1))


def test_the_pool_row_passes_on_the_embedded_implementation():
    assert run_row("impl", "pool: pipelined streams, one flush").result is Result.PASS


@pytest.mark.parametrize("mutant", POOL_MUTANTS, ids=lambda m: m.__name__)
def test_the_pool_row_fails_on_each_broken_pool(mutant):
    row = run_row(f"kvproof.stateful_tests.tree.impl_mutants:{mutant.__name__}", "pool: pipelined streams, one flush")
    assert row.result is Result.FAIL and "the reference says" in row.detail, row.detail


def test_the_pool_row_is_left_out_for_a_plain_tree():
    target = load_target("reference")
    ctx = make_context("reference", target.factory, PROFILES["quick"], 1)
    assert not row_named("pool: pipelined streams, one flush").relevant(ctx)


def test_the_sequence_laws_row_runs_on_every_tracker(monkeypatch):
    """The row named after the trackers runs its laws on the spec, reference and concurrent trackers, not the spec alone."""
    from kvproof.stateful_tests.sequences import laws
    from kvproof.stateful_tests.sequences.model import TARGETS

    seen = []
    monkeypatch.setattr(laws, "run_law", lambda law, n, seed=None, make=None, shrink=True: seen.append(make) or 1)
    row = run_row("impl", "rule laws")
    assert row.result is Result.PASS and set(seen) == set(TARGETS.values())

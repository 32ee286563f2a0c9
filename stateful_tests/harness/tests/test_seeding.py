"""Law: a seeded Hypothesis run inside ``seeding.history_free`` draws the same examples whatever the
process imported before it; the control shows that outside it, an import changes the draws.

The suite runs every test inside ``history_free`` (``pytest_suite``), so each test here first puts
Hypothesis's own pool back (``REAL_POOL``, taken when this module was collected, outside any test)."""

from __future__ import annotations

import importlib
import sys
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.internal.cache import LRUCache
from hypothesis.internal.conjecture import providers

from kvproof.stateful_tests.fuzz import campaign, codec
from kvproof.stateful_tests.harness.seeding import history_free

CASES = 300
SEED = 7
REAL_POOL = providers._get_local_constants


PLAIN = st.tuples(st.integers(), st.floats(allow_nan=False), st.text(max_size=12))
"""Draws in which Hypothesis's constant pool shows often (it picks a pool constant for about one draw in 20)."""


def draws(n: int, seed: int, strategy: st.SearchStrategy[Any] | None = None) -> list[str]:
    """The first ``n`` examples of ``strategy`` for ``seed`` (default: the fuzz campaign's cases, drawn as it draws them)."""
    out: list[str] = []

    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        derandomize=False,
        print_blob=False,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    @hypothesis_seed(seed)
    @given(value=campaign.cases() if strategy is None else strategy)
    def one(value: Any) -> None:
        out.append(value.op + repr([codec.encode(a) for a in value.args]) if strategy is None else repr(value))

    one()
    return out


def a_new_local_module(request: pytest.FixtureRequest, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """A loader of a module of our own, full of constants of the kinds the campaign draws, that no
    module loaded before has (they are named after the test)."""
    salt = zlib.crc32(request.node.name.encode()) % 10**6
    name = f"kvproof_probe_{salt}"
    ints = ", ".join(str(10**7 + salt * 1000 + i) for i in range(80))
    floats = ", ".join(f"{salt}.{i:03d}7" for i in range(1, 60))
    strs = ", ".join(repr(f"p{salt}-{i}") for i in range(60))  # constants Hypothesis keeps: |n| >= 100, short strings
    (tmp_path / f"{name}.py").write_text(f"INTS = ({ints})\nFLOATS = ({floats})\nSTRS = ({strs})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(providers, "_get_local_constants", REAL_POOL)  # Hypothesis as it is outside the suite
    monkeypatch.setattr(providers, "CONSTANTS_CACHE", LRUCache(1024))  # a fresh process's cache
    return lambda: (importlib.import_module(name), None)[1]


@pytest.mark.parametrize("strategy", [None, PLAIN], ids=["fuzz-cases", "plain"])
def test_a_seeded_run_draws_the_same_cases_whatever_was_imported_before(request, tmp_path, monkeypatch, strategy):
    load = a_new_local_module(request, tmp_path, monkeypatch)
    with history_free():
        before = draws(CASES, SEED, strategy)
    load()
    with history_free():
        after = draws(CASES, SEED, strategy)
    assert before == after


def test_control_outside_history_free_an_import_changes_the_draws(request, tmp_path, monkeypatch):
    load = a_new_local_module(request, tmp_path, monkeypatch)
    before = draws(CASES, SEED, PLAIN)
    load()
    monkeypatch.setattr(providers, "CONSTANTS_CACHE", LRUCache(1024))
    after = draws(CASES, SEED, PLAIN)
    assert before != after, "the pool of local constants no longer moves Hypothesis's draws: history_free may be moot"


def test_history_free_puts_hypothesis_back_as_it_was(monkeypatch):
    monkeypatch.setattr(providers, "_get_local_constants", REAL_POOL)
    get, cache = providers._get_local_constants, providers.CONSTANTS_CACHE
    with history_free():
        assert providers._get_local_constants is not get
    assert (providers._get_local_constants, providers.CONSTANTS_CACHE) == (get, cache)
    assert providers.CONSTANTS_CACHE is cache


def test_a_fuzz_run_counts_the_same_after_an_import(request, tmp_path, monkeypatch):
    load = a_new_local_module(request, tmp_path, monkeypatch)
    first = campaign.fuzz(120, SEED, names=("reference",), save_dir=None)
    load()
    monkeypatch.setattr(providers, "CONSTANTS_CACHE", LRUCache(1024))
    second = campaign.fuzz(120, SEED, names=("reference",), save_dir=None)
    assert (first.ordinals, first.outcomes) == (second.ordinals, second.outcomes)
    assert sys.modules.get("kvproof.stateful_tests.fuzz.campaign") is campaign


def test_a_session_that_judges_a_mutant_never_shrinks(monkeypatch):
    """Under ``kvproof mutate`` (mutmut names the mutant in the environment) a failing case is reported as found:
    the kill needs no shrinking. Elsewhere ``shrink`` decides; the CI lists hold no test of how far a case shrank."""
    from kvproof.stateful_tests.harness.seeding import UNDER_MUTANT_ENV, law_settings, machine_settings, phases_for

    monkeypatch.delenv(UNDER_MUTANT_ENV, raising=False)
    assert Phase.shrink in phases_for(True) and Phase.shrink not in phases_for(False)
    assert Phase.shrink in machine_settings().phases and Phase.shrink in law_settings(5).phases
    monkeypatch.setenv(UNDER_MUTANT_ENV, "kvproof.impl.lane.xǁLaneǁrepair__mutmut_1")
    assert Phase.shrink not in phases_for(True)
    assert Phase.shrink not in machine_settings().phases and Phase.shrink not in law_settings(5).phases
    monkeypatch.setenv(UNDER_MUTANT_ENV, "")
    assert Phase.shrink in phases_for(True)  # the clean run: no mutant named

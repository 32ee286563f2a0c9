"""One seed for every Hypothesis run kvproof starts, so that runs are reproducible everywhere.

Hypothesis's ``derandomize`` derives a state machine's seed from a digest that turned out to
depend on what else the process had imported: the same test, run alone or beside another
test file, explored different examples (found while merging the active-sequence suite). Every
machine and law is therefore run with an explicit seed (``hypothesis.seed``, which overrides
``derandomize``):

- ``KVPROOF_SEED=N`` pins it (the replay of a deep run);
- a profile without a fixed seed (``KVPROOF_PROFILE=deep``) draws a fresh one per process and prints it;
- otherwise it is ``FIXED_SEED``.

The gate passes its own ``--seed`` to the same helpers.

A seed alone is not enough: Hypothesis (6.13x on) mixes into its draws the constants it finds in the
source of every local module the process has imported, so the same seed drew other cases once
another module had been loaded (found by ``kvproof bench shards``: fuzz shards in fresh processes
did not add up to the whole run). ``history_free`` empties that pool for the length of a run;
every helper here, and the fuzz campaign, runs inside it.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import run_state_machine_as_test

from .profiles import profile_named

FIXED_SEED = 1129
_drawn: int | None = None


def suite_seed() -> int:
    """Return the seed for this process (see the module docstring)."""
    global _drawn
    if os.environ.get("KVPROOF_SEED"):
        return int(os.environ["KVPROOF_SEED"])
    if not profile_named().fixed_seed:
        if _drawn is None:
            _drawn = random.SystemRandom().randrange(1, 2**31)
            print(f"kvproof: deep profile seed {_drawn} (replay with KVPROOF_SEED={_drawn})", file=sys.stderr)
        return _drawn
    return FIXED_SEED


class _NoConstants:
    """A local-constant pool with nothing in it, for every choice type."""

    def set_for_type(self, choice_type: object) -> tuple[()]:
        return ()


@contextmanager
def history_free() -> Iterator[None]:
    """Make the Hypothesis runs inside a function of their seed alone, whatever the process imported.

    Law: the examples a seeded run draws do not depend on which modules were loaded before it
    (``tests/test_seeding.py``, with the control that, outside, they do). Hypothesis's own global
    constants, which are fixed, stay in play; only the pool read from local modules is emptied,
    and its per-type cache is swapped for a fresh one and put back after, so nothing outside the
    block is changed. A Hypothesis without the pool has nothing to pin.
    """
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis laid out otherwise
        yield
        return
    if not (hasattr(providers, "_get_local_constants") and hasattr(providers, "CONSTANTS_CACHE")):
        yield  # pragma: no cover - no pool in this Hypothesis
        return
    saved_get, saved_cache = providers._get_local_constants, providers.CONSTANTS_CACHE
    providers._get_local_constants = _NoConstants  # type: ignore[assignment]
    providers.CONSTANTS_CACHE = {}  # type: ignore[assignment]  # read with `in`, [] and []= only, once the pool is ours
    try:
        yield
    finally:
        providers._get_local_constants, providers.CONSTANTS_CACHE = saved_get, saved_cache


def run_machine(machine: type, the_settings: settings, seed: int | None = None, shrink_seconds: float | None = None) -> None:
    """Run a state machine class with an explicit seed (raises on a counterexample).

    ``shrink_seconds`` bounds the time Hypothesis spends shrinking a failure (its default is five
    minutes); a target behind a process boundary costs milliseconds a step, so its rows pass the
    profile's budget and report the failure as far as it got.
    """
    hypothesis_seed(suite_seed() if seed is None else seed)(machine)
    with history_free(), shrink_budget(shrink_seconds):
        run_state_machine_as_test(machine, settings=the_settings)


@contextmanager
def shrink_budget(seconds: float | None) -> Iterator[None]:
    """Hypothesis's shrinking time limit set to ``seconds`` for the block (None: left as it is).

    ``MAX_SHRINKING_SECONDS`` is the engine's documented knob for this ("make it monkeypatchable",
    hypothesis/internal/conjecture/engine.py); there is no setting for it.
    """
    if seconds is None:
        yield
        return
    from hypothesis.internal.conjecture import engine

    before = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = seconds  # type: ignore[assignment]  # an int in the engine; a float works alike
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = before


def run_given(test: Callable[..., Any], the_settings: settings, seed: int | None = None) -> None:
    """Run a ``@given`` test under ``the_settings`` with an explicit seed (raises on a counterexample).

    ``test`` is decorated in place, so it must be a fresh test object: Hypothesis refuses a
    second ``settings`` on the same function (``tree.laws.fresh`` and the sequence laws' factories
    build one per run).
    """
    with history_free():
        hypothesis_seed(suite_seed() if seed is None else seed)(the_settings(test))()


UNDER_MUTANT_ENV = "MUTANT_UNDER_TEST"
"""Set by mutmut, in ``kvproof mutate``'s test sessions, to the mutant being judged."""


def phases_for(shrink: bool) -> list[Phase]:
    """Return Hypothesis's phases: all of them, or none past the first failure when ``shrink`` is False or when
    the session judges a mutant (``UNDER_MUTANT_ENV`` names one). A kill needs the detection only, and
    shrinking a state machine's failing run was most of a killed mutant's time (the stall plugin then
    stopped it as a timeout, after 50 s). So a test that judges mutants (``mutation.profiles.CI_TESTS``)
    must not assert how far Hypothesis shrank: those tests run outside the mutation lists."""
    if shrink and not os.environ.get(UNDER_MUTANT_ENV):
        return list(Phase)
    return [Phase.explicit, Phase.reuse, Phase.generate]


def machine_settings(examples: int = 60, steps: int = 30, shrink: bool = True) -> settings:
    """Return the settings machines run with; determinism comes from the seed (``run_machine``).

    ``shrink=False`` stops at the first failing run, unshrunk: for a negative control, which only
    needs the detection (shrinking a machine's run is most of such a control's time); a mutation
    run's sessions never shrink (``phases_for``)."""
    phases = phases_for(shrink)
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        database=None,
        deadline=None,
        print_blob=True,
        report_multiple_bugs=False,
        phases=phases,
    )


def law_settings(examples: int, shrink: bool = True) -> settings:
    """Return the settings every law runs with; ``shrink=False`` stops at the first counterexample
    (a negative control only needs detection); a mutation run's sessions never shrink (``phases_for``)."""
    phases = phases_for(shrink)
    return settings(max_examples=examples, database=None, deadline=None, print_blob=True, phases=phases)

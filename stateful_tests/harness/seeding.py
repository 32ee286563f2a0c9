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
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable
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


def run_machine(machine: type, the_settings: settings, seed: int | None = None) -> None:
    """Run a state machine class with an explicit seed (raises on a counterexample)."""
    hypothesis_seed(suite_seed() if seed is None else seed)(machine)
    run_state_machine_as_test(machine, settings=the_settings)


def run_given(test: Callable[..., Any], the_settings: settings, seed: int | None = None) -> None:
    """Run a ``@given`` test under ``the_settings`` with an explicit seed (raises on a counterexample).

    ``test`` is decorated in place, so it must be a fresh test object: Hypothesis refuses a
    second ``settings`` on the same function (``tree.laws.fresh`` and the sequence laws' factories
    build one per run).
    """
    hypothesis_seed(suite_seed() if seed is None else seed)(the_settings(test))()


def machine_settings(examples: int = 60, steps: int = 30) -> settings:
    """Return the settings machines run with; determinism comes from the seed (``run_machine``)."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        database=None,
        deadline=None,
        print_blob=True,
        report_multiple_bugs=False,
    )


def law_settings(examples: int, shrink: bool = True) -> settings:
    """Return the settings every law runs with; ``shrink=False`` stops at the first counterexample
    (a negative control only needs detection)."""
    phases = list(Phase) if shrink else [Phase.explicit, Phase.reuse, Phase.generate]
    return settings(max_examples=examples, database=None, deadline=None, print_blob=True, phases=phases)

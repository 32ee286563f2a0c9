"""The profiles: how much each rule family explores, in one object per profile.

One name selects a profile everywhere: ``kvproof check --profile NAME`` for the gate, the
``KVPROOF_PROFILE`` environment variable for the gate and the pytest suite alike (the flag wins).

- ``quick``: a pre-commit loop, the whole gate in about 20 s on 2 cores; deterministic.
- ``ci`` (the default): deterministic, sized for a 2-core CI machine.
- ``deep``: more exploration from a fresh seed, printed so that a failure replays with
  ``--seed`` (or ``KVPROOF_SEED``); in pytest it also runs the tests marked ``slow``.

Every size a gate row or a sized test uses lives here; neither branches on a profile's name. The
suite's tests take the same budgets as the gate's rows (``ci``: the contract machine's 150 runs of
40 steps, 8,000 stress operations per mode, ...), so a row and its test explore alike.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import CampaignInputError


@dataclass(frozen=True)
class TreeBudget:
    law_examples: int  # examples per node-rule law
    machine_examples: int  # contract-machine runs (also the lockstep twin's)
    machine_steps: int
    conform_streams: int  # differential streams against the oracle
    dump_streams: int  # streams whose dump must rebuild the tree
    stress_ops: int  # real-thread stress operations per mode
    pool_streams: int  # streams pipelined through the thread-pool indexer
    fuzz_inputs: int  # hostile cases, each over every tree at once (stateful_tests/fuzz)
    trace_requests: int  # requests of the Mooncake trace replayed by the router simulation (stateful_tests/tree/trace_check.py)
    shrink_s: (
        float  # seconds a failure may spend shrinking (Hypothesis's machines, conformance): a target behind a process is slow
    )
    production_streams: int  # streams fed in production mode (explore/production.py) to a target that takes events at once
    pool_stress_rounds: int  # rounds of removers racing writers through the thread-pool indexer (tree/pool_stress.py)


@dataclass(frozen=True)
class SequenceBudget:
    law_examples: int
    machine_examples: int
    machine_steps: int
    stress_rounds: int
    stress_ops: int
    conform_scenarios: int  # scenarios against the real slot tracker
    selection_scenarios: int  # scenarios against the selection service's ActiveSequences (sequences/selection_oracle.py)


@dataclass(frozen=True)
class DeepInferBudget:
    roundtrip_cases: int  # cases per round-trip law (the fixed ones first, then random)


@dataclass(frozen=True)
class ExploreBudget:
    schedules: int  # schedules per scenario and strategy (PCT, then random walk); a sweep stops at the first failure
    pct_depth: int


@dataclass(frozen=True)
class ProofBudget:
    z3_timeout_ms: int
    crosshair_condition_s: float
    crosshair_diff_s: float


@dataclass(frozen=True)
class Profile:
    name: str
    fixed_seed: bool  # True: seed 1 unless given; False: a fresh seed, printed
    tree: TreeBudget
    sequences: SequenceBudget
    deepinfer: DeepInferBudget
    proofs: ProofBudget
    explore: ExploreBudget


PROFILES: dict[str, Profile] = {
    "quick": Profile(
        "quick",
        True,
        TreeBudget(
            law_examples=60,
            machine_examples=25,
            machine_steps=25,
            conform_streams=60,
            dump_streams=20,
            stress_ops=3_000,
            pool_streams=20,
            fuzz_inputs=300,
            trace_requests=150,
            shrink_s=20,
            production_streams=10,
            pool_stress_rounds=3,
        ),
        SequenceBudget(
            law_examples=20,
            machine_examples=25,
            machine_steps=25,
            stress_rounds=1,
            stress_ops=400,
            conform_scenarios=3,
            selection_scenarios=50,
        ),
        DeepInferBudget(roundtrip_cases=20),
        ProofBudget(z3_timeout_ms=10_000, crosshair_condition_s=0.3, crosshair_diff_s=0.6),
        ExploreBudget(schedules=60, pct_depth=3),
    ),
    "ci": Profile(
        "ci",
        True,
        TreeBudget(
            law_examples=300,
            machine_examples=150,
            machine_steps=40,
            conform_streams=500,
            dump_streams=100,
            stress_ops=8_000,
            pool_streams=100,
            fuzz_inputs=2_000,
            trace_requests=1_000,
            shrink_s=60,
            production_streams=40,
            pool_stress_rounds=10,
        ),
        SequenceBudget(
            law_examples=100,
            machine_examples=150,
            machine_steps=40,
            stress_rounds=4,
            stress_ops=400,
            conform_scenarios=10,
            selection_scenarios=200,
        ),
        DeepInferBudget(roundtrip_cases=60),
        ProofBudget(z3_timeout_ms=10_000, crosshair_condition_s=1.0, crosshair_diff_s=2.0),
        ExploreBudget(schedules=300, pct_depth=3),
    ),
    "deep": Profile(
        "deep",
        False,
        TreeBudget(
            law_examples=2000,
            machine_examples=500,
            machine_steps=60,
            conform_streams=2000,
            dump_streams=500,
            stress_ops=100_000,
            pool_streams=500,
            fuzz_inputs=100_000,
            trace_requests=12_031,
            shrink_s=300,
            production_streams=400,
            pool_stress_rounds=60,
        ),
        SequenceBudget(
            law_examples=666,
            machine_examples=600,
            machine_steps=60,
            stress_rounds=20,
            stress_ops=1500,
            conform_scenarios=60,
            selection_scenarios=2000,
        ),
        DeepInferBudget(roundtrip_cases=600),
        ProofBudget(z3_timeout_ms=60_000, crosshair_condition_s=10.0, crosshair_diff_s=30.0),
        ExploreBudget(schedules=3000, pct_depth=3),
    ),
}

DEFAULT_PROFILE = "ci"
PROFILE_VARIABLE = "KVPROOF_PROFILE"


class UnknownProfile(CampaignInputError):
    """A profile name that is not one of ``PROFILES``, given by ``--profile`` or ``KVPROOF_PROFILE``: every command
    refuses it as a usage error (exit 2), never with a traceback."""


def profile_choice(name: str | None = None, among: tuple[str, ...] | None = None) -> str:
    """The profile a command runs under: ``name``, else the one ``KVPROOF_PROFILE`` names (when ``among`` offers it),
    else ``ci``. Every command's ``--profile`` resolves through here, so one default holds everywhere; a variable that
    names no profile at all is refused (``UnknownProfile``), on every command alike."""
    from_environment = os.environ.get(PROFILE_VARIABLE)
    if not name and from_environment and from_environment not in PROFILES:
        raise UnknownProfile(
            f"{PROFILE_VARIABLE}={from_environment!r} names no profile: one of {', '.join(PROFILES)}", param="--profile"
        )
    offered = among or tuple(PROFILES)
    return name or (from_environment if from_environment in offered else DEFAULT_PROFILE)


def profile_named(name: str | None = None) -> Profile:
    """Return the profile ``name``, else the one ``KVPROOF_PROFILE`` names, else ``ci`` (``profile_choice``)."""
    chosen = profile_choice(name)
    try:
        return PROFILES[chosen]
    except KeyError:
        raise UnknownProfile(f"unknown profile {chosen!r}: one of {', '.join(PROFILES)}") from None

"""What each mutation profile mutates, the tests that judge each module, and the score goals.

A profile is a list of ``MutationTarget``: one source module (a path from the checkout's root, such as
``spec/coverage.py``) and the test files run against its mutants (a file, or one test of it as
``file.py::test_name`` where the rest of the file is a long campaign). mutmut runs the union of the
tests once to learn which test reaches which function, then runs only those tests per mutant.
Targets with the same list share one mutmut run; each distinct list is a run of its own.

- ``quick``: a few spec modules, each with the test files written for it (minutes on 2 cores);
- ``ci``: every module of spec/, reference/ and impl/, each judged by the test files named for
  it in ``CI_TESTS`` (its rule family's tests and laws, and the machines, vectors and
  interleavings that drive it), without the long campaigns (soak, the Dynamo oracle servers,
  release replays, the memory and timing benches).

``GOALS`` is the score each layer must reach: killed / (killed + survived), after reviewed
equivalents are set aside (``equivalents``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...spec.errors import KvProofError

LAYERS = ("spec", "reference", "impl")
GOALS = {"spec": 0.95, "reference": 0.95, "impl": 0.90}


class MutateProfileError(KvProofError, ValueError):
    """An unknown profile or layer, or a module or test file that is not in the checkout."""


@dataclass(frozen=True)
class MutationTarget:
    """One module to mutate (``spec/coverage.py``) and the test files that judge it."""

    module: str
    tests: tuple[str, ...]

    @property
    def layer(self) -> str:
        return self.module.split("/", 1)[0]

    @property
    def dotted(self) -> str:
        """The import name mutmut gives the module's mutants: ``kvproof.spec.coverage``."""
        return "kvproof." + self.module.removesuffix(".py").replace("/", ".")


TREE = "stateful_tests/tree/tests/"
DEEPINFER = "stateful_tests/deepinfer/tests/"
SEQUENCES = "stateful_tests/sequences/tests/"

QUICK = (
    MutationTarget(
        "spec/coverage.py",
        (TREE + "test_spec_coverage.py", TREE + "test_laws.py", TREE + "test_reference_radix_tree.py", TREE + "test_vectors.py"),
    ),
    MutationTarget("spec/service_queue.py", (DEEPINFER + "test_spec_service_queue.py",)),
    MutationTarget("spec/token_load.py", (SEQUENCES + "test_spec_sequences.py",)),
)

PROFILES = ("quick", "ci")

EXPLORE = "stateful_tests/explore/tests/"

TREE_SPEC = tuple(
    TREE + f"test_spec_{name}.py"
    for name in ("api", "contract", "coverage", "dump", "events", "invariants", "match", "primitives", "rules", "shape")
) + (TREE + "test_laws.py", TREE + "test_reference_radix_tree.py", TREE + "test_vectors.py", TREE + "test_reference_wire.py")
"""The tree's spec modules: their mirror tests and laws, and the reference tree's tests and the recorded Dynamo vectors,
which drive the dump, the match walk, the invariants and the event checks for real (about a second together)."""
SEQUENCE_SPEC = (
    SEQUENCES + "test_spec_sequences.py",
    SEQUENCES + "test_laws.py",
    SEQUENCES + "test_values.py",
    SEQUENCES + "test_bad_input.py",
)
DEEPINFER_SPEC = tuple(
    DEEPINFER + f"test_spec_{name}.py"
    for name in ("acceptance", "capacity", "hit_length", "quantities", "service_queue", "state_layout")
)
REFERENCE_TREE = (
    TREE + "test_reference_radix_tree.py",
    TREE + "test_vectors.py",
    TREE + "test_machine.py",
    TREE + "test_spec_rules.py",
    TREE + "test_crowd.py",
)
REFERENCE_SEQUENCES = (
    SEQUENCES + "test_reference_sequences.py",
    SEQUENCES + "test_laws.py",
    SEQUENCES + "test_machine.py",
    SEQUENCES + "test_bad_input.py",
    SEQUENCES + "test_values.py",
    SEQUENCES + "test_growth.py",
)
EXPLORE_IMPL = (
    EXPLORE + "test_scenarios.py::test_the_embedded_implementation_passes_every_scenario",
    EXPLORE + "test_scenarios.py::test_each_regression_passes_on_the_implementation_and_still_catches_its_structure",
)
"""The explorer's scenarios run on the embedded implementation (random and PCT schedules, and every recorded
regression token), without the fresh sweeps for each broken structure (minutes each): about 10 s."""
IMPL_TREE = (
    TREE + "test_impl_radix_tree.py",
    TREE + "test_impl_lane.py",
    TREE + "test_impl_node.py",
    TREE + "test_vectors.py",
    TREE + "test_impl_poison.py",
    TREE + "test_impl_indexer.py",
    EXPLORE + "test_impl_radix_tree_races.py",
    TREE + "test_crowd.py",
) + EXPLORE_IMPL
IMPL_TRACKER = (
    SEQUENCES + "test_laws.py",
    SEQUENCES + "test_machine.py",
    SEQUENCES + "test_bad_input.py",
    SEQUENCES + "test_interleavings.py",
    SEQUENCES + "test_stress.py",
    SEQUENCES + "test_poisoning.py",
    EXPLORE + "test_impl_slot_tracker_points.py",
) + EXPLORE_IMPL

CI_TESTS: dict[str, tuple[str, ...]] = {
    **{
        f"spec/{name}.py": TREE_SPEC
        for name in (
            "api",
            "contract",
            "coverage",
            "dump",
            "errors",
            "events",
            "invariants",
            "match",
            "primitives",
            "rules",
            "shape",
        )
    },
    **{
        f"spec/{name}.py": SEQUENCE_SPEC
        for name in (
            "prefill",
            "sequence_errors",
            "sequence_inputs",
            "sequence_invariants",
            "sequences",
            "slot_tracker",
            "token_load",
        )
    },
    **{
        f"spec/{name}.py": DEEPINFER_SPEC
        for name in ("acceptance", "capacity", "deepinfer_errors", "hit_length", "quantities", "service_queue", "state_layout")
    },
    "spec/arith.py": TREE_SPEC + SEQUENCE_SPEC + DEEPINFER_SPEC,
    "reference/radix_tree.py": REFERENCE_TREE,
    "reference/wire.py": (
        TREE + "test_reference_wire.py",
        TREE + "test_spec_events.py",
        TREE + "test_reference_radix_tree.py",
        TREE + "test_vectors.py",
    ),
    "reference/sequences.py": REFERENCE_SEQUENCES,
    "impl/radix_tree.py": IMPL_TREE,
    "impl/lane.py": IMPL_TREE,
    "impl/node.py": IMPL_TREE,
    "impl/indexer.py": (TREE + "test_impl_indexer.py", TREE + "test_pipeline.py"),
    "impl/poison.py": (TREE + "test_impl_poison.py", SEQUENCES + "test_poisoning.py"),
    "impl/slot_tracker.py": IMPL_TRACKER,
    "impl/_sync.py": (
        EXPLORE + "test_impl_sync.py",
        TREE + "test_impl_radix_tree.py",
        TREE + "test_vectors.py",
        TREE + "test_impl_indexer.py",
        SEQUENCES + "test_interleavings.py",
        EXPLORE + "test_model_primitives.py",
        EXPLORE + "test_scheduler.py",
        *EXPLORE_IMPL,
    ),
    "impl/state_roundtrip.py": (DEEPINFER + "test_impl_state_roundtrip.py",),
}
"""The ci profile: each module of spec/, reference/ and impl/ with the test files that judge it.

A module's list is its rule family's own tests (the mirror tests, ``test_<layer>_<module>.py``,
and the family's laws), and the tests that drive it for real from another side: the state
machines, the recorded Dynamo vectors, the rule-variant tests (the reference tree reads the
variants), the interleaving and stress tests of the concurrent tracker. Each distinct list is a
mutmut run of its own (``driver.run_groups``), so a module's mutants run only its tests and the
first, traced pass over them stays short; the lists were first one per layer, and that pass
alone ran past 15 minutes on 2 cores. A module missing here fails the profile
(``MutateProfileError``): a new module must be given its judges, not fall through to none.
"""


def ci_tests(layer: str | None = None) -> tuple[str, ...]:
    """Every test file the ci profile names for ``layer``'s modules (all layers when None), in order, once."""
    chosen = [tests for module, tests in CI_TESTS.items() if layer is None or module.startswith(layer + "/")]
    return tuple(dict.fromkeys(t for tests in chosen for t in tests))


def layer_modules(root: Path, layer: str) -> list[str]:
    """Every module of a layer folder, ``__init__.py`` left out (re-exports only)."""
    return [p.relative_to(root).as_posix() for p in sorted((root / layer).glob("*.py")) if p.name != "__init__.py"]


def selects(path: str, module: str) -> bool:
    """A ``--paths`` entry names a layer (``reference``: its every module) or one module (``reference/sequences.py``)."""
    return module == path or module.startswith(path + "/")


def rejudge_refusal(
    earlier_profile: str,
    earlier_paths: Sequence[str],
    earlier_shard: object,
    profile: str,
    targets: Sequence[MutationTarget],
    shard: object,
) -> str | None:
    """Why an earlier report cannot be rejudged with these options (None: it can).

    The profile and the shard must be the earlier run's; the modules may be all of its modules or some
    of them (``--paths impl/lane.py`` over a report of ``--paths impl``): a rejudge carries only the
    verdicts of the modules it runs, so judging a part costs that part's time.
    """
    if (earlier_profile, earlier_shard) != (profile, shard):
        return f"is a run of profile={earlier_profile} shard={earlier_shard}: give the same profile and shard"
    outside = [t.module for t in targets if not any(selects(p, t.module) for p in earlier_paths)]
    if outside:
        return f"did not run {outside[0]} (its paths were {','.join(earlier_paths)}): rejudge those modules or some of them"
    return None


def targets_for(profile: str, root: Path, layers: Sequence[str] = LAYERS) -> tuple[MutationTarget, ...]:
    """The targets of ``profile``, kept to the layers or modules named (``spec``, ``impl/lane.py``)."""
    unknown = [p for p in layers if p.split("/", 1)[0] not in LAYERS or ("/" in p and not (root / p).is_file())]
    if unknown:
        raise MutateProfileError(
            f"unknown layer or module {unknown[0]!r}: choose from {', '.join(LAYERS)}, or a module of one (spec/coverage.py)"
        )
    if profile == "quick":
        chosen = tuple(t for t in QUICK if any(selects(p, t.module) for p in layers))
    elif profile == "ci":
        modules = [m for layer in LAYERS for m in layer_modules(root, layer) if any(selects(p, m) for p in layers)]
        missing = [m for m in modules if m not in CI_TESTS]
        if missing:
            raise MutateProfileError(
                f"{missing[0]} has no test list in the ci profile (profiles.CI_TESTS): name the tests that judge it"
            )
        chosen = tuple(MutationTarget(m, CI_TESTS[m]) for m in modules)
    else:
        raise MutateProfileError(f"unknown profile {profile!r}: choose from {', '.join(PROFILES)}")
    for target in chosen:
        for path in (target.module, *(test.split("::", 1)[0] for test in target.tests)):
            if not (root / path).is_file():
                raise MutateProfileError(f"{path} (profile {profile}) is not in the checkout at {root}")
    return chosen

"""What each mutation profile mutates, the tests that judge each module, and the score goals.

A profile is a list of ``Target``: one source module (a path from the checkout's root, such as
``spec/coverage.py``) and the test files run against its mutants. mutmut runs the union of the
tests once to learn which test reaches which function, then runs only those tests per mutant,
so a wider test list costs one longer first pass, not a slower mutant.

- ``quick``: a few spec modules, each with the test files written for it (minutes on 2 cores);
- ``ci``: every module of spec/, reference/ and impl/, each layer judged by the test files
  written for it in the tree, sequences and deepinfer folders (``test_spec_*.py``,
  ``test_reference_*.py``, ``test_impl_*.py``) and the rule laws (``test_laws.py``), without the
  slow campaigns (soak, stress, the Dynamo oracle, release replays, the memory and timing benches).

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

TEST_FOLDERS = ("stateful_tests/tree/tests", "stateful_tests/sequences/tests", "stateful_tests/deepinfer/tests")
SLOW_TEST_WORDS = ("soak", "stress", "oracle", "release", "memory", "bench", "findings", "interleavings", "roundtrip")
"""Test files whose name holds one of these are left out of the ci profile: long campaigns, or a
Dynamo server, whose cost per mutant would be the whole run."""


class MutateProfileError(KvProofError, ValueError):
    """An unknown profile or layer, or a module or test file that is not in the checkout."""


@dataclass(frozen=True)
class Target:
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
    Target("spec/coverage.py", (TREE + "test_spec_coverage.py", TREE + "test_laws.py", TREE + "test_reference_radix_tree.py")),
    Target("spec/service_queue.py", (DEEPINFER + "test_spec_service_queue.py",)),
    Target("spec/token_load.py", (SEQUENCES + "test_spec_sequences.py",)),
)

PROFILES = ("quick", "ci")


LAW_FILES = ("test_laws.py",)
"""Besides a layer's own test files (``test_<layer>_*.py``), the rule laws judge every layer."""

LAYER_EXTRAS = {"reference": ("test_vectors.py", "test_spec_rules.py"), "impl": ("test_vectors.py",)}
"""Test files named for another subject that judge a layer all the same: the observed Dynamo behaviours
run on the reference and the concurrent tree, and the rule-variant tests run the reference under each
rule set (its ``RadixTree.__init__`` reads the variants; the layer's own files use the default only)."""


def ci_tests(root: Path, layer: str | None = None) -> tuple[str, ...]:
    """The test files of the ci profile for ``layer``: ``test_<layer>_*.py`` and the law files of ``TEST_FOLDERS``.

    With no layer: every ``test_*.py`` there. The slow ones (``SLOW_TEST_WORDS``) are left out
    either way. The whole folders under mutmut's tracing take longer than a CI job on 2 cores
    (the first pass alone ran past 15 minutes), so a layer is judged by the files written for it.
    """
    found = []
    for folder in TEST_FOLDERS:
        for path in sorted((root / folder).glob("test_*.py")):
            if any(word in path.stem for word in SLOW_TEST_WORDS):
                continue
            if (layer is None or path.name.startswith(f"test_{layer}_") or path.name in LAW_FILES
                    or path.name in LAYER_EXTRAS.get(layer, ())):
                found.append(path.relative_to(root).as_posix())
    return tuple(found)


def layer_modules(root: Path, layer: str) -> list[str]:
    """Every module of a layer folder, ``__init__.py`` left out (re-exports only)."""
    return [p.relative_to(root).as_posix() for p in sorted((root / layer).glob("*.py")) if p.name != "__init__.py"]


def targets_for(profile: str, root: Path, layers: Sequence[str] = LAYERS) -> tuple[Target, ...]:
    """The targets of ``profile``, kept to the layers named (``spec``, ``reference``, ``impl``)."""
    unknown = [layer for layer in layers if layer not in LAYERS]
    if unknown:
        raise MutateProfileError(f"unknown layer {unknown[0]!r}: choose from {', '.join(LAYERS)}")
    if profile == "quick":
        chosen = tuple(t for t in QUICK if t.layer in layers)
    elif profile == "ci":
        chosen = tuple(Target(m, ci_tests(root, layer)) for layer in LAYERS if layer in layers for m in layer_modules(root, layer))
    else:
        raise MutateProfileError(f"unknown profile {profile!r}: choose from {', '.join(PROFILES)}")
    for target in chosen:
        for path in (target.module, *target.tests):
            if not (root / path).is_file():
                raise MutateProfileError(f"{path} (profile {profile}) is not in the checkout at {root}")
    return chosen

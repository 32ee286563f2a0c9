"""The copy of the checkout that mutmut works in, and the ``[tool.mutmut]`` section it reads.

mutmut names a mutant after the module path of its file with a leading ``src.`` dropped, and
puts its mutated ``mutants/src`` first on ``sys.path``. The checkout's layers live in top-level
folders (``spec/`` is ``kvproof.spec`` through setuptools' package-dir), so the workspace
rebuilds the import layout with real copies (mutmut does not follow symlinks into a tree):

    .kvproof-mutate/<name>/     (kvproof mutate names it <profile>-<K>-of-<N>)
        pyproject.toml          the checkout's, with [tool.mutmut] appended
        conftest.py
        stateful_tests/         the tests, at the paths the test selection names
        src/kvproof/            kvproof/ with spec/ reference/ impl/ stateful_tests/ proofs/ inside

so ``src/kvproof/spec/coverage.py`` is mutated as ``kvproof.spec.coverage``, the name the tests
import. The workspace is rebuilt from scratch on every run: mutmut's own cache of results
(``mutants/``, inside the workspace) never carries a verdict from older code into a new report.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .profiles import MutationTarget

WORK_ROOT = ".kvproof-mutate"
PACKAGE_LAYERS = ("spec", "reference", "impl", "stateful_tests", "proofs")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache", "*.egg-info")
TTD_PLUGIN = "kvproof.stateful_tests.mutation.ttd"
ORDER_PLUGIN = "kvproof.stateful_tests.mutation.order"
STALL_PLUGIN = "kvproof.stateful_tests.mutation.stall"
TIMEOUT_MULTIPLIER = 4.0
TIMEOUT_CONSTANT = 20.0
"""mutmut stops a mutant (a timeout: detected, in its own column) after 2 x multiplier x (its tests'
clean time + constant) of CPU. Its defaults, 15 and 1 s, misjudge both ways here. mutmut's clean time
of a test is its call phase only, so a test whose work is a module fixture (the state machines) reads
0 s: at multiplier 4 and constant 1, 26 mutants of ``remove_worker``, ``clear_all_blocks`` and ``_split``
were stopped at 8 s of CPU as timeouts, though their tests simply take 20 to 40 s to run. At 15 and 1,
a mutant whose estimate is large holds a core for many minutes when it loops. A constant of 20 s
covers the fixtures; a multiplier of 4 bounds the rest to eight times the clean run."""


@dataclass(frozen=True)
class Workspace:
    """A built workspace: its folder, and the targets its config mutates."""

    path: Path
    targets: tuple[MutationTarget, ...]

    @property
    def mutants(self) -> Path:
        """mutmut's results folder (the mutated tree and one ``.meta`` JSON per mutated file)."""
        return self.path / "mutants"

    @property
    def ttd_file(self) -> Path:
        return self.path / "ttd.jsonl"

    @property
    def cost_file(self) -> Path:
        """Each test file's seconds in mutmut's stats pass, which the ``order`` plugin runs by."""
        return self.path / "costs.json"

    def meta_of(self, target: MutationTarget) -> Path:
        return self.mutants / "src" / "kvproof" / (target.module + ".meta")


def toml_list(items: Sequence[str]) -> str:
    """A TOML array of strings (JSON's string escapes are TOML's basic-string escapes)."""
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def mutmut_config(targets: Sequence[MutationTarget], pytest_args: Sequence[str] = ()) -> str:
    """The ``[tool.mutmut]`` section: mutate the targets' modules only, select the union of their tests.

    Every selected test judges, those marked ``slow`` included (``--run-slow``): a test moves behind the marker to keep
    the README's suite short, never out of the judgement that gave the scores of record."""
    layers = sorted({t.layer for t in targets})
    tests = list(dict.fromkeys(test for t in targets for test in t.tests))
    return "\n".join(
        [
            "",
            "# written by kvproof mutate (stateful_tests/mutation/workspace.py)",
            "[tool.mutmut]",
            f"source_paths = {toml_list([f'src/kvproof/{layer}' for layer in layers])}",
            f"only_mutate = {toml_list([f'src/kvproof/{t.module}' for t in targets])}",
            f"also_copy = {toml_list(['src', 'stateful_tests', 'conftest.py'])}",
            f"pytest_add_cli_args = {toml_list(['-p', TTD_PLUGIN, '-p', ORDER_PLUGIN, '-p', STALL_PLUGIN, '-p', 'no:cacheprovider', '--run-slow', *pytest_args])}",
            f"pytest_add_cli_args_test_selection = {toml_list(tests)}",
            f"timeout_multiplier = {TIMEOUT_MULTIPLIER}",
            f"timeout_constant = {TIMEOUT_CONSTANT}",
            "",
        ]
    )


def build(root: Path, targets: Sequence[MutationTarget], pytest_args: Sequence[str] = (), work: Path | None = None) -> Workspace:
    """Copy the checkout at ``root`` into a fresh workspace (default ``root/.kvproof-mutate/work``) and configure mutmut.

    ``work`` must lie in a folder of its own: whatever is there is removed first.
    """
    path = work or root / WORK_ROOT / "work"
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    for name in ("pyproject.toml", "conftest.py"):
        shutil.copy2(root / name, path / name)
    shutil.copytree(root / "stateful_tests", path / "stateful_tests", ignore=IGNORED)
    package = path / "src" / "kvproof"
    shutil.copytree(root / "kvproof", package, ignore=IGNORED)
    for layer in PACKAGE_LAYERS:
        shutil.copytree(root / layer, package / layer, ignore=IGNORED)
    with (path / "pyproject.toml").open("a") as f:
        f.write(mutmut_config(targets, pytest_args))
    return Workspace(path, tuple(targets))

"""The checks: laws, state machines, conformance, stress and negative controls, run by pytest and ``kvproof``.

Rooms (what each may import: CONTRIBUTING.md "Layout", enforced by ``tests/test_layering.py``):

- ``harness``: family-agnostic machinery (tree targets, profiles, seeding, block paths, the
  scenario format, forced interleavings); imports the layers only.
- ``tree``, ``sequences``, ``deepinfer``: one room per rule family, each with its laws, machine,
  scenario steps and data, generators, conformance, stress, mutants and bench, and its
  ``tests/``; each imports the layers and ``harness``, never another family.
- ``explore``: the deterministic interleaving explorer, the linearizability checker and production mode;
- ``fuzz``: the hostile-input campaign (grammar, byte mutation, the saved cases' codec);
- ``mutation``: mutation testing of the layers with mutmut;
- ``tests``: the layering rules and the room indexes; ``pytest_suite``: the suite's pytest plugin.

The folder is installed as the package ``kvproof.stateful_tests``; the guard below refuses any
other name, except the one pytest gives it: with ``--import-mode=importlib`` pytest imports
this folder as the top-level package ``stateful_tests`` to hold its test files and conftest (which
import the code as ``kvproof.stateful_tests``), so that name is allowed once the suite's root conftest.py has set
``kvproof.PYTEST_COLLECTS_FOLDERS`` (before collection).
"""

import sys

if __name__ != "kvproof.stateful_tests" and not (
    __name__ == "stateful_tests" and getattr(sys.modules.get("kvproof"), "PYTEST_COLLECTS_FOLDERS", False)
):
    raise ImportError(
        f"import kvproof.stateful_tests, not {__name__}: the stateful_tests/ folder is installed as the package kvproof.stateful_tests"
        " (pyproject package-dir), and importing it by its folder name would load a second copy of every module"
    )

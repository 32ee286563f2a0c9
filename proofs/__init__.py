"""Proofs of the spec's laws for all inputs in their bounds (Z3, CrossHair); see README.md.

The folder is installed as the package ``kvproof.proofs``; the guard below refuses any
other name, except the one pytest gives it: with ``--import-mode=importlib`` pytest imports
this folder as the top-level package ``proofs`` to hold its test files and conftest (which
import the code as ``kvproof.proofs``), so that name is allowed once the suite's root conftest.py has set
``kvproof.PYTEST_COLLECTS_FOLDERS`` (before collection).
"""

import sys

if __name__ != "kvproof.proofs" and not (
    __name__ == "proofs" and getattr(sys.modules.get("kvproof"), "PYTEST_COLLECTS_FOLDERS", False)
):
    raise ImportError(
        f"import kvproof.proofs, not {__name__}: the proofs/ folder is installed as the package kvproof.proofs"
        " (pyproject package-dir), and importing it by its folder name would load a second copy of every module"
    )

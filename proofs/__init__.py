"""Proofs of the spec's laws for all inputs in their bounds (Z3, CrossHair); see README.md.

The folder is installed as the package ``kvproof.proofs``; the guard below refuses any
other name, except the one pytest gives it: with ``--import-mode=importlib`` pytest imports
this folder as the top-level package ``proofs`` to hold its test files and conftest (which
import the code as ``kvproof.proofs``), so that name is allowed while pytest is the importer.
"""

import sys
from types import FrameType


def _imported_by_pytest() -> bool:
    """Check if pytest's own import machinery (``_pytest.pathlib``) is importing this package."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == "_pytest.pathlib":
            return True
        frame = frame.f_back
    return False


if __name__ != "kvproof.proofs" and not (__name__ == "proofs" and _imported_by_pytest()):
    raise ImportError(
        f"import kvproof.proofs, not {__name__}: the proofs/ folder is installed as the package kvproof.proofs"
        " (pyproject package-dir), and importing it by its folder name would load a second copy of every module"
    )

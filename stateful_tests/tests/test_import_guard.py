"""The folder-name guard of ``proofs/`` and ``stateful_tests/``: refused outside the suite, allowed once the root
conftest has set ``kvproof.PYTEST_COLLECTS_FOLDERS`` (one flag, set before collection)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _import(folder: str, flag: bool) -> subprocess.CompletedProcess[str]:
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); import kvproof; "
        f"kvproof.PYTEST_COLLECTS_FOLDERS = {flag}; import {folder}"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("folder", ["proofs", "stateful_tests"])
def test_a_folder_name_import_is_refused_outside_the_suite(folder):
    ran = _import(folder, flag=False)
    assert ran.returncode != 0 and f"import kvproof.{folder}, not {folder}" in ran.stderr


@pytest.mark.parametrize("folder", ["proofs", "stateful_tests"])
def test_the_flag_lets_pytest_import_the_folder(folder):
    """Negative control of the refusal: the same import passes with the flag, so the refusal above is the guard's."""
    assert _import(folder, flag=True).returncode == 0


def test_the_suite_sets_the_flag():
    import kvproof

    assert kvproof.PYTEST_COLLECTS_FOLDERS is True

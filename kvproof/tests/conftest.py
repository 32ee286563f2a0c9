"""Helpers for the command's tests: run ``kvproof`` in-process with click's runner."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from kvproof.cli import main


@dataclass
class Ran:
    code: int
    out: str

    @property
    def last(self) -> str:
        return self.out.strip().splitlines()[-1]


@pytest.fixture
def kvproof_cli():
    """``kvproof_cli(*args)`` runs the command and returns its exit code and output (stdout and stderr)."""
    runner = CliRunner()

    def run(*args: str) -> Ran:
        result = runner.invoke(main, list(args), catch_exceptions=False)
        return Ran(result.exit_code, result.output)

    return run


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """The reference site, built once per session into a temporary folder (skipped without the docs extra, or failed
    when ``KVPROOF_REQUIRE_DOCS`` is set). It is built in a fresh interpreter, as ``kvproof docs`` builds it, so no
    earlier test of this worker (a patched rule, a module imported halfway, a leftover thread) can reach it."""
    from kvproof.docs_site.build import MISSING_EXTRA, build_site_apart, missing_packages
    from kvproof.stateful_tests.harness.optional import skip_or_fail

    skip_or_fail(MISSING_EXTRA if missing_packages() else None, "KVPROOF_REQUIRE_DOCS")
    return build_site_apart(tmp_path_factory.mktemp("docs"))

"""``pytest --kvproof-target``: the gate's rows as pytest items, passing and failing as the gate does."""

import subprocess
import sys

import pytest


def run_pytest(tmp_path, *args):
    """Run pytest in an empty folder (so only the plugin's items are collected) and return its output."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_the_gate_rows_run_as_pytest_items(tmp_path):
    code, out = run_pytest(tmp_path, "--kvproof-target=reference", "--kvproof-only=vectors", f"--junitxml={tmp_path / 'g.xml'}")
    assert code == 0, out
    assert "1 passed" in out
    xml = (tmp_path / "g.xml").read_text()
    assert 'kvproof-gate/tree" name="observed Dynamo behaviours"' in xml and '<property name="checks"' in xml


def test_a_broken_tree_fails_its_row_with_the_replay_command(tmp_path):
    code, out = run_pytest(
        tmp_path, "--kvproof-target=kvproof.stateful_tests.tree.mutants:NoLookupScrub", "--kvproof-only=vectors"
    )
    assert code == 1, out
    assert "1 failed" in out and "steps differ" in out and "replay: kvproof check --target" in out


def test_an_unavailable_target_is_a_usage_error(tmp_path):
    code, out = run_pytest(tmp_path, "--kvproof-target=no_such_module:Tree")
    assert code == pytest.ExitCode.USAGE_ERROR and "ModuleNotFoundError" in out


def test_without_the_option_the_plugin_adds_nothing(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    code, out = run_pytest(tmp_path)
    assert code == 0 and "1 passed" in out

"""mutation.driver: what a failed mutmut run tells the maintainer."""

from pathlib import Path

from kvproof.stateful_tests.mutation.driver import run_failure

LOG = Path("/w/mutmut.log")


def test_a_clean_run_usage_error_is_named_with_its_likely_cause_and_long_lines_are_cut():
    """mutmut raises ``BadTestExecutionCommandsException`` when pytest exits 4 in its clean run; its last line is
    the whole pytest command line. The message names the cause, the log, and cuts that line at 300 characters."""
    ids = ", ".join(f"'t.py::test[{i}]'" for i in range(2000))
    text = (
        f"Running clean tests\nmutmut.runners.harness.BadTestExecutionCommandsException: Failed to run pytest with args: [{ids}]"
    )
    message = run_failure(1, text, LOG)
    first, *tail = message.splitlines()
    assert first.startswith("mutmut run failed (exit 1); pytest ended mutmut's clean run with a usage error (exit 4)")
    assert "printable ASCII without backslashes" in first and first.endswith(f"see {LOG}; its last lines:")
    assert tail[0] == "Running clean tests"
    assert len(tail[1]) < 400 and tail[1].endswith(f" ... ({len(text.splitlines()[1])} characters)")


def test_any_other_failure_gives_its_last_fifteen_lines_and_no_guess():
    text = "\n".join(f"line {i}" for i in range(40))
    message = run_failure(2, text, LOG)
    assert message.splitlines() == [
        f"mutmut run failed (exit 2); see {LOG}; its last lines:",
        *(f"line {i}" for i in range(25, 40)),
    ]


def test_a_workspace_that_cannot_be_rebuilt_is_a_typed_error_naming_the_likely_cause(tmp_path, monkeypatch):
    """Two runs of one profile and shard share a workspace: the second's rebuild fails inside shutil, and that is a
    MutateError saying so, never an OSError escaping the command."""
    import pytest

    from kvproof.stateful_tests.mutation import driver, workspace
    from kvproof.stateful_tests.mutation.profiles import targets_for

    def in_use(*args, **kwargs):
        raise OSError(39, "Directory not empty")

    monkeypatch.setattr(workspace, "build", in_use)
    monkeypatch.setattr(driver, "mutmut_unavailable", lambda: None)
    with pytest.raises(driver.MutateError, match="another kvproof mutate"):
        driver.run_mutation(Path(__file__).resolve().parents[3], targets_for("quick", tmp_path, ())[:1], work=tmp_path)

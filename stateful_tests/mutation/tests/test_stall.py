"""The ``stall`` plugin: a test file that runs far past its recorded cost ends a mutant's session as a timeout."""

import json
import os
import subprocess
import sys
import time

from kvproof.stateful_tests.mutation.order import COST_FILE_ENV, MUTANT_ENV, Costs
from kvproof.stateful_tests.mutation.stall import FACTOR, FLOOR_ENV, FLOOR_S, TIMEOUT_EXIT, budget_s
from kvproof.stateful_tests.mutation.ttd import TTD_FILE_ENV


def test_a_tests_budget_is_a_multiple_of_its_cost_plus_a_floor_and_none_without_a_cost():
    costs = Costs({"a/test_x.py": 2.5}, ["a/test_x.py::t"], {"a/test_x.py::t": 0.5}, {"a/test_x.py": 0.25})
    assert budget_s(costs, "a/test_x.py") == FACTOR * 2.5 + FLOOR_S, "the file's first test: the whole file"
    assert budget_s(costs, "a/test_x.py", "a/test_x.py::t") == FACTOR * (0.5 + 0.25) + FLOOR_S
    assert budget_s(costs, "a/test_x.py", "a/test_x.py::u") == FACTOR * 2.5 + FLOOR_S, "no cost of its own"
    assert budget_s(costs, "b/test_y.py") is None
    assert TIMEOUT_EXIT == 36, "mutmut's own exit code for a timeout"


SLOW = """
import time
def test_quick():
    pass
def test_loops():
    time.sleep(SECONDS)
"""


def session(folder, mutant, seconds, costs):
    (folder / "test_slow.py").write_text(SLOW.replace("SECONDS", str(seconds)))
    items = {f"{name}::{test}": seconds / 2 for name, seconds in costs.items() for test in ("test_quick", "test_loops")}
    (folder / "costs.json").write_text(json.dumps(Costs(costs, list(items), items, {}).to_json()))
    ttd = folder / "ttd.jsonl"
    ttd.unlink(missing_ok=True)
    env = {**os.environ, COST_FILE_ENV: str(folder / "costs.json"), TTD_FILE_ENV: str(ttd), FLOOR_ENV: "0.5"}
    env.pop(MUTANT_ENV, None)
    if mutant:
        env[MUTANT_ENV] = mutant
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-p",
            "kvproof.stateful_tests.mutation.stall",
            f"--rootdir={folder}",
            "test_slow.py",
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        timeout=120,
    )
    lines = [json.loads(line) for line in ttd.read_text().splitlines()] if ttd.exists() else []
    return proc.returncode, time.monotonic() - started, lines


def test_a_mutant_session_past_its_files_budget_ends_as_a_timeout_and_says_where(tmp_path):
    rc, spent, lines = session(tmp_path, "kvproof.spec.x__mutmut_1", 60, {"test_slow.py": 0.05})
    assert rc == TIMEOUT_EXIT and spent < 30, (rc, spent)
    assert [line["stalled"] for line in lines] == ["test_slow.py::test_loops"] and "budget" in lines[0]["first_fail"]
    assert lines[0]["mutant"] == "kvproof.spec.x__mutmut_1" and 0.5 <= lines[0]["ttd_s"] < 30


def test_negative_control_no_timer_outside_a_mutant_session_or_for_a_file_without_a_cost(tmp_path):
    for mutant, costs in ((None, {"test_slow.py": 0.05}), ("stats", {"test_slow.py": 0.05}), ("kvproof.spec.x__mutmut_1", {})):
        rc, spent, lines = session(tmp_path, mutant, 1, costs)  # 1 s: past the 0.6 s budget a timer would give it
        assert rc == 0 and spent >= 1 and lines == [], (mutant, costs, rc, lines)

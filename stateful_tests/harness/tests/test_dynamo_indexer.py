"""harness/dynamo_indexer.py: Dynamo's standalone indexer (``python -m dynamo.indexer``), fed over ZMQ, read over HTTP.

The indexer listens on every interface and has no option to bind loopback only, so these tests run
kvproof in a private network namespace (``unshare --net --map-root-user``): nothing they start is
reachable from outside. Where the machine cannot make one, they skip and say why.

The verdicts of record on ai-dynamo-runtime 1.6.1: with 4 threads (the thread pool over the concurrent
tree) the gate fails naming the over-credit F10 with a stream that replays; with 1 thread (the
single-threaded ``KvIndexer``, the control) it passes the rows the binding passes, less those its
surface cannot carry.
"""

import json
import subprocess
import sys

import pytest

from kvproof.stateful_tests.harness import dynamo_indexer, process_guard

pytestmark = pytest.mark.dynamo


@pytest.fixture(scope="module")
def in_netns():
    why = dynamo_indexer.unavailable() or process_guard.netns_unavailable()
    if why:
        pytest.skip(why)

    def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        argv = [*process_guard.netns_prefix(), sys.executable, "-m", "kvproof", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)

    return run


def test_the_concurrent_indexer_fails_the_gate_naming_the_over_credit_with_a_replayable_stream(in_netns, tmp_path):
    report = tmp_path / "gate.json"
    done = in_netns("check", "--target", "dynamo-indexer", "--profile", "quick", "--only", "differential", "--json", str(report))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "over-credits" in done.stdout and "docs/dynamo-findings.md F10" in done.stdout
    assert "regenerate the stream: kvproof conform tree --target dynamo-indexer --oracle reference" in done.stdout
    assert "--rules dynamo-1.6-concurrent" in done.stdout
    [row] = json.loads(report.read_text())["rows"]
    assert row["result"] == "FAIL" and "contract=" in row["detail"]


def test_the_single_threaded_control_passes_the_rows_the_binding_runs_less_those_its_surface_cannot_carry(in_netns, tmp_path):
    from kvproof.gate import plan
    from kvproof.stateful_tests.harness.profiles import profile_named
    from kvproof.stateful_tests.harness.targets import load_target

    report = tmp_path / "gate.json"
    done = in_netns("check", "--target", "dynamo-indexer@1", "--profile", "quick", "--json", str(report))
    assert done.returncode == 0, done.stdout[-3000:]
    body = json.loads(report.read_text())
    ran = {row["name"] for row in body["rows"]}
    binding = load_target("dynamo")
    _, selection = plan("dynamo", binding.factory, profile_named("quick"))
    expected = {check.name for check in selection.checks}
    left_out = {row["check"].split(": ", 1)[1]: row["reason"] for row in body["left_out"]}
    assert expected - ran == {"bad input is rejected, harmless", "hostile input (fuzz)"}
    assert "no door for malformed input" in left_out["bad input is rejected, harmless"]
    assert all(row["result"] == "pass" for row in body["rows"])
    assert "production mode: lanes at once, reads racing" in ran  # the control also runs as production does
    production = next(row for row in body["rows"] if row["name"] == "production mode: lanes at once, reads racing")
    notes = " ".join(production["notes"])  # its removal race (explore/removal_race.py): no removed worker keeps a credit
    assert "removal race: rounds=" in notes and "survived_removal=0" in notes, notes


def test_production_mode_finds_the_over_credit_on_the_pool(in_netns):
    """The same 10 production streams (seed 1) that the single-threaded indexer passes in the gate's production row
    (the test above, its control) break the contract on the thread pool."""
    pool = in_netns("conform", "tree", "--concurrent", "--target", "dynamo-indexer", "--streams", "10")
    assert pool.returncode == 1 and "contract_breaks=0 " not in pool.stdout and "over-credits" in pool.stdout
    # the removal race (explore/removal_race.py) runs after the streams: no removed worker keeps a credit
    assert "removal race: rounds=10 " in pool.stdout and "survived_removal=0" in pool.stdout, pool.stdout[-2000:]

"""harness/isolation.py: a target that is not kvproof's own runs in a host process, and its failures are findings.

The three ways a target can fail outside its API (it allocates without bound, it aborts, it hangs) each fail
the row that met it with a ``FINDING`` (what happened, in which call, the calls before it shrunk, and a replay
command), the rest of the run goes on, and no process is left behind.
"""

import os
from pathlib import Path

import pytest

from kvproof.spec.errors import ParentBlockNotFound
from kvproof.spec.events import KvCacheEvent, Stored, encode_event
from kvproof.spec.primitives import Block
from kvproof.stateful_tests.harness import isolation, process_guard
from kvproof.stateful_tests.harness.isolation import TargetFailure, isolated

MUTANTS = "kvproof.stateful_tests.tree.mutants:"


@pytest.fixture
def small_limits(monkeypatch):
    monkeypatch.setenv("KVPROOF_TARGET_MEMORY_MB", "768")
    monkeypatch.setenv("KVPROOF_TARGET_CALL_S", "4")
    yield
    isolation.close_hosts()


def no_host_left(target: str) -> bool:
    """No live host process of ``target`` on the machine (``/proc``)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_text()
        except OSError:
            continue
        if "harness.host" in cmdline and target in cmdline and process_guard.is_alive(int(name)):
            return False
    return True


def store(tree, worker, blocks, parent=None):
    tree.apply_event(worker, encode_event(KvCacheEvent(0, Stored(parent, tuple(Block(*b) for b in blocks)), 0)))


def test_a_hosted_tree_answers_as_the_tree_itself_with_typed_errors_and_its_own_log(small_limits):
    tree = isolated("reference")()
    store(tree, 1, [(1, 101), (2, 102)])
    assert tree.find_matches([1, 2]).scores == {(1, 0): 2}
    with pytest.raises(ParentBlockNotFound):
        store(tree, 2, [(3, 103)], parent=999)
    with pytest.raises(TypeError):
        tree.find_matches("not a query")
    lines = list(tree.log)
    assert len(lines) == 4 and lines[1] == '{"find_matches": [1, 2]}'
    tree.close()


def _log_after_the_caller_reuses_its_query(tree) -> list[str]:
    """``tree``'s log once it was asked ``[1, 2]`` and the caller then appended 3 to that same list (the tree closed)."""
    query = [1, 2]
    tree.find_matches(query)
    query.append(3)
    lines = list(tree.log)
    tree.close()
    return lines


def test_the_log_says_what_was_asked_though_the_caller_reuses_its_list(small_limits):
    """The log is written when read (``CallLog``): a query list changed after the call still reads as it was asked."""
    assert _log_after_the_caller_reuses_its_query(isolated("reference")()) == ['{"find_matches": [1, 2]}']


def test_control_a_log_that_keeps_the_callers_list_reads_what_it_became(small_limits):
    """The negative control: a log that keeps the caller's list itself, uncopied, says the query was [1, 2, 3]."""
    from kvproof.stateful_tests.harness.isolation import CallLog

    class Uncopied(CallLog):
        def add(self, method, args):
            self._calls.append((method, args))

    tree = isolated("reference")()
    tree.log = Uncopied()
    assert _log_after_the_caller_reuses_its_query(tree) == ['{"find_matches": [1, 2, 3]}']


def test_a_batch_of_queries_is_one_round_trip_answered_as_the_calls_one_by_one(small_limits):
    """``find_matches_many`` through the host (the ``calls`` request): each answer, early exit or not, is the single
    call's; a failing query raises as the single call would, and nothing after it is asked."""
    from kvproof.spec.errors import InvalidArgumentType

    tree = isolated("reference")()
    store(tree, 1, [(1, 101), (2, 102), (3, 103)])
    store(tree, 2, [(1, 101)])
    queries = [[1, 2, 3], [1], [9], [1, 2]]
    for early in (False, True):
        assert [a.scores for a in tree.find_matches_many(queries, early)] == [tree.find_matches(q, early).scores for q in queries]
    requests = []
    real = tree.host.request
    tree.host.request = lambda request, op, log: requests.append(request[0]) or real(request, op, log)
    tree.find_matches_many(queries, True)
    assert requests == ["calls"]
    with pytest.raises(InvalidArgumentType):
        tree.find_matches_many([[1], [True], [2]])
    tree.close()


def test_steps_are_one_round_trip_each_call_answered_alone_an_error_ending_only_its_own(small_limits):
    """``IsolatedTree.steps`` (the ``steps`` request): an op and the reads after it in one round trip, as a
    differential run sends them; a rejected event is returned as its typed error, and the calls after it still run."""
    tree = isolated("reference")()
    requests = []
    real = tree.host.request
    tree.host.request = lambda request, op, log: requests.append(request[0]) or real(request, op, log)
    ok = encode_event(KvCacheEvent(0, Stored(None, (Block(1, 101), Block(2, 102))), 0))
    orphan = encode_event(KvCacheEvent(0, Stored(999, (Block(3, 103),)), 0))
    stored, refused, full, early = tree.steps(
        [
            ("apply_event", (1, ok)),
            ("apply_event", (2, orphan)),
            ("find_matches", ([1, 2], False)),
            ("find_matches", ([1, 2], True)),
        ]
    )
    assert requests == ["steps"]
    assert stored is None and isinstance(refused, ParentBlockNotFound)
    assert full.scores == early.scores == {(1, 0): 2}
    lines = list(tree.log)
    assert lines[-1] == '{"find_matches": [1, 2]}' and len(lines) == 4
    tree.close()


def test_a_differential_run_sends_each_op_with_its_reads_and_finds_the_same_differences(small_limits):
    """The conformance run over a hosted oracle: one ``steps`` round trip per op (not one per call), and the
    over-credit of a broken twin is still found (the negative control)."""
    from kvproof.reference import RadixTree
    from kvproof.stateful_tests.tree.conformance import conform

    kinds: list[str] = []
    real = isolation.Host.request
    isolation.Host.request = lambda self, request, op, log: kinds.append(request[0]) or real(self, request, op, log)
    try:
        clean = conform(RadixTree, isolated("reference"), 6, 1)
        clean_kinds = kinds[:]
        broken = conform(RadixTree, isolated(MUTANTS + "WalkSkipsEqualSizedIntersection"), 20, 1)
    finally:
        isolation.Host.request = real
    assert not clean.mismatches and clean.queries > 0
    assert broken.mismatches
    # per stream: the dump at its end (one call) and one steps request per op (opens and closes aside)
    assert clean_kinds.count("call") == clean.streams
    assert clean_kinds.count("steps") == clean.events and "calls" not in clean_kinds


@pytest.mark.parametrize(
    ("mutant", "kind", "call"),
    [
        ("AllocatesWithoutBound", "memory", "dump_tree_as_events"),
        ("Aborts", "crash", "find_matches"),
        ("Hangs", "hang", "apply_event"),
    ],
)
def test_each_way_of_failing_is_a_finding_and_leaves_no_process(small_limits, mutant, kind, call):
    tree = isolated(MUTANTS + mutant)()
    with pytest.raises(TargetFailure) as caught:
        store(tree, 1, [(1, 101)]) if kind != "hang" else None
        tree.find_matches([1]) if kind == "crash" else None
        tree.dump_tree_as_events() if kind == "memory" else store(tree, 1, [(1, 101)])
    failure = caught.value
    assert (failure.kind, failure.op) == (kind, call), str(failure)
    assert failure.log and failure.log[-1]  # the calls that led to it, the failing one last
    assert no_host_left(MUTANTS + mutant)
    fresh = isolated(MUTANTS + mutant)()  # a fresh host for the next tree: the run goes on
    store(fresh, 2, [(5, 105)]) if kind != "hang" else None
    fresh.close()


def test_the_gate_names_the_finding_shrinks_it_and_runs_the_other_rows(small_limits, tmp_path):
    """A user's tree (a module outside kvproof, as ``--target module:Factory`` names it) is hosted."""
    import subprocess
    import sys

    (tmp_path / "users_tree.py").write_text("from kvproof.stateful_tests.tree.mutants import AllocatesWithoutBound\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "kvproof",
            "check",
            "--target",
            "users_tree:AllocatesWithoutBound",
            "--profile",
            "quick",
            "--only",
            "api",
            "--rules",
            "dynamo-1.6",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env=env,
    )
    assert ran.returncode == 1, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "FINDING [memory]" in ran.stdout and "ran out of memory in dump_tree_as_events" in ran.stdout
    assert "shrunk to" in ran.stdout and "replay: kvproof replay log kvproof-failures/memory-" in ran.stdout
    assert "dump rebuilds the tree" in ran.stdout and "bad input is rejected, harmless" in ran.stdout  # both rows ran
    assert no_host_left("users_tree:AllocatesWithoutBound")

"""harness/protocol.py, wire_server.py, wire_target.py: a tree in any language, over the wire protocol.

The protocol is tested against itself: ``kvproof serve`` serves kvproof's own trees, and the rows run
through ``exec:`` and ``http://127.0.0.1:PORT`` targets must give the verdicts they give in process, for
the right trees and for their broken twins. Every message on the wire is validated against the committed
schema; an implementation that crashes, hangs or writes garbage is a typed finding, and leaves no process.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from kvproof.spec.events import KvCacheEvent, Stored, encode_event
from kvproof.spec.primitives import Block
from kvproof.spec.rules import DEFAULT_RULES
from kvproof.stateful_tests.harness import process_guard, protocol, wire_target
from kvproof.stateful_tests.harness.isolation import TargetFailure
from kvproof.stateful_tests.harness.targets import load_target
from kvproof.stateful_tests.harness.wire_server import Server

SERVE = "exec:kvproof serve --stdio --target "
MUTANTS = "kvproof.stateful_tests.tree.mutants:"
IMPL_MUTANTS = "kvproof.stateful_tests.tree.impl_mutants:"
FAKE = Path(__file__).with_name("wire_fake.py")


@pytest.fixture(autouse=True)
def fresh_links():
    yield
    wire_target.close_links()


@pytest.fixture
def wire_log():
    """Every message on the wire while the test runs, as ``(direction, JSON object)``."""
    seen: list[tuple[str, bytes]] = []
    tap = lambda direction, raw: seen.append((direction, raw))
    wire_target.TAPS.append(tap)
    yield seen
    wire_target.TAPS.remove(tap)


def store(tree, worker, blocks, parent=None):
    tree.apply_event(worker, encode_event(KvCacheEvent(0, Stored(parent, tuple(Block(*b) for b in blocks)), 0)))


def verdicts(target_name, only):
    """The rows ``--only only`` of the quick gate's tree family on ``target_name``: ``{row name: result}``."""
    from kvproof.gate import plan, run_gate
    from kvproof.stateful_tests.harness.profiles import profile_named

    target = load_target(target_name)
    assert target.factory is not None, target.reason
    ctx, selection = plan(target_name, target.factory, profile_named("quick"), 1, only, ("tree",))
    return {row.name: (row.result.value, row.left_out) for row in run_gate(ctx, selection).rows}


# ----------------------------------------------------------------------------- the schema


def test_the_committed_schema_is_the_one_the_messages_generate():
    """docs/protocol.schema.json is written by ``python -m kvproof.stateful_tests.harness.protocol``; no drift."""
    assert protocol.SCHEMA_PATH.read_text() == protocol.schema_text(), (
        "docs/protocol.schema.json is stale: run python -m kvproof.stateful_tests.harness.protocol"
    )


def validator():
    schema = json.loads(protocol.SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_schema_refuses_what_is_not_a_message():
    """The negative control of the validation below: the schema can fail a message."""
    check = validator()
    assert check.is_valid({"v": 1, "id": 1, "op": "find_matches", "tree": 1, "sequence": [1, 2]})
    assert not check.is_valid({"v": 1, "id": 1, "op": "find_matches", "tree": 1, "sequence": ["a"]})
    assert not check.is_valid({"v": 1, "id": 1, "op": "evict", "tree": 1})
    assert not check.is_valid({"v": 1, "op": "hello"})  # no id
    assert not check.is_valid({"v": 1, "id": 1, "kind": "error", "error": "Oops"})  # not a typed kind


def tagged_validators():
    """One validator per message tag (``op`` of a request, ``kind`` of an answer): the schema's own definition of
    that message, three times faster than its ``oneOf`` over all of them; a tag it has none for fails."""
    schema = json.loads(protocol.SCHEMA_PATH.read_text())
    defs = schema["$defs"]
    out = {}
    for side, field in (("request", "op"), ("answer", "kind")):
        for ref in defs[side]["anyOf"]:
            name = ref["$ref"].rsplit("/", 1)[1]
            tag = defs[name]["properties"][field]["enum"][0]
            out[(field, tag)] = jsonschema.Draft202012Validator({"$ref": ref["$ref"], "$defs": defs})
    return out


def problems_of(messages):
    """The messages that the schema refuses: validated by their tag's definition, and by the whole schema's."""
    by_tag, whole = tagged_validators(), validator()
    bad = []
    for message in messages:
        field = "op" if "op" in message else "kind"
        check = by_tag.get((field, message.get(field)))
        if check is None or not check.is_valid(message):
            bad.append(message)
    seen = {(("op", m["op"]) if "op" in m else ("kind", m["kind"])): m for m in messages if "op" in m or "kind" in m}
    bad += [m for m in seen.values() if not whole.is_valid(m)]  # one of each tag against the schema as a whole
    return bad


def test_every_message_of_rows_through_the_wire_is_valid_under_the_schema(wire_log):
    """The vectors and bad-input rows on the served reference, production mode on the served concurrent tree, each
    other call once: every request and every answer, as sent and received, validates; every kind of each occurs."""
    from kvproof.stateful_tests.explore.production import feed

    assert {v[0] for v in verdicts(SERVE + "reference", "bad input").values()} == {"pass"}
    verdicts(SERVE + "reference", "vectors")
    feed(load_target(SERVE + "impl-lanes").factory, "impl-lanes", DEFAULT_RULES, 1, 1)
    tree = load_target(SERVE + "reference").factory()
    store(tree, 1, [(1, 101)])
    tree.remove_worker_dp_rank(1, 0)
    tree.check()
    tree.close()
    messages = [json.loads(raw) for _, raw in wire_log]
    bad = problems_of(messages)
    assert not bad, bad[:3]
    controls = [
        {"v": 1, "id": 1, "op": "find_matches", "tree": 1, "sequence": ["a"]},
        {"v": 1, "id": 1, "kind": "teapot"},
        {"v": 1, "id": 1, "kind": "scores", "scores": [[1, 0]]},
    ]
    assert all(problems_of([m]) for m in controls)  # the control: the same check fails a message that is none
    assert {m["op"] for m in messages if "op" in m} >= {
        "hello",
        "open",
        "close",
        "apply_event",
        "find_matches",
        "remove_worker",
        "remove_worker_dp_rank",
        "clear_all_blocks",
        "dump",
        "check",
    }
    assert {m["kind"] for m in messages if "kind" in m} == {"hello", "opened", "done", "scores", "dump", "error"}
    assert len(messages) > 2000


# ----------------------------------------------------------------------------- versions and refusals


def test_an_unknown_protocol_version_is_refused_and_changes_nothing():
    server = Server("reference")
    opened = server.answer(b'{"v":1,"id":1,"op":"open"}')
    event = json.dumps(encode_event(KvCacheEvent(0, Stored(None, (Block(5, 50),)), 0)).decode())
    refused = server.answer(
        b'{"v":2,"id":2,"op":"apply_event","tree":%d,"worker_id":1,"event":%s}' % (opened.tree, event.encode())
    )
    assert isinstance(refused, protocol.ErrorAnswer) and (refused.error, refused.id) == ("UnsupportedVersion", 2)
    scores = server.answer(b'{"v":1,"id":3,"op":"find_matches","tree":%d,"sequence":[5]}' % opened.tree)
    assert isinstance(scores, protocol.ScoresAnswer) and scores.scores == []  # the refused event was never applied
    accepted = server.answer(
        b'{"v":1,"id":4,"op":"apply_event","tree":%d,"worker_id":1,"event":%s}' % (opened.tree, event.encode())
    )
    assert isinstance(accepted, protocol.DoneAnswer)  # the control: the same event at version 1 is applied
    assert server.answer(b'{"v":1,"id":5,"op":"find_matches","tree":%d,"sequence":[5]}' % opened.tree).scores == [(1, 0, 1)]


def test_the_server_answers_bad_requests_with_typed_kinds():
    server = Server("reference")
    assert server.answer(b"not json").error == "BadRequest"
    assert server.answer(b'{"v":1,"id":7,"op":"evict"}').error == "BadRequest"
    assert server.answer(b'{"v":1,"id":8,"op":"dump","tree":42}').error == "UnknownTree"
    tree = server.answer(b'{"v":1,"id":9,"op":"open"}').tree
    assert (
        server.answer(b'{"v":1,"id":10,"op":"apply_event","tree":%d,"worker_id":1,"event":"garbage"}' % tree).error
        == "MalformedEvent"
    )
    assert server.answer(b'{"v":1,"id":11,"op":"remove_worker","tree":%d,"worker_id":-1}' % tree).error == "InvalidArgument"


def test_a_target_answering_in_another_version_is_a_protocol_finding():
    tree = load_target(f"exec:{sys.executable} {FAKE} v2").factory()
    with pytest.raises(TargetFailure) as caught:
        tree.find_matches([1])
    assert caught.value.kind == "protocol" and "version 2" in str(caught.value)


# ----------------------------------------------------------------------------- the gate through the wire


def test_the_served_reference_passes_the_rows_the_reference_passes():
    for only in ("vectors", "api"):
        here, there = verdicts("reference", only), verdicts(SERVE + "reference", only)
        assert {k: v[0] for k, v in there.items()} == {k: v[0] for k, v in here.items()}
        assert set(v[0] for v in there.values()) == {"pass"}


def wire_controls():
    """The gate's controls that break a tree row by naming a broken tree as the target (``gate/controls.py``)."""
    from kvproof.gate.controls import CONTROLS, TREE_MUTANTS

    return [c for c in CONTROLS if c.target.startswith(TREE_MUTANTS) and c.breaks is None]


def test_every_tree_row_a_broken_target_controls_has_a_wire_control_below():
    assert {c.row for c in wire_controls()} == set(WIRE_CONTROLS) | {"differential vs Dynamo"}


WIRE_CONTROLS = (
    "observed Dynamo behaviours",
    "state machine vs contract",
    "dump rebuilds the tree",
    "bad input is rejected, harmless",
    "the Mooncake trace, routed",
    "production mode: lanes at once, reads racing",
)


WIRE_SAYS = {"state machine vs contract": "overcount: (1, 1) scores 5"}
"""Where the wire's failure reads otherwise than the in-process one, and why: the protocol carries no ``snapshot``,
so the contract machine catches SplitCarriesOneTooMany by the over-count it causes, not by its snapshot."""


@pytest.mark.parametrize("row", WIRE_CONTROLS)
def test_a_gate_control_served_over_the_wire_fails_its_row_as_in_process(row):
    """Each control's broken tree, served: its row FAILs for the control's reason, as it does in process
    (``kvproof/tests/test_gate_rows.py`` holds the in-process side); failures shrink for 2 s at most here."""
    import dataclasses

    from kvproof.gate import plan, run_gate
    from kvproof.stateful_tests.harness.profiles import profile_named

    control = next(c for c in wire_controls() if c.row == row)
    name = SERVE + control.target
    profile = profile_named(control.profile)
    profile = dataclasses.replace(profile, tree=dataclasses.replace(profile.tree, shrink_s=2))
    ctx, selection = plan(name, load_target(name).factory, profile, 1, row, ("tree",))
    [found] = run_gate(ctx, selection).rows
    assert found.result.value == "FAIL" and WIRE_SAYS.get(row, control.says) in found.detail, found.detail


def test_the_differential_control_served_differs_from_the_reference_as_in_process():
    """The differential row's control (SplitDropsCarriedCutoffs) on one stream instead of the row's 60 (60 streams
    over the wire take 17 s): the served twin differs from the reference exactly as the twin in process does."""
    from kvproof.gate.controls import CONTROLS
    from kvproof.stateful_tests.tree.conformance import run_stream
    from kvproof.stateful_tests.tree.streams import generate

    control = next(c for c in CONTROLS if c.row == "differential vs Dynamo")
    reference, stream = load_target("reference").factory, generate(1, 5)
    here = run_stream(load_target(control.target).factory, reference, stream, shrink_failures=False)
    there = run_stream(load_target(SERVE + control.target).factory, reference, stream, shrink_failures=False)
    assert here.mismatch is not None and here.mismatch.fails
    assert [(d.kind, d.op_index) for d in there.differences] == [(d.kind, d.op_index) for d in here.differences]


def run_kvproof(*args, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "kvproof", *args], capture_output=True, text=True, timeout=timeout, env=env or dict(os.environ)
    )


def test_kvproof_check_through_exec_passes_or_fails_and_leaves_no_process(tmp_path):
    """The command line, end to end: exit 0 on the served reference, 1 on a served twin with a replay command that
    quotes the target; the served process (its pid written before it became kvproof serve) is gone afterwards."""
    pidfile = tmp_path / "pid"
    served = f"exec:sh -c 'echo $$ > {pidfile}; exec {sys.executable} -m kvproof serve --stdio --target reference'"
    ran = run_kvproof("check", "--target", served, "--profile", "quick", "--only", "vectors")
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "1 passed, 0 failed" in ran.stdout
    assert not process_guard.is_alive(int(pidfile.read_text()))
    broken = SERVE + MUTANTS + "ExtendsInternalNode"
    ran = run_kvproof("check", "--target", broken, "--profile", "quick", "--only", "vectors")
    assert ran.returncode == 1 and "FAIL tree/vectors" in ran.stdout
    assert f"replay: kvproof check --target '{broken}' --profile quick --seed 1 --only" in ran.stdout.replace("\n", "")


# ----------------------------------------------------------------------------- requests in flight at once


def in_flight_peak(wire_log):
    """The most requests sent and not yet answered at one time, from the wire's own order."""
    open_ids, peak = set(), 0
    for direction, raw in wire_log:
        number = json.loads(raw)["id"]
        if direction == ">":
            open_ids.add(number)
            peak = max(peak, len(open_ids))
        else:
            open_ids.discard(number)
    return peak


def test_the_served_concurrent_tree_with_requests_in_flight_is_linearizable(wire_log):
    from kvproof.stateful_tests.explore.production import feed

    factory = load_target(SERVE + "impl-lanes").factory
    assert wire_target.link_for(SERVE + "impl-lanes").capabilities.concurrent
    report = feed(factory, SERVE + "impl-lanes", DEFAULT_RULES, 6, 1)
    assert report.ok, report.summary_line()
    assert report.events > 100 and report.reads > 100
    assert in_flight_peak(wire_log) > 2  # a round's events and the reader's queries were on the wire together


def test_a_served_broken_concurrent_tree_is_caught_over_the_wire():
    """ConcurrentExtendsInternalNode, one of the explorer's mutants (``impl_mutants.EXPLORER_MUTANTS``), served."""
    from kvproof.stateful_tests.explore.production import feed
    from kvproof.stateful_tests.tree.impl_mutants import EXPLORER_MUTANTS, ConcurrentExtendsInternalNode

    assert ConcurrentExtendsInternalNode in EXPLORER_MUTANTS
    name = SERVE + IMPL_MUTANTS + "ConcurrentExtendsInternalNode"
    report = feed(load_target(name).factory, name, DEFAULT_RULES, 6, 1)
    assert report.failures, report.summary_line()
    text = report.report(report.failures[0])
    assert "kvproof conform tree --concurrent --target 'exec:kvproof serve" in text.replace("\n", "")


def served_in_a_thread(name):
    """``serve_stdio`` of ``name`` on pipes, in a thread: ``(send a line, read an answer, stop)``."""
    import threading

    from kvproof.stateful_tests.harness.wire_server import serve_stdio

    server = Server(name)
    requests_r, requests_w = os.pipe()
    answers_r, answers_w = os.pipe()
    thread = threading.Thread(target=serve_stdio, args=(server, os.fdopen(requests_r, "rb"), answers_w), daemon=True)
    thread.start()
    answers = os.fdopen(answers_r, "rb")

    def send(line):
        os.write(requests_w, line + b"\n")

    def stop():
        os.close(requests_w)
        thread.join(10)
        os.close(answers_w)

    return send, lambda: protocol.decode_answer(answers.readline()), stop


@pytest.mark.parametrize(
    ("factory", "concurrent"), [("lanes_reading_during_writes", True), ("reference_reading_during_writes", False)]
)
def test_a_concurrent_tree_is_served_concurrently_and_a_sequential_one_is_not(factory, concurrent):
    """An event that waits for a read to run meanwhile: a tree with lanes is served at once (the read runs, the
    event is accepted); the reference, served one request at a time, cannot (its event fails after 0.5 s)."""
    name = f"kvproof.stateful_tests.harness.tests.wire_fake:{factory}"
    send, answer, stop = served_in_a_thread(name)
    try:
        send(b'{"v":1,"id":1,"op":"hello"}')
        assert answer().capabilities.concurrent is concurrent
        send(b'{"v":1,"id":2,"op":"open"}')
        tree = answer().tree
        event = json.dumps(encode_event(KvCacheEvent(0, Stored(None, (Block(5, 50),)), 0)).decode())
        send(b'{"v":1,"id":3,"op":"apply_event","tree":%d,"worker_id":1,"event":%s}' % (tree, event.encode()))
        send(b'{"v":1,"id":4,"op":"find_matches","tree":%d,"sequence":[5]}' % tree)
        got = {a.id: a for a in (answer(), answer())}
    finally:
        stop()
    assert isinstance(got[4], protocol.ScoresAnswer)
    if concurrent:
        assert isinstance(got[3], protocol.DoneAnswer)
    else:
        assert isinstance(got[3], protocol.ErrorAnswer) and "no read ran" in got[3].message


# ----------------------------------------------------------------------------- containment


@pytest.fixture
def small_limits(monkeypatch):
    monkeypatch.setenv("KVPROOF_TARGET_CALL_S", "2")
    monkeypatch.setenv("KVPROOF_TARGET_MEMORY_MB", "768")


FAILING_CALLS = {
    "store": lambda tree: store(tree, 1, [(1, 101)]),
    "query": lambda tree: tree.find_matches([1]),
    "dump": lambda tree: tree.dump_tree_as_events(),
}


@pytest.mark.parametrize(
    ("name", "call", "kind", "said"),
    [
        (SERVE + MUTANTS + "Hangs", "store", "hang", "no answer within 2 s"),
        (SERVE + MUTANTS + "Aborts", "query", "crash", "SIGABRT"),
        (SERVE + MUTANTS + "AllocatesWithoutBound", "dump", "memory", "the limit is 768 MiB"),
        (f"exec:{sys.executable} {FAKE} garbage", "query", "protocol", "this is not a protocol message"),
        (f"exec:{sys.executable} {FAKE} stranger", "query", "protocol", "not in flight"),
        (f"exec:{sys.executable} {FAKE} exit", "store", "crash", "exiting as asked"),
    ],
)
def test_a_crash_hang_or_garbage_is_a_typed_finding_with_the_messages_and_no_process_left(small_limits, name, call, kind, said):
    tree = load_target(name).factory()
    link = wire_target.link_for(name)
    pid = link.host.proc.pid
    started = time.monotonic()
    with pytest.raises(TargetFailure) as caught:
        FAILING_CALLS[call](tree)
    failure = caught.value
    assert failure.kind == kind and said in str(failure), str(failure)
    assert "the last messages on the wire" in str(failure) and '> {"op":' in str(failure)
    assert failure.log  # the tree's calls, for kvproof replay
    assert time.monotonic() - started < 10
    assert not process_guard.alive_in_group(pid)
    fresh = load_target(name).factory()  # the next tree starts a fresh process: the run goes on
    assert wire_target.link_for(name).host.proc.pid != pid
    sent = len(wire_target.link_for(name).transcript)
    with pytest.raises(TargetFailure, match="died earlier in this run"):
        tree.find_matches([1])  # the dead process's tree: refused here, never sent to the fresh process
    tree.close()
    assert len(wire_target.link_for(name).transcript) == sent
    fresh.close()


def test_a_program_that_does_not_exist_is_an_unavailable_target_with_the_reason():
    target = load_target("exec:no-such-program-kvproof --stdio")
    assert target.factory is None and "no such program" in target.reason


# ----------------------------------------------------------------------------- loopback HTTP


def test_an_http_target_on_loopback_answers_the_rows_and_only_loopback_is_spoken_to():
    proc = process_guard.spawn_guarded(
        [sys.executable, "-m", "kvproof", "serve", "--http", "0", "--target", "reference"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        port = int(line.rsplit(":", 1)[1].split()[0])
        assert process_guard.listening_addresses(port) == ["127.0.0.1"]
        assert {v[0] for v in verdicts(f"http://127.0.0.1:{port}", "vectors").values()} == {"pass"}
        assert {v[0] for v in verdicts(f"http://127.0.0.1:{port}", "dump rebuilds").values()} == {"pass"}
        ran = run_kvproof("check", "--target", f"http://127.0.0.1:{port}", "--profile", "quick", "--only", "vectors")
        assert ran.returncode == 0, ran.stdout[-2000:]  # the command reaches it: no private network namespace for it
    finally:
        process_guard.GUARD.kill(proc, grace=2)
    for name in ("http://0.0.0.0:80", "http://example.com:80", "http://127.0.0.1:1/path"):
        target = load_target(name)
        assert target.factory is None and "loopback only" in target.reason


def test_an_http_target_that_is_not_listening_is_unavailable_with_the_reason():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        target = load_target(f"http://127.0.0.1:{port}")
    assert target.factory is None and "cannot be reached" in target.reason


def test_kvproof_serve_refuses_a_wrong_invocation_with_a_clear_error():
    none = run_kvproof("serve", "--target", "reference")
    assert none.returncode == 2 and "choose one of --stdio and --http PORT" in none.stderr
    unknown = run_kvproof("serve", "--stdio", "--target", "no-such-tree")
    assert unknown.returncode == 2 and "cannot serve no-such-tree" in unknown.stderr and "Traceback" not in unknown.stderr


def test_the_indexer_labels_of_send_many_are_production_modes():
    from kvproof.stateful_tests.explore.production import LABEL_OUTCOMES

    assert {outcome: label for label, outcome in LABEL_OUTCOMES.items() if label != "ok"} == wire_target.INDEXER_LABELS

"""fuzz/campaign.py: the checks after each case, each with a tree that breaks it (a negative control), the clean
fleet passing a seeded run, shrinking that keeps the kind of the problem, and saved cases that replay."""

import json
from collections import Counter
from pathlib import Path

import pytest

from kvproof.reference import RadixTree
from kvproof.spec import events
from kvproof.spec.errors import MalformedEvent
from kvproof.stateful_tests.fuzz import campaign
from kvproof.stateful_tests.fuzz.campaign import FuzzCase, FuzzFleet, fuzz, load_case, replay, run_case, save_case

CLEARED_5 = b'{"event_id":1,"data":{"cleared":5}}'
STORE_7 = b'{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":700,"tokens_hash":7}]}}}'


class TakesCleared5(RadixTree):
    """Decodes ``{"cleared": 5}`` as a clear (the binding refuses it): a tree that disagrees with the reference."""

    def apply_event(self, worker_id, event):
        return super().apply_event(worker_id, b'{"event_id":1,"data":"cleared"}' if event == CLEARED_5 else event)


class UntypedOnObjects(RadixTree):
    """Reads a KvCacheEvent object's blocks without checking them: plain Python errors escape."""

    def apply_event(self, worker_id, event):
        if isinstance(event, events.KvCacheEvent) and isinstance(event.data, events.Stored):
            [b.local for b in event.data.blocks]  # AttributeError for a block that is not a Block
        return super().apply_event(worker_id, event)


class DriftsOnRejection(RadixTree):
    """Stores the block, then refuses the event: a rejection that changed the state."""

    def apply_event(self, worker_id, event):
        super().apply_event(worker_id, event)
        if event == STORE_7:
            raise MalformedEvent("refused after the fact")


class FailsItsCheck(RadixTree):
    """check() fails once worker 9 was removed."""

    def remove_worker(self, worker_id):
        super().remove_worker(worker_id)
        self.broken = worker_id == 9

    def check(self):
        super().check()
        assert not getattr(self, "broken", False), "broken on purpose"


def kinds(extra, case):
    fleet = FuzzFleet(("reference",), extra)
    try:
        _, problems = run_case(fleet, case)
    finally:
        fleet.close()
    return {(p.kind, p.target) for p in problems}


def test_a_tree_deciding_otherwise_than_the_reference_is_a_disagreement():
    assert ("disagree", "x") in kinds({"x": TakesCleared5}, FuzzCase("apply_event", (1, CLEARED_5)))
    assert not kinds({"x": TakesCleared5}, FuzzCase("apply_event", (1, STORE_7)))


def test_an_untyped_error_from_a_kvproof_tree_is_a_problem():
    bad = events.KvCacheEvent(0, events.Stored(None, ((7, 700),)))
    assert ("untyped", "x") in kinds({"x": UntypedOnObjects}, FuzzCase("apply_event", (1, bad)))


def test_a_rejection_that_changed_the_state_is_drift():
    assert ("drift", "x") in kinds({"x": DriftsOnRejection}, FuzzCase("apply_event", (1, STORE_7)))


def test_a_failing_check_after_a_case_is_a_problem():
    assert ("check", "x") in kinds({"x": FailsItsCheck}, FuzzCase("remove_worker", (9,)))


@pytest.mark.dynamo
def test_dynamo_accepting_what_the_reference_refuses_is_a_problem_unless_recorded(monkeypatch):
    fleet = FuzzFleet(("reference", "dynamo"))
    try:
        _, problems = run_case(fleet, FuzzCase("apply_event", (True, STORE_7)))  # H9: recorded
        assert not problems
        monkeypatch.setattr(campaign, "KNOWN", {})
        _, problems = run_case(fleet, FuzzCase("apply_event", (True, STORE_7)))
        assert [p.kind for p in problems] == ["dynamo"] and "Dynamo took it" in problems[0].detail
    finally:
        fleet.close()


def test_the_fleet_passes_a_seeded_run_with_no_untyped_error():
    report = fuzz(150, 11, save_dir=None)
    assert report.ok, report.problems[0].line()
    assert report.inputs == 150 and report.untyped() == 0
    assert all(sum(c.values()) == 150 for c in report.outcomes.values())
    assert report.outcomes["reference"]["ok"] and report.outcomes["reference"]["MalformedEvent"]  # both ways are taken


class PlainJsonFirst(RadixTree):
    """Parses a bytes payload with plain ``json.loads`` first: its ValueError and RecursionError escape untyped."""

    def apply_event(self, worker_id, event):
        if isinstance(event, bytes):
            json.loads(event)
        return super().apply_event(worker_id, event)


def test_a_problem_is_shrunk_keeping_its_kind_and_saved_as_a_file_that_replays(tmp_path):
    report = fuzz(400, 3, ("reference",), tmp_path, extra={"x": PlainJsonFirst})
    assert report.problems and report.problems[0].kind == "untyped" and report.file
    body = json.loads(Path(report.file).read_text())
    assert body["format"] == campaign.FORMAT and body["problem"].startswith("untyped on x")
    case, seen, problems = replay(report.file, ("reference",), {"x": PlainJsonFirst})
    assert case == report.case and problems[0].kind == "untyped"  # (the reference refused it: also a disagreement)
    assert seen["x"].outcome.startswith("untyped") and seen["reference"].outcome == "MalformedEvent"


def test_a_saved_case_round_trips_and_a_foreign_file_is_refused(tmp_path):
    case = FuzzCase("find_matches", ([1, 2], True))
    path = save_case(case, campaign.Problem("drift", "x", "d"), 1, tmp_path)
    assert load_case(path) == case
    (tmp_path / "other.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(campaign.FuzzFileError, match="not a kvproof-fuzz/1 file"):
        load_case(tmp_path / "other.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(campaign.FuzzFileError, match="cannot read"):
        load_case(tmp_path / "broken.json")


def test_only_a_store_that_names_a_hash_at_a_second_position_is_out_of_contract():
    def store(parent, *blocks):
        body = {
            "event_id": 1,
            "data": {
                "stored": {"parent_hash": parent, "blocks": [{"block_hash": ext, "tokens_hash": local} for local, ext in blocks]}
            },
        }
        return FuzzCase("apply_event", (1, json.dumps(body).encode()))

    assert campaign.contract_breach(store(200, (3, 300), (7, 700))) is None  # the chain [1 2 3] is 300, then a new block
    assert campaign.contract_breach(store(None, (1, 100))) is None
    assert campaign.contract_breach(store(200, (3, 100))) == "block 100 at chain [1, 2, 3]"  # 100 is the chain [1]
    assert campaign.contract_breach(store(200, (3, 700))) == "block 700 at chain [1, 2, 3]"  # [1 2 3] is named 300
    assert campaign.contract_breach(FuzzCase("find_matches", ([1], False))) is None


def test_a_check_failure_is_excused_only_out_of_contract():
    assert ("check", "x") in kinds({"x": FailsItsCheck}, FuzzCase("remove_worker", (9,)))  # in contract: a problem
    collision = b'{"event_id":1,"data":{"stored":{"parent_hash":200,"blocks":[{"block_hash":100,"tokens_hash":3}]}}}'
    fleet = FuzzFleet(("reference",))
    try:
        known: Counter[str] = Counter()
        _, problems = campaign.run_case(fleet, FuzzCase("apply_event", (1, collision)), known)
    finally:
        fleet.close()
    assert not [p for p in problems if p.kind == "check"] and known[campaign.OUT_OF_CONTRACT] == 1


# ------------------------------------------------------------------ shards (harness.shards)


def cases_run(monkeypatch, shard, inputs=40):
    """The cases a (sharded) run executes, by their description, and its report."""
    from kvproof.stateful_tests.fuzz import campaign

    seen = []
    real = campaign.run_case

    def recording(fleet, case, known=None):
        seen.append(case.describe())
        return real(fleet, case, known)

    with monkeypatch.context() as patch:
        patch.setattr(campaign, "run_case", recording)
        report = campaign.fuzz(inputs, 5, ("reference", "impl"), None, shard=shard, block=5)
    return seen, report


def test_fuzz_shards_together_run_exactly_the_cases_of_the_whole_run(monkeypatch):
    from kvproof.stateful_tests.fuzz.campaign import FuzzReport
    from kvproof.stateful_tests.harness.shards import WHOLE, Shard

    whole, whole_report = cases_run(monkeypatch, WHOLE)
    halves = [cases_run(monkeypatch, Shard(k, 2)) for k in (1, 2)]
    assert sorted(halves[0][0] + halves[1][0]) == sorted(whole) and len(whole) == 40
    owned = [[i for b in range(k - 1, 8, 2) for i in range(b * 5, b * 5 + 5)] for k in (1, 2)]  # 40 cases in blocks of 5
    assert halves[0][1].ordinals == owned[0] and halves[1][1].ordinals == owned[1]
    merged = FuzzReport.merge([h[1] for h in halves])
    assert merged.inputs == whole_report.inputs and merged.outcomes == whole_report.outcomes
    assert merged.known == whole_report.known and merged.ordinals == whole_report.ordinals


def test_fuzz_over_two_processes_counts_what_one_process_counts():
    from kvproof.stateful_tests.fuzz.campaign import FuzzTask, fuzz_sharded

    task = FuzzTask(30, 5, ("reference", "impl"), None, block=7)  # 5 blocks, the last of 2 cases
    one, two = fuzz_sharded(task), fuzz_sharded(task, processes=2)
    assert (two.inputs, two.outcomes, two.known, two.ordinals) == (one.inputs, one.outcomes, one.known, one.ordinals)


def test_fuzz_catches_a_malformed_block_entry_raising_an_untyped_error(monkeypatch):
    """Negative control (issue 14's named change): the decoder reading a block's fields by plain indexing, so a block
    without ``tokens_hash`` raises ``KeyError`` instead of ``MalformedEvent``; the ci profile's fuzz budget finds it."""
    from kvproof.spec import events
    from kvproof.stateful_tests.fuzz.campaign import fuzz
    from kvproof.stateful_tests.harness.profiles import profile_named

    monkeypatch.setattr(events, "_field", lambda obj, key, path, what="KvCacheEvent": obj[key])
    report = fuzz(profile_named("ci").tree.fuzz_inputs, 1, ("reference", "impl"), None)
    assert report.problems and "KeyError" in report.problems[0].line()


def test_a_fuzz_shard_draws_only_its_own_blocks(monkeypatch):
    """Each block is drawn from its own seed, so a shard never draws (and pays for) another shard's cases."""
    from kvproof.stateful_tests.fuzz import campaign
    from kvproof.stateful_tests.harness.shards import Shard

    drawn = []
    monkeypatch.setattr(campaign, "_fuzz_block", lambda fleet, report, size, seed, first: drawn.append((first, size, seed)))
    campaign.fuzz(23, 9, ("reference",), None, shard=Shard(2, 2), block=5)
    assert [(first, size) for first, size, _ in drawn] == [(5, 5), (15, 5)]
    assert [seed for *_, seed in drawn] == [campaign.block_seed(9, 1), campaign.block_seed(9, 3)]
    drawn.clear()
    campaign.fuzz(23, 9, ("reference",), None, shard=Shard(1, 2), block=5)
    assert [(first, size) for first, size, _ in drawn] == [(0, 5), (10, 5), (20, 3)]
    assert len({campaign.block_seed(9, b) for b in range(100)}) == 100


def test_a_tree_in_a_host_process_is_fingerprinted_in_one_round_trip_as_its_reads_one_by_one(monkeypatch):
    """The fingerprint's reads of a hosted tree go as one ``steps`` request and give what the reads one by one give;
    an error among them raises as the call would."""
    from kvproof.stateful_tests.harness import isolation

    hosted, local = isolation.isolated("reference")(), RadixTree()
    try:
        for worker, event in campaign.BASE:
            hosted.apply_event(worker, events.encode_event(event))
            local.apply_event(worker, events.encode_event(event))
        requests, request = [], isolation.Host.request
        monkeypatch.setattr(isolation.Host, "request", lambda host, *args: requests.append(args[0][0]) or request(host, *args))
        assert campaign._fingerprint(hosted) == campaign._fingerprint(local) and requests == ["steps"]
        monkeypatch.setattr(campaign, "FINGERPRINT_READS", (("find_matches", ([1, 2], "yes")),))
        with pytest.raises(Exception, match="early_exit") as raised:
            campaign._fingerprint(hosted)
        with pytest.raises(type(raised.value), match="early_exit"):
            local.find_matches([1, 2], "yes")
    finally:
        hosted.close()

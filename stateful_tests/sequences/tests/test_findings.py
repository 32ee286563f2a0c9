"""Where the real slot tracker (1.6.1) and the research notes or the spec part ways: each finding of
docs/sequences-findings.md pinned as an observation of the package, so a change upstream shows up here."""

import http.client

import pytest

from kvproof.stateful_tests.sequences.oracle import SlotTrackerProcess

pytestmark = pytest.mark.dynamo
U64_MAX = 2**64 - 1


@pytest.fixture(scope="module")
def tracker(slot_tracker_oracle):
    with SlotTrackerProcess() as process:
        yield process


def _model(tracker, name, dp_size=1):
    assert (
        tracker.request(
            "POST", "/register", {"worker_id": 1, "model_name": name, "block_size": 16, "dp_start": 0, "dp_size": dp_size}
        )[0]
        == 201
    )


def _add(tracker, name, rid, hashes, tokens=0, worker=(1, 0)):
    return tracker.request(
        "POST",
        "/add",
        {
            "model_name": name,
            "request_id": rid,
            "worker_id": worker[0],
            "dp_rank": worker[1],
            "sequence_hashes": hashes,
            "new_isl_tokens": tokens,
        },
    )[0]


def _loads(tracker, name):
    return [
        (r["active_prefill_tokens"], r["active_decode_blocks"]) for r in tracker.request("GET", f"/loads?model_name={name}")[1]
    ]


def test_s1_token_sum_past_u64_wraps_and_panics(tracker):
    _model(tracker, "s1")
    assert _add(tracker, "s1", "a", [1], 3) == 201
    with pytest.raises((http.client.HTTPException, OSError)):  # the handler panics: no response at all
        _add(tracker, "s1", "b", [1], U64_MAX)
    assert _add(tracker, "s1", "c", [1], 5) == 201
    assert _loads(tracker, "s1") == [(7, 1)]  # 3 + (2^64 - 1) + 5 wrapped to 7: b was admitted


def test_s2_potential_tokens_wrap_at_u64(tracker):
    _model(tracker, "s2")
    assert _add(tracker, "s2", "a", [1], 7) == 201
    rows = tracker.request("POST", "/potential_loads", {"model_name": "s2", "sequence_hashes": [], "new_isl_tokens": U64_MAX})[1]
    assert rows[0]["potential_prefill_tokens"] == 6  # 7 + (2^64 - 1) mod 2^64


def test_s3_reused_hash_values_are_not_counted_by_path(tracker):
    _model(tracker, "s3")
    assert _add(tracker, "s3", "a", [1, 1, 1]) == 201 and _add(tracker, "s3", "b", [1, 2, 1]) == 201
    assert _loads(tracker, "s3") == [(0, 3)]  # path lineages: 5; distinct hashes: 2
    _model(tracker, "s3b")
    assert _add(tracker, "s3b", "a", [5]) == 201 and _add(tracker, "s3b", "b", [1, 2, 3, 5]) == 201
    assert _loads(tracker, "s3b") == [(0, 5)]  # here it is counted by path (blocks_exp)


def test_s4_unknown_worker_wins_over_duplicate_id(tracker):
    _model(tracker, "s4")
    assert _add(tracker, "s4", "a", [1], 3) == 201
    assert _add(tracker, "s4", "a", [1], 3, worker=(9, 0)) == 404
    assert _add(tracker, "s4", "a", [1], 3, worker=(1, 0)) == 409

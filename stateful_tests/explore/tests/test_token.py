"""Schedule tokens and files: one shell-safe word per schedule, typed errors for malformed ones, atomic files."""

import json

import pytest

from kvproof.stateful_tests.explore.token import (
    Schedule,
    TokenError,
    decode_decisions,
    encode_decisions,
    load_schedule,
    parse_token,
    save_schedule,
)


@pytest.mark.parametrize("decisions", [[], [0], [0, 0, 0, 1, 1, 2], [3, 1, 1, 0] * 5, list(range(26))])
def test_decisions_round_trip(decisions):
    assert decode_decisions(encode_decisions(decisions)) == decisions


def test_runs_are_compressed():
    assert encode_decisions([0, 0, 0, 1, 1, 2]) == "a3b2c"


def test_a_token_round_trips():
    s = Schedule("fanout-vs-split", "NoVersionCheck", "pct.d3.s1#6", (1, 1, 1, 1, 1, 2))
    assert s.token() == "fanout-vs-split/NoVersionCheck/pct.d3.s1#6/b5c"
    assert parse_token(s.token()) == s


@pytest.mark.parametrize(
    ("text", "says"), [("a/b/c", "4 parts"), ("a/b/c/x9%", "unexpected '%'"), ("a/b/c/9a", "unexpected '9'")]
)
def test_a_malformed_token_is_a_typed_error(text, says):
    with pytest.raises(TokenError, match=says):
        parse_token(text)


def test_a_schedule_file_is_written_atomically_and_read_back(tmp_path):
    s = Schedule("drop-vs-split", "impl", "random.s2#3", (0, 1, 0), kind="not linearizable", detail="x")
    path = save_schedule(s, tmp_path, "one")
    assert [p.name for p in tmp_path.iterdir()] == ["one.json"]  # no temporary file left behind
    assert load_schedule(path) == s
    path.write_text(json.dumps({"format": "other"}))
    with pytest.raises(TokenError, match="not a schedule file"):
        load_schedule(path)

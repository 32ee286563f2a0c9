"""fuzz/mutate.py: every mutation is total (any position, any payload, the empty one included) and does what it says."""

from hypothesis import given
from hypothesis import strategies as st

from kvproof.stateful_tests.fuzz.mutate import apply_mutations, mutations

EVENT = b'{"event_id":1,"data":"cleared"}'


@given(st.binary(max_size=40), mutations)
def test_mutations_are_total_and_deterministic(payload, ops):
    assert apply_mutations(payload, ops) == apply_mutations(payload, ops)


def test_each_kind_changes_the_payload_as_named():
    assert apply_mutations(EVENT, [("insert", 0.0, b"NaN")]).startswith(b"NaN{")
    assert apply_mutations(EVENT, [("truncate", 0.5, b"")]) == EVENT[: len(EVENT) // 2]
    assert len(apply_mutations(EVENT, [("cut", 0.0, b"")])) == len(EVENT) - 1
    assert len(apply_mutations(EVENT, [("dup", 0.0, b"")])) == len(EVENT) + 1
    flipped = apply_mutations(EVENT, [("flip", 0.0, b"")])
    assert len(flipped) == len(EVENT) and flipped != EVENT
    assert apply_mutations(b"", [("flip", 0.7, b""), ("cut", 1.0, b""), ("insert", 1.0, b"x")]) == b"x"

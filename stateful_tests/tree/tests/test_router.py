"""The router simulation (stateful_tests/tree/router.py): what a trace becomes, in order, for the router's layers."""

from __future__ import annotations

from collections import Counter
from itertools import islice

import pytest

from kvproof.spec.events import Removed, Stored
from kvproof.spec.primitives import Block
from kvproof.stateful_tests.tree.router import (
    Ask,
    Route,
    RouterPlan,
    RouterPlanError,
    RouterSim,
    TrackerCall,
    replay,
)
from kvproof.stateful_tests.tree.streams import EventOp
from kvproof.stateful_tests.tree.traffic import SHIPPED_TRACE, Request, mooncake_requests


def _slice(n: int = 200) -> list[Request]:
    return list(islice(mooncake_requests(SHIPPED_TRACE), n))


def test_the_replay_is_a_pure_function_of_the_plan_and_the_requests() -> None:
    plan = RouterPlan(workers=3, capacity=80)
    assert replay(_slice(), plan)[0] == replay(_slice(), plan)[0] != replay(_slice(), RouterPlan(workers=3, capacity=81))[0]


def test_every_request_is_asked_before_it_is_routed_and_the_truth_is_what_the_engines_hold() -> None:
    sim = RouterSim(RouterPlan(workers=2, capacity=60, dp_ranks=2))
    last_ask = None
    for step in sim.steps(_slice(150)):
        if isinstance(step, Ask):
            held = {(r.worker_id, r.dp_rank): set(e) for r, e in sim.fleet.engines.items()}
            for rank, n in step.truth.items():
                assert set(step.query[:n]) <= held[rank] and (n == len(step.query) or step.query[n] not in held[rank])
            last_ask = step
        elif isinstance(step, Route):
            assert (
                last_ask is not None
                and last_ask.index == step.index
                and step.cached == last_ask.truth.get((step.rank.worker_id, step.rank.dp_rank), 0)
            )
    assert all(len(e) <= 60 for e in sim.fleet.engines.values()) and len(sim.ranks) == 4


def test_evictions_are_removal_batches_and_every_store_hangs_under_a_held_block() -> None:
    steps, stats = replay(_slice(), RouterPlan(workers=2, capacity=50))
    events = [s.event.data for s in steps if isinstance(s, EventOp)]
    assert any(isinstance(e, Removed) and len(e.block_hashes) > 1 for e in events)
    assert stats.events["stored"] == sum(isinstance(e, Stored) for e in events) and stats.event_count == len(events)


def test_tracker_calls_are_on_the_time_axis_and_each_request_is_added_marked_and_freed_once() -> None:
    sim = RouterSim(RouterPlan(workers=3, capacity=80))
    steps = [*sim.steps(_slice()), *sim.drain()]
    stats = sim.stats
    calls = [s for s in steps if isinstance(s, TrackerCall)]
    assert [c.at for c in calls] == sorted(c.at for c in calls)
    kinds = Counter(c.kind for c in calls)
    assert kinds == {"register": 3, "add": 200, "mark": 200, "free": 200}
    order: dict[str, list[str]] = {}
    for c in calls:
        order.setdefault(c.rid, []).append(c.kind)
    assert all(v == ["add", "mark", "free"] for rid, v in order.items() if rid)
    add = next(c for c in calls if c.kind == "add").request
    assert add is not None and add.prefill_load_hint is not None and add.prefill_load_hint.expected_prefill_duration is not None
    assert stats.requests == 200 and sum(stats.routed.values()) == 200 and not +sim.active  # every request freed
    assert max(stats.peak.values()) == max(n for _, _, n in stats.samples) > 1


def test_round_robin_takes_the_ranks_in_turn_and_truth_finds_the_held_prefix() -> None:
    steps, _ = replay(_slice(12), RouterPlan(workers=2, dp_ranks=2, policy="round-robin"))
    assert [(r.rank.worker_id, r.rank.dp_rank) for r in steps if isinstance(r, Route)][:5] == [
        (1, 0),
        (1, 1),
        (2, 0),
        (2, 1),
        (1, 0),
    ]
    same = [
        Request(0.0, (Block(1, 1), Block(2, 2)), (), 1024, 10),
        Request(1.0, (Block(1, 1), Block(2, 2), Block(3, 3)), (), 1536, 10),
    ]
    routes = [s for s in replay(same, RouterPlan(workers=4, decode_tokens_per_s=1.0))[0] if isinstance(s, Route)]
    assert routes[1].rank == routes[0].rank and routes[1].cached == 2


def test_the_tree_policy_routes_by_the_scorer() -> None:
    """A scorer that credits rank (3, 0) with everything sends every request there."""
    fast = RouterPlan(workers=3, policy="tree", prefill_tokens_per_s=1e15, decode_tokens_per_s=1e15)  # no load builds up
    _, stats = replay(_slice(20), fast, scorer=lambda q: {(3, 0): len(q)})
    assert set(stats.routed) == {(3, 0)}


@pytest.mark.parametrize(
    "bad", [dict(workers=0), dict(capacity=True), dict(policy="random"), dict(prefill_tokens_per_s=0.0), dict(decode_batch=0)]
)
def test_a_bad_plan_is_a_typed_error(bad) -> None:
    with pytest.raises(RouterPlanError):
        RouterSim(RouterPlan(**bad))
    with pytest.raises(RouterPlanError, match="scorer"):
        RouterSim(RouterPlan(policy="tree"))

"""The churn soak (stateful_tests/tree/soak.py): its size and trend laws, each with the leaking twin it catches."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from kvproof.impl.radix_tree import ConcurrentRadixTree
from kvproof.reference import RadixTree
from kvproof.stateful_tests.harness import targets
from kvproof.stateful_tests.tree import soak
from kvproof.stateful_tests.tree.traffic import Rates

SHORT = soak.SoakPlan(
    epochs=7,
    epoch_s=30.0,
    capacity=50,
    warmup=1,
    window=2,
    traced=False,
    rates=Rates(cleared=0.01, clear_all=0.01, remove_worker=0.02, remove_rank=0.01),
)
"""A few seconds: 7 epochs of 30 simulated seconds (about 120 requests each), engines of 50 blocks, five times the
churn; without tracemalloc, except where the law needs it (the reference's own run and the hidden leak)."""
TRACED = replace(SHORT, traced=True)


def _factory(name: str) -> Callable[[], Any]:
    factory = targets.load_target(name).factory
    assert factory is not None, name
    return factory


@pytest.fixture(scope="module")
def reference_report() -> soak.SoakReport:
    return soak.run_soak(RadixTree, "reference", TRACED)


def test_fleet_content_is_steady_after_warmup(reference_report: soak.SoakReport) -> None:
    """The trend law needs steady live content: after the warm-up the live pairs stay within 2x of each other."""
    pairs = [s.live.pairs for s in reference_report.samples[SHORT.warmup :]]
    assert min(pairs) * 2 >= max(pairs) > 0


@pytest.mark.parametrize("name", ["reference", "impl", "impl-lanes", "impl-pool"])
def test_no_size_law_breaks_and_nothing_trends_up(name: str, reference_report: soak.SoakReport) -> None:
    """Every size law holds and no figure trends up, on every kvproof tree."""
    report = reference_report if name == "reference" else soak.run_soak(_factory(name), name, SHORT)
    assert report.failed_laws() == set(), (report.sizes, report.trends)
    assert report.outcomes.get("ok", 0) > 1000


@pytest.mark.parametrize("name", sorted(soak.LEAKY))
def test_each_leaking_twin_is_caught_by_its_law(name: str, reference_report: soak.SoakReport) -> None:
    """Negative controls: each twin breaks the law its table names, which the sound tree does not break."""
    factory, law = soak.LEAKY[name]
    report = soak.run_soak(factory, name, TRACED if "bytes" in law else SHORT)
    assert law in report.failed_laws(), (report.sizes, report.trends)
    assert law not in reference_report.failed_laws()
    if name != "KeepsDeadLeaves":  # the one growth that beyond_dead_nodes sets aside, for the rule sets before 1.6
        assert law in soak.beyond_dead_nodes(report)


def _dead_leaf_loop(tree, cycles: int) -> int:
    """Store a prompt's tail under a held head, evict the tail, with a fresh tail each time; return the reachable nodes."""

    def event(i: int, data: dict) -> bytes:
        return json.dumps({"event_id": i, "data": data, "dp_rank": 0}).encode()

    tree.apply_event(1, event(0, {"stored": {"parent_hash": None, "blocks": [{"block_hash": 11, "tokens_hash": 1}]}}))
    for i in range(cycles):
        h = 1000 + i
        tree.apply_event(1, event(i + 1, {"stored": {"parent_hash": 11, "blocks": [{"block_hash": h, "tokens_hash": h}]}}))
        tree.apply_event(1, event(i + 1, {"removed": {"block_hashes": [h]}}))
    return soak.shape_figures(tree)["reachable nodes"]


@pytest.mark.parametrize("factory", [RadixTree, ConcurrentRadixTree], ids=["reference", "impl"])
def test_dead_leaves_are_released_at_eviction(factory) -> None:
    """The reproducer of the growth the soak found: 200 store-then-evict cycles under one held block leave the one
    held node, not 201 (both trees kept every dead leaf until a store passed it; Dynamo 1.6 releases them)."""
    assert _dead_leaf_loop(factory(), 200) <= 2


def test_the_rule_sets_before_1_6_keep_dead_leaves_and_only_them() -> None:
    """``reuse-dead-nodes`` (releases 1.3 to 1.5) keeps dead leaves by design: the node law catches them, and
    ``beyond_dead_nodes`` sets aside exactly that growth."""
    from kvproof.spec.rules import rule_set_named

    old = soak.run_soak(
        lambda: RadixTree(rule_set_named("dynamo-1.4")),
        "reference@dynamo-1.4",
        soak.SoakPlan(epochs=8, epoch_s=150.0, traced=False),
    )
    assert soak.DEAD_NODES_LAW in old.sizes
    assert soak.beyond_dead_nodes(old) == set(), (old.sizes, old.trends)
    assert _dead_leaf_loop(RadixTree(rule_set_named("dynamo-1.4")), 200) == 201


def test_the_queue_law_flags_a_task_left_queued() -> None:
    """The queue law's control, on a sample: a pool that left a task on a channel after its flush."""
    live = soak.Live(pairs=3, blocks=3, ranks=1, workers=1, announced=1)
    left = soak.Sample(1, 60.0, 10, 10, live, {"len Channel._items": 1}, 0)
    assert set(soak.size_problems([left])) == {"queued tasks = 0 at quiescence"}


def test_node_part_figures_name_only_node_contents() -> None:
    assert soak.is_node_part("# Node") and soak.is_node_part("len ConcurrentNodeView.index") and soak.is_node_part("traced bytes")
    assert not soak.is_node_part("len Lane.lookups[]") and not soak.is_node_part("# KeepsEventLog")


def test_size_law_catches_a_figure_over_its_bound() -> None:
    """A size law compares the sample's figure with its bound of the live content (here: one lookup entry too many)."""
    live = soak.Live(pairs=3, blocks=3, ranks=1, workers=1, announced=1)
    over = soak.Sample(1, 60.0, 10, 10, live, {"len RadixTree._lookups[]": 4, "len RadixTree._lookups": 1}, 0)
    assert set(soak.size_problems([over])) == {"lookup entries <= live pairs"}
    at = soak.Sample(1, 60.0, 10, 10, live, {"len RadixTree._lookups[]": 3, "len RadixTree._lookups": 1}, 0)
    assert soak.size_problems([at]) == {}


def test_trend_law_compares_per_live_pair_with_slack() -> None:
    """A figure that doubles while the live content is steady trends; one that follows the live content does not."""

    def at(epoch: int, pairs: int, grows: int, follows: int) -> soak.Sample:
        return soak.Sample(epoch, 60.0 * epoch, 0, 0, soak.Live(pairs, pairs, 1, 1), {"grows": grows, "follows": follows}, 0)

    samples = [at(i, 1000 if i % 2 else 500, 1000 * i, (1000 if i % 2 else 500) * 3) for i in range(1, 9)]
    assert set(soak.trend_problems(samples, warmup=2, window=2, slack=0.25)) == {"grows"}


def test_the_routing_law_catches_a_pool_that_never_forgets_a_route(monkeypatch) -> None:
    """The routing law's control: the pool as it was before issue 12, keeping the route of every worker it ever saw."""
    from kvproof.impl.indexer import ThreadPoolIndexer

    monkeypatch.setattr(ThreadPoolIndexer, "_forget_route", lambda self, worker_id: None)
    report = soak.run_soak(_factory("impl-pool"), "impl-pool", SHORT)
    assert soak.ROUTES_LAW in report.sizes


def test_the_pool_forgets_a_removed_workers_route() -> None:
    from kvproof.impl.indexer import ThreadPoolIndexer

    stored = json.dumps(
        {"event_id": 1, "data": {"stored": {"parent_hash": None, "blocks": [{"block_hash": 11, "tokens_hash": 1}]}}, "dp_rank": 0}
    ).encode()
    with ThreadPoolIndexer(threads=2) as pool:
        for worker in range(1, 101):  # a hundred workers come and go, one at a time
            pool.apply_event(worker, stored)
            pool.remove_worker(worker)
        assert len(pool._routes) == 0

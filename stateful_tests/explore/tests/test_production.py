"""explore/production.py: production mode judges every read against the contract and every round for linearizability."""

from kvproof.reference import RadixTree
from kvproof.spec.rules import DEFAULT_RULES
from kvproof.stateful_tests.explore.production import LABEL_OUTCOMES, feed, rounds_of
from kvproof.stateful_tests.harness.targets import apply
from kvproof.stateful_tests.tree.mutants import WalkSkipsEqualSizedIntersection
from kvproof.stateful_tests.tree.streams import ClearAllBlocksOp, EventOp, generate

STATUS = {outcome: status for status, outcome in LABEL_OUTCOMES.items()}


def takes_many(tree_class):
    """A kvproof tree with the door of Dynamo's indexer: events of several ranks at once, each outcome as a label."""

    class Feed(tree_class):
        def send_many(self, events):
            return [("event", STATUS[apply(self, rank.worker_id, event)]) for rank, event in events]

    return Feed


def test_rounds_hold_one_event_per_worker_and_calls_alone():
    stream = generate(1, 3)
    rounds = rounds_of(stream.ops)
    assert [op for r in rounds for op in r] == stream.ops
    for r in rounds:
        workers = [op.worker_id for op in r if isinstance(op, EventOp)]
        assert len(workers) == len(set(workers))
        assert len(r) == 1 or all(isinstance(op, EventOp) for op in r)
    assert any(len(r) > 1 for r in rounds)
    calls = [r for i in range(10) for r in rounds_of(generate(1, i).ops) if not isinstance(r[0], EventOp)]
    assert calls and all(len(r) == 1 for r in calls) and any(isinstance(r[0], ClearAllBlocksOp) for r in calls)


def test_a_right_tree_fed_at_once_passes_contract_and_linearizability():
    report = feed(takes_many(RadixTree), "reference", DEFAULT_RULES, 12, 1)
    assert report.ok, report.summary_line()
    assert report.events > 400 and report.reads > 0


def test_the_equal_size_over_credit_is_caught_with_its_stream_and_a_replay_command():
    """The negative control: the walk of Dynamo's concurrent indexer (F10) on kvproof's reference."""
    report = feed(takes_many(WalkSkipsEqualSizedIntersection), "twin", DEFAULT_RULES, 12, 1)
    assert report.failures and report.failures[0].violations
    text = report.report(report.failures[0])
    assert "over-credits" in text and "kvproof conform tree --concurrent --target twin --seed 1 --stream" in text


def test_a_round_is_judged_from_every_state_an_order_of_the_previous_rounds_leaves():
    """Seed 1, stream 19, ops 16 and 17 (one round): rank (3, 0) stores two blocks under a block that rank (1, 0) then
    extends. Either order gives both stores "ok" and the same holdings, but not the same tree: after (1, 0) later
    loses a mid-chain block and stores it again (ops 35 and 38), one order reconnects its old descendants (score 6
    on the query), the stream's own order does not (3). A target may take either order, so both states are carried:
    judged from the stream's order alone, the single-threaded indexer (a control) was once not linearizable."""
    import copy

    from kvproof.stateful_tests.explore.production import possible_states
    from kvproof.stateful_tests.harness import targets
    from kvproof.stateful_tests.tree.streams import apply_op, generate

    stream, query = generate(1, 19), [5, 2, 6, 6, 1, 2, 2, 3]
    make = targets.load_target("reference").factory
    start = make()
    for op in stream.ops[:16]:
        apply_op(start, op)
    round_ops = stream.ops[16:18]
    in_order = copy.deepcopy(start)
    outcomes = [apply_op(in_order, op) for op in round_ops]
    states = possible_states([start], round_ops, outcomes)
    assert len(states) == 2 and outcomes == ["ok", "ok"]
    scores = set()
    for state in states:
        for op in stream.ops[18:39]:
            apply_op(state, op)
        scores.add(dict(state.find_matches(query).scores).get((1, 0)))
    assert scores == {3, 6}
    assert possible_states([start], round_ops, ["ok", "BlockNotFound"]) == []  # an order must give the stream's outcomes

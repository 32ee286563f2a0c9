"""The directed schedule (explore/directed.py): one interleaving, named by a decision point.

The laws: the first thread runs alone until it is about to pass the named decision (its chosen
occurrence of it), the second then runs to its end, then the first goes on; a point never reached
leaves ``reached`` false and the run unpreempted; ``race`` hands back what each call raised and may
name its point from the subject it built.
"""

from __future__ import annotations

from kvproof.impl import _sync
from kvproof.stateful_tests.explore.directed import Directed, race


class Steps:
    """Two threads that each pass named yield points and log what they did after each."""

    def __init__(self, paused: list[str], meanwhile: list[str]) -> None:
        self.points = {"paused": paused, "meanwhile": meanwhile}
        self.done: list[str] = []

    def setup(self) -> None:
        pass

    def threads(self):
        def body(name: str):
            def run() -> None:
                for point in self.points[name]:
                    _sync.yield_point(point)
                    self.done.append(point)

            return run

        return [("paused", body("paused")), ("meanwhile", body("meanwhile"))]

    def finish(self) -> list[str]:
        return []


def test_the_first_thread_stops_at_the_named_point_and_the_second_runs_to_its_end_first():
    program, strategy = Steps(["a1", "a2", "a3"], ["b1", "b2"]), Directed("a2", "paused", "meanwhile")
    assert not strategy.run(program).failed
    assert strategy.reached
    assert program.done == ["a1", "b1", "b2", "a2", "a3"]  # the decision at a2 comes before what follows it
    assert [p for _, p in strategy.trail] == ["a1", "a2", "b1", "b2", "a3"]


def test_the_switch_waits_for_the_chosen_occurrence_of_the_point():
    program, strategy = Steps(["x", "x", "x"], ["b1"]), Directed("x", "paused", "meanwhile", occurrence=2)
    strategy.run(program)
    assert strategy.reached and program.done == ["x", "b1", "x", "x"]


def test_a_point_never_reached_runs_without_preemption_and_says_so():
    program, strategy = Steps(["a1", "a2"], ["b1"]), Directed("elsewhere", "paused", "meanwhile")
    strategy.run(program)
    assert not strategy.reached and program.done == ["a1", "a2", "b1"]


def test_race_names_its_point_from_the_subject_and_hands_back_what_each_call_raised():
    def paused(log: list[str]) -> None:
        _sync.yield_point("p.1")
        log.append("paused")
        raise KeyError("from paused")

    raced = race(lambda log: f"p.{len(log)}", lambda: ["built"], paused, lambda log: log.append("meanwhile"))
    assert raced.reached and raced.subject == ["built", "meanwhile", "paused"]
    assert set(raced.errors) == {"paused"} and isinstance(raced.errors["paused"], KeyError)
    assert raced.passed("paused") == ["p.1"] and raced.passed("meanwhile") == []

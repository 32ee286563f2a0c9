"""A pytest plugin that runs a mutant's tests one file at a time, the cheapest file first.

mutmut hands pytest a mutant's tests as node ids taken from a set and sorted by the seconds of
their call phase. Left so, two costs follow:

- node ids of different files interleave, and pytest tears a module-scoped fixture down and sets
  it up again each time its file comes back: a state machine whose work is a module fixture ran
  several times for one mutant;
- a test whose work is a module fixture reads 0 s in its call phase, so the state machines, the
  dearest tests, ran before the unit tests that kill most mutants in a fraction of a second.

This plugin orders the session's items by ``run_order``: grouped by file, each file's items in
the order pytest collects the whole file, the files by their whole cost (setup, call and teardown
of every item) in mutmut's stats pass, cheapest first. It records that cost in the stats pass
(``MUTANT_UNDER_TEST=stats``) to the JSON file named by ``KVPROOF_COST_FILE``; where no such
file is, the files keep the order in which their first item came.

The verdict does not depend on the order: mutmut runs with ``-x`` and a mutant is killed when
any of its tests fails; the order decides only how soon. Loaded with
``-p kvproof.stateful_tests.mutation.order``; without ``KVPROOF_COST_FILE`` it only groups.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

COST_FILE_ENV = "KVPROOF_COST_FILE"
MUTANT_ENV = "MUTANT_UNDER_TEST"
STATS_PASS = "stats"


def file_of(nodeid: str) -> str:
    """The test file of a node id: ``a/test_x.py::TestY::test_z[1]`` is ``a/test_x.py``."""
    return nodeid.split("::", 1)[0]


@dataclass(frozen=True)
class Costs:
    """What the stats pass measured, in seconds: each file's whole cost (``seconds``), each item's own
    (``items``: setup, call and teardown), each file's dearest setup phase (``setups``: where its
    module and class fixtures are paid), and every node id in collection order."""

    seconds: Mapping[str, float] = field(default_factory=dict)
    collected: Sequence[str] = ()
    items: Mapping[str, float] = field(default_factory=dict)
    setups: Mapping[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": dict(self.seconds),
            "collected": list(self.collected),
            "items": dict(self.items),
            "setups": dict(self.setups),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Costs:
        def floats(key: str) -> dict[str, float]:
            return {str(k): float(v) for k, v in data.get(key, {}).items()}

        return cls(floats("seconds"), [str(n) for n in data["collected"]], floats("items"), floats("setups"))


def run_order(nodeids: Sequence[str], costs: Costs) -> list[int]:
    """The positions of ``nodeids`` in the order to run them.

    Law: each file's items are contiguous (a module fixture is set up once); within a file they
    follow ``costs.collected`` (node ids it lacks keep their relative order, after the known ones);
    files go cheapest first by ``costs.seconds``, a file it lacks after the measured ones, ties
    and unmeasured files in the order their first item came. The result is a permutation.
    """
    first_seen: dict[str, int] = {}
    for i, nodeid in enumerate(nodeids):
        first_seen.setdefault(file_of(nodeid), i)
    rank = {nodeid: i for i, nodeid in enumerate(costs.collected)}
    unmeasured = float("inf")

    def key(i: int) -> tuple[float, int, int, int]:
        nodeid = nodeids[i]
        name = file_of(nodeid)
        known = rank.get(nodeid)
        return (
            costs.seconds.get(name, unmeasured),
            first_seen[name],
            0 if known is not None else 1,
            known if known is not None else i,
        )

    return sorted(range(len(nodeids)), key=key)


def costs_of(reports: Sequence[tuple[str, str, float]]) -> Costs:
    """The costs of a session from its ``(node id, phase, seconds)`` reports, in the order they came."""
    seconds: dict[str, float] = {}
    items: dict[str, float] = {}
    setups: dict[str, float] = {}
    for nodeid, when, duration in reports:
        name = file_of(nodeid)
        seconds[name] = seconds.get(name, 0.0) + duration
        items[nodeid] = items.get(nodeid, 0.0) + duration
        if when == "setup":
            setups[name] = max(setups.get(name, 0.0), duration)
    return Costs(seconds, list(items), items, setups)


def read_costs(path: str | None) -> Costs:
    """The costs recorded at ``path``; none (grouping only) when there is no path or no file yet."""
    if not path or not Path(path).is_file():
        return Costs()
    return Costs.from_json(json.loads(Path(path).read_text()))


_reports: list[tuple[str, str, float]] = []


def _stats_pass() -> bool:
    return os.environ.get(MUTANT_ENV) == STATS_PASS and bool(os.environ.get(COST_FILE_ENV))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    costs = read_costs(os.environ.get(COST_FILE_ENV))
    order = run_order([item.nodeid for item in items], costs)
    items[:] = [items[i] for i in order]


def pytest_sessionstart(session: Any) -> None:
    _reports.clear()


def pytest_runtest_logreport(report: Any) -> None:
    if _stats_pass():
        _reports.append((report.nodeid, str(report.when), float(report.duration)))


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    if _stats_pass() and _reports:
        Path(os.environ[COST_FILE_ENV]).write_text(json.dumps(costs_of(_reports).to_json()))

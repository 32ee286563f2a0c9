"""A pytest plugin that ends a mutant's session as a timeout when one test file runs far past its cost.

A mutant that makes a loop endless is caught by mutmut only at its own limit, 2 x 4 x (the
mutant's tests' call-phase seconds + 20 s) of CPU: minutes per mutant when the tests include
the sequence laws (measured: four such timeouts cost about 1,100 core-seconds in the first eight
minutes of the ``reference/sequences.py`` run, three times all its other sessions together).

In a mutant's session (``MUTANT_UNDER_TEST`` names a mutant), this plugin arms a timer as each
test starts, for ``budget_s``: ``FACTOR`` times its cost in mutmut's stats pass (``order.Costs``)
plus a floor, where the first test the session runs from a file is given the file's whole cost
(it may pay the module fixtures) and each later one its own cost plus the file's dearest setup.
When the timer fires, the plugin appends a line to the time-to-detection file
(``KVPROOF_TTD_FILE``, the ``ttd`` plugin's) naming the test and the budget, and ends the
process with exit code 36: mutmut's own code for a timeout, which it and the report count as a
timeout (detected, in its own column), never as a kill. The stats pass runs under mutmut's
tracing, about 3.5 times slower than a mutant's session on the sequence laws, so twice the
traced cost leaves several times a plain run; a file with no recorded cost gets no timer
(mutmut's own limit still stands).
Loaded with ``-p kvproof.stateful_tests.mutation.stall``.
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

import pytest

from .order import COST_FILE_ENV, Costs, file_of, read_costs
from .ttd import MUTANT_ENV, TTD_FILE_ENV

FACTOR = 2.0
FLOOR_S = 10.0
FLOOR_ENV = "KVPROOF_STALL_FLOOR_S"  # another floor, for the plugin's own tests
TIMEOUT_EXIT = 36  # mutmut's exit code for a timeout (mutmut.stats: 36 -> "timeout")


def budget_s(costs: Costs, test_file: str, nodeid: str | None = None) -> float | None:
    """Seconds a test may run in a mutant's session before it counts as a timeout; None: unbounded.

    Law: the first test a session runs from a file (``nodeid`` None) may take ``FACTOR`` x the
    file's whole recorded cost, since it may pay every module fixture; each later one ``FACTOR`` x
    (its own recorded cost + the file's dearest setup phase, a class or parametrized fixture it may
    pay again), or the file's budget when it has no cost of its own. Each adds the floor
    (``FLOOR_S``, or ``KVPROOF_STALL_FLOOR_S``). A file with no recorded cost: None.
    """
    cost = costs.seconds.get(test_file)
    if cost is None:
        return None
    own = None if nodeid is None else costs.items.get(nodeid)
    if own is not None:
        cost = own + costs.setups.get(test_file, 0.0)
    return FACTOR * cost + float(os.environ.get(FLOOR_ENV, FLOOR_S))


_armed: dict[str, Any] = {"file": None, "costs": None, "start": None}


def _mutant() -> str | None:
    name = os.environ.get(MUTANT_ENV, "")
    return name if "__mutmut_" in name else None


def _stalled(nodeid: str, budget: float) -> None:
    path, mutant = os.environ.get(TTD_FILE_ENV), _mutant()
    if path and mutant:
        spent = time.perf_counter() - (_armed["start"] or time.perf_counter())
        line = {
            "mutant": mutant,
            "ttd_s": round(spent, 4),
            "session_s": round(spent, 4),
            "stalled": nodeid,
            "first_fail": f"{nodeid} (ran past its {budget:.1f} s budget: a timeout)",
        }
        with open(path, "a") as f:
            f.write(json.dumps(line) + "\n")
    os._exit(TIMEOUT_EXIT)


def pytest_sessionstart(session: Any) -> None:
    _armed.update(file=None, costs=None, start=time.perf_counter())


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: Any) -> None:
    if _mutant() is None:
        return
    if _armed["costs"] is None:
        _armed["costs"] = read_costs(os.environ.get(COST_FILE_ENV))
    test_file = file_of(item.nodeid)
    first = test_file != _armed["file"]
    _armed["file"] = test_file
    budget = budget_s(_armed["costs"], test_file, None if first else item.nodeid)
    if budget is None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return
    signal.signal(signal.SIGALRM, lambda *_: _stalled(item.nodeid, budget))
    signal.setitimer(signal.ITIMER_REAL, budget)


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    if _armed["file"] is not None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _armed["file"] = None

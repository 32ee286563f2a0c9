"""A pytest plugin that records each mutant's time to detection.

mutmut runs the tests once per mutant, in a fresh pytest session, with the mutant's name in
``MUTANT_UNDER_TEST``. When ``KVPROOF_TTD_FILE`` names a file, this plugin appends one JSON line
per session that ran under a real mutant (names holding ``__mutmut_``):
``{"mutant": NAME, "ttd_s": seconds from the session's start to the first failing test report
(null when nothing failed), "first_fail": that test's node id, "session_s": the whole session}``.
Sessions of mutmut's own passes (the stats pass, the clean run, the forced failure) are not
recorded. Loaded with ``-p kvproof.stateful_tests.mutation.ttd``; it does nothing otherwise.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

TTD_FILE_ENV = "KVPROOF_TTD_FILE"
MUTANT_ENV = "MUTANT_UNDER_TEST"

_state: dict[str, Any] = {"start": None, "ttd": None, "first_fail": None}


def _mutant() -> str | None:
    name = os.environ.get(MUTANT_ENV, "")
    return name if "__mutmut_" in name else None


def pytest_sessionstart(session: Any) -> None:
    _state.update(start=time.perf_counter(), ttd=None, first_fail=None)


def pytest_runtest_logreport(report: Any) -> None:
    if report.failed and _state["ttd"] is None and _state["start"] is not None:
        _state["ttd"] = time.perf_counter() - _state["start"]
        _state["first_fail"] = report.nodeid


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    path, mutant = os.environ.get(TTD_FILE_ENV), _mutant()
    if not path or mutant is None or _state["start"] is None:
        return
    line = {
        "mutant": mutant,
        "ttd_s": None if _state["ttd"] is None else round(_state["ttd"], 4),
        "first_fail": _state["first_fail"],
        "session_s": round(time.perf_counter() - _state["start"], 4),
    }
    with open(path, "a") as f:  # one short append per session: whole lines, even from parallel workers
        f.write(json.dumps(line) + "\n")

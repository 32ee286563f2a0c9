"""A target that crashed, ran out of memory or hung (``harness.isolation.TargetFailure``), as a replayable finding.

The failure carries the calls its tree received, as a log (``tree.log``: RouterEvents, kvproof's
extensions, the failing call last). ``shrink`` cuts that log to a smaller one on which a fresh tree
of the same target still fails the same way (delta debugging over the calls before the failing one,
each try in a fresh host process, within a time budget); ``finding`` writes it to
``kvproof-failures/`` and says what happened, the shrunk calls, and the command that replays them
(``kvproof replay log FILE --target T``, which reports the same failure as a finding).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..harness import targets
from ..harness.isolation import TargetFailure
from .log import file_safe, parse_log
from .streams import apply_op

Factory = Callable[[], Any]


def replays(factory: Factory, lines: list[str], kind: str) -> bool:
    """Whether a fresh tree of ``factory`` fails the same way (``kind``) on ``lines``."""
    log = parse_log("\n".join(lines))
    tree = factory()
    try:
        for position in range(len(log.ops) + 1):  # the queries asked after ``position`` calls, then the next call
            for query in [q for n, q in log.queries if n == position]:
                tree.find_matches(query, False)
            if position < len(log.ops):
                apply_op(tree, log.ops[position])
    except TargetFailure as failure:
        return failure.kind == kind
    except Exception:  # a typed refusal of a call is no crash
        return False
    finally:
        targets.dispose(tree)
    return False


def shrink(factory: Factory, failure: TargetFailure, seconds: float = 60.0) -> tuple[list[str], bool]:
    """The smallest log found within ``seconds`` that still fails as ``failure`` did; ``(lines, reproduced)``.

    Calls are dropped in chunks, halving, as ``conformance.shrink`` does; the failing call stays last.
    """
    lines = [line for line in failure.log if line]
    if not lines or failure.kind == "hang":  # a hang costs the whole time limit per try: kept as it ran
        return lines, False
    deadline = time.monotonic() + seconds
    if not replays(factory, lines, failure.kind):
        return lines, False
    last, current = lines[-1], lines[:-1]
    chunk = max(1, len(current) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        i, progressed = 0, False
        while i < len(current) and time.monotonic() < deadline:
            candidate = current[:i] + current[i + chunk :]
            if replays(factory, candidate + [last], failure.kind):
                current, progressed = candidate, True
            else:
                i += chunk
        if not progressed:
            chunk //= 2
    return current + [last], True


@dataclass
class Finding:
    failure: TargetFailure
    lines: list[str]
    reproduced: bool
    path: Path
    replay: str

    def report(self) -> str:
        known = named(self.failure.target, self.failure)
        shown = "\n".join(f"    {line}" for line in self.lines[:12])
        more = f"\n    ... {len(self.lines) - 12} more lines in the file" if len(self.lines) > 12 else ""
        how = (
            f"shrunk to {len(self.lines)} calls, replayed in a fresh process"
            if self.reproduced
            else f"{len(self.lines)} calls as they ran (not shrunk: "
            + ("a hang costs the time limit per try)" if self.failure.kind == "hang" else "it did not fail again by itself)")
        )
        return (
            f"FINDING [{self.failure.kind}] {self.failure}"
            + (f"\n  {known}" if known else "")
            + f"\n  the calls that led to it, {how} ({self.path}):\n{shown}{more}"
        )


def finding(
    target_name: str, factory: Factory, failure: TargetFailure, seconds: float = 60.0, folder: Path = Path("kvproof-failures")
) -> Finding:
    """Shrink ``failure`` and write its log; the finding says what happened and how to replay it."""
    lines, reproduced = shrink(factory, failure, seconds)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{file_safe(f'{failure.kind}-{target_name}-{failure.op}')}.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return Finding(
        failure, lines, reproduced, path, f"kvproof replay log {path} --target {shlex.quote(target_name)} --oracle reference"
    )


KNOWN = (
    (
        "dynamo",
        "dump_tree_as_events",
        "memory",
        "0.6.1",
        "1.2.1",
        "this is the unbounded dump of releases 0.6.1 to 1.2.1: a store that reuses a node the worker holds for the same "
        "block hash can link a cycle, and the breadth-first dump follows it until allocation fails; gone with the "
        "compressed tree of ai-dynamo/dynamo PR #10542 (1.3.0)",
    ),
)
"""Target failures kvproof knows: (target, call, kind, first release, last release, what it is)."""


def named(target_name: str, failure: TargetFailure) -> str:
    """The known upstream bug a failure is, for the installed release ("" when kvproof does not know it)."""
    from ...spec.rules import version_key

    release = targets.dynamo_release()
    for target, call, kind, first, last, said in KNOWN:
        if (
            (target, call, kind) == (target_name, failure.op, failure.kind)
            and release is not None
            and version_key(first) <= version_key(release) <= version_key(last)
        ):
            return said
    return ""

"""``kvproof fuzz`` as library calls: a campaign over the fleet, or one saved case run again, each as a report.

The reports have the command's shape (``ok``, ``summary_line()``, ``render(say, table)``, ``to_json()``); a saved
case that does not read is refused with ``harness.errors.CampaignInputError`` (exit 2).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..harness.errors import CampaignInputError
from ..harness.shards import Shard
from .campaign import SAID, TARGETS, FuzzFileError, FuzzReport, FuzzTask, fuzz_sharded, replay, summary_line

Say = Callable[[str], None]


def fleet_of(names: tuple[str, ...]) -> tuple[str, ...]:
    """The trees a run throws cases at: those named, the reference always first (it is the judge); all by default."""
    return tuple(dict.fromkeys(("reference", *names))) if names else TARGETS


@dataclass
class FuzzReplay:
    """One saved case run again: what each tree did, and the problems it shows."""

    case: Any
    seen: dict[str, Any]
    problems: list[Any]
    kind = "fuzz-replay"
    skipped = ""

    @property
    def ok(self) -> bool:
        return not self.problems

    def render(self, say: Say, table: Callable[..., None]) -> None:
        say(f"case: {self.case.describe()}")
        table(
            ("target", "outcome", "message", "check()"),
            [(name, o.outcome, o.message[:90], o.check or "holds") for name, o in self.seen.items()],
        )
        for problem in self.problems:
            say(f"PROBLEM {problem.line()}")

    def summary_line(self) -> str:
        return f"replay: problems={len(self.problems)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case.describe(),
            "problems": [p.line() for p in self.problems],
            "seen": {name: {"outcome": o.outcome, "message": o.message, "check": o.check} for name, o in self.seen.items()},
        }


def run_fuzz_replay(path: str, names: tuple[str, ...]) -> FuzzReplay:
    """Run the case saved at ``path`` over the fleet again (``kvproof fuzz --replay``)."""
    try:
        return FuzzReplay(*replay(path, fleet_of(names)))
    except FuzzFileError as exc:
        raise CampaignInputError(str(exc), param="--replay") from None


@dataclass
class FuzzRun:
    """A finished campaign: every tree's outcomes, the known differences counted, the first problem shrunk and saved."""

    report: FuzzReport
    seed: int
    seconds: float
    shard: Shard
    kind = "fuzz"
    skipped = ""

    @property
    def ok(self) -> bool:
        return not self.report.problems

    def render(self, say: Say, table: Callable[..., None]) -> None:
        r = self.report
        outcomes = sorted({o for c in r.outcomes.values() for o in c}, key=lambda o: (o != "ok", o))
        columns = list(r.outcomes)
        table(
            ("outcome", *columns),
            [(o, *(r.outcomes[n].get(o, 0) for n in columns)) for o in outcomes],
            numeric=tuple(range(1, len(columns) + 1)),
        )
        for name, why in r.unavailable.items():
            say(f"not run: {name}: {why}")
        for finding, n in sorted(r.known.items()):
            say(f"known {finding} in {n} cases: {SAID[finding]} (docs/hostile-input.md)")
        if r.problems:
            say(f"PROBLEM {r.problems[0].line()}")
            if r.case is not None:
                say(f"  shrunk case: {r.case.describe()}")
            if r.file:
                say(f"  saved: {r.file}")
                say(f"  replay: kvproof fuzz --replay {r.file}")

    def summary_line(self) -> str:
        return f"{summary_line(self.report)} seconds={self.seconds:.1f} seed={self.seed}" + (
            "" if self.shard.whole else f" shard={self.shard}"
        )

    def to_json(self) -> dict[str, Any]:
        r = self.report
        return {
            "seed": self.seed,
            "inputs": r.inputs,
            "seconds": round(self.seconds, 2),
            "outcomes": {n: dict(c) for n, c in r.outcomes.items()},
            "known": dict(r.known),
            "problems": [p.line() for p in r.problems],
            "file": r.file,
            "unavailable": r.unavailable,
            "shard": r.shard,
            "cases_run": r.ordinals,
        }


def run_fuzz(
    inputs: int | None,
    seed: int | None,
    profile: Any,
    names: tuple[str, ...],
    save_dir: str,
    shard: Shard,
    processes: int,
    executor: str,
    say: Say,
) -> FuzzRun:
    """The campaign: ``inputs`` cases (default: the profile's) over the fleet; the deep profile draws a fresh seed,
    said first so the run can be replayed."""
    if seed is None:
        seed = 1 if profile.fixed_seed else int.from_bytes(os.urandom(4), "big")
        say(f"kvproof fuzz: seed={seed} (replay with --seed {seed})")
    count = inputs if inputs is not None else profile.tree.fuzz_inputs
    started = time.monotonic()
    report = fuzz_sharded(FuzzTask(count, seed, fleet_of(names), save_dir), shard, processes, executor)
    return FuzzRun(report, seed, time.monotonic() - started, shard)

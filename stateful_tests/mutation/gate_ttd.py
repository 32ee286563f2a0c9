"""Time to detection by the gate: how long ``kvproof check --fail-fast`` runs before it fails on a broken change.

mutmut's sessions time ``pytest -x`` (the ``ttd`` plugin); a maintainer's pre-commit loop is the gate. For a
sample of the run's killed mutants, each is switched on in the workspace mutmut built (``MUTANT_UNDER_TEST``,
with the workspace's mutated ``src/`` first on the path, as mutmut's own sessions do) and the gate is run as a
user runs it: ``python -m kvproof check --profile P --fail-fast`` in a fresh process, its rows as tasks of every
core, the cheapest first by what each took in this checkout (``.kvproof-cache/gate-seconds.json``, copied in).
The time to detection is the wall time from the command's start to its exit with a failure, interpreter start
included. A gate that passes on a mutant the tests kill is counted apart, never as a detection: it names a
broken change the gate does not see (the suite does), with the command that shows it.

The sample is every k-th killed mutant by name (deterministic), ``SAMPLE[profile]`` of them by default.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .scores import KILLED, Mutant, p90_of

SAMPLE = {"quick": 10, "ci": 0}
"""Mutants sampled per run by default: the quick profile's run is a minute, so ten gate runs fit beside it; the ci
profile's hours are spent judging (``--gate-ttd N`` asks for a sample)."""

GATE_SECONDS = Path(".kvproof-cache") / "gate-seconds.json"


@dataclass(frozen=True)
class GateDetection:
    """One sampled mutant: whether the gate failed on it, and the seconds until its command exited."""

    mutant: str
    seconds: float
    caught: bool
    exit_code: int | None  # None: stopped at the time limit

    def to_json(self) -> dict[str, Any]:
        return {"mutant": self.mutant, "seconds": round(self.seconds, 3), "caught": self.caught, "exit_code": self.exit_code}


def sample_killed(mutants: Sequence[Mutant], n: int) -> list[Mutant]:
    """``n`` killed mutants spread evenly over the killed ones in name order (all of them when fewer)."""
    killed = sorted((m for m in mutants if m.status == KILLED), key=lambda m: m.name)
    if n <= 0 or not killed:
        return []
    if n >= len(killed):
        return killed
    step = len(killed) / n
    return [killed[int(i * step)] for i in range(n)]


def mutants_dir_of(workspaces: Sequence[Path], module: str) -> Path | None:
    """The ``mutants/`` folder of the run's workspace that mutated ``module`` (None: none of them did)."""
    for folder in (w / "mutants" for w in workspaces):
        if (folder / "src" / "kvproof" / (module + ".meta")).is_file():
            return folder
    return None


def command(profile: str) -> list[str]:
    return [sys.executable, "-m", "kvproof", "check", "--profile", profile, "--fail-fast"]


def detect(mutants_dir: Path, mutant: str, profile: str, limit_s: float, root: Path) -> GateDetection:
    """Run the gate with ``mutant`` switched on; its process group is stopped at ``limit_s``."""
    from ..harness import process_guard

    cache = root / GATE_SECONDS
    if cache.is_file():
        (mutants_dir / GATE_SECONDS).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cache, mutants_dir / GATE_SECONDS)
    env = dict(
        os.environ,
        MUTANT_UNDER_TEST=mutant,
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(mutants_dir / "src"), os.environ.get("PYTHONPATH")])),
    )
    env.pop("KVPROOF_PROCESSES", None)  # the gate as a user runs it: every core
    started = time.perf_counter()
    proc = process_guard.spawn_guarded(
        command(profile), cwd=mutants_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        code: int | None = proc.wait(limit_s)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        process_guard.GUARD.kill(proc, grace=2.0)
    return GateDetection(mutant, time.perf_counter() - started, code == 1, code)


def run_gate_ttd(
    workspaces: Sequence[Path],
    mutants: Sequence[Mutant],
    n: int,
    profile: str,
    root: Path,
    limit_s: float = 300.0,
    say: Callable[[str], None] = lambda _: None,
) -> list[GateDetection]:
    """The gate's time to detection over a sample of ``n`` killed mutants, each switched on in the workspace of this run
    that mutated its module (a mutant no workspace of the run holds, one carried from an earlier report, say, is
    skipped)."""
    found = []
    for m in sample_killed(mutants, n):
        folder = mutants_dir_of(workspaces, m.module)
        if folder is None:
            continue
        found.append(detect(folder, m.name, profile, limit_s, root))
        d = found[-1]
        say(
            f"gate on {m.name}: {'failed' if d.caught else 'passed' if d.exit_code == 0 else f'exit {d.exit_code}'} "
            f"in {d.seconds:.1f} s"
        )
    return found


def summary(detections: Sequence[GateDetection], profile: str) -> str:
    """One line: the median and nearest-rank 90th percentile over the detections, and what the gate did not catch."""
    if not detections:
        return (
            f"time to detection, kvproof check --profile {profile} --fail-fast: not measured (no workspace of this run "
            "holds a sampled killed mutant)"
        )
    caught = [d.seconds for d in detections if d.caught]
    missed = [d for d in detections if not d.caught]
    line = (
        f"time to detection, kvproof check --profile {profile} --fail-fast: "
        + (f"median {statistics.median(caught):.1f} s, 90th percentile {p90_of(caught):.1f} s" if caught else "none caught")
        + f", over {len(caught)} of {len(detections)} sampled killed mutants (wall time, interpreter start included)"
    )
    if missed:
        line += "; the gate passed on " + ", ".join(f"{d.mutant} (exit {d.exit_code})" for d in missed)
    return line

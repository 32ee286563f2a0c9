"""Shards: a campaign's work items split into independent, deterministic parts, and run in parallel.

A campaign (conformance streams, fuzz inputs, stress seeds, mutants, gate rows) numbers its work
items ``0 .. total-1``; every item is a pure function of the run's seed and its number. Shard
``K/N`` owns the items ``i`` with ``i % N == K - 1``, so:

- the shards ``1/N .. N/N`` are disjoint and their union is the whole run (a CI matrix of N
  jobs runs exactly what one job would);
- shard ``K/N`` splits again into ``P`` parts, ``K + N*j / N*P`` for ``j < P``, whose union is
  ``K/N`` (``Shard.split``): how one machine spreads its shard over processes.

``run_parts`` runs a picklable task over parts in a process pool (``spawn``: a child imports
kvproof afresh, so no thread or Rust runtime of the parent is forked), or as Ray tasks
(``executor="ray"``: a Ray cluster when ``RAY_ADDRESS`` is set, else ``ray.init()`` on this
machine; needs the ``ray`` extra). Results come back in part order, whatever the executor, so
the merged report is the same however it was run. No child outlives the call: the pool is
shut down (and its processes terminated on an interrupt), Ray is shut down if this call
started it.

The test suite spreads the same way with pytest-xdist (``pytest -n P``); ``run_suite`` runs part
of it in one process or over ``P`` workers and counts the outcomes, for ``kvproof bench shards``.

Source: docs/sources.md#kvproof-mutation ("Beyond one machine").
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ...spec.errors import KvProofError
from .errors import Unavailable

R = TypeVar("R")

EXECUTORS = ("local", "ray")


class ShardError(KvProofError, ValueError):
    """A shard that does not parse (``K/N`` with ``1 <= K <= N``), or an executor that cannot run."""


_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True, order=True)
class Shard:
    """Shard ``index`` of ``count`` (both 1-based in text: ``K/N``)."""

    index: int = 1
    count: int = 1

    def __post_init__(self) -> None:
        if not (isinstance(self.index, int) and isinstance(self.count, int) and 1 <= self.index <= self.count):
            raise ShardError(f"a shard is K/N with 1 <= K <= N, got {self.index}/{self.count}")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/4"`` -> ``Shard(2, 4)``; ``ShardError`` for anything else."""
        match = _SHARD.fullmatch(text or "")
        if match is None:
            raise ShardError(f"a shard is written K/N (for example 1/2), got {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def whole(self) -> bool:
        return self.count == 1

    def owns(self, item: int) -> bool:
        """Check if work item ``item`` belongs to this shard."""
        return item % self.count == self.index - 1

    def of(self, total: int) -> range:
        """The items of ``0 .. total-1`` this shard owns, in order."""
        return range(self.index - 1, total, self.count)

    def split(self, parts: int) -> list[Shard]:
        """``parts`` disjoint shards whose union is this one (fewer never: an empty part is harmless)."""
        if parts < 1:
            raise ShardError(f"a shard splits into at least 1 part, got {parts}")
        return [Shard(self.index + self.count * j, self.count * parts) for j in range(parts)]


WHOLE = Shard()
"""The whole run."""


PROCESSES_VARIABLE = "KVPROOF_PROCESSES"


def processes_choice(processes: int | None = None) -> int:
    """The processes a campaign spreads over: ``processes``, else ``$KVPROOF_PROCESSES``, else the machine's cores.
    Every command's ``--processes`` resolves through here, so one default holds everywhere."""
    return processes or int(os.environ.get(PROCESSES_VARIABLE) or 0) or os.cpu_count() or 1


def run_parts(task: Callable[[Shard], R], parts: Sequence[Shard], processes: int = 1, executor: str = "local") -> list[R]:
    """Return ``[task(part) for part in parts]``, computed in ``processes`` processes or as Ray tasks.

    ``task`` must be picklable (a module-level function, or a frozen dataclass with ``__call__``).
    With one process and the local executor it runs here, in order.
    """
    if executor not in EXECUTORS:
        raise ShardError(f"unknown executor {executor!r}: choose from {', '.join(EXECUTORS)}")
    if executor == "ray":
        return _run_on_ray(task, parts)
    if processes <= 1 or len(parts) <= 1:
        return [task(part) for part in parts]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(max_workers=min(processes, len(parts)), mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = [pool.submit(task, part) for part in parts]
        return [f.result() for f in futures]
    except BrokenProcessPool as exc:
        raise ShardError(f"a shard's process died before it reported ({exc}); rerun that shard alone with --shard") from None
    except BaseException:
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def ray_unavailable() -> str | None:
    """Why the Ray executor cannot run here (None when ``ray`` imports)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray is not installed (pip install 'kvproof[ray]')"
    return None


class ExecutorUnavailable(ShardError, Unavailable):
    """The executor asked for cannot run here (``ray`` is not installed): an environment problem, exit 2."""


def _run_on_ray(task: Callable[[Shard], R], parts: Sequence[Shard]) -> list[R]:
    why = ray_unavailable()
    if why:
        raise ExecutorUnavailable(why)
    import logging
    import os

    import ray

    started_here = not ray.is_initialized()
    if started_here:
        address = os.environ.get("RAY_ADDRESS")
        ray.init(
            address=address,
            num_cpus=None if address else os.cpu_count() or 1,
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
    try:
        remote = ray.remote(max_retries=0)(_call)
        return list(ray.get([remote.remote(task, part) for part in parts]))
    finally:
        if started_here:
            ray.shutdown()


def _call(task: Callable[[Shard], Any], part: Shard) -> Any:
    return task(part)


# ----------------------------------------------------------------------------- the suite, over pytest-xdist

_OUTCOME = re.compile(r"(\d+) (passed|failed|skipped|error|xfailed|xpassed|deselected)")  # "errors" reads as error


class SuiteRunError(KvProofError, RuntimeError):
    """pytest did not run the tests (a usage error, an interrupt, a collection failure, the time limit)."""


@dataclass(frozen=True)
class SuiteRun:
    """What ``pytest`` reported for some test folders run over ``processes`` workers (1: no xdist)."""

    processes: int
    counts: tuple[tuple[str, int], ...]  # ("passed", 120), ("skipped", 3), ... in name order
    seconds: float


def suite_counts(summary: str) -> tuple[tuple[str, int], ...]:
    """The outcome counts of pytest's last summary line (``12 passed, 1 skipped in 3.2s``), warnings left out."""
    return tuple(sorted((kind, int(n)) for n, kind in _OUTCOME.findall(summary)))


def run_suite(root: Path, folders: Sequence[str], processes: int, timeout: float = 1800.0) -> SuiteRun:
    """Run ``pytest`` on ``folders`` of the checkout at ``root``, alone (``-n 0``) or over ``processes`` xdist workers.

    pytest runs in its own process group, killed whole (workers included) if it passes ``timeout``,
    so no worker outlives the call. Failing tests are counted, not raised: the caller compares counts.
    """
    from .process_guard import GUARD, spawn_guarded

    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-n",
        "0" if processes == 1 else str(processes),
        *folders,
    ]
    # a pytest started from inside an xdist worker must not think it is one
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_") and k != "PYTEST_CURRENT_TEST"}
    started = time.perf_counter()
    proc = spawn_guarded(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        GUARD.kill(proc)
        proc.communicate()
        raise SuiteRunError(f"pytest {' '.join(folders)} ran past {timeout:.0f} s and was stopped") from None
    GUARD.kill(proc)  # the group: an xdist worker left behind goes with it
    lines = [line for line in output.splitlines() if line.strip()]
    if proc.returncode not in (0, 1) or not lines:
        tail = "\n".join(lines[-8:])
        raise SuiteRunError(f"pytest {' '.join(folders)} exited {proc.returncode} without a result:\n{tail}")
    return SuiteRun(processes, suite_counts(lines[-1]), time.perf_counter() - started)

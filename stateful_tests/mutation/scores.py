"""The mutation report: each mutant's verdict, the score per module and per layer, the goals.

A mutant is

- **killed** when a test failed with it in place (mutmut's exit codes 1 and 3), or when its tests
  ran past mutmut's time limit (**timeout**: the suite did not pass, as Stryker counts it too);
- **survived** when its tests all passed (exit code 0): a change the suite did not notice;
- **equivalent** when it survived and is listed, still current, in the reviewed equivalents file;
- **no tests** when no selected test reaches its function (exit codes 33 and 5): a *gap*, shown
  in its own column and never counted as killed, nor in the score;
- anything else (not checked, suspicious, segfault, skipped) is **other**, which fails the run.

``score = killed / (killed + survived)``, equivalents left out of ``survived``. A layer passes when
its score meets ``GOALS``; a layer whose mutants were all gaps has no score and does not pass.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...spec.errors import KvProofError
from ..harness.shards import Shard, ShardError
from .equivalents import Equivalent
from .profiles import GOALS, selects
from .verdicts import is_verdict, read_verdict

KILLED, SURVIVED, EQUIVALENT, NO_TESTS, TIMEOUT, OTHER = "killed", "survived", "equivalent", "no tests", "timeout", "other"

STATUS_BY_EXIT_CODE: dict[int | None, str] = {
    1: KILLED,
    3: KILLED,
    0: SURVIVED,
    33: NO_TESTS,
    5: NO_TESTS,
    36: TIMEOUT,
    24: TIMEOUT,
    -24: TIMEOUT,
    152: TIMEOUT,
    255: TIMEOUT,
}
"""mutmut 3.8.1's exit codes (mutmut/stats.py), read into this report's verdicts; the rest is OTHER."""


def status_of(exit_code: int | None) -> str:
    return STATUS_BY_EXIT_CODE.get(exit_code, OTHER)


@dataclass
class Mutant:
    """One mutant's verdict; ``diff`` is filled for survivors and gaps, ``ttd_s`` for the killed that the plugin saw."""

    name: str
    module: str  # the checkout path, spec/coverage.py
    exit_code: int | None
    seconds: float | None = None
    ttd_s: float | None = None
    first_fail: str | None = None
    diff: str = ""
    function_hash: str | None = None
    equivalent: Equivalent | None = None

    @property
    def status(self) -> str:
        status = status_of(self.exit_code)
        return EQUIVALENT if status == SURVIVED and self.equivalent is not None else status

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Mutant:
        """The mutant ``to_json`` wrote (its verdict is recomputed from the exit code and the equivalence)."""
        reason = body.get("equivalent_reason")
        equivalent = Equivalent(body["name"], str(body.get("function_hash")), reason) if reason else None
        return cls(
            body["name"],
            body["module"],
            body["exit_code"],
            body.get("seconds"),
            body.get("ttd_s"),
            body.get("first_fail"),
            body.get("diff", ""),
            body.get("function_hash"),
            equivalent,
        )

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "name": self.name,
            "module": self.module,
            "status": self.status,
            "exit_code": self.exit_code,
            "seconds": self.seconds,
            "ttd_s": self.ttd_s,
            "first_fail": self.first_fail,
            "function_hash": self.function_hash,
        }
        if self.diff:
            body["diff"] = self.diff
        if self.equivalent is not None:
            body["equivalent_reason"] = self.equivalent.reason
        return body


@dataclass
class Tally:
    """Counts of one module or layer."""

    name: str
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, status: str) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1

    def __getitem__(self, status: str) -> int:
        return self.counts.get(status, 0)

    @property
    def detected(self) -> int:
        return self[KILLED] + self[TIMEOUT]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def score(self) -> float | None:
        """killed (timeouts included) / (killed + survived); None when no mutant was judged."""
        judged = self.detected + self[SURVIVED]
        return self.detected / judged if judged else None

    def row(self) -> tuple[Any, ...]:
        score = self.score
        return (
            self.name,
            self.total,
            self[KILLED],
            self[TIMEOUT],
            self[SURVIVED],
            self[EQUIVALENT],
            self[NO_TESTS],
            self[OTHER],
            "-" if score is None else f"{100 * score:.1f}%",
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "total": self.total,
            **{k.replace(" ", "_"): self[k] for k in (KILLED, TIMEOUT, SURVIVED, EQUIVALENT, NO_TESTS, OTHER)},
            "score": self.score,
        }


HEADERS = ("module", "mutants", "killed", "timeout", "survived", "equivalent", "no tests (gap)", "other", "score")


def layer_of(module: str) -> str:
    return module.split("/", 1)[0]


def tally(mutants: Iterable[Mutant], key: str) -> list[Tally]:
    """Tallies by module (``key="module"``) or by layer (``key="layer"``), in name order."""
    by: dict[str, Tally] = {}
    for m in mutants:
        name = m.module if key == "module" else layer_of(m.module)
        by.setdefault(name, Tally(name)).add(m.status)
    return [by[k] for k in sorted(by)]


def median_ttd(mutants: Iterable[Mutant]) -> float | None:
    """The median time to detection over the killed mutants the plugin timed (None: none timed)."""
    times = [m.ttd_s for m in mutants if m.status == KILLED and m.ttd_s is not None]
    return statistics.median(times) if times else None


def p90_ttd(mutants: Iterable[Mutant]) -> float | None:
    """The 90th percentile of the time to detection over the killed mutants the plugin timed (nearest rank; None: none
    timed): how long the slowest tenth of broken changes waits for its first failing test."""
    times = [m.ttd_s for m in mutants if m.status == KILLED and m.ttd_s is not None]
    return p90_of(times) if times else None


def p90_of(values: Iterable[float]) -> float:
    """The 90th percentile of ``values`` (nearest rank; at least one value)."""
    ordered = sorted(values)
    return ordered[max(0, -(-9 * len(ordered) // 10) - 1)]


def sharded_names(names: Iterable[str], shard: Any) -> list[str]:
    """The mutant names shard ``K/N`` owns: all names sorted, the ``i``-th kept when ``i % N == K-1``."""
    return [name for i, name in enumerate(sorted(set(names))) if shard.owns(i)]


@dataclass
class Report:
    """A run's verdicts and what follows from them."""

    mutants: list[Mutant]
    goals: Mapping[str, float] = field(default_factory=lambda: dict(GOALS))
    stale: list[Equivalent] = field(default_factory=list)
    stopped: str | None = None  # why the run ended early (the time limit), if it did

    @property
    def modules(self) -> list[Tally]:
        return tally(self.mutants, "module")

    @property
    def layers(self) -> list[Tally]:
        return tally(self.mutants, "layer")

    def of(self, *statuses: str) -> list[Mutant]:
        return sorted((m for m in self.mutants if m.status in statuses), key=lambda m: m.name)

    def failures(self) -> list[str]:
        """Why the run does not meet its goals, one line each (empty: it does)."""
        problems = []
        if self.stopped:
            problems.append(f"the run was stopped before every mutant was judged: {self.stopped}")
        if not self.mutants:
            problems.append("no mutants were run")
        for layer in self.layers:
            goal, score = self.goals.get(layer.name), layer.score
            if goal is None:
                continue
            if score is None:
                problems.append(f"{layer.name}/: no mutant was judged ({layer[NO_TESTS]} without tests): no score")
            elif score < goal:
                problems.append(
                    f"{layer.name}/: score {100 * score:.1f}% is below the goal {100 * goal:.0f}% ({layer[SURVIVED]} survivors)"
                )
        others = self.of(OTHER)
        if others:
            problems.append(f"{len(others)} mutants have no verdict (not checked, suspicious or crashed), e.g. {others[0].name}")
        return problems

    def table_rows(self) -> list[tuple[Any, ...]]:
        return [t.row() for t in self.modules] + [
            (f"{t.name}/ (goal {100 * self.goals[t.name]:.0f}%)", *t.row()[1:]) for t in self.layers if t.name in self.goals
        ]

    def to_json(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        ttd = median_ttd(self.mutants)
        return {
            **(extra or {}),
            "passed": not self.failures(),
            "failures": self.failures(),
            "stopped": self.stopped,
            "goals": dict(self.goals),
            "median_ttd_s": ttd,
            "p90_ttd_s": p90_ttd(self.mutants),
            "modules": [t.to_json() for t in self.modules],
            "layers": [t.to_json() for t in self.layers],
            "survivors": [m.to_json() for m in self.of(SURVIVED)],
            "equivalents": [m.to_json() for m in self.of(EQUIVALENT)],
            "stale_equivalents": [e.__dict__ for e in self.stale],
            "no_tests": [m.name for m in self.of(NO_TESTS)],
            "mutants": [m.to_json() for m in sorted(self.mutants, key=lambda m: m.name)],
        }


def join_ttd(mutants: Sequence[Mutant], lines: Iterable[Mapping[str, Any]]) -> None:
    """Fill each mutant's time to detection from the plugin's JSON lines (the first line per mutant wins)."""
    by_name = {m.name: m for m in mutants}
    for line in lines:
        m = by_name.get(str(line.get("mutant")))
        if m is not None and m.ttd_s is None and line.get("ttd_s") is not None:
            m.ttd_s, m.first_fail = float(line["ttd_s"]), line.get("first_fail")


# ----------------------------------------------------------------------------- merging a matrix's shards

SCHEMA = "kvproof.mutate/1"


class MergeError(KvProofError, ValueError):
    """Shard reports that are not the disjoint, complete shards of one run (or not mutate reports at all)."""


@dataclass(frozen=True)
class ShardRun:
    """One shard's ``kvproof mutate --json`` report, read back."""

    path: str
    profile: str
    layers: tuple[str, ...]
    shard: Shard
    seconds: float
    report: Report


def read_shard_run(path: str | Path) -> ShardRun:
    """Read a ``kvproof mutate --json`` file, or a verdict of record (``verdicts``, ``*.jsonl.gz``); ``MergeError``
    naming the file for anything that is neither."""
    try:
        body = read_verdict(path) if is_verdict(path) else json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise MergeError(f"{path}: not a readable JSON report ({exc})") from None
    if not isinstance(body, dict) or body.get("schema") != SCHEMA:
        found = body.get("schema") if isinstance(body, dict) else type(body).__name__
        raise MergeError(f"{path}: not a mutate report (schema {found!r}, expected {SCHEMA!r})")
    try:
        mutants = [Mutant.from_json(m) for m in body["mutants"]]
        run = ShardRun(
            str(path),
            str(body["profile"]),
            tuple(body["paths"]),
            Shard.parse(str(body["shard"])),
            float(body.get("seconds") or 0.0),
            Report(
                mutants,
                goals=dict(body["goals"]),
                stopped=body.get("stopped"),
                stale=[Equivalent(**e) for e in body.get("stale_equivalents", [])],
            ),
        )
    except (KeyError, TypeError, ValueError, ShardError) as exc:
        raise MergeError(f"{path}: a mutate report without {exc}: write it with `kvproof mutate --json`") from None
    return run


def merge_shard_runs(runs: Sequence[ShardRun]) -> Report:
    """The report of the whole run from its shards: the union of their verdicts.

    Law: the shards must be the complete, disjoint shards ``1/N .. N/N`` of one run (same profile,
    layers and goals, no mutant in two shards); anything else is a ``MergeError`` that says what is
    missing or repeated, since a partial union would report a score for mutants never run. A shard
    stopped early stops the merged run too (``Report.failures`` says so).
    """
    if not runs:
        raise MergeError("no shard reports to merge")
    first = runs[0]
    for run in runs[1:]:
        for what, mine, theirs in (
            ("profile", run.profile, first.profile),
            ("--paths", run.layers, first.layers),
            ("shard count", run.shard.count, first.shard.count),
            ("goals", dict(run.report.goals), dict(first.report.goals)),
        ):
            if mine != theirs:
                raise MergeError(f"{run.path} is of another run than {first.path}: {what} {mine} against {theirs}")
    seen: dict[int, str] = {}
    for run in runs:
        if run.shard.index in seen:
            raise MergeError(f"shard {run.shard} is given twice: {seen[run.shard.index]} and {run.path}")
        seen[run.shard.index] = run.path
    missing = [f"{k}/{first.shard.count}" for k in range(1, first.shard.count + 1) if k not in seen]
    if missing:
        raise MergeError(f"shards {', '.join(missing)} are missing: a merge of part of a run has no score")
    owner: dict[str, str] = {}
    mutants: list[Mutant] = []
    for run in runs:
        for m in run.report.mutants:
            if m.name in owner:
                raise MergeError(f"mutant {m.name} is in {owner[m.name]} and in {run.path}: shards overlap")
            owner[m.name] = run.path
            mutants.append(m)
    stopped = "; ".join(f"shard {r.shard}: {r.report.stopped}" for r in runs if r.report.stopped) or None
    stale = list({e.mutant: e for r in runs for e in r.report.stale}.values())
    return Report(mutants, goals=dict(first.report.goals), stopped=stopped, stale=stale)


def merge_module_runs(runs: Sequence[ShardRun], layer_modules: Mapping[str, Iterable[str]]) -> Report:
    """The report of whole layers from whole runs that each judged some of their modules (a matrix split by module).

    A run judges the modules its ``--paths`` select among ``layer_modules`` (the profile's modules of each
    layer in the checkout), and those its mutants are in. Law: every run is unsharded (``1/1``), of one
    profile and one set of goals; no module is judged by two runs; and every layer a run touches is
    judged whole, each of its modules by exactly one run, since a layer's score over part of its modules
    is no verdict. Anything else is a ``MergeError`` naming what is wrong.
    A run stopped early stops the merged run too. A ``--rejudge`` report counts as its modules' run:
    its carried kills are the earlier run's, as in the report itself.
    """
    if not runs:
        raise MergeError("no reports to merge")
    first = runs[0]
    judged_by: dict[str, str] = {}
    for run in runs:
        if not run.shard.whole:
            raise MergeError(f"{run.path} is shard {run.shard}: merge a run's shards with each other, or whole runs by module")
        for what, mine, theirs in (
            ("profile", run.profile, first.profile),
            ("goals", dict(run.report.goals), dict(first.report.goals)),
        ):
            if mine != theirs:
                raise MergeError(f"{run.path} is of another profile than {first.path}: {what} {mine} against {theirs}")
        selected = {m for modules in layer_modules.values() for m in modules if any(selects(p, m) for p in run.layers)}
        for module in sorted(selected | {m.module for m in run.report.mutants}):
            if module in judged_by:
                raise MergeError(f"{module} is judged by {judged_by[module]} and by {run.path}: give each module once")
            judged_by[module] = run.path
    for layer in sorted({layer_of(module) for module in judged_by}):
        missing = sorted(set(layer_modules.get(layer, ())) - set(judged_by))
        if missing:
            raise MergeError(f"{layer}/ is not judged whole: no report has {', '.join(missing)}")
    stopped = "; ".join(f"{r.path}: {r.report.stopped}" for r in runs if r.report.stopped) or None
    stale = list({e.mutant: e for r in runs for e in r.report.stale}.values())
    return Report([m for r in runs for m in r.report.mutants], goals=dict(first.report.goals), stopped=stopped, stale=stale)

"""The explorer's campaigns as ``kvproof explore`` and ``kvproof replay schedule`` run them, each returning a report.

Each ``run_*`` takes the command's options, says what it finds as it goes (``say``) and returns a report with
``ok``, ``summary_line()``, ``render(say, table)`` and ``to_json()`` (the command's ``finish`` prints and exits);
what cannot run is refused with ``harness.errors.CampaignInputError`` (exit 2).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..harness.errors import CampaignInputError
from . import campaign

Say = Callable[[str], None]
DrawTable = Callable[..., None]


# ----------------------------------------------------------------------------- replay schedule


@dataclass
class ScheduleReplay:
    """One schedule run again: its history, what it showed against what it was recorded as."""

    kind = "replay-schedule"
    schedule: Any
    recorded_on: str
    result: Any = None
    lines: list[str] = field(default_factory=list)
    diverged: str = ""  # why the schedule does not fit the target it was run on (exit 1)

    @property
    def ok(self) -> bool:
        return not self.diverged and not self.result.failed

    @property
    def skipped(self) -> str:
        return ""

    def render(self, say: Say, table: DrawTable) -> None:
        for line in self.lines:
            say(line)

    def summary_line(self) -> str:
        if self.diverged:
            return self.diverged
        return (
            f"replay: outcome={self.result.outcome.value} decisions={len(self.result.decisions)} steps={self.result.steps} "
            f"(decisions past the recorded ones never preempt)"
        )

    def to_json(self) -> dict[str, Any]:
        body = {
            "scenario": self.schedule.scenario,
            "target": self.schedule.target,
            "recorded_on": self.recorded_on,
            "decisions": len(self.schedule.decisions),
            "kind": self.schedule.kind,
        }
        if self.diverged:
            return body | {"diverged": self.diverged}
        return body | {"outcome": self.result.outcome.value, "steps": self.result.steps, "problems": self.result.problems}


def problem_kind(result: Any) -> str:
    """The kind of a run's first problem (``not linearizable``, ...), or its outcome when it had none."""
    from .programs import kind_of

    return kind_of(result.problems[0]) if result.problems else result.outcome.value


def run_replay_schedule(text: str, target: str | None) -> ScheduleReplay:
    """Run the schedule of a token or a schedule file (``.json``) again, exactly, on its target or on ``target``."""
    from .replay import Divergence
    from .token import TokenError, load_schedule, parse_token

    try:
        schedule = load_schedule(text) if text.endswith(".json") else parse_token(text)
    except TokenError as exc:
        raise CampaignInputError(f"replay: {exc}") from None
    report = ScheduleReplay(schedule, schedule.target)
    if target is not None:
        schedule = report.schedule = dataclasses.replace(schedule, target=target)
    try:
        result, program = campaign.replay_schedule(schedule)
    except KeyError as exc:
        raise CampaignInputError(f"replay: {exc.args[0]}") from None
    except Divergence as exc:
        why = (
            f"it was recorded on {report.recorded_on}, whose threads take other turns"
            if schedule.target != report.recorded_on
            else "the code under it has changed since it was recorded"
        )
        report.diverged = f"replay: the schedule does not fit {schedule.target} ({exc}): {why}"
        return report
    report.result = result
    report.lines = _schedule_lines(schedule, report.recorded_on, result, program)
    return report


def _schedule_lines(schedule: Any, recorded_on: str, result: Any, program: Any) -> list[str]:
    """The replay's header, the recorded history, the problems, and whether it shows what it was recorded as."""
    threads = ", ".join(f"{chr(97 + i)}={n}" for i, n in sorted(result.names.items()))
    lines = [
        f"replay: {schedule.scenario} on {schedule.target}: {len(schedule.decisions)} recorded decisions (threads: {threads})"
    ]
    lines += [f"  {line}" for line in program.recorder.describe()]
    lines += list(result.problems)
    if schedule.kind and result.failed:
        shown = problem_kind(result)
        lines.append(
            f"replay: shows {schedule.kind!r} as recorded"
            if shown == schedule.kind
            else f"replay: shows {shown!r}, recorded as {schedule.kind!r}"
        )
    elif schedule.kind:
        lines.append(f"replay: recorded as {schedule.kind!r} on {recorded_on}; passes on {schedule.target}")
    return lines


# ----------------------------------------------------------------------------- explore --list


@dataclass
class ScenarioList:
    """``kvproof explore --list``: the scenarios and the broken structures."""

    kind = "explore-list"
    ok = True
    skipped = ""

    def render(self, say: Say, table: DrawTable) -> None:
        table(("scenario", "family", "race"), [(n, sc.family, sc.story) for n, sc in campaign.SCENARIOS.items()])

    def summary_line(self) -> str:
        return "broken structures (targets): " + ", ".join(campaign.broken_subjects())

    def to_json(self) -> dict[str, Any]:
        return {"scenarios": list(campaign.SCENARIOS), "broken": list(campaign.broken_subjects())}


# ----------------------------------------------------------------------------- explore (schedules)


@dataclass
class ExploreRun:
    """``kvproof explore``: one row per scenario explored, and every failing schedule found (shrunk and saved)."""

    kind = "explore"
    target: str
    strategy: str
    seed: int
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    found: list[Any] = field(default_factory=list)
    skipped = ""

    HEADERS = ("scenario", "strategy", "schedules", "max decisions", "seconds", "result")

    @property
    def ok(self) -> bool:
        return not self.found

    def render(self, say: Say, table: DrawTable) -> None:
        table(self.HEADERS, self.rows, numeric=(2, 3, 4))
        for f in self.found:
            say(f"\nFAIL {f.schedule.scenario} on {self.target}: {f.problems[0].splitlines()[0]}")
            for line in f.problems[0].splitlines()[1:]:
                say(f"  {line}")
            say(
                f"  found at schedule {f.index} after {f.seconds:.2f} s; shrunk to {len(f.schedule.decisions)} decisions "
                f"({f.preemptions} preemptions) from {f.original_decisions}"
            )
            say("  history of the shrunk schedule:")
            for line in f.history:
                say(f"    {line}")
            if f.schedule.workload is None:
                say(f"  token:  {f.token}")
            say(f"  saved:  {f.file}\n  replay: {f.replay}")

    def summary_line(self) -> str:
        return f"explore: scenarios={len(self.rows)} schedules={sum(r[2] for r in self.rows)} failing={len(self.found)}"

    def to_json(self) -> dict[str, Any]:
        keys = ("scenario", "strategy", "schedules", "max_decisions", "seconds", "result")
        return {
            "target": self.target,
            "strategy": self.strategy,
            "seed": self.seed,
            "rows": [dict(zip(keys, r)) for r in self.rows],
            "found": [{"token": f.token, "file": f.file, "kind": f.schedule.kind, "problem": f.problems[0]} for f in self.found],
        }


@dataclass(frozen=True)
class ExplorePlan:
    """What ``kvproof explore`` was asked: the scenario (None: every one the subject has), how, how long, where to save."""

    scenario: str | None
    strategy: str
    budget: int | None
    seed: int
    depth: int | None
    preemptions: int
    save_dir: str


def subject_and_scenarios(target: str, scenario: str | None, strategy: str = "pct") -> tuple[campaign.Subject, list[str]]:
    """The subject named by ``target`` and the scenarios to run on it; an unknown scenario or subject is refused."""
    if scenario == campaign.RANDOM and strategy != "hypothesis":
        raise CampaignInputError(
            f"{campaign.RANDOM} draws its workload with --strategy hypothesis; {campaign.RANDOM}.sSEED is a seeded one",
            param="SCENARIO",
        )
    if scenario is not None and scenario != campaign.RANDOM:
        try:
            campaign.scenario_named(scenario)
        except KeyError as exc:
            raise CampaignInputError(exc.args[0], param="SCENARIO") from None
    subject = campaign.subject_for(target)
    if subject.why:
        raise CampaignInputError(f"explore: {subject.why}")
    names = [scenario] if scenario else [n for n, sc in campaign.SCENARIOS.items() if subject.maker(sc.family) is not None]
    return subject, names


def run_explore(plan: ExplorePlan, target: str, profile: Any, say: Say) -> ExploreRun:
    """Explore each scenario's schedules under the plan's strategy; shrink, save and name each failing one."""
    from .token import save_schedule

    subject, names = subject_and_scenarios(target, plan.scenario, plan.strategy)
    schedules = plan.budget if plan.budget is not None else profile.explore.schedules
    depth = plan.depth if plan.depth is not None else profile.explore.pct_depth
    report = ExploreRun(subject.name, plan.strategy, plan.seed)
    for name in names:
        found = _explore_one(name, subject, plan, schedules, depth, say)
        report.rows.append(found[0])
        if found[1] is not None:
            report.found.append(found[1])
    for f in report.found:
        f.file = str(save_schedule(f.schedule, plan.save_dir))
    return report


def _explore_one(
    name: str, subject: campaign.Subject, plan: ExplorePlan, schedules: int, depth: int, say: Say
) -> tuple[tuple[Any, ...], Any]:
    """One scenario explored: its table row, and its failing schedule (or None)."""
    if plan.strategy == "hypothesis":
        report = campaign.explore_with_hypothesis(name, subject, schedules, plan.seed)
    else:
        strategy = campaign.strategy_named(plan.strategy, plan.seed, depth, None if plan.preemptions < 0 else plan.preemptions)
        report = campaign.explore(name, subject, strategy, schedules if plan.strategy != "dfs" or plan.budget else 10**9)
    verdict = "FAIL" if report.found else ("exhausted" if report.exhausted else "pass")
    if plan.strategy == "hypothesis" and report.schedules:
        say(f"  {report.schedules} schedules, Hypothesis's shrinking runs included")
    if plan.strategy == "pct" and report.schedules:
        say(campaign.pct_budget_line(report.threads, report.max_decisions, depth))
    for note in report.notes:
        say(f"  note: {note}")
    row = (name, report.strategy, report.schedules, report.max_decisions, f"{report.seconds:.2f}", verdict)
    return row, report.found


# ----------------------------------------------------------------------------- explore --faults


@dataclass
class FaultsRun:
    """``kvproof explore --faults``: every (thread, decision point) pair faulted once: clean, torn, poisoned or broken."""

    kind = "explore-faults"
    target: str
    reports: list[Any]
    skipped = ""

    @property
    def broken(self) -> list[tuple[Any, ...]]:
        return [(r.scenario, *b) for r in self.reports for b in r.broken]

    @property
    def ok(self) -> bool:
        return not self.broken

    def rows(self) -> list[tuple[Any, ...]]:
        from .faults import OUTCOMES

        return [(r.scenario, r.pairs, *(r.count(o) for o in OUTCOMES)) for r in self.reports]

    def render(self, say: Say, table: DrawTable) -> None:
        table(
            ("scenario", "pairs tried", "clean", "torn-but-consistent", "poisoned", "broken"),
            self.rows(),
            numeric=(1, 2, 3, 4, 5),
        )
        for name, thread, at, point, problem in self.broken:
            say(f"BROKEN {name}: a fault in {thread} at decision {at} ({point}): {problem}")
            say(f"  replay: kvproof explore {name} --faults --target {self.target}")

    def summary_line(self) -> str:
        from .faults import summary

        return summary(self.reports)

    def to_json(self) -> dict[str, Any]:
        from .faults import OUTCOMES

        return {
            "target": self.target,
            "rows": [dict(zip(("scenario", "pairs", *OUTCOMES), r)) for r in self.rows()],
            "broken": [dict(zip(("scenario", "thread", "decision", "point", "problem"), b)) for b in self.broken],
        }


def run_faults(target: str, scenario: str | None) -> FaultsRun:
    """Fault every decision point of every thread of each scenario once (``explore --faults``)."""
    from .faults import explore_faults

    subject, names = subject_and_scenarios(target, scenario)
    return FaultsRun(subject.name, [r for r in (explore_faults(name, subject.name) for name in names) if r.pairs])


# ----------------------------------------------------------------------------- explore --real


@dataclass
class RealThreadsRun:
    """``kvproof explore --real N``: the scenarios on real threads (a failure replays only probabilistically)."""

    kind = "explore-real"
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)
    skipped = ""

    @property
    def ok(self) -> bool:
        return not self.failing

    def render(self, say: Say, table: DrawTable) -> None:
        table(("scenario", "real-thread runs", "seconds", "result"), self.rows, numeric=(1, 2))

    def summary_line(self) -> str:
        return f"explore --real: scenarios={len(self.rows)} runs={sum(r[1] for r in self.rows)} failing={len(self.failing)}"

    def to_json(self) -> dict[str, Any]:
        return {"rows": [dict(zip(("scenario", "runs", "seconds", "result"), r)) for r in self.rows], "failing": self.failing}


def run_real(target: str, scenario: str | None, runs: int, say: Say) -> RealThreadsRun:
    """Run each scenario ``runs`` times on real threads (switch interval 1e-6), with the same checks."""
    from .real_threads import explore_real

    subject, names = subject_and_scenarios(target, scenario)
    report = RealThreadsRun()
    for name in names:
        sc = campaign.scenario_named(name)
        make = subject.maker(sc.family)
        if make is None:
            continue
        ran = explore_real(name, sc.build(make), runs)
        report.rows.append((name, ran.runs, f"{ran.seconds:.2f}", "FAIL" if ran.failures else "pass"))
        for index, problems in ran.failures:
            report.failing.append(name)
            say(f"FAIL {name} on {subject.name}, real-thread run {index}: {problems[0]}")
    return report


# ----------------------------------------------------------------------------- explore --mutants


@dataclass
class MutantSweep:
    """``kvproof explore --mutants``: the gate's explorer sweep on every broken structure; each must be found."""

    kind = "explore-mutants"
    profile: Any
    seed: int
    fresh: bool
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    skipped = ""

    @property
    def ok(self) -> bool:
        return not self.missed

    def render(self, say: Say, table: DrawTable) -> None:
        if not self.fresh:
            say(
                "(the saved regressions, stateful_tests/explore/regressions/, are replayed first: a structure one of "
                "them catches shows 0 schedules; --fresh explores from nothing)"
            )
        p = self.profile
        table(
            ("broken structure", "scenario", "kind", "schedules", "seconds", "token"),
            self.rows,
            numeric=(3, 4),
            title=f"the gate's explorer rows ({p.name} profile: {p.explore.schedules} schedules per "
            f"scenario and strategy, seed {self.seed})",
        )

    def summary_line(self) -> str:
        return f"explore: mutants={len(self.rows)} found={len(self.rows) - len(self.missed)} missed={len(self.missed)}" + (
            f" ({', '.join(self.missed)})" if self.missed else ""
        )

    def to_json(self) -> dict[str, Any]:
        keys = ("mutant", "scenario", "kind", "schedules", "seconds", "token")
        return {"profile": self.profile.name, "seed": self.seed, "rows": [dict(zip(keys, r)) for r in self.rows]}


def run_mutants(profile: Any, seed: int, fresh: bool, warn: Say) -> MutantSweep:
    """The gate's explorer sweep on every broken structure (the saved regressions first, unless ``fresh``)."""
    report = MutantSweep(profile, seed, fresh)
    for name in campaign.broken_subjects():
        subject = campaign.subject_for(name)
        swept = campaign.sweep(
            subject, subject.families, profile.explore.schedules, seed, profile.explore.pct_depth, regressions=not fresh
        )
        f = swept.found
        if swept.regression_failure:
            warn(f"explore: {swept.regression_failure}")
        if f is None:
            report.missed.append(name)
        report.rows.append(
            (
                name,
                f.schedule.scenario if f else "-",
                f.schedule.kind if f else "NOT FOUND",
                swept.schedules,
                f"{swept.seconds:.2f}",
                f.token if f else "-",
            )
        )
    return report

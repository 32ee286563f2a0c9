"""Explore a scenario: run schedules under a strategy, stop at the first failure, shrink it, and name it by a token.

- ``SCENARIOS``: every explorable race, by name (``tree_scenarios``, ``tracker_scenarios``).
- ``subject_for(target)``: what each family of scenarios runs on: a concurrent tree with lanes, a
  thread-pool indexer, or a slot tracker (the embedded ones for ``impl``; a broken one by its name).
- ``explore(...)``: schedules of one scenario under one strategy, within a budget; a failure is
  shrunk (``shrink_schedule``: its decisions cut short and its preemptions undone while it fails
  the same way) and returned as a ``token.Schedule``.
- ``replay_schedule(schedule)``: run a token or schedule file again, deterministically.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .dfs import DFS
from .hypothesis_choice import HypothesisChoice
from .pct import PCT, budget_for
from .programs import HistoryProgram, kind_of
from .random_walk import RandomWalk
from .replay import Divergence, Replay
from .scheduler import RunResult, Scheduler, Strategy
from .token import Schedule


@dataclass(frozen=True)
class ExploreScenario:
    name: str
    family: str  # "lanes", "pool" (the tree's) or "tracker"
    story: str
    build: Callable[[Callable[[], Any]], HistoryProgram]


def _scenarios() -> dict[str, ExploreScenario]:
    from . import tracker_scenarios, tree_scenarios

    out = {}
    for name, (layout, family) in tree_scenarios.LAYOUTS.items():
        out[name] = ExploreScenario(name, family, _story(layout), functools.partial(tree_scenarios.tree_program, name))
    for name, layout in tracker_scenarios.LAYOUTS.items():
        out[name] = ExploreScenario(name, "tracker", _story(layout), functools.partial(tracker_scenarios.tracker_program, name))
    return out


def _story(fn: Callable[..., Any]) -> str:
    return " ".join((fn.__doc__ or "").split())


SCENARIOS = _scenarios()

RANDOM = "random-ops"
"""Seeded random workloads: ``random-ops.s<SEED>`` is ``tree_scenarios.random_workload(SEED)`` (a valid token scenario)."""


def scenario_named(name: str) -> ExploreScenario:
    """A fixed scenario, or a seeded random workload ``random-ops.s<SEED>`` (KeyError if neither)."""
    if name in SCENARIOS:
        return SCENARIOS[name]
    prefix = f"{RANDOM}.s"
    if name.startswith(prefix) and name[len(prefix) :].isdigit():
        from . import tree_scenarios

        seed = int(name[len(prefix) :])
        return ExploreScenario(
            name,
            "lanes",
            f"a random workload of seed {seed} on three lanes and a reader (tree_scenarios.random_workload)",
            lambda make: tree_scenarios.workload_program(make, tree_scenarios.random_workload(seed)),
        )
    raise KeyError(f"unknown scenario {name!r}: one of {', '.join(SCENARIOS)}, or {prefix}SEED")


# ----------------------------------------------------------------------------- subjects


@dataclass(frozen=True)
class Subject:
    """What the scenarios of each family run on (None: that family does not apply, with ``why``)."""

    name: str
    lanes: Callable[[], Any] | None = None
    pool: Callable[[], Any] | None = None
    tracker: Callable[[], Any] | None = None
    why: str = ""

    def maker(self, family: str) -> Callable[[], Any] | None:
        return {"lanes": self.lanes, "pool": self.pool, "tracker": self.tracker}[family]

    @property
    def families(self) -> tuple[str, ...]:
        """The gate row whose sweep this subject belongs to: the tracker's, or the tree's (lanes and pool)."""
        return ("tracker",) if self.tracker else ("lanes", "pool")


def broken_subjects() -> dict[str, type]:
    """Every deliberately broken concurrent structure, by name (a valid token target)."""
    from ..sequences import mutants as sequence_mutants
    from ..tree import impl_mutants

    tracker = [
        sequence_mutants.BookBeforeSlotLock,
        sequence_mutants.MarkSkipsPublish,
        sequence_mutants.MarkIsLost,
        sequence_mutants.PublishAfterUnlock,
    ]
    return {impl_mutants.short_name(m): m for m in [*impl_mutants.EXPLORER_MUTANTS, *impl_mutants.POOL_MUTANTS, *tracker]}


def subject_for(name: str, factory: Callable[..., Any] | None = None) -> Subject:
    """Resolve a target: ``impl``, a broken structure's name, or a tree factory (a class or ``module:Factory``)."""
    from ...impl.indexer import ThreadPoolIndexer
    from ...impl.radix_tree import ConcurrentRadixTree
    from ...impl.slot_tracker import ConcurrentSlotTracker

    if name in ("impl", "impl-lanes", "impl-pool"):
        return Subject(
            "impl",
            functools.partial(ConcurrentRadixTree, lanes=3),
            functools.partial(ThreadPoolIndexer, threads=2),
            functools.partial(ConcurrentSlotTracker, None),
        )
    broken_by_name = broken_subjects()
    broken = broken_by_name.get(name)
    if broken is not None:
        factory = broken
    elif isinstance(factory, type) and factory in broken_by_name.values():
        from ..tree.impl_mutants import short_name

        name = short_name(factory)  # a broken structure named by module:Class gets its short name in tokens
    if factory is None:
        from ..harness.targets import load_target

        target = load_target(name)
        if target.factory is None:
            return Subject(name, why=target.reason)
        factory = target.factory
    if isinstance(factory, type):
        if issubclass(factory, ConcurrentRadixTree):
            tree_class = factory
            return Subject(
                name, functools.partial(tree_class, lanes=3), lambda: ThreadPoolIndexer(threads=2, tree=tree_class(lanes=2))
            )
        if issubclass(factory, ThreadPoolIndexer):
            return Subject(name, pool=functools.partial(factory, threads=2))
        if issubclass(factory, ConcurrentSlotTracker):
            return Subject(name, tracker=functools.partial(factory, None))
    return _probed(name, factory)


def _probed(name: str, factory: Callable[[], Any]) -> Subject:
    """A tree from a factory: lanes if it has three, a pool if it pipelines events."""
    from ..harness import targets
    from ..tree.pipeline import is_pool

    probe = factory()
    try:
        lanes = len(getattr(probe, "lanes", ())) >= 3 and callable(getattr(probe, "lane", None))
        pool = is_pool(probe)
    finally:
        targets.dispose(probe)
    if not (lanes or pool):
        return Subject(name, why=f"{name} has neither three lanes (lane(i)) nor event threads (submit/flush) to interleave")
    return Subject(name, factory if lanes else None, factory if pool else None)


# ----------------------------------------------------------------------------- strategies


STRATEGIES = ("pct", "random", "dfs")


def strategy_named(name: str, seed: int, depth: int = 3, bound: int | None = 2) -> Strategy:
    if name == "pct":
        return PCT(seed, depth)
    if name == "random":
        return RandomWalk(seed)
    if name == "dfs":
        return DFS(bound)
    raise ValueError(f"unknown strategy {name!r}: one of {', '.join(STRATEGIES)}")


# ----------------------------------------------------------------------------- exploring


@dataclass
class Found:
    """A failing schedule, shrunk: its token (or file), what it showed, and the history that shows it."""

    schedule: Schedule
    problems: list[str]
    history: list[str]
    index: int  # which schedule of the campaign failed first (0-based)
    seconds: float  # until it was found
    original_decisions: int
    preemptions: int
    file: str = ""  # the schedule file it came from (a regression), if any

    @property
    def token(self) -> str:
        """The token, or (a schedule with a drawn workload has none) the schedule file and target."""
        if self.schedule.workload is None:
            return self.schedule.token()
        return self.file or "<schedule file>"  # the file names its target

    @property
    def replay(self) -> str:
        return f"kvproof replay schedule {self.token}"


@dataclass
class Exploration:
    scenario: str
    target: str
    strategy: str
    schedules: int = 0
    max_decisions: int = 0
    threads: int = 0
    seconds: float = 0.0
    exhausted: bool = False
    found: Found | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.found is None

    def record(self, result: RunResult) -> None:
        """Count one schedule that ran."""
        self.schedules += 1
        self.max_decisions = max(self.max_decisions, len(result.decisions))
        self.threads = max(self.threads, result.contenders)


def _kind(result: RunResult) -> str:
    return kind_of(result.problems[0]) if result.problems else result.outcome.value


def run_schedule(program: HistoryProgram, strategy: Strategy, max_steps: int = 20_000) -> RunResult:
    return Scheduler(strategy, max_steps).run(program)


class _PreemptionCounter(Replay):
    def __init__(self, decisions: list[int]) -> None:
        super().__init__(decisions)
        self.count = 0

    def choose(self, runnable, current):
        pick = super().choose(runnable, current)
        if current is not None and pick != current:
            self.count += 1
        return pick


def replay_counted(program: HistoryProgram, decisions: list[int]) -> tuple[RunResult, int]:
    """Replay ``decisions`` (``Divergence`` if they do not fit); return the result and how many of them preempted."""
    counter = _PreemptionCounter(decisions)
    return run_schedule(program, counter), counter.count


def fails_alike(program: HistoryProgram, decisions: list[int], kind: str) -> RunResult | None:
    """Replay ``decisions``; return the result if it fails with the same kind, else None (a divergence is not a failure)."""
    try:
        result, _ = replay_counted(program, decisions)
    except Divergence:
        return None
    return result if result.failed and _kind(result) == kind else None


def shrink_schedule(program: HistoryProgram, decisions: list[int], kind: str) -> list[int]:
    """Cut a failing schedule short and undo preemptions while it fails with the same kind.

    First the shortest prefix that still fails (past a prefix nothing preempts), then, until nothing
    changes, each decision (last first) dropped, or made to continue the thread of the one before it.
    """
    best = list(decisions)
    for length in range(len(best) + 1):
        if fails_alike(program, best[:length], kind):
            best = best[:length]
            break
    changed = True
    while changed:
        changed = False
        for k in range(len(best) - 1, -1, -1):
            if k >= len(best):
                continue
            trials = [best[:k] + best[k + 1 :]]  # drop the decision (the later ones shift up)
            if k and best[k] != best[k - 1]:
                trials.append(best[:k] + [best[k - 1]] + best[k + 1 :])  # continue the previous thread instead
            for trial in trials:
                if fails_alike(program, trial, kind):
                    best, changed = trial, True
                    break
    while best and fails_alike(program, best[:-1], kind):
        best = best[:-1]
    return best


def explore(
    scenario: str,
    subject: Subject,
    strategy: Strategy,
    budget: int,
    seconds: float | None = None,
    shrink: bool = True,
    offset: int = 0,
) -> Exploration:
    """Run up to ``budget`` schedules of ``scenario`` (or until ``seconds`` pass); stop at the first failure.

    ``offset``: how many schedules ``strategy`` already ran on this scenario (a sweep's second pass goes on with the
    same strategy object), so that a schedule's number counts from the strategy's first."""
    sc = scenario_named(scenario)
    report = Exploration(scenario, subject.name, strategy.name)
    make = subject.maker(sc.family)
    if make is None:
        report.notes.append(subject.why or f"{subject.name} has no {sc.family} to run {scenario} on")
        return report
    program = sc.build(make)
    start = time.perf_counter()
    for index in range(budget):
        if strategy.exhausted():
            report.exhausted = True
            break
        if seconds is not None and time.perf_counter() - start > seconds:
            report.notes.append(f"stopped after {seconds:g} s")
            break
        result = run_schedule(program, strategy)
        report.record(result)
        if result.failed:
            found_at = time.perf_counter() - start
            kind = _kind(result)
            decisions = shrink_schedule(program, result.decisions, kind) if shrink else list(result.decisions)
            replayed, preempted = replay_counted(program, decisions)  # leaves the shrunk schedule's history behind
            final = replayed if replayed.failed and _kind(replayed) == kind else result
            schedule = Schedule(
                scenario,
                subject.name,
                f"{strategy.name}#{offset + index}",
                tuple(decisions),
                kind=kind,
                detail=final.problems[0].split("\n", 1)[0],
            )
            report.found = Found(
                schedule, final.problems, program.recorder.describe(), offset + index, found_at, len(result.decisions), preempted
            )
            break
    else:
        report.exhausted = strategy.exhausted()
    report.seconds = time.perf_counter() - start
    return report


def replay_schedule(schedule: Schedule) -> tuple[RunResult, HistoryProgram]:
    """Run a token or schedule file's schedule again (``Divergence`` if the code under it has changed)."""
    family = family_of(schedule)
    subject = subject_for(schedule.target)
    make = subject.maker(family)
    if make is None:
        raise KeyError(subject.why or f"{schedule.target} cannot run {schedule.scenario}")
    program = program_for(schedule, make)
    return run_schedule(program, Replay(list(schedule.decisions))), program


def pct_budget_line(threads: int, decisions: int, depth: int) -> str:
    """The PCT guarantee for a program of this size, in words (printed with every PCT campaign)."""
    from .pct import depth_bound

    p = depth_bound(threads, decisions, depth)
    return (
        f"PCT depth {depth}: n={threads} threads, k={decisions} decisions: each schedule finds a depth-{depth} bug "
        f"with probability >= 1/(n*k^{depth - 1}) = {p:.2g}; {budget_for(threads, decisions, depth)} schedules "
        f"give 95% confidence"
    )


def explore_with_hypothesis(scenario: str, subject: Subject, examples: int, seed: int) -> Exploration:
    """Let Hypothesis draw the schedule (and, for ``random-ops``, the workload too) for ``examples`` runs.

    On a failure Hypothesis shrinks what it drew: the workload toward fewer, shorter operations and the
    schedule toward fewer preemptions (index 0 is the running thread), together. The result is a schedule
    file's worth of data: a workload has no token, so ``Found.schedule.workload`` carries it.
    """
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    from . import tree_scenarios

    drawn_workload = scenario == RANDOM
    sc = None if drawn_workload else scenario_named(scenario)
    family = "lanes" if drawn_workload else sc.family  # type: ignore[union-attr]
    report = Exploration(scenario, subject.name, "hypothesis")
    make = subject.maker(family)
    if make is None:
        report.notes.append(subject.why or f"{subject.name} has no {family} to run {scenario} on")
        return report
    last: list[tuple[RunResult, HistoryProgram, Any]] = []
    workloads = tree_scenarios.workloads() if drawn_workload else st.none()

    @hypothesis_seed(seed)  # the draws depend on the seed alone (derandomize would hash this function's source)
    @settings(max_examples=examples, database=None, deadline=None, print_blob=False, suppress_health_check=list(HealthCheck))
    @given(workloads, st.data())
    def schedules(workload: Any, data: Any) -> None:
        program = tree_scenarios.workload_program(make, workload) if drawn_workload else sc.build(make)  # type: ignore[union-attr]
        result = run_schedule(program, HypothesisChoice(data))
        report.record(result)
        last[:] = [(result, program, workload)]
        assert not result.failed, result.problems[0]

    start = time.perf_counter()
    try:
        schedules()
    except Exception as exc:  # the failure Hypothesis shrank, or its own complaint (a flaky schedule)
        if not last or not last[0][0].failed:
            report.notes.append(f"Hypothesis stopped: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            report.seconds = time.perf_counter() - start
            return report
        result, program, workload = last[0]
        kind = _kind(result)
        schedule = Schedule(
            scenario,
            subject.name,
            f"hypothesis.s{seed}",
            tuple(result.decisions),
            workload=workload,
            kind=kind,
            detail=result.problems[0].split("\n", 1)[0],
        )
        history = program.recorder.describe()
        _, preempted = replay_counted(program, list(result.decisions))
        report.found = Found(
            schedule, result.problems, history, report.schedules, time.perf_counter() - start, len(result.decisions), preempted
        )
    report.seconds = time.perf_counter() - start
    return report


def family_of(schedule: Schedule) -> str:
    """Which structure a schedule runs on: its scenario's family, or the lanes for a drawn workload (KeyError if unknown)."""
    return "lanes" if schedule.workload is not None else scenario_named(schedule.scenario).family


def program_for(schedule: Schedule, make: Callable[[], Any]) -> HistoryProgram:
    """The program a schedule runs: its scenario's, or (a drawn workload) the workload's."""
    if schedule.workload is not None:
        from . import tree_scenarios

        return tree_scenarios.workload_program(make, schedule.workload)
    return scenario_named(schedule.scenario).build(make)


# ----------------------------------------------------------------------------- sweeps (the gate's rows)


@dataclass
class Sweep:
    """Every scenario of some families under PCT and random walk, regressions first; stops at the first failure."""

    subject: str
    explorations: list[Exploration] = field(default_factory=list)
    regressions: int = 0
    regression_found: Found | None = None  # a saved schedule that fails on this subject
    regression_failure: str = ""  # a saved schedule that no longer fits its own target (a divergence)
    inapplicable: int = 0  # saved schedules that another structure's turns do not fit (skipped)
    seconds: float = 0.0

    @property
    def found(self) -> Found | None:
        return self.regression_found or next((e.found for e in self.explorations if e.found), None)

    @property
    def schedules(self) -> int:
        return sum(e.schedules for e in self.explorations)


def families_of(subject: Subject, families: tuple[str, ...]) -> list[str]:
    return [name for name, sc in SCENARIOS.items() if sc.family in families and subject.maker(sc.family) is not None]


def replay_regressions(subject: Subject, families: tuple[str, ...], report: Sweep) -> None:
    """Replay every saved schedule of these families on ``subject`` (stopping at the first that fails)."""
    from .token import load_schedule, regression_files

    for path in regression_files():
        saved = load_schedule(path)
        try:
            family = family_of(saved)
        except KeyError:
            report.regression_failure = f"regression {path.name} names an unknown scenario {saved.scenario!r}"
            return
        make = subject.maker(family) if family in families else None
        if make is None:
            continue
        program = program_for(saved, make)
        try:
            result, preempted = replay_counted(program, list(saved.decisions))
        except Divergence as exc:
            if subject.name == saved.target:  # on its own target it must still fit
                report.regression_failure = f"regression {path.name} no longer fits its own target {saved.target}: {exc}"
                return
            report.inapplicable += 1  # another structure takes other turns: this schedule does not apply to it
            continue
        report.regressions += 1
        if result.failed:
            again = Schedule(
                saved.scenario,
                subject.name,
                saved.strategy,
                saved.decisions,
                saved.workload,
                kind=_kind(result),
                detail=result.problems[0].split("\n", 1)[0],
            )
            report.regression_found = Found(
                again, result.problems, program.recorder.describe(), 0, 0.0, len(saved.decisions), preempted, str(path)
            )
            return


FIRST_PASS = 50
"""Schedules each scenario and strategy gets in a sweep's first pass (every fresh find of the broken structures came
within 44 schedules of its scenario; kvproof issue 32)."""


def sweep(
    subject: Subject,
    families: tuple[str, ...],
    schedules: int,
    seed: int,
    depth: int = 3,
    strategies: tuple[str, ...] = ("pct", "random"),
    regressions: bool = True,
) -> Sweep:
    """The gate's explorer row: regressions, then each scenario under each strategy, until the first failure.

    The scenarios are run in two passes: the first ``FIRST_PASS`` schedules of every scenario and strategy, then the
    rest of each budget, each strategy going on where its first pass stopped. A sweep that finds nothing runs the
    same schedules as one pass would; a shallow bug in a late scenario is found without first exhausting the
    scenarios before it (a fresh sweep of a broken structure: 3,600 schedules down to about 600).
    """
    start = time.perf_counter()
    report = Sweep(subject.name)
    if regressions:
        replay_regressions(subject, families, report)
    if report.regression_failure or report.regression_found:
        report.seconds = time.perf_counter() - start
        return report
    first = min(FIRST_PASS, schedules)
    runs = [(name, strategy_named(strategy, seed, depth)) for name in families_of(subject, families) for strategy in strategies]
    firsts = []
    for name, strategy in runs:
        exploration = explore(name, subject, strategy, first)
        firsts.append(exploration)
        if exploration.found:
            report.explorations.extend(firsts)
            report.seconds = time.perf_counter() - start
            return report
    for (name, strategy), exploration in zip(runs, firsts):
        if schedules > first and not exploration.exhausted:
            exploration = merged(exploration, explore(name, subject, strategy, schedules - first, offset=exploration.schedules))
        report.explorations.append(exploration)
        if exploration.found:
            break
    report.seconds = time.perf_counter() - start
    return report


def merged(first: Exploration, rest: Exploration) -> Exploration:
    """One scenario's exploration under one strategy, from its two passes."""
    return dataclasses.replace(
        rest,
        schedules=first.schedules + rest.schedules,
        max_decisions=max(first.max_decisions, rest.max_decisions),
        threads=max(first.threads, rest.threads),
        seconds=first.seconds + rest.seconds,
        notes=first.notes + rest.notes,
    )


def sweep_row_detail(report: Sweep) -> tuple[str, str]:
    """The gate row's failure detail and replay command for a sweep that found something ('' when none)."""
    if report.regression_failure:
        return report.regression_failure, ""
    found = report.found
    if found is None:
        return "", ""
    how = (
        f"  a saved regression ({found.schedule.strategy})"
        if found is report.regression_found
        else f"  schedule {found.index} of {found.schedule.strategy.split('#')[0]}, shrunk to {len(found.schedule.decisions)} "
        f"decisions ({found.preemptions} preemptions) from {found.original_decisions}"
    )
    lines = [
        f"{found.schedule.scenario}: {found.problems[0].splitlines()[0]}",
        how,
        *("  " + line for line in found.problems[0].splitlines()[1:12]),
    ]
    return "\n".join(lines), found.replay

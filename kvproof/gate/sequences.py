"""The gate's rows for the active-sequence state (the slot tracker): spec laws, the three-way state
machine, the upstream values, bad input, the real-thread stress slice, the negative controls and
the conformance slice against the real ``python -m dynamo.slot_tracker``. Sizes come from the
profile's ``sequences`` budget.

None of these checks uses ``ctx.factory`` (that is the radix-tree target); each runs the spec,
the reference and the concurrent implementation of the slot tracker.
"""

from __future__ import annotations

from typing import Any

from . import Check, Context, Failed, Row, Skip


def _spec_laws(ctx: Context, row: Row) -> None:
    from ..stateful_tests.sequences.laws import LAWS, run_laws, sharing_histories
    from ..stateful_tests.sequences.model import TARGETS

    makes = list(TARGETS.values())
    for group in sharing_histories(LAWS):
        row.examples += run_laws(group, ctx.profile.sequences.law_examples, ctx.seed, makes)
        row.checks += len(group) * len(makes)


def _machine(ctx: Context, row: Row) -> None:
    from ..stateful_tests.harness.seeding import run_machine
    from ..stateful_tests.sequences.machine import sequence_machine_for, sequence_machine_settings

    machine = sequence_machine_for()
    run_machine(
        machine, sequence_machine_settings(ctx.profile.sequences.machine_examples, ctx.profile.sequences.machine_steps), ctx.seed
    )
    row.examples = len(machine.runs)
    row.checks = sum(run["_checks"] for run in machine.runs)


def _values(ctx: Context, row: Row) -> None:
    from ..stateful_tests.sequences.model import TARGETS
    from ..stateful_tests.sequences.steps import run_value_scenario
    from ..stateful_tests.sequences.values import VALUE_SCENARIOS

    problems = []
    for name, factory in TARGETS.items():
        for scenario in VALUE_SCENARIOS:
            row.examples += 1
            row.checks += len(scenario.steps)
            problems += [f"{name}: {scenario.name}: {p}" for p in run_value_scenario(factory, scenario)]
    if problems:
        raise Failed(f"{len(problems)} steps differ; first: {problems[0]}")


def _bad_input(ctx: Context, row: Row) -> None:
    from ..stateful_tests.sequences.bad_input import check_tracker_bad_input
    from ..stateful_tests.sequences.model import TARGETS

    problems = []
    for name, factory in TARGETS.items():
        tried, found = check_tracker_bad_input(factory)
        row.checks += tried
        row.examples += tried
        problems += [f"{name}: {p}" for p in found]
    if problems:
        raise Failed(f"{len(problems)} problems; first: {problems[0]}")


def _stress(ctx: Context, row: Row) -> None:
    from ..stateful_tests.sequences.stress import stress

    rounds, ops = ctx.profile.sequences.stress_rounds, ctx.profile.sequences.stress_ops
    for k in range(rounds):
        report = stress(threads=8, ops=ops, seed=ctx.seed + k)
        row.examples += 1
        row.checks += report.ops
        if report.problems:
            row.replay = f"kvproof stress sequences --threads 8 --ops {ops} --seed {ctx.seed + k}"
            raise Failed(f"{report.summary_line()}; first: {report.problems[0]}")


def _tracker_subject() -> Any:
    import functools

    from ..stateful_tests.explore.campaign import Subject
    from ..stateful_tests.sequences import model

    tracker = model.TARGETS["impl"]
    name = "impl" if tracker.__module__.startswith("kvproof.impl") else tracker.__name__
    return Subject(name, tracker=functools.partial(tracker, None))


def _explore(ctx: Context, row: Row) -> None:
    from .tree import explore_row

    explore_row(ctx, row, _tracker_subject(), ("tracker",))


def _faults(ctx: Context, row: Row) -> None:
    from .tree import fault_row

    subject = _tracker_subject()
    fault_row(row, subject, ("tracker",), subject.name)


def _controls(ctx: Context, row: Row) -> None:
    from ..stateful_tests.harness.controls import caught_as_expected
    from ..stateful_tests.sequences.laws import LAWS_BY_NAME, run_laws
    from ..stateful_tests.sequences.mutants import CAUGHT_BY, LAW_OF, MUTANTS, law_failure
    from ..stateful_tests.sequences.steps import run_value_scenario
    from ..stateful_tests.sequences.values import VALUE_SCENARIOS

    missed = []
    for mutant in MUTANTS:
        if "values" in CAUGHT_BY[mutant]:
            row.checks += 1
            if not any(run_value_scenario(mutant, s) for s in VALUE_SCENARIOS):
                missed.append(f"{mutant.__name__} (values)")
        if "laws" in CAUGHT_BY[mutant]:
            row.checks += 1
            law = LAWS_BY_NAME[LAW_OF[mutant]]
            why = caught_as_expected(lambda: run_laws([law], 200, ctx.seed, [mutant], shrink=False), law_failure(mutant))
            if why is not None:  # the law must fail on the mutant by its own assertion, not by any error
                missed.append(f"{mutant.__name__} ({LAW_OF[mutant]}: {why})")
        row.examples += 1
    if missed:
        raise Failed(f"{len(missed)} negative controls not caught: {', '.join(missed)}")


def _conformance_applies(ctx: Context) -> str | None:
    from ..stateful_tests.sequences.oracle import oracle_unavailable

    return oracle_unavailable()


def _conformance(ctx: Context, row: Row) -> None:
    from ..stateful_tests.sequences.oracle import conform_slot_tracker, oracle_unavailable

    reason = oracle_unavailable()
    if reason:
        raise Skip(reason)
    scenarios = ctx.profile.sequences.conform_scenarios
    report = conform_slot_tracker(scenarios, ctx.seed)
    row.examples, row.checks = report.scenarios, report.reads
    if report.mismatches:
        m = report.mismatches[0]
        row.replay = f"kvproof conform slot-tracker --seed {ctx.seed} --scenarios {scenarios} --scenario {m.scenario}"
        raise Failed(
            f"{len(report.mismatches)} mismatches in {report.scenarios} scenarios; first:\n{m.report(ctx.seed, scenarios)}"
        )


def _selection_applies(ctx: Context) -> str | None:
    from ..stateful_tests.sequences.selection_oracle import unavailable

    return unavailable()


def trace_calls(requests: int) -> list[Any]:
    """The slot tracker calls a router makes on the first ``requests`` requests of the shipped Mooncake slice
    (the tree room's router simulation; the sequence room may not import it)."""
    from ..reference.sequences import SlotTracker
    from ..stateful_tests.tree.router import RouterPlan
    from ..stateful_tests.tree.trace_check import check_trace
    from ..stateful_tests.tree.traffic import default_trace, mooncake_requests

    report = check_trace(
        mooncake_requests(default_trace(), limit=requests),
        RouterPlan(workers=8, capacity=500),
        {},
        {"reference": SlotTracker},
        keep_calls=True,
    )
    return report.calls


def _selection(ctx: Context, row: Row) -> None:
    from ..stateful_tests.sequences.model import TARGETS
    from ..stateful_tests.sequences.selection_oracle import conform_selection, conform_selection_trace

    scenarios = ctx.profile.sequences.selection_scenarios
    reference = TARGETS["reference"]
    report = conform_selection(scenarios, ctx.seed, model_factory=reference)
    trace = conform_selection_trace(trace_calls(ctx.profile.tree.trace_requests), reference)
    row.examples = report.scenarios + trace.scenarios
    row.checks = report.outcomes + report.reads + trace.outcomes + trace.reads
    report.left_out.merge(trace.left_out)
    row.left_out += report.left_out.lines()
    if report.mismatches or trace.mismatches:
        m = (report.mismatches or trace.mismatches)[0]
        row.replay = (
            f"kvproof conform selection --seed {ctx.seed} --scenarios {scenarios} --scenario {m.scenario}"
            if report.mismatches
            else f"kvproof conform selection --trace {ctx.profile.tree.trace_requests}"
        )
        raise Failed(
            f"{len(report.mismatches)} of {report.scenarios} scenarios and {len(trace.mismatches)} trace "
            f"mismatches; first:\n{m.report(ctx.seed, scenarios, trace=not report.mismatches)}"
        )


# ``--only`` matches a family, layer or name substring; these layers and names avoid "spec" and "vectors",
# the words that select the tree's own rows.
CHECKS: list[Check] = [
    Check(
        "sequences",
        "laws",
        "rule laws",
        _spec_laws,
        what="the active-sequence laws over random histories, on the spec, reference and concurrent trackers",
    ),
    Check(
        "sequences",
        "machine",
        "three-way state machine",
        _machine,
        what="spec, reference and concurrent trackers driven alike on a fake clock: every outcome and read equal",
    ),
    Check(
        "sequences",
        "values",
        "upstream values",
        _values,
        what="the named upstream values, experiments and rule boundaries (sequences/values.py), on the spec, reference and concurrent trackers",
    ),
    Check(
        "sequences",
        "api",
        "bad input, harmless",
        _bad_input,
        what="malformed or impossible tracker calls get the exact typed error and change nothing, on all three trackers",
    ),
    Check(
        "sequences",
        "concurrency",
        "stress (real threads)",
        _stress,
        what="the concurrent tracker under racing adds, frees and marks: no request lost or owned twice, registry equals the projection",
    ),
    Check(
        "sequences",
        "explore",
        "interleavings (explorer)",
        _explore,
        what="the concurrent tracker's races under PCT and random schedules of the controlled scheduler: every history "
        "linearizable against the reference tracker (reads per the eventually consistent registry), check() at the end",
    ),
    Check(
        "sequences",
        "explore",
        "faults mid-operation: clean or poisoned",
        _faults,
        what="an injected exception at every decision point of every thread of the tracker's race scenarios, once each: "
        "afterwards check() holds and the history is linearizable with the call whole or absent, or the tracker is "
        "poisoned and refuses every later call",
    ),
    Check(
        "sequences",
        "controls",
        "negative controls",
        _controls,
        what="each broken tracker is caught by the values or the law its table names",
    ),
    Check(
        "sequences",
        "conformance",
        "vs dynamo.slot_tracker",
        _conformance,
        _conformance_applies,
        what="the reference tracker against the real python -m dynamo.slot_tracker (HTTP and replica sync)",
        waits=True,  # its scenarios follow their timelines: a core for about 1 s of its 4
    ),
    Check(
        "sequences",
        "conformance",
        "vs the selection service's ActiveSequences",
        _selection,
        _selection_applies,
        what="the reference tracker against the Rust ActiveSequences inside dynamo._core.SelectionService: "
        "reservations, prefill completions, frees and output blocks, every outcome and every rank's load and "
        "potential load compared, on the slot tracker's scenarios and the Mooncake trace's tracker calls",
    ),
]

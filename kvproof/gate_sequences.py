"""The gate's rows for the active-sequence state (the slot tracker): spec laws, the three-way state
machine, the upstream values, bad input, the real-thread stress slice, the negative controls and
the conformance slice against the real ``python -m dynamo.slot_tracker``.

None of these checks uses ``ctx.factory`` (that is the radix-tree target); each runs the spec,
the reference and the concurrent implementation of the slot tracker. The ``ci`` profile is
deterministic and sized for a 2-core machine; ``deep`` explores more from ``ctx.seed``.
"""

from __future__ import annotations

from .gate import Check, Context, Failed, Row, Skip


def _scale(ctx: Context, ci: int, deep: int) -> int:
    return ci if ctx.profile.name == "ci" else deep


def _spec_laws(ctx: Context, row: Row) -> None:
    from .stateful_tests.sequences.laws import LAWS, run_law

    for law in LAWS:
        row.examples += run_law(law, max(20, ctx.profile.law_examples // 3), ctx.seed)
        row.checks += 1


def _machine(ctx: Context, row: Row) -> None:
    from .stateful_tests.harness.seeding import run_machine
    from .stateful_tests.sequences.machine import sequence_machine_for, sequence_machine_settings

    machine = sequence_machine_for()
    run_machine(machine, sequence_machine_settings(ctx.profile.machine_examples, ctx.profile.machine_steps), ctx.seed)
    row.examples = len(machine.runs)
    row.checks = sum(run["_checks"] for run in machine.runs)


def _values(ctx: Context, row: Row) -> None:
    from .stateful_tests.sequences.model import TARGETS
    from .stateful_tests.sequences.values import VALUE_SCENARIOS, run_value_scenario

    problems = []
    for name, factory in TARGETS.items():
        for scenario in VALUE_SCENARIOS:
            row.examples += 1
            row.checks += len(scenario.steps)
            problems += [f"{name}: {scenario.name}: {p}" for p in run_value_scenario(factory, scenario)]
    if problems:
        raise Failed(f"{len(problems)} steps differ; first: {problems[0]}")


def _bad_input(ctx: Context, row: Row) -> None:
    from .stateful_tests.sequences.bad_input import check_bad_input
    from .stateful_tests.sequences.model import TARGETS

    problems = []
    for name, factory in TARGETS.items():
        tried, found = check_bad_input(factory)
        row.checks += tried
        row.examples += tried
        problems += [f"{name}: {p}" for p in found]
    if problems:
        raise Failed(f"{len(problems)} problems; first: {problems[0]}")


def _stress(ctx: Context, row: Row) -> None:
    from .stateful_tests.sequences.stress import stress

    rounds, ops = _scale(ctx, 3, 12), _scale(ctx, 400, 1500)
    for k in range(rounds):
        report = stress(threads=8, ops=ops, seed=ctx.seed + k)
        row.examples += 1
        row.checks += report.ops
        if report.problems:
            row.replay = (f"python -c \"from kvproof.stateful_tests.sequences.stress import stress; "
                          f"print(stress(threads=8, ops={ops}, seed={ctx.seed + k}).problems)\"")
            raise Failed(f"{report.summary()}; first: {report.problems[0]}")


def _controls(ctx: Context, row: Row) -> None:
    from .stateful_tests.sequences.mutants import CAUGHT_BY, LAW_OF, MUTANTS
    from .stateful_tests.sequences.laws import LAWS_BY_NAME, run_law
    from .stateful_tests.sequences.values import VALUE_SCENARIOS, run_value_scenario

    missed = []
    for mutant in MUTANTS:
        if "values" in CAUGHT_BY[mutant]:
            row.checks += 1
            if not any(run_value_scenario(mutant, s) for s in VALUE_SCENARIOS):
                missed.append(f"{mutant.__name__} (values)")
        if "laws" in CAUGHT_BY[mutant]:
            row.checks += 1
            try:
                run_law(LAWS_BY_NAME[LAW_OF[mutant]], 200, True, make=mutant, shrink=False)
                missed.append(f"{mutant.__name__} ({LAW_OF[mutant]})")
            except Exception:  # the law fails on the mutant, as it must
                pass
        row.examples += 1
    if missed:
        raise Failed(f"{len(missed)} negative controls not caught: {', '.join(missed)}")


def _conformance_applies(ctx: Context) -> str | None:
    from .stateful_tests.sequences.oracle import oracle_unavailable

    return oracle_unavailable()


def _conformance(ctx: Context, row: Row) -> None:
    from .stateful_tests.sequences.oracle import conform_slot_tracker, oracle_unavailable

    reason = oracle_unavailable()
    if reason:
        raise Skip(reason)
    scenarios = _scale(ctx, 10, 60)
    report = conform_slot_tracker(scenarios, ctx.seed)
    row.examples, row.checks = report.scenarios, report.reads
    if report.mismatches:
        m = report.mismatches[0]
        row.replay = f"kvproof conform-slot-tracker --seed {ctx.seed} --scenarios {scenarios} --scenario {m.scenario}"
        raise Failed(f"{len(report.mismatches)} mismatches in {report.scenarios} scenarios; first:\n{m.report(ctx.seed, scenarios)}")


# Layers and names avoid the words "spec" and "vectors": ``--only`` matches substrings, and the
# tree's own rows are selected by those words.
CHECKS: list[Check] = [
    Check("laws", "sequences: rule laws", _spec_laws),
    Check("machine", "sequences: three-way state machine", _machine),
    Check("values", "sequences: upstream values", _values),
    Check("api", "sequences: bad input, harmless", _bad_input),
    Check("concurrency", "sequences: stress (real threads)", _stress),
    Check("controls", "sequences: negative controls", _controls),
    Check("conformance", "sequences: vs dynamo.slot_tracker", _conformance, _conformance_applies),
]

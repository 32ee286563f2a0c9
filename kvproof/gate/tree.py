"""The radix tree's rows of the gate: node-rule laws, observed vectors, the contract machine, API laws,
conformance with an oracle tree, and (for the embedded implementation) the lockstep twin and stress.

Every row but the node-rule laws drives the target tree (``ctx.factory``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import Check, Context, Failed, Row, Skip, embedded_only


def _spec_laws(ctx: Context, row: Row) -> None:
    from ..stateful_tests.tree.laws import LAWS, run_law

    for law in LAWS:
        row.examples += run_law(law, ctx.profile.tree.law_examples, ctx.seed)
        row.checks += 1


def _vectors(ctx: Context, row: Row) -> None:
    from ..stateful_tests.tree.steps import run_scenario
    from ..stateful_tests.tree.vectors import SCENARIOS

    problems = []
    for scenario in SCENARIOS:
        row.examples += 1
        row.checks += len(scenario.steps)
        problems += [f"{scenario.name} {p}" for p in run_scenario(ctx.factory, scenario)]
    if problems:
        raise Failed(f"{len(problems)} steps differ; first: {problems[0]}")


def _run_contract_machine(factory: Callable[[], Any], ctx: Context, row: Row) -> None:
    """Drive trees made by ``factory`` with the contract machine under the profile's budget and seed."""
    from ..stateful_tests.harness.seeding import machine_settings, run_machine
    from ..stateful_tests.tree.machine import contract_machine_for

    machine = contract_machine_for(factory)
    run_machine(machine, machine_settings(ctx.profile.tree.machine_examples, ctx.profile.tree.machine_steps), ctx.seed)
    row.examples = len(machine.runs)
    row.checks = sum(run["_checks"] for run in machine.runs)


def _contract_machine(ctx: Context, row: Row) -> None:
    _run_contract_machine(ctx.factory, ctx, row)


def _dump_rebuild(ctx: Context, row: Row) -> None:
    from ..stateful_tests.tree.api_laws import check_dump_rebuild
    from ..stateful_tests.tree.streams import generate

    for index in range(ctx.profile.tree.dump_streams):
        stream = generate(ctx.seed, index)
        row.examples += 1
        row.checks += len({tuple(q) for qs in stream.queries for q in qs}) + 1
        problems = check_dump_rebuild(ctx.factory, stream)
        if problems:
            raise Failed(f"stream {index}: {problems[0]} ({len(problems)} problems)")


def _bad_input(ctx: Context, row: Row) -> None:
    from ..stateful_tests.tree.api_laws import check_tree_bad_input

    tried, problems = check_tree_bad_input(ctx.factory, require_typed=ctx.target_name in ("reference", "impl"))
    row.checks, row.examples = tried, tried
    if problems:
        raise Failed(f"{len(problems)} problems; first: {problems[0]}")


def _conformance(ctx: Context, row: Row) -> None:
    from ..stateful_tests.harness.targets import load_target
    from ..stateful_tests.tree.conformance import conform

    oracle_name = "reference" if ctx.target_name == "dynamo" else "dynamo"
    oracle = load_target(oracle_name)
    if oracle.factory is None:
        raise Skip(oracle.reason)
    report = conform(
        ctx.factory, oracle.factory, ctx.profile.tree.conform_streams, ctx.seed,
        subject_name=ctx.target_name, oracle_name=oracle_name, max_reported=1,
    )
    row.examples, row.checks = report.streams, report.queries + report.events
    if report.mismatches:
        m = report.mismatches[0]
        row.replay = m.replay_command(ctx.target_name, oracle_name)
        raise Failed(f"{len(report.mismatches)} of {report.streams} streams differ; first:\n{m.report(ctx.target_name, oracle_name)}")


def _impl_twin(ctx: Context, row: Row) -> None:
    from ..stateful_tests.tree.twin import impl_vs_reference

    _run_contract_machine(impl_vs_reference(3), ctx, row)


def _impl_stress(ctx: Context, row: Row) -> None:
    from ..stateful_tests.tree.stress import StressConfig, run_stress

    for mode in ("strict", "chaos"):
        report = run_stress(StressConfig(ops=ctx.profile.tree.stress_ops, seed=ctx.seed, mode=mode, yield_sleep=0.05))
        row.examples += report.ops
        row.checks += report.reads + report.checkpoints
        if report.failed:
            row.replay = f"kvproof stress tree --ops {ctx.profile.tree.stress_ops} --seed {ctx.seed} --mode {mode} --yield-sleep 0.05"
            raise Failed(f"{mode}: {report.summary_line()}; first: {report.problems[0]}")


def _target_pipelines(ctx: Context) -> bool:
    """Whether the target's trees pipeline events (``submit`` and ``flush``), probed on one it makes."""
    from ..stateful_tests.harness import targets
    from ..stateful_tests.tree.pipeline import is_pool

    probe = ctx.factory()
    try:
        return is_pool(probe)
    finally:
        targets.dispose(probe)


def _pool_factory(ctx: Context) -> Callable[[], Any]:
    """The target itself when it pipelines (a pool), else the embedded thread-pool indexer."""
    from ..impl.indexer import ThreadPoolIndexer

    return ctx.factory if _target_pipelines(ctx) else (lambda: ThreadPoolIndexer(threads=4))


def _pool_relevant(ctx: Context) -> bool:
    """The embedded implementation ships the pool; any other target is checked here only if it is a pool."""
    return embedded_only(ctx) or _target_pipelines(ctx)


def _pool_pipelined(ctx: Context, row: Row) -> None:
    from ..stateful_tests.tree.pipeline import check_pipelined
    from ..stateful_tests.tree.streams import generate

    factory = _pool_factory(ctx)
    for index in range(ctx.profile.tree.pool_streams):
        stream = generate(ctx.seed, index)
        row.examples += 1
        row.checks += len(stream.ops) + len({tuple(q) for qs in stream.queries for q in qs}) + 1
        problems = check_pipelined(factory, stream)
        if problems:
            raise Failed(f"stream {index} of seed {ctx.seed}: {problems[0]} ({len(problems)} differences)")


def _conformance_applies(ctx: Context) -> str | None:
    from ..stateful_tests.harness.targets import load_target

    oracle = load_target("reference" if ctx.target_name == "dynamo" else "dynamo")
    return None if oracle.available else oracle.reason


CHECKS: list[Check] = [
    Check("tree", "spec", "node-rule laws", _spec_laws,
          what='the node rules of spec/ (cover-prefix, removal, split, extension, plans, the match walk) over random edge states; spec only, not the target'),
    Check("tree", "vectors", "observed Dynamo behaviours", _vectors,
          what='the target replays the 46 vectors observed on Dynamo 1.6.1 (crtc.md §13, §10): every outcome, score and dump'),
    Check("tree", "contract", "state machine vs contract", _contract_machine,
          what='the target driven by the contract machine: no overcount, no unexplained undercount, accepted and rejected stores, check() after every step'),
    Check("tree", "api", "dump rebuilds the tree", _dump_rebuild,
          what="the target's dump replayed into a fresh target answers every query alike"),
    Check("tree", "api", "bad input is rejected, harmless", _bad_input,
          what='malformed events, ids and queries get a typed error from the target and leave its state unchanged'),
    Check("tree", "conformance", "differential vs Dynamo", _conformance, _conformance_applies,
          what='the target against an oracle tree (Dynamo; the reference when the target is Dynamo) on random streams: outcomes, scores in both modes, dumps'),
    Check("tree", "impl", "equals reference (3 lanes, lockstep)", _impl_twin, relevant=embedded_only,
          what='the concurrent tree on 3 lanes (lazy repair) in lockstep with the reference under the contract machine'),
    Check("tree", "impl", "pool: pipelined streams, one flush", _pool_pipelined, relevant=_pool_relevant,
          what='the thread-pool indexer with events submitted, one flush, then outcomes, scores and snapshot equal to the reference'),
    Check("tree", "impl", "real-thread stress, strict + chaos", _impl_stress, relevant=embedded_only,
          what='the concurrent tree under 8 writers and 4 readers: every read within what each rank held, parity or contract at quiescence'),
]

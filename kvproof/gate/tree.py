"""The radix tree's rows of the gate: node-rule laws, observed vectors, the contract machine, API laws,
conformance with an oracle tree, and (for the embedded implementation) the lockstep twin and stress.

Every row but the node-rule laws drives the target tree (``ctx.factory``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from ..spec.rules import DEFAULT_RULES
from ..stateful_tests.harness.surface import LeftOut
from . import EMBEDDED, Check, Context, Failed, Row, Skip, embedded_only

OWN_TREES = ("reference", *EMBEDDED)
"""kvproof's own trees: held to its laws exactly, with no known finding of Dynamo's tolerated."""


def tolerates_known(ctx: Context) -> bool:
    """Known findings (docs/dynamo-findings.md) are tolerated on other trees unless ``--strict``."""
    own = ctx.target_name in OWN_TREES or ctx.target_name.startswith("reference@")
    return not own and not ctx.strict


def _judging(ctx: Context, strict: bool = False) -> str:
    """The options a printed replay command needs to judge as this row did."""
    from ..stateful_tests.tree.log import judging_options

    rules = None if ctx.rules is DEFAULT_RULES else ctx.rules.name
    return judging_options(rules, ctx.strict or strict, ctx.strict_shape)


def _capabilities(ctx: Context) -> Any:
    from ..stateful_tests.harness.targets import capabilities

    return capabilities(ctx.factory)


def _lacking(ctx: Context, dump: bool = False, ranks: bool = False) -> str | None:
    """Why a row that needs the dump and/or data-parallel ranks cannot run on the target (None: it can)."""
    caps = _capabilities(ctx)
    if dump and not caps.dump:
        return "the target has no dump_tree_as_events (ai-dynamo-runtime before 0.6.1)"
    if ranks and not caps.dp_ranks:
        return "the target keys scores by plain worker id (no data-parallel ranks; ai-dynamo-runtime before 0.6.1)"
    return None


def _needs_dump(ctx: Context) -> str | None:
    return _lacking(ctx, dump=True)


def _needs_ranks(ctx: Context) -> str | None:
    return _lacking(ctx, ranks=True)


def _needs_dump_and_ranks(ctx: Context) -> str | None:
    return _lacking(ctx, dump=True, ranks=True)


def _spec_laws(ctx: Context, row: Row) -> None:
    from ..stateful_tests.tree.laws import LAWS, run_law

    for law in LAWS:
        row.examples += run_law(law, ctx.profile.tree.law_examples, ctx.seed)
        row.checks += 1


def _vectors(ctx: Context, row: Row) -> None:
    """Replay the vectors observed on Dynamo 1.6.1; under another rule set, a vector that the reference
    answers differently under those rules is judged against the reference under them instead."""
    from ..stateful_tests.harness import lockstep
    from ..stateful_tests.harness.targets import load_target
    from ..stateful_tests.tree.steps import depends_on_rules, run_scenario, run_scenario_against
    from ..stateful_tests.tree.vectors import SCENARIOS

    under_rules = load_target("reference", ctx.rules).factory
    plain = load_target("reference").factory
    assert under_rules is not None and plain is not None
    problems, rejudged = [], []
    left_out = LeftOut()
    if not ctx.rules.exact:
        return _vectors_by_contract(ctx, row, under_rules)

    def job(scenario: Any) -> list[str]:
        if ctx.rules.variants and depends_on_rules(scenario, plain, under_rules):
            rejudged.append(scenario.name)
            return [f"{scenario.name} {p}" for p in run_scenario_against(ctx.factory, under_rules, scenario)]
        return [f"{scenario.name} {p}" for p in run_scenario(ctx.factory, scenario, left_out)]

    for scenario, found in zip(SCENARIOS, lockstep.run_each(job, SCENARIOS)):
        row.examples += 1
        row.checks += len(scenario.steps)
        problems += found
    row.left_out += left_out.lines()
    if rejudged:
        row.known.append(ctx.rules.name)
        row.notes.append(
            f"{len(rejudged)} vectors judged by the reference under {ctx.rules.name}, since their 1.6.1 "
            f"observation depends on its variants: {', '.join(rejudged)}"
        )
    if problems:
        raise Failed(f"{len(problems)} steps differ; first: {problems[0]}")


def _vectors_by_contract(ctx: Context, row: Row, under_rules: Callable[[], Any]) -> None:
    """The vectors under a rule set that is not exact (Dynamo's concurrent tree): each is a differential stream
    against the reference under the rules, judged as ``conformance`` judges (the contract always, the reference
    outside the contract's open zone, F11); the out-of-contract vectors are left out (no rule says what is right)."""
    from ..stateful_tests.harness import lockstep
    from ..stateful_tests.tree.conformance import compare_prefix
    from ..stateful_tests.tree.steps import scenario_ops
    from ..stateful_tests.tree.vectors import SCENARIOS

    left_out, problems = LeftOut(), []
    judged = []
    for scenario in SCENARIOS:
        if "out of contract" in scenario.source:
            left_out.add(
                "out-of-contract vector",
                "the contract does not say what a tree answers there, and this rule set is not exact",
                where=scenario.name,
            )
        else:
            judged.append(scenario)

    def run(scenario: Any) -> list[Any]:
        ops, queries = scenario_ops(scenario)
        return compare_prefix(ctx.factory, under_rules, ops, queries, [], left_out)[0]

    for scenario, found in zip(judged, lockstep.run_each(run, judged)):
        row.examples += 1
        row.checks += len(scenario.steps)
        row.known += [d.known for d in found if d.known is not None]
        problems += [f"{scenario.name}: [{d.label()}] {d.detail}" for d in found if d.fails(ctx.strict, ctx.strict_shape)]
    row.left_out += left_out.lines()
    row.notes += [f"{ctx.rules.name} is not exact: vectors judged as differential streams against the reference under it"]
    if problems:
        raise Failed(f"{len(problems)} vectors differ; first: {problems[0]}")


def _run_contract_machine(factory: Callable[[], Any], ctx: Context, row: Row, record: bool = False) -> None:
    """Drive trees made by ``factory`` with the contract machine under the profile's budget and seed.

    With ``record``, the failing run's calls are written as a log of Dynamo events
    (``kvproof-failures/contract-<target>-seed<seed>.jsonl``) and the row prints them with the
    ``kvproof replay log`` command, instead of Hypothesis draws.
    """
    from pathlib import Path

    from ..stateful_tests.harness.seeding import machine_settings, run_machine
    from ..stateful_tests.tree.log import Recording, file_safe
    from ..stateful_tests.tree.machine import contract_machine_for

    recording = Recording(factory)
    machine = contract_machine_for(recording if record else factory, rules=ctx.rules)
    try:
        run_machine(
            machine,
            machine_settings(ctx.profile.tree.machine_examples, ctx.profile.tree.machine_steps),
            ctx.seed,
            ctx.profile.tree.shrink_s,
        )
    except Exception as exc:
        if not record or recording.last is None:
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        path = Path("kvproof-failures") / f"{file_safe(f'contract-{ctx.target_name}-seed{ctx.seed}')}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in recording.last.lines))
        row.replay = f"kvproof replay log {path} --target {shlex.quote(ctx.target_name)}{_judging(ctx)}"
        lines = recording.last.lines
        events = "\n".join(f"    {line}" for line in lines[:12]) + (
            f"\n    ... {len(lines) - 12} more lines in the file" if len(lines) > 12 else ""
        )
        raise Failed(f"{type(exc).__name__}: {first}\n  the shrunk run as Dynamo events ({path}):\n{events}") from None
    row.examples = len(machine.runs)
    row.checks = sum(run["_checks"] for run in machine.runs)
    row.left_out += machine.left_out.lines()


def _contract_machine(ctx: Context, row: Row) -> None:
    _run_contract_machine(ctx.factory, ctx, row, record=True)


def _dump_rebuild(ctx: Context, row: Row) -> None:
    from ..stateful_tests.harness import lockstep
    from ..stateful_tests.tree.api_laws import check_dump_rebuild
    from ..stateful_tests.tree.streams import generate

    left_out = LeftOut()
    tolerate = tolerates_known(ctx)

    def job(index: int) -> tuple[list[str], list[str]]:
        known: list[str] = []
        return check_dump_rebuild(ctx.factory, generate(ctx.seed, index), known if tolerate else None, left_out), known

    # In lockstep: a target that pays a fixed delay per round trip pays it once per step for every stream.
    results = lockstep.run_each(job, range(ctx.profile.tree.dump_streams))
    row.left_out = left_out.lines()
    known_entries = streams_with_f2 = 0
    for index, (problems, known) in enumerate(results):
        stream = generate(ctx.seed, index)
        row.examples += 1
        row.checks += len({tuple(q) for qs in stream.queries for q in qs}) + 1
        known_entries += len(known)
        streams_with_f2 += bool(known)
        if problems:
            raise Failed(f"stream {index}: {problems[0]} ({len(problems)} problems)")
    if known_entries:
        row.known.append("F2")
        row.notes.append(
            f"F2 in {streams_with_f2} streams: {known_entries} dump entries name a parent their rank no longer "
            f"holds and are refused on replay (docs/dynamo-findings.md F2; --strict fails them)"
        )


def _one_at_a_time(ctx: Context) -> bool | str:
    """A row that drives one tree a step at a time cannot batch a target's per-round-trip delay across trees."""
    if _capabilities(ctx).lockstep:
        return (
            "each step needs its own round trip to the target, which costs a fixed delay (a recovery call's second); "
            "the row drives one tree at a time, so it cannot share it (the streams, vectors and dumps rows do)"
        )
    return True


def _has_wire(ctx: Context) -> bool | str:
    """The bad-input row needs a door that takes malformed JSON; a target reached another way leaves it out."""
    why = _capabilities(ctx).surface.wire
    return True if why is None else f"the target's surface has no door for malformed input ({why})"


def _bad_input(ctx: Context, row: Row) -> None:
    from ..stateful_tests.harness.surface import LeftOut
    from ..stateful_tests.tree.api_laws import VALID_UNDER, check_tree_bad_input

    variants, left_out = ctx.rules.variants, LeftOut()
    tried, problems = check_tree_bad_input(
        ctx.factory, require_typed=ctx.target_name in ("reference", "impl"), variants=variants, left_out=left_out
    )
    row.left_out += left_out.lines()
    exempt = [name for name, v in VALID_UNDER.items() if v in variants]
    row.known += [str(VALID_UNDER[name]) for name in exempt]
    row.notes += [f"{name!r} is valid input under variant {VALID_UNDER[name]} (not thrown)" for name in exempt]
    row.checks, row.examples = tried, tried
    if problems:
        raise Failed(f"{len(problems)} problems; first: {problems[0]}")


def conformance_oracle(ctx: Context) -> tuple[str, Callable[[], Any] | None, str]:
    """The conformance row's oracle: ``(name, factory or None, why it is missing or how it was chosen)``.

    Dynamo is judged against the reference under the detected (or chosen) rule set. Any other
    tree is judged against Dynamo when the installed release follows the run's rule set, and
    against the reference under that rule set when it does not.
    """
    from ..stateful_tests.harness.targets import dynamo_release, load_target, resolve_rules

    if ctx.target_name == "dynamo":
        return "reference", load_target("reference", ctx.rules).factory, f"the reference under {ctx.rules.name}"
    dynamo = load_target("dynamo")
    if dynamo.factory is None:
        return "dynamo", None, dynamo.reason
    installed, _ = resolve_rules("dynamo")
    if installed.name != ctx.rules.name:
        return (
            "reference",
            load_target("reference", ctx.rules).factory,
            f"the reference under {ctx.rules.name}: the installed ai-dynamo-runtime {dynamo_release()} follows {installed.name}",
        )
    return "dynamo", dynamo.factory, f"ai-dynamo-runtime {dynamo_release()}"


def _conformance(ctx: Context, row: Row) -> None:
    from ..stateful_tests.harness.targets import capabilities
    from ..stateful_tests.tree.conformance import conform
    from ..stateful_tests.tree.streams import DEFAULT_PROFILE, StreamProfile

    oracle_name, oracle, why = conformance_oracle(ctx)
    if oracle is None:
        raise Skip(why)
    caps = capabilities(ctx.factory)
    profile = DEFAULT_PROFILE if caps.dp_ranks else StreamProfile(max_dp_ranks=1)
    report = conform(
        ctx.factory,
        oracle,
        ctx.profile.tree.conform_streams,
        ctx.seed,
        profile,
        subject_name=ctx.target_name,
        oracle_name=oracle_name,
        max_reported=1,
        strict=ctx.strict or not tolerates_known(ctx),
        strict_shape=ctx.strict_shape,
        rules=ctx.rules.name,
    )
    row.examples, row.checks = report.streams, report.queries + report.events
    row.known += list(report.kinds.known)
    row.left_out += report.left_out.lines()
    said = {
        "F2": "dump events of ranks below parents they no longer hold",
        "F7": "early_exit answers that differ only by where the trees cut edges; --strict-shape fails them",
    }
    for name, streams in sorted(report.kinds.known.items()):
        row.notes.append(f"{name} in {streams} streams: {said.get(name, 'docs/dynamo-findings.md')}")
    if report.mismatches:
        m = report.mismatches[0]
        row.replay = m.replay_command(ctx.target_name, oracle_name) + _judging(ctx, strict=not tolerates_known(ctx))
        notes = "".join(f"\n  note: {n}" for n in caps.notes())
        raise Failed(
            f"{len(report.mismatches)} of {report.streams} streams differ against {why} "
            f"({report.kinds.line()}); first:\n{m.report(ctx.target_name, oracle_name)}{notes}"
        )


def _feeds_at_once(ctx: Context) -> bool | str:
    """Production mode belongs to a target that takes events of several ranks at once (``send_many``)."""
    from ..stateful_tests.explore.production import feeds_concurrently
    from ..stateful_tests.harness.targets import production_factory

    factory = production_factory(ctx.target_name)
    if factory is None:
        return "the target takes one event at a time (no send_many)"
    tree = factory()
    try:
        return True if feeds_concurrently(tree) else "the target takes one event at a time (no send_many)"
    finally:
        from ..stateful_tests.harness.targets import dispose

        dispose(tree)


def _production(ctx: Context, row: Row) -> None:
    from ..stateful_tests.explore.production import feed
    from ..stateful_tests.harness.targets import production_factory

    factory = production_factory(ctx.target_name)
    assert factory is not None
    report = feed(factory, ctx.target_name, ctx.rules, ctx.profile.tree.production_streams, ctx.seed)
    row.examples, row.checks = report.streams, report.events + report.reads
    row.left_out += report.left_out.lines()
    if report.tolerated:
        row.known.append("F11")
        row.notes.append(
            f"F11 in {report.tolerated} streams: histories within the contract that the reference under "
            f"{ctx.rules.name}, which is not exact, cannot linearize"
        )
    failed = report.failures or report.not_linearizable
    if failed or not report.ok:
        row.replay = (
            f"kvproof conform tree --concurrent --target {shlex.quote(ctx.target_name)} --seed {ctx.seed} "
            f"--streams {ctx.profile.tree.production_streams}"
        )
    if failed:
        raise Failed(f"{report.summary_line()}; first:\n{report.report(failed[0])}")
    if report.race is not None:
        row.checks += report.race.rounds
        if not report.race.ok:
            raise Failed(f"{report.summary_line()}; first:\n{report.race.report(report.race.failures[0])}")
        row.notes.append(report.race.summary_line())


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
            row.replay = (
                f"kvproof stress tree --ops {ctx.profile.tree.stress_ops} --seed {ctx.seed} --mode {mode} --yield-sleep 0.05"
            )
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


def _pool_removal(ctx: Context, row: Row) -> None:
    from ..stateful_tests.tree.pool_stress import run_pool_stress

    report = run_pool_stress(_pool_factory(ctx), ctx.profile.tree.pool_stress_rounds, ctx.seed)
    row.examples, row.checks = report.rounds, report.ops
    if report.failed:
        row.replay = f"{ctx.command} --only 'pool: removal racing'"
        raise Failed(f"{report.summary_line()} (seeds {report.failed_rounds}); first: {report.problems[0]}")


def _explore_subject(ctx: Context) -> Any:
    from ..stateful_tests.explore.campaign import subject_for

    return subject_for(ctx.target_name, None if embedded_only(ctx) else ctx.factory)


def _explore_relevant(ctx: Context) -> bool:
    """The embedded implementation, or any target with lanes or event threads to interleave."""
    return embedded_only(ctx) or not _explore_subject(ctx).why


def explore_row(ctx: Context, row: Row, subject: Any, families: tuple[str, ...]) -> None:
    """Shared by the tree's and the tracker's explorer rows: a sweep under the profile's budget."""
    from ..stateful_tests.explore.campaign import sweep, sweep_row_detail

    budget = ctx.profile.explore
    report = sweep(subject, families, budget.schedules, ctx.seed, budget.pct_depth)
    row.examples = len(report.explorations) + report.regressions
    row.checks = report.schedules + report.regressions
    detail, replay = sweep_row_detail(report)
    if detail:
        row.replay = replay
        raise Failed(detail)


def _explore(ctx: Context, row: Row) -> None:
    explore_row(ctx, row, _explore_subject(ctx), ("lanes", "pool"))


def fault_row(row: Row, subject: Any, families: tuple[str, ...], target: str) -> None:
    """Shared by the tree's and the tracker's fault rows: every (scenario, decision point) pair faulted once, 0 broken."""
    from ..stateful_tests.explore.faults import fault_sweep, summary

    reports = fault_sweep(subject, families)
    row.examples = len(reports)
    row.checks = sum(r.pairs for r in reports)
    broken = [(r.scenario, *b) for r in reports for b in r.broken]
    if broken:
        scenario, thread, at, point, problem = broken[0]
        row.replay = f"kvproof explore {scenario} --faults --target {shlex.quote(target)}"
        raise Failed(f"{summary(reports)}; first: {scenario}, a fault in {thread} at decision {at} ({point}): {problem}")


def _faults(ctx: Context, row: Row) -> None:
    fault_row(row, _explore_subject(ctx), ("lanes", "pool"), ctx.target_name)


def fuzz_fleet(ctx: Context) -> tuple[str, ...]:
    """The trees the fuzz row runs together: every embedded tree and Dynamo, or the reference and Dynamo for Dynamo."""
    from ..stateful_tests.fuzz.campaign import TARGETS

    return TARGETS if embedded_only(ctx) else ("reference", "dynamo")


def _fuzz_relevant(ctx: Context) -> bool:
    return embedded_only(ctx) or ctx.target_name == "dynamo"


def _fuzz(ctx: Context, row: Row) -> None:
    from ..stateful_tests.fuzz.campaign import SAID, fuzz, summary_line

    report = fuzz(ctx.profile.tree.fuzz_inputs, ctx.seed, fuzz_fleet(ctx))
    row.examples = report.inputs
    row.checks = report.inputs * len(report.outcomes)
    row.known += sorted(report.known)  # the H-differences with Dynamo, and out-of-contract cases
    row.notes += [f"{name} in {n} cases: {SAID[name]} (docs/hostile-input.md)" for name, n in sorted(report.known.items())]
    row.notes += [f"{name} not run: {why}" for name, why in report.unavailable.items()]
    if report.problems:
        row.replay = f"kvproof fuzz --replay {report.file}" if report.file else f"kvproof fuzz --seed {ctx.seed}"
        raise Failed(f"{summary_line(report)}; first: {report.problems[0].line()}")
    if "dynamo" in report.unavailable and ctx.target_name == "dynamo":
        raise Skip(report.unavailable["dynamo"])


TRACE_WORKERS, TRACE_CAPACITY = 8, 500
"""The fleet of the trace row: small caches, so the slice's requests evict (removal batches) as well as store."""


def _trace(ctx: Context, row: Row) -> None:
    from pathlib import Path

    from ..stateful_tests.tree.router import RouterPlan
    from ..stateful_tests.tree.trace_check import check_trace
    from ..stateful_tests.tree.traffic import default_trace, mooncake_requests

    oracle_name, oracle, why = conformance_oracle(ctx)
    if oracle is None:
        raise Skip(why)
    path, limit = (Path(ctx.trace) if ctx.trace else default_trace()), ctx.profile.tree.trace_requests
    subject = ctx.target_name if ctx.target_name != oracle_name else f"{ctx.target_name} (target)"
    report = check_trace(
        mooncake_requests(path, limit=limit),
        RouterPlan(workers=TRACE_WORKERS, capacity=TRACE_CAPACITY),
        {subject: ctx.factory, oracle_name: oracle},
        {},
        oracle=oracle_name,
    )
    verdict = next(t for t in report.trees if t.name == subject)
    row.examples, row.checks = report.stats.requests, verdict.queries + report.stats.event_count
    row.left_out += report.left_out.lines()
    if verdict.tolerated:
        row.notes.append(f"{verdict.tolerated} answers tolerated: early-exit cuts both trees explain (F7), or F2 dump entries")
    if not verdict.ok:
        row.replay = (
            f"kvproof trace --trace {path} --workers {TRACE_WORKERS} --capacity {TRACE_CAPACITY} "
            f"--requests {limit} --tree {ctx.target_name} --tree {oracle_name} --oracle {oracle_name} --no-trackers"
        )
        raise Failed(
            f"{verdict.mismatches} mismatches and {verdict.overcredits} over-credits against {why} "
            f"over {report.stats.requests} requests of {path.name}; first: {verdict.first}"
        )


def _conformance_applies(ctx: Context) -> str | None:
    _, oracle, why = conformance_oracle(ctx)
    return None if oracle is not None else why


CHECKS: list[Check] = [
    Check(
        "tree",
        "spec",
        "node-rule laws",
        _spec_laws,
        what="the node rules of spec/ (cover-prefix, removal, split, extension, plans, the match walk) over random edge states; spec only, not the target",
    ),
    Check(
        "tree",
        "vectors",
        "observed Dynamo behaviours",
        _vectors,
        _needs_dump_and_ranks,
        what="the target replays every vector observed on Dynamo 1.6.1 (crtc.md §13, §10): every outcome, score and dump",
    ),
    Check(
        "tree",
        "contract",
        "state machine vs contract",
        _contract_machine,
        _needs_ranks,
        relevant=_one_at_a_time,
        what="the target driven by the contract machine: no overcount, no unexplained undercount, accepted and rejected stores, check() after every step",
    ),
    Check(
        "tree",
        "api",
        "dump rebuilds the tree",
        _dump_rebuild,
        _needs_dump,
        what="the target's dump replayed into a fresh target answers every query alike",
    ),
    Check(
        "tree",
        "api",
        "bad input is rejected, harmless",
        _bad_input,
        _needs_dump,
        relevant=_has_wire,
        what="malformed events, ids and queries get a typed error from the target and leave its state unchanged",
    ),
    Check(
        "tree",
        "api",
        "hostile input (fuzz)",
        _fuzz,
        relevant=_fuzz_relevant,
        what="grammar-aware and byte-level hostile cases over every tree at once (and Dynamo): a typed error or an "
        "acceptance, the state byte-identical after a rejection, check() holding, every tree deciding alike, "
        "Dynamo alike except the recorded differences (docs/hostile-input.md)",
    ),
    Check(
        "tree",
        "conformance",
        "differential vs Dynamo",
        _conformance,
        _conformance_applies,
        what="the target against an oracle tree (Dynamo; the reference under the release's rule set when the target is Dynamo) on random streams: every difference classified (contract, outcome, score, dump, early-exit)",
    ),
    Check(
        "tree",
        "traffic",
        "the Mooncake trace, routed",
        _trace,
        _conformance_applies,
        relevant=_one_at_a_time,
        what="requests of the Mooncake conversation trace through the router simulation (8 workers, 500-block caches, "
        "LRU eviction): every routing query asked of the target and the oracle in both early_exit modes before "
        "routing, scores equal and never above what the engine holds (no over-credit)",
    ),
    Check(
        "tree",
        "concurrent",
        "production mode: lanes at once, reads racing",
        _production,
        relevant=_feeds_at_once,
        what="the target's events of different workers sent at once, on their own lanes, as production does, with reads "
        "racing them: every outcome and read within the contract for the states each rank passed through, every "
        "round's history linearizable against the reference (Dynamo's indexer and selection service)",
    ),
    Check(
        "tree",
        "impl",
        "equals reference (3 lanes, lockstep)",
        _impl_twin,
        relevant=embedded_only,
        what="the concurrent tree on 3 lanes (lazy repair) in lockstep with the reference under the contract machine",
    ),
    Check(
        "tree",
        "impl",
        "pool: pipelined streams, one flush",
        _pool_pipelined,
        relevant=_pool_relevant,
        what="the thread-pool indexer with events submitted, one flush, then outcomes, scores and snapshot equal to the reference",
    ),
    Check(
        "tree",
        "impl",
        "pool: removal racing its workers' events",
        _pool_removal,
        relevant=_pool_relevant,
        what="the thread-pool indexer on real threads, removers racing the writers of the same workers and readers: "
        "after every worker is removed once more nothing is credited and check() holds (no event landed where "
        "a later removal does not reach)",
    ),
    Check(
        "tree",
        "explore",
        "interleavings: explorer + linearizability",
        _explore,
        relevant=_explore_relevant,
        what="every tree race scenario (lanes and the pool) under PCT and random schedules of the controlled scheduler, "
        "regressions first: every history linearizable against the reference, check() at the end",
    ),
    Check(
        "tree",
        "explore",
        "faults mid-operation: clean, torn or poisoned",
        _faults,
        relevant=_explore_relevant,
        what="an injected exception at every decision point of every thread of every tree race scenario, once each: "
        "afterwards check() holds and the history is linearizable with the call whole, absent or a legal part, "
        "or the tree is poisoned and refuses every later call",
    ),
    Check(
        "tree",
        "impl",
        "real-thread stress, strict + chaos",
        _impl_stress,
        relevant=embedded_only,
        what="the concurrent tree under 8 writers and 4 readers: every read within what each rank held, parity or contract at quiescence",
    ),
]

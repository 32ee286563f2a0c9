"""The gate: every check kvproof has, run against one target, summarised as a table.

Each ``Check`` knows its layer, how to run against a target under a profile, and how to
count what it did (``checks``: individual comparisons or assertions; ``examples``:
generated cases, streams or scenarios). A check either passes, fails (with the first
problem and the command that replays it), or is skipped with a visible reason. A skip is
never a pass: ``kvproof check`` exits non-zero on any failure, and on any skip unless
``--allow-skip`` is given.

Profiles: ``ci`` is deterministic (a fixed seed for every Hypothesis run and stream) and sized for a
2-core CI machine; ``deep`` explores more with a fresh seed, printed so that a failure
can be replayed with ``--seed``.
"""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Profile:
    name: str
    law_examples: int
    machine_examples: int
    machine_steps: int
    conform_streams: int
    dump_streams: int
    fixed_seed: bool  # ci: seed 1 unless --seed; deep: a fresh seed, printed
    stress_ops: int


PROFILES = {
    "ci": Profile("ci", law_examples=300, machine_examples=150, machine_steps=40, conform_streams=500,
                  dump_streams=100, fixed_seed=True, stress_ops=8_000),
    "deep": Profile("deep", law_examples=2000, machine_examples=500, machine_steps=60, conform_streams=2000,
                    dump_streams=500, fixed_seed=False, stress_ops=100_000),
}


@dataclass
class Row:
    layer: str
    name: str
    checks: int = 0
    examples: int = 0
    seconds: float = 0.0
    result: str = "pass"
    detail: str = ""
    replay: str = ""


@dataclass
class Context:
    target_name: str
    factory: Callable[[], Any]
    profile: Profile
    seed: int
    command: str  # the command that reproduces this run, for replay lines


@dataclass
class Check:
    layer: str
    name: str
    run: Callable[[Context, Row], None]
    applies: Callable[[Context], str | None] = lambda ctx: None  # a skip reason, or None
    relevant: Callable[[Context], bool] = lambda ctx: True  # False: the row is not part of this gate


EMBEDDED = ("impl", "impl-lanes", "impl-pool")


def _embedded(ctx: Context) -> bool:
    """The concurrent tree's own rows belong to the gate only when it is the target."""
    return ctx.target_name in EMBEDDED


class Skip(Exception):
    """Raised by a check that cannot run here; its message is the visible reason."""


class Failed(Exception):
    """Raised by a check with its counted result already recorded; the message is the first problem."""


# ----------------------------------------------------------------------------- checks


def _spec_laws(ctx: Context, row: Row) -> None:
    from .stateful_tests.tree.laws import LAWS, run_law

    for law in LAWS:
        row.examples += run_law(law, ctx.profile.law_examples, ctx.seed)
        row.checks += 1


def _vectors(ctx: Context, row: Row) -> None:
    from .stateful_tests.tree.vectors import SCENARIOS, run_scenario

    problems = []
    for scenario in SCENARIOS:
        row.examples += 1
        row.checks += len(scenario.steps)
        problems += [f"{scenario.name} {p}" for p in run_scenario(ctx.factory, scenario)]
    if problems:
        raise Failed(f"{len(problems)} steps differ; first: {problems[0]}")


def _run_contract_machine(factory: Callable[[], Any], ctx: Context, row: Row) -> None:
    """Drive trees made by ``factory`` with the contract machine under the profile's budget and seed."""
    from .stateful_tests.tree.machine import contract_machine_for
    from .stateful_tests.harness.seeding import machine_settings
    from .stateful_tests.harness.seeding import run_machine

    machine = contract_machine_for(factory)
    run_machine(machine, machine_settings(ctx.profile.machine_examples, ctx.profile.machine_steps), ctx.seed)
    row.examples = len(machine.runs)
    row.checks = sum(run["_checks"] for run in machine.runs)


def _contract_machine(ctx: Context, row: Row) -> None:
    _run_contract_machine(ctx.factory, ctx, row)


def _dump_rebuild(ctx: Context, row: Row) -> None:
    from .stateful_tests.tree.streams import generate
    from .stateful_tests.tree.api_laws import check_dump_rebuild

    for index in range(ctx.profile.dump_streams):
        stream = generate(ctx.seed, index)
        row.examples += 1
        row.checks += len({tuple(q) for qs in stream.queries for q in qs}) + 1
        problems = check_dump_rebuild(ctx.factory, stream)
        if problems:
            raise Failed(f"stream {index}: {problems[0]} ({len(problems)} problems)")


def _bad_input(ctx: Context, row: Row) -> None:
    from .stateful_tests.tree.api_laws import check_bad_input

    tried, problems = check_bad_input(ctx.factory, require_typed=ctx.target_name in ("reference", "impl"))
    row.checks, row.examples = tried, tried
    if problems:
        raise Failed(f"{len(problems)} problems; first: {problems[0]}")


def _conformance(ctx: Context, row: Row) -> None:
    from .stateful_tests.tree.conformance import conform
    from .stateful_tests.harness.targets import load_target

    oracle_name = "reference" if ctx.target_name == "dynamo" else "dynamo"
    oracle = load_target(oracle_name)
    if not oracle.available:
        raise Skip(oracle.reason)
    report = conform(
        ctx.factory, oracle.factory, ctx.profile.conform_streams, ctx.seed,
        subject_name=ctx.target_name, oracle_name=oracle_name, max_reported=1,
    )
    row.examples, row.checks = report.streams, report.queries + report.events
    if report.mismatches:
        m = report.mismatches[0]
        row.replay = m.replay_command(ctx.target_name, oracle_name)
        raise Failed(f"{len(report.mismatches)} of {report.streams} streams differ; first:\n{m.report(ctx.target_name, oracle_name)}")


def _impl_twin(ctx: Context, row: Row) -> None:
    from .stateful_tests.tree.twin import impl_vs_reference

    _run_contract_machine(impl_vs_reference(3), ctx, row)


def _impl_stress(ctx: Context, row: Row) -> None:
    from .stateful_tests.tree.stress import StressConfig, run_stress

    for mode in ("strict", "chaos"):
        report = run_stress(StressConfig(ops=ctx.profile.stress_ops, seed=ctx.seed, mode=mode, yield_sleep=0.05))
        row.examples += report.ops
        row.checks += report.reads + report.checkpoints
        if report.failed:
            row.replay = f"kvproof stress --ops {ctx.profile.stress_ops} --seed {ctx.seed} --mode {mode} --yield-sleep 0.05"
            raise Failed(f"{mode}: {report.summary_line()}; first: {report.problems[0]}")


def _conformance_applies(ctx: Context) -> str | None:
    from .stateful_tests.harness.targets import load_target

    oracle = load_target("reference" if ctx.target_name == "dynamo" else "dynamo")
    return None if oracle.available else oracle.reason


TREE_CHECKS: list[Check] = [
    Check("spec", "node-rule laws", _spec_laws),
    Check("vectors", "observed Dynamo behaviours", _vectors),
    Check("contract", "state machine vs contract", _contract_machine),
    Check("api", "dump rebuilds the tree", _dump_rebuild),
    Check("api", "bad input is rejected, harmless", _bad_input),
    Check("conformance", "differential vs Dynamo", _conformance, _conformance_applies),
    Check("impl", "equals reference (3 lanes, lockstep)", _impl_twin, relevant=_embedded),
    Check("impl", "real-thread stress, strict + chaos", _impl_stress, relevant=_embedded),
]

# Rule families beyond the radix tree contribute their checks from their own modules
# (``kvproof/gate_<area>.py``, each exporting ``CHECKS``); they run after the tree's and do
# not depend on the tree target.
EXTRA_CHECK_MODULES: list[str] = [".gate_deepinfer", ".gate_sequences", ".gate_proofs"]


def all_checks() -> list[Check]:
    """Return the tree's checks followed by every registered rule family's."""
    import importlib

    checks = list(TREE_CHECKS)
    for name in EXTRA_CHECK_MODULES:
        checks += importlib.import_module(name, __package__).CHECKS
    return checks


# ----------------------------------------------------------------------------- running


@dataclass
class GateReport:
    target: str
    profile: str
    seed: int
    rows: list[Row] = field(default_factory=list)

    @property
    def failed(self) -> list[Row]:
        return [r for r in self.rows if r.result == "FAIL"]

    @property
    def skipped(self) -> list[Row]:
        return [r for r in self.rows if r.result == "SKIP"]

    def table(self) -> str:
        header = f"{'layer':<12} {'check':<34} {'checks':>9} {'examples':>9} {'seconds':>8}  result"
        lines = [header, "-" * len(header)]
        for r in self.rows:
            lines.append(f"{r.layer:<12} {r.name:<34} {r.checks:>9} {r.examples:>9} {r.seconds:>8.1f}  {r.result}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"target": self.target, "profile": self.profile, "seed": self.seed, "rows": [asdict(r) for r in self.rows]}


def run_gate(
    target_name: str,
    factory: Callable[[], Any],
    profile: Profile,
    seed: int | None = None,
    only: str | None = None,
    progress: Callable[[Row], None] | None = None,
) -> GateReport:
    """Run every check (or those whose layer or name contains ``only``) against one target."""
    if seed is None:
        seed = 1 if profile.fixed_seed else random.SystemRandom().randrange(1, 2**31)
    command = f"kvproof check --target {target_name} --profile {profile.name} --seed {seed}"
    ctx = Context(target_name, factory, profile, seed, command)
    report = GateReport(target_name, profile.name, seed)
    for check in all_checks():
        if only and only not in check.layer and only not in check.name:
            continue
        if not check.relevant(ctx):
            continue
        row = Row(check.layer, check.name)
        started = time.perf_counter()
        reason = check.applies(ctx)
        try:
            if reason is not None:
                raise Skip(reason)
            check.run(ctx, row)
        except Skip as skip:
            row.result, row.detail = "SKIP", str(skip)
        except Failed as failure:
            row.result, row.detail = "FAIL", str(failure)
        except Exception as exc:  # a falsified law, an assertion, or a crash of the target
            row.result = "FAIL"
            row.detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if row.result == "FAIL" and not row.replay:
            row.replay = f"{command} --only '{check.name}'"
        row.seconds = time.perf_counter() - started
        report.rows.append(row)
        if progress is not None:
            progress(row)
    return report

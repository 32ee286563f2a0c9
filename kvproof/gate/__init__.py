"""The gate: every check kvproof has, run against one target, summarised as one row per check.

Each ``Check`` belongs to a rule family (``tree``, ``sequences``, ``deepinfer``, ``proofs``),
names the layer it exercises, and knows how to run under a profile (``harness.profiles``) and
count what it did (``checks``: individual comparisons or assertions; ``examples``: generated
cases, streams or scenarios). A row passes, fails (with the first problem and the command that
replays it), or is skipped with a visible reason. A skip is never a pass.

The rows run the same check functions as the pytest suite (the laws, machines, vectors,
conformance and stress of ``kvproof.stateful_tests``); ``kvproof check`` and
``pytest --kvproof-target`` (``kvproof.pytest_plugin``) are two front ends over ``run_gate``.

Pointed at a tree other than the embedded implementation, the gate runs only the ``tree``
family by default (the other families never touch the target) and says which rows it left out.
"""

from __future__ import annotations

import enum
import json
import random
import shlex
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..spec.rules import DEFAULT_RULES, RuleSet
from ..stateful_tests.harness.isolation import TargetFailure
from ..stateful_tests.harness.profiles import Profile
from ..stateful_tests.harness.shards import WHOLE, Shard

FAMILIES = ("tree", "sequences", "deepinfer", "proofs")
EMBEDDED = ("impl", "impl-lanes", "impl-pool")


class Result(enum.StrEnum):
    PASS = "pass"
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass
class Row:
    """One gate row's outcome."""

    family: str
    layer: str
    name: str
    checks: int = 0
    examples: int = 0
    seconds: float = 0.0
    result: Result = Result.PASS
    detail: str = ""
    replay: str = ""
    known: list[str] = field(default_factory=list)  # short tags of the known findings and variants the row tolerated
    notes: list[str] = field(default_factory=list)  # what exactly was tolerated, one line each
    left_out: list[str] = field(default_factory=list)  # calls the target's surface cannot carry, not asked (harness.surface)

    @property
    def verdict(self) -> str:
        """The result as the table shows it: ``pass (known: F2)`` when the row tolerated known findings."""
        if self.result is Result.PASS and self.known:
            return f"pass (known: {', '.join(sorted(set(self.known)))})"
        return self.result.value

    def to_json(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "layer": self.layer,
            "name": self.name,
            "checks": self.checks,
            "examples": self.examples,
            "seconds": round(self.seconds, 3),
            "result": self.result.value,
            "known": sorted(set(self.known)),
            "notes": self.notes,
            "left_out": self.left_out,
            "detail": self.detail,
            "replay": self.replay,
        }


@dataclass
class Context:
    target_name: str
    factory: Callable[[], Any]
    profile: Profile
    seed: int
    command: str  # the command that reproduces this run, for replay lines
    rules: RuleSet = DEFAULT_RULES  # the rule set the reference follows (spec.rules), chosen by resolve_rules
    rules_note: str = ""  # how the rule set was chosen, printed at the start of a run
    strict: bool = False  # known findings fail too
    strict_shape: bool = False  # early_exit differences fail too
    trace: str | None = None  # the Mooncake trace of the traffic row (None: the full trace beside the checkout, else the slice)


def _always(ctx: Context) -> str | None:
    return None


def _everywhere(ctx: Context) -> bool | str:
    return True


@dataclass
class Check:
    family: str
    layer: str
    name: str
    run: Callable[[Context, Row], None]
    applies: Callable[[Context], str | None] = _always  # a skip reason, or None
    relevant: Callable[[Context], bool | str] = _everywhere  # not True: the row is not part of this gate (a str says why)
    what: str = ""  # one line: what the row checks, and on which layer (the README's gate table)
    waits: bool = False  # the row mostly waits on a clock or a server, not a core: a pool runs it beside its processes

    @property
    def key(self) -> str:
        return f"{self.family}: {self.name}"


def embedded_only(ctx: Context) -> bool:
    """The concurrent tree's own rows belong to the gate only when it is the target."""
    return ctx.target_name in EMBEDDED


class Skip(Exception):
    """Raised by a check that cannot run here; its message is the visible reason."""


class Failed(Exception):
    """Raised by a check with its counted result already recorded; the message is the first problem."""


def all_checks() -> list[Check]:
    """Every check, family by family."""
    from . import deepinfer, proofs, sequences, tree

    return tree.CHECKS + sequences.CHECKS + deepinfer.CHECKS + proofs.CHECKS


def default_families(target_name: str) -> tuple[str, ...]:
    """All families for the embedded implementation; only the tree's rows for any other tree."""
    return FAMILIES if target_name in EMBEDDED else ("tree",)


@dataclass
class GateSelection:
    """The rows a gate run will execute, and those it leaves out with the reason."""

    families: tuple[str, ...]
    checks: list[Check]
    left_out: list[tuple[Check, str]]


def select(ctx: Context, families: tuple[str, ...], only: str | None) -> GateSelection:
    chosen, left_out = [], []
    for check in all_checks():
        if check.family not in families:
            left_out.append((check, f"family {check.family} not selected"))
        elif only and only not in check.layer and only not in check.name and only != check.family:
            continue
        elif (verdict := check.relevant(ctx)) is not True:
            left_out.append(
                (
                    check,
                    verdict
                    or "checks a structure this target does not ship (the embedded implementation's concurrent tree or pool)",
                )
            )
        else:
            chosen.append(check)
    return GateSelection(families, chosen, left_out)


@dataclass
class GateReport:
    target: str
    profile: str
    seed: int
    families: tuple[str, ...]
    rows: list[Row] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (row key, reason)
    rules: str = DEFAULT_RULES.name
    rules_note: str = ""

    @property
    def failed(self) -> list[Row]:
        return [r for r in self.rows if r.result is Result.FAIL]

    @property
    def skipped(self) -> list[Row]:
        return [r for r in self.rows if r.result is Result.SKIP]

    @property
    def passed(self) -> list[Row]:
        return [r for r in self.rows if r.result is Result.PASS]

    HEADERS = ("family", "layer", "check", "checks", "examples", "seconds", "result")

    def table_rows(self) -> list[tuple[Any, ...]]:
        return [(r.family, r.layer, r.name, r.checks, r.examples, f"{r.seconds:.1f}", r.verdict) for r in self.rows]

    def to_json(self) -> dict[str, Any]:
        from ..stateful_tests.harness.process_guard import network_note

        return {
            "target": self.target,
            "profile": self.profile,
            "seed": self.seed,
            "families": list(self.families),
            "rules": self.rules,
            "rules_note": self.rules_note,
            "network": network_note(),
            "rows": [r.to_json() for r in self.rows],
            "left_out": [{"check": k, "reason": why} for k, why in self.left_out],
        }


def make_context(
    target_name: str,
    factory: Callable[[], Any],
    profile: Profile,
    seed: int | None,
    rules: str | None = None,
    strict: bool = False,
    strict_shape: bool = False,
    trace: str | None = None,
) -> Context:
    """The run's context; ``rules`` overrides the rule set ``resolve_rules`` would pick (``--rules``), ``trace`` the
    Mooncake trace the traffic row replays (``--trace``)."""
    from ..stateful_tests.harness.targets import resolve_rules

    if seed is None:
        seed = 1 if profile.fixed_seed else random.SystemRandom().randrange(1, 2**31)
    rule_set, note = resolve_rules(target_name, override=rules)
    command = f"kvproof check --target {shlex.quote(target_name)} --profile {profile.name} --seed {seed}"
    command += f" --rules {rules}" if rules else ""
    command += " --strict" if strict else ""
    command += " --strict-shape" if strict_shape else ""
    command += f" --trace {trace}" if trace else ""
    return Context(target_name, factory, profile, seed, command, rule_set, note, strict, strict_shape, trace)


def run_check(check: Check, ctx: Context) -> Row:
    """Run one check against the context's target and return its row (never raises)."""
    row = Row(check.family, check.layer, check.name)
    started = time.perf_counter()
    reason = check.applies(ctx)
    try:
        if reason is not None:
            raise Skip(reason)
        check.run(ctx, row)
    except Skip as skip:
        row.result, row.detail = Result.SKIP, str(skip)
    except Failed as failure:
        row.result, row.detail = Result.FAIL, str(failure)
    except TargetFailure as failure:  # the target's process crashed, ran out of memory or hung: a finding, shrunk
        from ..stateful_tests.tree.target_failures import finding

        found = finding(ctx.target_name, ctx.factory, failure, ctx.profile.tree.shrink_s)
        row.result, row.detail, row.replay = Result.FAIL, found.report(), found.replay
    except Exception as exc:  # a falsified law, an assertion, or a crash of the target
        row.result = Result.FAIL
        row.detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    except BaseException as exc:  # a native binding's panic (pyo3's PanicException): a FAIL with the reason
        from ..stateful_tests.harness.targets import is_panic

        if not is_panic(exc):
            raise
        row.result = Result.FAIL
        row.detail = f"the target panicked: {exc}"
    if row.result is Result.FAIL and check.family == "tree":
        from ..stateful_tests.harness.targets import dynamo_component
        from ..stateful_tests.tree.verdicts import named_finding

        named = named_finding(dynamo_component(ctx.target_name), row.detail)
        if named:
            row.detail += f"\n  {named}"
    if row.result is Result.FAIL and not row.replay:
        row.replay = f"{ctx.command} --only '{check.name}'"
    row.seconds = time.perf_counter() - started
    return row


def plan(
    target_name: str,
    factory: Callable[[], Any],
    profile: Profile,
    seed: int | None = None,
    only: str | None = None,
    families: tuple[str, ...] | None = None,
    rules: str | None = None,
    strict: bool = False,
    strict_shape: bool = False,
    shard: Shard = WHOLE,
    trace: str | None = None,
) -> tuple[Context, GateSelection]:
    """The run's context and its rows: the families (default: ``default_families``), then those whose
    family, layer or name contains ``only``, then those ``shard`` owns."""
    ctx = make_context(target_name, factory, profile, seed, rules, strict, strict_shape, trace)
    return ctx, shard_of(select(ctx, families or default_families(target_name), only), shard)


def shard_of(selection: GateSelection, shard: Shard) -> GateSelection:
    """The rows of ``selection`` that ``shard`` owns (row ``i`` of the selection: ``i % N == K-1``); the rest left out."""
    if shard.whole:
        return selection
    mine = [c for i, c in enumerate(selection.checks) if shard.owns(i)]
    others = [(c, f"shard {shard}: another shard runs it") for i, c in enumerate(selection.checks) if not shard.owns(i)]
    return GateSelection(selection.families, mine, selection.left_out + others)


@dataclass(frozen=True)
class GateTask:
    """One gate run by target name, picklable: ``task(shard)`` plans and runs that shard's rows where it lands."""

    target_name: str
    profile: str
    seed: int
    only: str | None = None
    families: tuple[str, ...] | None = None
    rules: str | None = None
    strict: bool = False
    strict_shape: bool = False
    trace: str | None = None

    def plan(self, shard: Shard = WHOLE) -> tuple[Context, GateSelection]:
        """The run's context and ``shard``'s rows, planned in this process (``plan``)."""
        from ..spec.rules import rule_set_named
        from ..stateful_tests.harness.profiles import profile_named
        from ..stateful_tests.harness.targets import load_target

        target = (
            load_target(self.target_name, rule_set_named(self.rules))
            if self.target_name == "reference" and self.rules
            else load_target(self.target_name)
        )
        if target.factory is None:
            raise RuntimeError(f"{self.target_name} is unavailable: {target.reason}")
        return plan(
            self.target_name,
            target.factory,
            profile_named(self.profile),
            self.seed,
            self.only,
            self.families,
            self.rules,
            self.strict,
            self.strict_shape,
            shard,
            self.trace,
        )

    def __call__(self, shard: Shard) -> GateReport:
        return run_gate(*self.plan(shard))


def merge_gate(parts: list[GateReport], order: list[str]) -> GateReport:
    """One report of disjoint shards' reports: rows in ``order`` (row keys), the rows no shard ran left out."""
    first = parts[0]
    rows = sorted((r for p in parts for r in p.rows), key=lambda r: order.index(f"{r.family}: {r.name}"))
    ran = {f"{r.family}: {r.name}" for r in rows}
    left_out = [(key, why) for key, why in first.left_out if key not in ran and not why.startswith("shard ")]
    return GateReport(first.target, first.profile, first.seed, first.families, rows, left_out, first.rules, first.rules_note)


def run_gate(
    ctx: Context, selection: GateSelection, progress: Callable[[Row, int, int], None] | None = None, fail_fast: bool = False
) -> GateReport:
    """Run the selected rows in order; ``progress(row, done, total)`` after each. With ``fail_fast`` the run stops at
    the first row that fails, and the rows it did not reach are left out, saying so (never counted as passed)."""
    report = GateReport(
        ctx.target_name,
        ctx.profile.name,
        ctx.seed,
        selection.families,
        left_out=[(c.key, why) for c, why in selection.left_out],
        rules=ctx.rules.name,
        rules_note=ctx.rules_note,
    )
    for done, check in enumerate(selection.checks, 1):
        row = run_check(check, ctx)
        report.rows.append(row)
        if progress is not None:
            progress(row, done, len(selection.checks))
        if fail_fast and row.result is Result.FAIL:
            report.left_out += [(c.key, f"not run: --fail-fast stopped at {check.key}") for c in selection.checks[done:]]
            break
    return report


ROW_SECONDS = Path(".kvproof-cache") / "gate-seconds.json"
"""What each row took in this machine's last runs, per target and profile (a cache, never in git): ``--fail-fast``
runs the cheapest rows first, so a broken change is reported as soon as a cheap row sees it."""


SECONDS_KEPT = 16
"""How many (profile, target) pairs the table remembers: the latest run. A one-off target (a test's temporary
``exec:`` command line, a loopback port) would otherwise add a key every run, for ever."""


def _seconds_key(target: str, profile: str) -> str:
    return f"{profile}:{target}"


def recorded_seconds(target: str, profile: str, path: Path = ROW_SECONDS) -> dict[str, float]:
    """The seconds each row took in the last run of ``target`` under ``profile`` here ({} when none is recorded)."""
    try:
        table = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    found = table.get(_seconds_key(target, profile), {}) if isinstance(table, dict) else {}
    return {k: float(v) for k, v in found.items() if isinstance(v, (int, float))}


def record_seconds(report: GateReport, path: Path = ROW_SECONDS) -> None:
    """Remember what each row of ``report`` took (rows it did not run keep their earlier figure), for the
    ``SECONDS_KEPT`` targets run here last."""
    try:
        table = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        table = {}
    if not isinstance(table, dict):
        table = {}
    key = _seconds_key(report.target, report.profile)
    rows = {**table.pop(key, {}), **{f"{r.family}: {r.name}": round(r.seconds, 3) for r in report.rows}}
    kept = list(table.items())[-(SECONDS_KEPT - 1) :]  # the targets run here last, this one last of all
    table = {**dict(kept), key: dict(sorted(rows.items()))}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(table, indent=1))
    except OSError:
        pass  # a read-only checkout: the order is only an optimisation


def cheapest_first(checks: list[Check], seconds: dict[str, float]) -> list[Check]:
    """The rows in the order ``--fail-fast`` runs them: those timed here by what they took, cheapest first, then those
    never timed in their declared order."""
    timed = sorted((c for c in checks if c.key in seconds), key=lambda c: seconds[c.key])
    return timed + [c for c in checks if c.key not in seconds]

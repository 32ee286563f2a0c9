"""``kvproof mutate`` as library calls: a mutation run (fresh or rejudged), or the merge of a matrix's reports.

Both return a ``MutateRun``: the score table, every survivor's and the first gaps' diffs, the time to detection and
the goals, in the command's report shape (``ok``, ``summary_line()``, ``render(say, table)``, ``to_json()``). What
cannot run here is refused: no checkout or no mutmut is ``harness.errors.Unavailable``, a bad option or report
``harness.errors.CampaignInputError`` (both exit 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..harness.errors import CampaignInputError, Unavailable
from ..harness.shards import Shard

Say = Callable[[str], None]
GAPS_SHOWN = 20  # a report prints this many gaps with their diffs; the JSON lists every one
ROOT = Path(__file__).resolve().parents[2]  # the checkout mutmut copies (an editable install's)


@dataclass
class MutateRun:
    """A judged mutation run: its report, how long it took, the suffix of its last line, and the JSON's extra fields."""

    report: Any  # scores.Report
    seconds: float
    suffix: str
    extra: dict[str, Any] = field(default_factory=dict)
    failed_run: str = ""  # mutmut itself failed (exit 1)
    kind = "mutate"
    skipped = ""

    @property
    def ok(self) -> bool:
        return not self.failed_run and not self.report.failures()

    def render(self, say: Say, table: Callable[..., None]) -> None:
        if self.failed_run:
            return
        from .scores import HEADERS

        r = self.report
        table(HEADERS, r.table_rows(), numeric=tuple(range(1, len(HEADERS))))
        for m in r.of("survived"):
            say(f"\nSURVIVED {m.name} (function hash {m.function_hash})\n{m.diff or '  (no diff)'}")
        for entry in r.stale:
            say(f"stale equivalent (its function changed; review again): {entry.mutant}")
        self._gaps(say)
        self._ttd(say)
        for line in r.failures():
            say(f"GOAL NOT MET: {line}")

    def _gaps(self, say: Say) -> None:
        gaps = self.report.of("no tests")
        if gaps:
            say(
                f"\ngap: {len(gaps)} mutants reached by no selected test (not counted as killed)"
                + (f"; the first {GAPS_SHOWN}:" if len(gaps) > GAPS_SHOWN else ":")
            )
            for m in gaps[:GAPS_SHOWN]:
                say(f"GAP {m.name}\n{m.diff or '  (no diff)'}")

    def _ttd(self, say: Say) -> None:
        from .scores import median_ttd, p90_ttd

        r = self.report
        ttd, p90 = median_ttd(r.mutants), p90_ttd(r.mutants)
        timed = sum(m.ttd_s is not None for m in r.of("killed"))
        say(
            f"median time to detection: {'-' if ttd is None else f'{ttd:.3f} s'}, 90th percentile "
            f"{'-' if p90 is None else f'{p90:.3f} s'}, over {timed} killed mutants (pytest -x in mutmut's sessions); "
            f"{len(r.mutants)} mutants in {self.seconds:.1f} s"
        )
        if self.extra.get("gate_ttd_line"):
            say(self.extra["gate_ttd_line"])

    def summary_line(self) -> str:
        if self.failed_run:
            return self.failed_run
        return (
            f"mutate: {'FAIL' if self.report.failures() else 'pass'} mutants={len(self.report.mutants)} "
            + " ".join(f"{t.name}={'-' if t.score is None else f'{100 * t.score:.1f}%'}" for t in self.report.layers)
            + self.suffix
        )

    def to_json(self) -> dict[str, Any]:
        return {"failed": self.failed_run} if self.failed_run else dict(self.report.to_json(self.extra))


@dataclass(frozen=True)
class MutatePlan:
    """What ``kvproof mutate`` was asked to run."""

    layers: tuple[str, ...]
    profile: str
    shard: Shard
    max_children: int
    timeout: float | None
    equivalents_path: str | None
    rejudge_path: str | None
    gate_sample: int | None


def _checked(plan: MutatePlan) -> tuple[Any, Any, Any]:
    """The plan's targets, reviewed equivalents and the earlier report to rejudge, each refused when it cannot be used."""
    from .driver import mutmut_unavailable
    from .equivalents import EquivalentsError, load_equivalents
    from .profiles import MutateProfileError, rejudge_refusal, targets_for
    from .scores import MergeError, read_shard_run

    if not (ROOT / "pyproject.toml").is_file() or not (ROOT / "spec").is_dir():
        raise Unavailable(f"kvproof mutate: needs a checkout (spec/, pyproject.toml); {ROOT} is not one")
    why = mutmut_unavailable()
    if why:
        raise Unavailable(f"kvproof mutate: {why}")
    try:
        targets = targets_for(plan.profile, ROOT, plan.layers)
        equivalents = load_equivalents(ROOT, Path(plan.equivalents_path) if plan.equivalents_path else None)
        earlier = read_shard_run(plan.rejudge_path) if plan.rejudge_path else None
    except (MutateProfileError, EquivalentsError, MergeError) as exc:
        raise CampaignInputError(str(exc)) from None
    if not targets:
        raise CampaignInputError(f"profile {plan.profile} has no modules in {', '.join(plan.layers)}")
    if earlier is not None:
        refusal = rejudge_refusal(earlier.profile, earlier.layers, earlier.shard, plan.profile, targets, plan.shard)
        if refusal:
            raise CampaignInputError(f"--rejudge {plan.rejudge_path} {refusal}")
    return targets, equivalents, earlier


def run_mutate(plan: MutatePlan, say: Say, warn: Say) -> MutateRun:
    """A mutation run (or the rejudging of an earlier report) in a workspace per profile and shard, then the gate's
    time to detection on a sample of the killed mutants."""
    from . import gate_ttd
    from .driver import MutateError, rejudge, run_groups
    from .workspace import WORK_ROOT

    targets, equivalents, earlier = _checked(plan)
    shard = plan.shard
    say(
        f"kvproof mutate: profile={plan.profile} layers={','.join(plan.layers)} modules={len(targets)} shard={shard} "
        f"max-children={plan.max_children}" + (f" rejudge={plan.rejudge_path}" if plan.rejudge_path else "")
    )
    say_indented = lambda line: warn(f"  {line}")
    work = ROOT / WORK_ROOT / f"{plan.profile}-{shard.index}-of-{shard.count}"  # shards of a matrix side by side
    try:
        if earlier is not None:
            run = rejudge(ROOT, targets, earlier.report, shard, plan.max_children, equivalents, plan.timeout, work, say_indented)
        else:
            run = run_groups(ROOT, targets, shard, plan.max_children, equivalents, plan.timeout, work=work, say=say_indented)
    except MutateError as exc:
        return MutateRun(None, 0.0, "", failed_run=f"kvproof mutate: FAILED: {exc}")
    if earlier is not None:
        say(
            f"kvproof mutate: {run.carried} verdicts carried from {plan.rejudge_path}, "
            f"{len(run.report.mutants) - run.carried} judged now"
        )
    extra = {
        "profile": plan.profile,
        "paths": list(plan.layers),
        "shard": str(shard),
        "seconds": round(run.seconds, 2),
        "max_children": plan.max_children,
        "carried": run.carried,
        "rejudged_from": plan.rejudge_path,
    }
    sample = gate_ttd.SAMPLE[plan.profile] if plan.gate_sample is None else plan.gate_sample
    if sample:
        say(f"kvproof mutate: timing the gate on {sample} of the killed mutants (kvproof check --fail-fast each)")
        workspaces = [r.workspace.path for r in getattr(run, "runs", [run])]
        found = gate_ttd.run_gate_ttd(workspaces, run.report.mutants, sample, plan.profile, ROOT, say=say_indented)
        extra["gate_ttd"] = [d.to_json() for d in found]
        extra["gate_ttd_line"] = gate_ttd.summary(found, plan.profile)
    return MutateRun(run.report, run.seconds, "" if shard.whole else f" shard={shard}", extra)


def run_merge(paths: tuple[str, ...], say: Say) -> MutateRun:
    """The union of a run's shard reports, or of whole runs split by module, judged as one run (``--merge``)."""
    from .profiles import MutateProfileError, targets_for
    from .scores import MergeError, layer_of, merge_module_runs, merge_shard_runs, read_shard_run

    try:
        runs = [read_shard_run(p) for p in paths]
        by_module = len(runs) > 1 and all(r.shard.whole for r in runs)
        if by_module:
            touched = sorted(
                {p.split("/", 1)[0] for r in runs for p in r.layers}
                | {layer_of(m.module) for r in runs for m in r.report.mutants}
            )
            layer_modules = {layer: [t.module for t in targets_for(runs[0].profile, ROOT, (layer,))] for layer in touched}
            report = merge_module_runs(runs, layer_modules)
        else:
            report = merge_shard_runs(runs)
    except (MergeError, MutateProfileError) as exc:
        raise CampaignInputError(f"kvproof mutate --merge: {exc}") from None
    if by_module:
        layers = sorted({p for r in runs for p in r.layers})
        say(
            f"kvproof mutate: merged {len(runs)} whole runs of profile={runs[0].profile} by module: "
            + ", ".join(f"{','.join(r.layers)} ({len(r.report.mutants)} mutants, {r.seconds:.0f} s)" for r in runs)
        )
    else:
        runs.sort(key=lambda r: r.shard)
        layers = list(runs[0].layers)
        say(
            f"kvproof mutate: merged {len(runs)} shards of profile={runs[0].profile} layers={','.join(layers)}: "
            + ", ".join(f"{r.shard} ({len(r.report.mutants)} mutants, {r.seconds:.0f} s)" for r in runs)
        )
    seconds = sum(r.seconds for r in runs)
    extra = {
        "profile": runs[0].profile,
        "paths": layers,
        "shard": "1/1",
        "seconds": round(seconds, 2),
        "merged": [
            {"shard": str(r.shard), "paths": list(r.layers), "file": r.path, "mutants": len(r.report.mutants)} for r in runs
        ],
    }
    return MutateRun(report, seconds, f" merged={len(runs)}", extra)

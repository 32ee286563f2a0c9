"""`kvproof mutate`: mutation testing with mutmut."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from .. import report as out
from ..report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from .app import main
from .options import (
    _parse_shard,
    json_option,
)

# ----------------------------------------------------------------------------- mutate


def _layers(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    from ..stateful_tests.mutation.profiles import LAYERS

    chosen = [part.strip().strip("/") for v in value for part in v.replace(",", " ").split()]
    unknown = [c for c in chosen if c.split("/", 1)[0] not in LAYERS or ("/" in c and not c.endswith(".py"))]
    if unknown:
        raise click.BadParameter(f"{unknown[0]!r}: choose from {', '.join(LAYERS)}, or a module of one (reference/sequences.py)")
    return tuple(dict.fromkeys(chosen)) or LAYERS


@main.command()
@click.option("--paths", "layers", multiple=True, callback=_layers, metavar="LAYERS",
              help="mutate only these layers (spec, reference, impl) or modules (reference/sequences.py); repeat, "
                   "or comma-separate; default: all three layers")
@click.option("--profile", type=click.Choice(["quick", "ci"]), default="quick", show_default=True,
              help="quick: a few spec modules with the tests written for them; ci: every module of the layers, "
                   "judged by the tree, sequences and deepinfer tests without their slow campaigns")
@click.option("--shard", callback=_parse_shard, default=None, metavar="K/N",
              help="run only shard K of N: the mutants, sorted by name, numbered i with i % N == K-1")
@click.option("--max-children", type=click.IntRange(1), default=1, show_default=True, help="mutmut's parallel test workers")
@click.option("--timeout", type=click.FloatRange(1), default=None, help="stop mutmut (and fail) after this many seconds")
@click.option("--equivalents", "equivalents_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="the reviewed equivalent mutants (default: docs/mutation-equivalents.toml)")
@click.option("--merge", "merge_paths", multiple=True, type=click.Path(exists=True, dir_okay=False), metavar="JSON",
              help="run nothing: merge the --json reports of every shard K/N of one run, or of whole runs that split "
                   "whole layers by module (repeat), and judge the union")
@click.option("--rejudge", "rejudge_path", type=click.Path(exists=True, dir_okay=False), default=None, metavar="JSON",
              help="judge again only what this earlier --json report (same profile and shard; its modules or some of them) left unsettled: "
                   "its survivors, gaps, unchecked mutants and every mutant of an edited function; carry its kills")
@click.option("--gate-ttd", "gate_sample", type=click.IntRange(0), default=None,
              help="after the run, switch on this many of its killed mutants (every k-th by name) one at a time and time "
                   "`kvproof check --profile PROFILE --fail-fast` until it fails; default: 10 for quick, 0 for ci")
@json_option
def mutate(layers: tuple[str, ...], profile: str, shard: Any, max_children: int, timeout: float | None,
           equivalents_path: str | None, merge_paths: tuple[str, ...], rejudge_path: str | None, gate_sample: int | None,
           json_path: str | None) -> None:
    """Mutation testing with mutmut: does the suite notice a changed rule? (stateful_tests/mutation/)

    Prints the score per module and layer (killed / (killed + survived); mutants no test reaches are
    a gap, in their own column, never killed), every survivor's diff, and the median time to detection.
    Exit 0 when spec/ and reference/ score at least 95% and impl/ 90%, 1 when not, 2 when mutmut
    is not installed (the [mutate] extra). Works in a copy under .kvproof-mutate/ of a checkout.

    A CI matrix runs ``--shard K/N --json shard-K.json`` per job, then ``--merge shard-*.json``
    judges the whole run: the shards must be all N of one run, disjoint, or the merge refuses. A
    matrix split by module (``--paths impl/radix_tree.py`` per job) merges the same way: whole runs,
    each module in one of them, every layer they touch judged whole.
    """
    if merge_paths:
        _merge_mutate(merge_paths, json_path)
        return
    from ..stateful_tests.mutation.driver import MutateError, mutmut_unavailable, rejudge, run_groups
    from ..stateful_tests.mutation.equivalents import EquivalentsError, load_equivalents
    from ..stateful_tests.mutation.profiles import MutateProfileError, rejudge_refusal, targets_for
    from ..stateful_tests.mutation.scores import MergeError, read_shard_run
    from ..stateful_tests.mutation.workspace import WORK_ROOT

    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "spec").is_dir():
        click.echo(f"kvproof mutate: needs a checkout (spec/, pyproject.toml); {root} is not one")
        sys.exit(EXIT_USAGE)
    why = mutmut_unavailable()
    if why:
        click.echo(f"kvproof mutate: {why}")
        sys.exit(EXIT_USAGE)
    try:
        targets = targets_for(profile, root, layers)
        equivalents = load_equivalents(root, Path(equivalents_path) if equivalents_path else None)
    except (MutateProfileError, EquivalentsError) as exc:
        raise click.UsageError(str(exc)) from None
    if not targets:
        raise click.UsageError(f"profile {profile} has no modules in {', '.join(layers)}")
    earlier = None
    if rejudge_path:
        try:
            earlier = read_shard_run(rejudge_path)
        except MergeError as exc:
            raise click.UsageError(str(exc)) from None
        refusal = rejudge_refusal(earlier.profile, earlier.layers, earlier.shard, profile, targets, shard)
        if refusal:
            raise click.UsageError(f"--rejudge {rejudge_path} {refusal}")
    click.echo(f"kvproof mutate: profile={profile} layers={','.join(layers)} modules={len(targets)} shard={shard} "
               f"max-children={max_children}" + (f" rejudge={rejudge_path}" if rejudge_path else ""))
    say = lambda line: click.echo(f"  {line}", err=True)
    try:
        # one workspace per profile and shard, so the shards of a matrix can run side by side on one machine
        work = root / WORK_ROOT / f"{profile}-{shard.index}-of-{shard.count}"
        if earlier is not None:
            run = rejudge(root, targets, earlier.report, shard, max_children, equivalents, timeout, work, say)
        else:
            run = run_groups(root, targets, shard, max_children, equivalents, timeout, work=work, say=say)
    except MutateError as exc:
        click.echo(f"kvproof mutate: FAILED: {exc}")
        sys.exit(EXIT_FAIL)
    if earlier is not None:
        click.echo(f"kvproof mutate: {run.carried} verdicts carried from {rejudge_path}, "
                   f"{len(run.report.mutants) - run.carried} judged now")
    extra = {"profile": profile, "paths": list(layers), "shard": str(shard), "seconds": round(run.seconds, 2),
             "max_children": max_children, "carried": run.carried, "rejudged_from": rejudge_path}
    from ..stateful_tests.mutation import gate_ttd

    sample = gate_ttd.SAMPLE[profile] if gate_sample is None else gate_sample
    if sample:
        click.echo(f"kvproof mutate: timing the gate on {sample} of the killed mutants (kvproof check --fail-fast each)")
        workspaces = [r.workspace.path for r in getattr(run, "runs", [run])]
        found = gate_ttd.run_gate_ttd(workspaces, run.report.mutants, sample, profile, root, say=say)
        extra["gate_ttd"] = [d.to_json() for d in found]
        extra["gate_ttd_line"] = gate_ttd.summary(found, profile)
    _show_mutate(run.report, run.seconds, "" if shard.whole else f" shard={shard}", json_path, extra)


def _merge_mutate(paths: tuple[str, ...], json_path: str | None) -> None:
    """``kvproof mutate --merge``: the union of a run's shard reports, or of whole runs by module, judged as one run."""
    from ..stateful_tests.mutation.profiles import MutateProfileError, targets_for
    from ..stateful_tests.mutation.scores import MergeError, layer_of, merge_module_runs, merge_shard_runs, read_shard_run

    try:
        runs = [read_shard_run(p) for p in paths]
        by_module = len(runs) > 1 and all(r.shard.whole for r in runs)
        if by_module:
            root = Path(__file__).resolve().parents[2]
            touched = sorted({p.split("/", 1)[0] for r in runs for p in r.layers} | {layer_of(m.module) for r in runs for m in r.report.mutants})
            layer_modules = {layer: [t.module for t in targets_for(runs[0].profile, root, (layer,))] for layer in touched}
            report = merge_module_runs(runs, layer_modules)
        else:
            report = merge_shard_runs(runs)
    except (MergeError, MutateProfileError) as exc:
        click.echo(f"kvproof mutate --merge: {exc}")
        sys.exit(EXIT_USAGE)
    seconds = sum(r.seconds for r in runs)
    if by_module:
        layers = sorted({p for r in runs for p in r.layers})
        click.echo(f"kvproof mutate: merged {len(runs)} whole runs of profile={runs[0].profile} by module: "
                   + ", ".join(f"{','.join(r.layers)} ({len(r.report.mutants)} mutants, {r.seconds:.0f} s)" for r in runs))
    else:
        runs.sort(key=lambda r: r.shard)
        layers = list(runs[0].layers)
        click.echo(f"kvproof mutate: merged {len(runs)} shards of profile={runs[0].profile} layers={','.join(layers)}: "
                   + ", ".join(f"{r.shard} ({len(r.report.mutants)} mutants, {r.seconds:.0f} s)" for r in runs))
    extra = {"profile": runs[0].profile, "paths": layers, "shard": "1/1", "seconds": round(seconds, 2),
             "merged": [{"shard": str(r.shard), "paths": list(r.layers), "file": r.path, "mutants": len(r.report.mutants)}
                        for r in runs]}
    _show_mutate(report, seconds, f" merged={len(runs)}", json_path, extra)


GAPS_SHOWN = 20  # a report prints this many gaps with their diffs; the JSON lists every one


def _show_mutate(report: Any, seconds: float, suffix: str, json_path: str | None, extra: dict[str, Any]) -> None:
    """Print a mutation report (table, survivors, gaps, time to detection, goals), write its JSON, exit by the goals."""
    from ..stateful_tests.mutation.scores import HEADERS, median_ttd, p90_ttd

    out.print_table(HEADERS, report.table_rows(), numeric=tuple(range(1, len(HEADERS))))
    for m in report.of("survived"):
        click.echo(f"\nSURVIVED {m.name} (function hash {m.function_hash})\n{m.diff or '  (no diff)'}")
    for entry in report.stale:
        click.echo(f"stale equivalent (its function changed; review again): {entry.mutant}")
    gaps = report.of("no tests")
    if gaps:
        shown = gaps[:GAPS_SHOWN]
        click.echo(f"\ngap: {len(gaps)} mutants reached by no selected test (not counted as killed)"
                   + (f"; the first {GAPS_SHOWN}:" if len(gaps) > GAPS_SHOWN else ":"))
        for m in shown:
            click.echo(f"GAP {m.name}\n{m.diff or '  (no diff)'}")
    ttd, p90 = median_ttd(report.mutants), p90_ttd(report.mutants)
    timed = sum(m.ttd_s is not None for m in report.of("killed"))
    click.echo(f"median time to detection: {'-' if ttd is None else f'{ttd:.3f} s'}, 90th percentile "
               f"{'-' if p90 is None else f'{p90:.3f} s'}, over {timed} killed mutants (pytest -x in mutmut's sessions); "
               f"{len(report.mutants)} mutants in {seconds:.1f} s")
    if extra.get("gate_ttd_line"):
        click.echo(extra["gate_ttd_line"])
    if json_path:
        out.write_json(json_path, "mutate", report.to_json(extra))
    failures = report.failures()
    for line in failures:
        click.echo(f"GOAL NOT MET: {line}")
    click.echo(f"mutate: {'FAIL' if failures else 'pass'} mutants={len(report.mutants)} "
               + " ".join(f"{t.name}={'-' if t.score is None else f'{100 * t.score:.1f}%'}" for t in report.layers)
               + suffix)
    sys.exit(EXIT_FAIL if failures else EXIT_PASS)

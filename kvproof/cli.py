"""The ``kvproof`` command.

    kvproof check   [--target T] [--profile ci|deep] [--seed S] [--only NAME] [--json FILE] [--allow-skip]
    kvproof conform dynamo [--target T] [--streams N] [--seed S] [--stream K] [--json FILE]
    kvproof conform slot-tracker [--scenarios N] [--seed S] [--json FILE]
    kvproof vectors [--target T]

``--target`` is ``reference``, ``dynamo``, or ``module.path:Factory`` for any tree with the
``dynamo._core.RadixTree`` API (see ``kvproof.stateful_tests.harness.targets``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

DEFAULT_TARGET = "impl"

# Rule families beyond the radix tree add subcommands from their own modules.
EXTRA_COMMAND_MODULES: list[str] = [".cli_tree", ".cli_deepinfer", ".cli_sequences", ".cli_proofs"]


def _target(name: str):
    from .stateful_tests.harness.targets import load_target

    target = load_target(name)
    if not target.available:
        print(f"kvproof: target {name!r} is unavailable: {target.reason}", file=sys.stderr)
        raise SystemExit(2)
    return target


def cmd_check(args: argparse.Namespace) -> int:
    from .gate import PROFILES, run_gate

    target = _target(args.target)
    profile = PROFILES[args.profile]

    def progress(row) -> None:
        print(f"  {row.result:<4} {row.layer}: {row.name} ({row.seconds:.1f} s)", flush=True)

    print(f"kvproof check: target={args.target} profile={profile.name}", flush=True)
    report = run_gate(args.target, target.factory, profile, args.seed, args.only, progress)
    print()
    print(report.table())
    for row in report.rows:
        if row.result != "pass":
            print(f"\n{row.result} {row.layer}: {row.name}\n  {row.detail}")
            if row.replay:
                print(f"  replay: {row.replay}")
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=1))
    passed = len(report.rows) - len(report.failed) - len(report.skipped)
    total = sum(r.seconds for r in report.rows)
    print(
        f"\nkvproof check: {passed} passed, {len(report.failed)} failed, {len(report.skipped)} skipped "
        f"in {total:.1f} s (target={args.target} profile={profile.name} seed={report.seed})"
    )
    if report.failed:
        return 1
    if report.skipped and not args.allow_skip:
        print("kvproof check: a skipped check is not a pass; install what it needs or pass --allow-skip")
        return 1
    return 0


def cmd_conform(args: argparse.Namespace) -> int:
    from .stateful_tests.tree.conformance import conform, write_failure_files
    from .stateful_tests.tree.streams import StreamProfile

    subject = _target(args.target)
    oracle = _target(args.oracle)
    profile = StreamProfile(events=args.events)

    def on_mismatch(m) -> None:
        print(m.report(args.target, args.oracle), flush=True)

    report = conform(
        subject.factory, oracle.factory, args.streams, args.seed, profile,
        only_stream=args.stream, subject_name=args.target, oracle_name=args.oracle, on_mismatch=on_mismatch,
    )
    if report.mismatches:
        for path in write_failure_files(report, Path("kvproof-failures")):
            print(f"wrote {path}")
    print(f"seconds={report.seconds:.1f} seed={args.seed} subject={args.target} oracle={args.oracle}")
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=1))
    print(report.summary_line())
    return 1 if report.mismatches else 0


def cmd_vectors(args: argparse.Namespace) -> int:
    from .stateful_tests.tree.vectors import SCENARIOS, run_scenario

    target = _target(args.target)
    failed = 0
    for scenario in SCENARIOS:
        problems = run_scenario(target.factory, scenario)
        failed += bool(problems)
        print(f"{'FAIL' if problems else 'pass'}  {scenario.name}  ({scenario.source})")
        for p in problems:
            print(f"      {p}")
    print(f"vectors: {len(SCENARIOS)} scenarios, {failed} failed (target={args.target})")
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kvproof", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="run the whole gate against one target")
    check.add_argument("--target", default=DEFAULT_TARGET)
    check.add_argument("--profile", choices=["ci", "deep"], default="ci")
    check.add_argument("--seed", type=int, default=None, help="replay a run (deep profile prints its seed)")
    check.add_argument("--only", default=None, help="run only checks whose layer or name contains this")
    check.add_argument("--json", default=None, help="write the table as JSON to this file")
    check.add_argument("--allow-skip", action="store_true", help="do not fail when a check is skipped")
    check.set_defaults(func=cmd_check)

    conform = sub.add_parser("conform", help="differential conformance against an oracle")
    conform.add_argument("oracle", help="the oracle, normally 'dynamo'")
    conform.add_argument("--target", default=DEFAULT_TARGET, help="the tree under test")
    conform.add_argument("--streams", type=int, default=200)
    conform.add_argument("--seed", type=int, default=1)
    conform.add_argument("--stream", type=int, default=None, help="replay one stream of the run")
    conform.add_argument("--events", type=int, default=48, help="operations per stream")
    conform.add_argument("--json", default=None)
    conform.set_defaults(func=cmd_conform)

    vectors = sub.add_parser("vectors", help="replay the observed-behaviour vectors")
    vectors.add_argument("--target", default=DEFAULT_TARGET)
    vectors.set_defaults(func=cmd_vectors)

    for name in EXTRA_COMMAND_MODULES:  # each adds its own subcommands: register(subparsers)
        importlib.import_module(name, __package__).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:2] == ["conform", "slot-tracker"]:  # the slot tracker's conformance has its own options
        argv = ["conform-slot-tracker", *argv[2:]]
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())

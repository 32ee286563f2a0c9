"""The DeepInfer rule family's commands.

    kvproof roundtrip --backend {numpy,torch,cuda,cupy} [--seed S] [--count N] [--case K] [--controls]
                      [--json FILE] [--allow-skip]
    kvproof bench-roundtrip [--json FILE] [--backends numpy,torch,cuda,cupy] [--repeats N]
    kvproof deepinfer-labs

``roundtrip`` runs every round-trip law over the deterministic cases on one backend and prints a
pass/fail table; a backend that cannot run here prints SKIP with the reason and exits 1 unless
``--allow-skip``. ``--controls`` also runs the negative controls (mutants and weak-test traps)
with their catch rates. ``bench-roundtrip`` is the benchmark (also reachable as ``kvproof bench
roundtrip`` through ``bench_roundtrip_main``). ``deepinfer-labs`` prints the spec's rendering of
the chapter's lab outputs next to the printed lines.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .stateful_tests.deepinfer.bench import add_bench_roundtrip_arguments, bench_roundtrip_main

__all__ = ["register", "bench_roundtrip_main", "add_bench_roundtrip_arguments"]


def cmd_roundtrip(args: argparse.Namespace) -> int:
    from .stateful_tests.deepinfer.mutants import run_controls
    from .stateful_tests.deepinfer.roundtrip_laws import run_suite

    report = run_suite(args.backend, seed=args.seed, count=args.count, only_case=args.case)
    print(
        f"kvproof roundtrip: backend={args.backend} seed={args.seed} cases={report.cases}"
        + (f" (case {args.case} only)" if args.case is not None else ""),
        flush=True,
    )
    print(report.table())
    for result in report.failed:
        for case, message in result.problems[:3]:
            print(f"\nFAIL {result.law.name} ({result.law.title}) case {case.index} [{case.name}]\n  {message}")
            print(f"  replay: {report.replay(case)} --count {args.count}")
    controls = []
    if args.controls and not report.skipped:
        backends = ("numpy", args.backend) if args.backend != "numpy" else ("numpy", "torch")
        controls = run_controls(seed=args.seed, count=args.count, backends=backends, rates=True)
        print(f"\nnegative controls (seed {args.seed}, {args.count} cases; caught = cases where a listed law fails)")
        for c in controls:
            rate = f"{c.caught_cases:>3}/{c.cases:<3}" if c.cases else "   -   "
            print(f"  {'pass' if c.ok else 'SKIP' if c.skipped else 'FAIL'}  {rate}  {c.name}: {c.detail}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "backend": args.backend,
                    "seed": args.seed,
                    "cases": report.cases,
                    "skipped": report.skipped,
                    "laws": [
                        {
                            "law": r.law.name,
                            "title": r.law.title,
                            "cases": r.cases,
                            "checks": r.checks,
                            "result": "pass" if r.passed else "FAIL",
                            "problems": [f"case {c.index}: {m}" for c, m in r.problems[:5]],
                        }
                        for r in report.results
                    ],
                    "controls": [c.__dict__ for c in controls],
                },
                indent=1,
            )
        )
    failed = len(report.failed) + sum(not c.ok and not c.skipped for c in controls)
    skipped_controls = [c for c in controls if c.skipped]
    if report.skipped:
        print(f"\nkvproof roundtrip: SKIP backend={args.backend}: {report.skipped}")
        if args.allow_skip:
            return 0
        print("kvproof roundtrip: a skipped backend is not a pass; pass --allow-skip to accept it")
        return 1
    passed = len(report.results) - len(report.failed)
    print(
        f"\nkvproof roundtrip: {passed} laws passed, {len(report.failed)} failed, {report.checks} checks "
        f"(backend={args.backend} seed={args.seed} cases={report.cases})"
    )
    if failed:
        return 1
    if skipped_controls:
        print(f"kvproof roundtrip: {len(skipped_controls)} controls skipped: {skipped_controls[0].skipped}")
        if not args.allow_skip:
            print("kvproof roundtrip: a skipped control is not a pass; pass --allow-skip to accept it")
            return 1
    return 0


def cmd_labs(args: argparse.Namespace) -> int:
    from .stateful_tests.deepinfer.golden import GOLDENS, golden_problems

    bad = 0
    for golden in GOLDENS:
        compared, problems = golden_problems(golden)
        bad += len(problems)
        print(f"== {golden.name} ({golden.source}): {compared} lines, {len(problems)} differ")
        for line in golden.render():
            print(f"   {line}")
        for p in problems:
            print(f"   DIFFERS: {p}")
    return 1 if bad else 0


def register(subparsers) -> None:
    """Add ``roundtrip``, ``bench-roundtrip`` and ``deepinfer-labs`` to the ``kvproof`` command."""
    rt = subparsers.add_parser("roundtrip", help="run the state round-trip laws on one array backend")
    rt.add_argument("--backend", choices=["numpy", "torch", "cuda", "cupy"], default="numpy")
    rt.add_argument("--seed", type=int, default=1)
    rt.add_argument("--count", type=int, default=60, help="cases (the fixed ones first, then random)")
    rt.add_argument("--case", type=int, default=None, help="replay one case of the run")
    rt.add_argument("--controls", action="store_true", help="also run the negative controls with catch rates")
    rt.add_argument("--json", default=None)
    rt.add_argument("--allow-skip", action="store_true", help="exit 0 when the backend is unavailable here")
    rt.set_defaults(func=cmd_roundtrip)

    bench = subparsers.add_parser(
        "bench-roundtrip", help="select/load throughput vs a plain copy (kvproof bench roundtrip)"
    )
    add_bench_roundtrip_arguments(bench)
    bench.set_defaults(func=bench_roundtrip_main)

    labs = subparsers.add_parser("deepinfer-labs", help="print the chapter 11 lab outputs as the spec computes them")
    labs.set_defaults(func=cmd_labs)

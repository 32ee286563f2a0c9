"""Subcommands of the concurrent radix tree: ``kvproof stress`` and ``kvproof bench``."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path


def cmd_stress(args: argparse.Namespace) -> int:
    from .stateful_tests.tree.impl_mutants import IMPL_MUTANTS
    from .stateful_tests.tree.stress import StressConfig, run_stress

    tree_class = None
    if args.mutant:
        tree_class = next((m for m in IMPL_MUTANTS if m.__name__ == args.mutant), None)
        if tree_class is None:
            print(f"kvproof: unknown mutant {args.mutant!r}; one of {[m.__name__ for m in IMPL_MUTANTS]}", file=sys.stderr)
            return 2
    modes = ["strict", "chaos"] if args.mode == "both" else [args.mode]
    runs, caught = max(1, args.runs), 0
    reports = []
    for run in range(runs):
        for mode in modes:
            config = StressConfig(
                ops=args.ops // len(modes), seed=args.seed + run, writers=args.writers, readers=args.readers,
                mode=mode, check_every=args.check_every, yield_sleep=args.yield_sleep,
            )
            report = run_stress(config, tree_class) if tree_class else run_stress(config)
            reports.append(report)
            caught += report.failed
            print(f"run {run + 1}/{runs} {mode} seed={config.seed}: {report.summary_line()} ({report.seconds:.1f} s)", flush=True)
            for problem in report.problems[:5]:
                print(f"  problem: {problem}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_json() for r in reports], indent=1))
    if tree_class is not None:
        print(f"mutant {args.mutant}: caught in {caught} of {len(reports)} runs ({args.mode}, {args.ops} ops each)")
        return 0 if caught else 1
    ops, reads = sum(r.ops for r in reports), sum(r.reads for r in reports)
    overcounts, breaks = sum(r.overcounts for r in reports), sum(r.parity_breaks for r in reports)
    stats: dict = {}
    for r in reports:
        for k, v in r.statistics.items():
            stats[k] = stats.get(k, 0) + v
    print(f"seconds={sum(r.seconds for r in reports):.1f} seed={args.seed} modes={'+'.join(modes)} "
          f"writers={args.writers} readers={args.readers} checkpoints={sum(r.checkpoints for r in reports)}")
    print(f"statistics: { {k: v for k, v in stats.items() if v} }")
    if any(r.failed for r in reports):
        print(f"replay the workload: kvproof stress --ops {args.ops} --seed {args.seed} --mode {args.mode}")
    print(f"stress: ops={ops} reads={reads} overcounts={overcounts} parity_breaks={breaks}")
    return 1 if any(r.failed for r in reports) else 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.what == "roundtrip":
        from .cli_deepinfer import bench_roundtrip_main

        return bench_roundtrip_main(args)
    from .stateful_tests.tree.bench import run_bench

    report = run_bench(args.streams, args.seed, args.repeats)
    print(report.table())
    if args.json:
        Path(args.json).write_text(json.dumps({"events": report.events, "queries": report.queries,
                                               "rows": [asdict(r) for r in report.rows]}, indent=1))
    return 0


def register(sub) -> None:
    stress = sub.add_parser("stress", help="real-thread stress of the concurrent tree")
    stress.add_argument("--ops", type=int, default=20_000)
    stress.add_argument("--seed", type=int, default=1)
    stress.add_argument("--mode", choices=["strict", "chaos", "both"], default="both",
                        help="strict: no holes, exact parity with the reference; chaos: holes and churn; both: half each")
    stress.add_argument("--writers", type=int, default=8)
    stress.add_argument("--readers", type=int, default=4)
    stress.add_argument("--check-every", type=int, default=250, help="operations per writer between quiescent checks")
    stress.add_argument("--yield-sleep", type=float, default=0.02, help="chance a yield point gives up the interpreter lock")
    stress.add_argument("--mutant", default=None, help="stress a deliberately broken tree (a negative control)")
    stress.add_argument("--runs", type=int, default=1, help="repeat with seeds seed, seed+1, ... and count detections")
    stress.add_argument("--json", default=None)
    stress.set_defaults(func=cmd_stress)

    bench = sub.add_parser("bench", help="throughput, side by side: the trees, or `bench roundtrip` for the state round trip")
    bench.add_argument("--streams", type=int, default=60)
    bench.add_argument("--seed", type=int, default=1)
    bench.add_argument("--repeats", type=int, default=3)
    bench.add_argument("--json", default=None)
    bench.set_defaults(func=cmd_bench, what="tree")
    kinds = bench.add_subparsers(dest="what")
    roundtrip = kinds.add_parser("roundtrip", help="select/load GB/s against a plain copy, per backend")
    from .stateful_tests.deepinfer.bench import add_bench_roundtrip_arguments

    add_bench_roundtrip_arguments(roundtrip)
    roundtrip.set_defaults(func=cmd_bench, what="roundtrip")

"""Subcommands of the concurrent radix tree: ``kvproof stress`` and ``kvproof bench``."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path


def cmd_stress(args: argparse.Namespace) -> int:
    from .stateful_tests.impl_mutants import IMPL_MUTANTS
    from .stateful_tests.stress import StressConfig, run_stress

    tree_class = None
    if args.mutant:
        tree_class = next((m for m in IMPL_MUTANTS if m.__name__ == args.mutant), None)
        if tree_class is None:
            print(f"kvproof: unknown mutant {args.mutant!r}; one of {[m.__name__ for m in IMPL_MUTANTS]}", file=sys.stderr)
            return 2
    runs, caught, last = max(1, args.runs), 0, None
    for run in range(runs):
        config = StressConfig(
            ops=args.ops, seed=args.seed + run, writers=args.writers, readers=args.readers, mode=args.mode,
            check_every=args.check_every, yield_sleep=args.yield_sleep,
        )
        last = run_stress(config, tree_class) if tree_class else run_stress(config)
        caught += last.failed
        if runs > 1:
            print(f"run {run + 1}/{runs} seed={config.seed}: {last.summary_line()}", flush=True)
    assert last is not None
    for problem in last.problems[:5]:
        print(f"  problem: {problem}")
    if args.json:
        Path(args.json).write_text(json.dumps(last.to_json(), indent=1))
    if tree_class is not None:
        print(f"mutant {args.mutant}: caught in {caught} of {runs} runs ({args.mode}, {args.ops} ops each)")
        return 0 if caught else 1
    stats = {k: v for k, v in last.statistics.items() if v}
    print(f"seconds={last.seconds:.1f} seed={args.seed} mode={args.mode} writers={args.writers} readers={args.readers} "
          f"checkpoints={last.checkpoints}")
    print(f"statistics: {stats}")
    if last.failed:
        print(f"replay the workload: kvproof stress --ops {args.ops} --seed {args.seed} --mode {args.mode}")
    print(last.summary_line())
    return 1 if last.failed else 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.what == "roundtrip":
        from .cli_deepinfer import bench_roundtrip_main

        return bench_roundtrip_main(args)
    from .stateful_tests.bench import run_bench

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
    stress.add_argument("--mode", choices=["strict", "chaos"], default="chaos")
    stress.add_argument("--writers", type=int, default=8)
    stress.add_argument("--readers", type=int, default=4)
    stress.add_argument("--check-every", type=int, default=250, help="operations per writer between quiescent checks")
    stress.add_argument("--yield-sleep", type=float, default=0.02, help="chance a yield point gives up the interpreter lock")
    stress.add_argument("--mutant", default=None, help="stress a deliberately broken tree (a negative control)")
    stress.add_argument("--runs", type=int, default=1, help="repeat with seeds seed, seed+1, ... and count detections")
    stress.add_argument("--json", default=None)
    stress.set_defaults(func=cmd_stress)

    bench = sub.add_parser("bench", help="throughput, side by side: the trees (default) or the state round trip")
    bench.add_argument("what", nargs="?", choices=["tree", "roundtrip"], default="tree")
    bench.add_argument("--streams", type=int, default=60)
    bench.add_argument("--seed", type=int, default=1)
    bench.add_argument("--repeats", type=int, default=3)
    bench.add_argument("--json", default=None)
    bench.set_defaults(func=cmd_bench)

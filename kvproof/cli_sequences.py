"""Command-line entry points for the active-sequence state (the slot tracker).

    kvproof conform-slot-tracker [--scenarios N] [--seed S] [--scenario K] [--jitter-ms J]
                                 [--parallel P] [--model reference|impl|spec|module:Class]
                                 [--json FILE] [--log FILE]

Starts ``python -m dynamo.slot_tracker`` on free local ports, drives ``N`` random scenarios
through its HTTP routes and its replica-sync feed, compares every read with the model
(within the measured time windows of the writes and the read; ``J`` only paces the
scenarios), prints each mismatch with the command that replays it, and ends with ``conform: scenarios=N reads=R mismatches=M``. Exit status 0 when
there is no mismatch, 1 otherwise, 2 when the package is not installed.

``kvproof conform slot-tracker ...`` is the same command (``conform_slot_tracker_main``);
the main parser routes it here.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

CONFORM_SLOT_TRACKER_ARGUMENTS = ("scenarios", "seed", "scenario", "jitter_ms", "parallel", "model", "json", "log")
"""The attribute names ``conform_slot_tracker_main`` reads from its namespace."""


def add_conform_slot_tracker_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``conform-slot-tracker`` to ``parser`` (shared with ``kvproof conform slot-tracker``)."""
    from .stateful_tests.sequences.oracle import DEFAULT_JITTER_MS

    parser.add_argument("--scenarios", type=int, default=20, help="random scenarios to run (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="the run's seed; scenario K of seed S is always the same plan")
    parser.add_argument("--scenario", type=int, default=None, help="replay only scenario K of the run")
    parser.add_argument("--jitter-ms", type=int, default=DEFAULT_JITTER_MS, help="pacing unit (ms): operations are 2-6 units apart; the time windows themselves are measured")
    parser.add_argument("--parallel", type=int, default=8, help="scenarios run at once, each on its own model name")
    parser.add_argument("--model", default="reference", help="the model compared: reference, impl, spec, or module:Class")
    parser.add_argument("--json", default=None, help="write the report as JSON to this file")
    parser.add_argument("--log", default=None, help="append the slot tracker's own log to this file")


def _model(name: str):
    from .stateful_tests.sequences.model import TARGETS

    if name in TARGETS:
        return TARGETS[name]
    module, _, attr = name.partition(":")
    if not attr:
        raise SystemExit(f"kvproof: unknown model {name!r}: use reference, impl, spec or module:Class")
    return getattr(importlib.import_module(module), attr)


def conform_slot_tracker_main(args: argparse.Namespace) -> int:
    """Run ``kvproof conform-slot-tracker`` / ``kvproof conform slot-tracker`` with parsed ``args``."""
    from .stateful_tests.sequences.oracle import conform_slot_tracker, oracle_unavailable

    reason = oracle_unavailable()
    if reason:
        print(f"kvproof: the slot-tracker oracle is unavailable: {reason}", file=sys.stderr)
        return 2
    model = _model(args.model)

    def on_mismatch(m) -> None:
        print(m.report(args.seed, args.scenarios), flush=True)

    report = conform_slot_tracker(
        args.scenarios, args.seed, jitter_ms=args.jitter_ms, parallel=args.parallel, only=args.scenario,
        on_mismatch=on_mismatch, log_path=args.log, model_factory=lambda: model(),
    )
    print(f"seconds={report.seconds:.1f} seed={args.seed} model={args.model} jitter_ms={args.jitter_ms} "
          f"ops={report.ops} writes={report.writes} modeled_adds={report.modeled_adds}")
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=1))
    print(report.summary_line())
    return 1 if report.mismatches else 0


def register(subparsers) -> None:
    """Add this area's subcommands to the ``kvproof`` parser."""
    conform = subparsers.add_parser(
        "conform-slot-tracker",
        help="differential conformance against the real dynamo slot tracker (HTTP + replica sync)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_conform_slot_tracker_arguments(conform)
    conform.set_defaults(func=conform_slot_tracker_main)

"""``kvproof prove``: every Z3 proof and CrossHair check, as a table."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path


def cmd_prove(args: argparse.Namespace) -> int:
    from .proofs.registry import CI, DEEP, readme, run_all, table

    rows = run_all(DEEP if args.profile == "deep" else CI, crosshair=not args.no_crosshair)
    print(table(rows))
    if args.verbose:
        for r in rows:
            print(f"\n{r.property}\n  {r.method} on {r.function}; bounds: {r.bounds}\n  {r.result}; control {r.control}: {r.counterexample}")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) | {"ok": r.ok} for r in rows], indent=1))
    if args.write_readme:
        path = Path(__file__).resolve().parent.parent / "proofs" / "README.md"
        path.write_text(readme(rows))
        print(f"wrote {path}")
    failed = [r for r in rows if not r.ok]
    for r in failed:
        print(f"FAILED: {r.property} ({r.method}): {r.result}; control {r.control}; {r.counterexample}")
    return 1 if failed else 0


def register(sub) -> None:
    prove = sub.add_parser("prove", help="run every Z3 proof and CrossHair check, with negative controls")
    prove.add_argument("--profile", choices=["ci", "deep"], default="ci", help="deep: longer solver and CrossHair budgets")
    prove.add_argument("--json", default=None)
    prove.add_argument("--no-crosshair", action="store_true", help="Z3 proofs only")
    prove.add_argument("--write-readme", action="store_true", help="regenerate proofs/README.md from the table")
    prove.add_argument("-v", "--verbose", action="store_true", help="also print each claim in full with its counterexample")
    prove.set_defaults(func=cmd_prove)

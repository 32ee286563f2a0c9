"""Run many ``crosshair`` commands in one process: ``python -m kvproof.proofs.crosshair_batch``.

Reads a JSON list of commands on stdin (each an ``argv`` as for ``python -m crosshair``), runs them
one after another through CrossHair's own command line (``unwalled_main``, behind the audit wall its
``main`` engages), and writes ``[[exit code, output, seconds], ...]`` on stdout. One process instead
of one per command spares each command the start of Python, CrossHair, Z3 and the kernels (about
0.45 s of CPU each). The kernels are imported by the first command, as ``crosshair`` imports them:
this module imports nothing of kvproof.
"""

from __future__ import annotations

import io
import json
import sys
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout

from crosshair.auditwall import engage_auditwall
from crosshair.main import unwalled_main


def run(argv: list[str]) -> tuple[int, str, float]:
    """One command's exit code (2 if CrossHair raised), its output and its seconds."""
    out = io.StringIO()
    started = time.perf_counter()
    with redirect_stdout(out), redirect_stderr(out):
        try:
            code = unwalled_main(argv)
        except Exception:
            traceback.print_exc()
            code = 2
    return code, out.getvalue().strip(), time.perf_counter() - started


if __name__ == "__main__":
    commands = json.load(sys.stdin)
    engage_auditwall()
    json.dump([run(argv) for argv in commands], sys.stdout)

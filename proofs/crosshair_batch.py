"""Run many ``crosshair`` commands in one process: ``python -m kvproof.proofs.crosshair_batch``.

Reads a JSON list of jobs on stdin, each ``[argv, until_a_difference]`` (``argv`` as for ``python -m
crosshair``), runs them one after another through CrossHair's own command line (``unwalled_main``,
behind the audit wall its ``main`` engages), and writes ``[[exit code, output, seconds], ...]`` on
stdout. One process instead
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
from contextlib import AbstractContextManager, nullcontext, redirect_stderr, redirect_stdout
from unittest import mock

from crosshair import diff_behavior
from crosshair.auditwall import engage_auditwall
from crosshair.main import unwalled_main


def first_difference_ends_diffbehavior() -> AbstractContextManager:
    """While open, ``crosshair diffbehavior`` ends its search at the first difference it finds.

    diffbehavior searches each order of the two functions for half its time and goes on past a
    difference, to choose the differences that cover the most code; a broken twin needs one. CrossHair's
    own comparison decides: its path callback appends each difference to the list ``diffs`` it closes
    over, the search stops on the path that first does, and the other order is then not searched. If
    CrossHair's code changes shape, the lookup raises and the twin's command fails (exit 2): loudly.
    """
    explore = diff_behavior.explore_paths
    searched: list[list] = []  # the differences of each order searched

    def explore_until_a_difference(fn, sig, options, root, on_path_complete, on_nondeterminism=None) -> None:
        diffs = dict(zip(on_path_complete.__code__.co_freevars, on_path_complete.__closure__))["diffs"].cell_contents
        if not any(searched):
            explore(fn, sig, options, root, lambda *path: on_path_complete(*path) or bool(diffs), on_nondeterminism)
        searched.append(diffs)

    return mock.patch.object(diff_behavior, "explore_paths", explore_until_a_difference)


def run(argv: list[str], until_a_difference: bool) -> tuple[int, str, float]:
    """One command's exit code (2 if CrossHair raised), its output and its seconds."""
    out = io.StringIO()
    started = time.perf_counter()
    stop = first_difference_ends_diffbehavior() if until_a_difference else nullcontext()
    with redirect_stdout(out), redirect_stderr(out), stop:
        try:
            code = unwalled_main(argv)
        except Exception:
            traceback.print_exc()
            code = 2
    return code, out.getvalue().strip(), time.perf_counter() - started


if __name__ == "__main__":
    jobs = json.load(sys.stdin)
    engage_auditwall()
    json.dump([run(argv, until_a_difference) for argv, until_a_difference in jobs], sys.stdout)

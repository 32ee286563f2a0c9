"""examples/node/oracle.mjs: a test suite that is not Python uses kvproof's reference as its oracle, over the wire.

Node.js starts ``kvproof serve --stdio``, applies events and asserts scores and typed errors. On the reference every
assertion holds; on a served broken twin (a walk that stops at depth 4) the example fails, naming the assertion.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node" / "oracle.mjs"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the Node.js example cannot run")


def run_example(target: str) -> subprocess.CompletedProcess:
    serve = [sys.executable, "-m", "kvproof", "serve", "--stdio", "--target", target]
    return subprocess.run([NODE or "node", str(EXAMPLE), *serve], capture_output=True, text=True, timeout=120)


def test_the_node_example_passes_against_the_served_reference():
    ran = run_example("reference")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.count("ok  ") == 9 and "every assertion held" in ran.stdout


def test_the_node_example_fails_against_a_served_broken_twin():
    ran = run_example("kvproof.stateful_tests.tree.mutants:WalkStopsAtDepth")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert (
        "the whole prefix scores per worker: expected [[1,0,6],[2,0,2]], the served tree answered [[1,0,4],[2,0,2]]" in ran.stderr
    )

"""Memory measured where nothing else pollutes it: the resident set, and a measurement run in a fresh interpreter.

``rss_bytes`` reads ``VmRSS`` from ``/proc/self/status`` (the standard library only).
``measure_in_child(module, *args)`` runs ``python -m module args...`` in a fresh interpreter,
which must print one JSON line ``{"bytes": N}`` last, and returns ``N`` (or ``None`` and why).
Both memory benchmarks (``tree/memory.py``, ``sequences/memory.py``) build each structure in its own
child this way, so one structure's figure never includes another's garbage or the allocator's
arenas left behind by an earlier build.

Source: docs/sources.md#kvproof-robustness ("measure RSS in a fresh subprocess per tree").
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def rss_bytes() -> int:
    """The resident set of this process (``VmRSS``), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise OSError("no VmRSS in /proc/self/status")


def measure_in_child(module: str, *args: str, timeout_s: float = 1800) -> tuple[int | None, str]:
    """Run ``python -m module args`` in a fresh interpreter; return (its last line's ``bytes``, "") or (None, why not)."""
    done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        return None, (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return int(json.loads(done.stdout.strip().splitlines()[-1])["bytes"]), ""

"""cli.entry: a command that may start servers runs in a private network namespace, so none of them is reachable.

Dynamo's standalone indexer listens on every interface and has no option to bind loopback only. The test
runs a conformance against it as a user would (``python -m kvproof``) and, while the indexer runs, reads
the machine's own socket tables (``/proc/net/tcp*``, what ``ss -ltn`` reads): no listening socket of the
run's processes is there, and the indexer lives in another network namespace than the machine's.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kvproof.stateful_tests.harness import dynamo_indexer, process_guard


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for child in process_guard.children_of(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def listening_inodes(table_of: str = "/proc/self/net") -> set[str]:
    """The inodes of LISTEN sockets in a network namespace's TCP tables (``/proc/PID/net`` is PID's namespace)."""
    found = set()
    for name in ("tcp", "tcp6"):
        try:
            with open(f"{table_of}/{name}") as f:
                for line in f.read().splitlines()[1:]:
                    cols = line.split()
                    if cols[3] == "0A":
                        found.add(cols[9])
        except OSError:
            pass
    return found


def test_no_server_of_the_run_listens_on_the_machines_network(tmp_path):
    why = dynamo_indexer.unavailable() or process_guard.netns_unavailable()
    if why:
        pytest.skip(why)
    env = {k: v for k, v in os.environ.items() if k not in ("KVPROOF_NETNS", process_guard.NETNS_ENV)}
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kvproof",
            "conform",
            "tree",
            "--target",
            "dynamo-indexer@1",
            "--oracle",
            "reference",
            "--streams",
            "20",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen = None
    try:
        deadline = time.monotonic() + 60
        while seen is None and time.monotonic() < deadline and run.poll() is None:
            for pid in descendants(run.pid):
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_text()
                except OSError:
                    continue
                if "dynamo.indexer" in cmdline and listening_inodes(f"/proc/{pid}/net") & socket_inodes(pid):
                    seen = pid
                    break
            time.sleep(0.05)
        assert seen is not None, "the indexer never started listening"
        ours = listening_inodes()
        theirs = set().union(*(socket_inodes(p) for p in [run.pid, *descendants(run.pid)]))
        assert not ours & theirs, "a socket of the run listens in the machine's network namespace"
        assert os.readlink(f"/proc/{seen}/ns/net") != os.readlink("/proc/self/ns/net")
        # the negative control: inside its own namespace the indexer does listen, on every interface
        assert listening_inodes(f"/proc/{seen}/net") & socket_inodes(seen)
    finally:
        out, _ = run.communicate(timeout=300)
    assert run.returncode in (0, 1), out[-2000:]

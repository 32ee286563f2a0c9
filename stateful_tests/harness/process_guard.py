"""Keep the servers the harness starts from outliving it, and say where they listen.

The slot-tracker oracle (``sequences.oracle``) starts ``python -m dynamo.slot_tracker`` as a
child. This module makes sure no such child is left behind, whatever way kvproof ends:

- the child runs in **its own process group** (``start_new_session=True``), so one ``killpg``
  reaches it and anything it forks;
- on Linux it gets a **parent-death signal** (``prctl(PR_SET_PDEATHSIG, SIGKILL)`` in the
  child before ``exec``), so the kernel kills it even when kvproof is SIGKILLed and no Python
  code runs. The signal follows the death of the *thread* that forked the child, so start
  trackers from a long-lived thread (the harness starts them from the caller's thread);
- every live group is recorded in ``GUARD``, which kills them all ``atexit`` and from a
  SIGTERM / SIGINT handler installed while at least one group is live (main thread only;
  the previous handler is restored when the last group is gone, and is chained to).

It also holds the checks the tests and the command use: ``alive_in_group`` (which processes
of one group are still alive, from ``/proc``), ``listening_addresses`` (what a local TCP port
is bound to, from ``/proc/net/tcp*``) and ``netns_unavailable`` (whether this user may run
the harness in a private network namespace with ``unshare --net --map-root-user``).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

PR_SET_PDEATHSIG = 1
NETNS_ENV = "KVPROOF_NETNS"  # set to "1" in a run re-executed inside a private network namespace


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
"""libc, loaded in the parent: a forked child of a threaded parent must not load libraries before exec."""


def _set_parent_death_signal() -> None:
    """In the forked child, before exec: ask the kernel to SIGKILL us when our parent thread dies (Linux only)."""
    libc = _LIBC
    if libc is None or libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def spawn_guarded(cmd: list[str], preexec_extra: Callable[[], None] | None = None, **kwargs: Any) -> subprocess.Popen:
    """Start ``cmd`` in its own process group, with a parent-death SIGKILL on Linux, and record it in ``GUARD``.

    ``preexec_extra`` runs in the child after that, before exec (a resource limit, say). Extra keyword
    arguments go to ``subprocess.Popen``. Call ``GUARD.kill(proc)`` to stop it.
    """
    death: Callable[[], None] | None = _set_parent_death_signal if sys.platform.startswith("linux") else None

    def both() -> None:
        if death is not None:
            death()
        if preexec_extra is not None:
            preexec_extra()

    proc = subprocess.Popen(cmd, start_new_session=True, preexec_fn=both if preexec_extra else death, **kwargs)
    GUARD.add(proc)
    return proc


def kill_group(pgid: int, grace: float = 5.0) -> None:
    """SIGTERM process group ``pgid``, wait up to ``grace`` seconds for it to empty, then SIGKILL what is left."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not alive_in_group(pgid):
            return
        time.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class _ProcessGuard:
    """The live process groups of this interpreter; kills them at exit and on SIGTERM / SIGINT."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # re-entrant: the signal handler may run while the main thread holds it
        self._procs: dict[int, subprocess.Popen] = {}  # pgid -> leader
        self._previous: dict[int, Any] = {}
        atexit.register(self.kill_all)

    def add(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._procs[proc.pid] = proc  # start_new_session: the child leads its own group, pgid == pid
            if len(self._procs) == 1:
                self._install_handlers()

    def kill(self, proc: subprocess.Popen, grace: float = 5.0) -> None:
        """Stop ``proc``'s whole group (TERM, then KILL after ``grace`` s), reap the leader, and forget it."""
        kill_group(proc.pid, grace)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(grace)
        with self._lock:
            self._procs.pop(proc.pid, None)
            if not self._procs:
                self._restore_handlers()

    def kill_all(self) -> None:
        """Kill every live group at once (SIGKILL: this runs at exit or from a signal handler)."""
        with self._lock:
            procs = list(self._procs.values())
            self._procs.clear()
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def live(self) -> list[int]:
        """Return the process-group ids still recorded."""
        with self._lock:
            return list(self._procs)

    # -- signals

    def _install_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal.signal works only there; atexit and the parent-death signal still cover us
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def _restore_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, previous in self._previous.items():
            if signal.getsignal(signum) == self._on_signal:
                signal.signal(signum, previous)
        self._previous.clear()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous.get(signum, signal.SIG_DFL)
        self.kill_all()
        self._restore_handlers()
        if callable(previous):
            previous(signum, frame)  # e.g. SIGINT's default handler raises KeyboardInterrupt
        elif previous != signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)  # die of the signal, as the caller asked


GUARD = _ProcessGuard()


# ----------------------------------------------------------------------------- /proc checks


def _stat(pid: int) -> tuple[str, int] | None:
    """Return (state, process group) of ``pid`` from ``/proc/PID/stat``, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp ...
    return fields[0], int(fields[2])


def alive_in_group(pgid: int) -> list[int]:
    """Return the pids of the live (not zombie) processes in process group ``pgid``, from ``/proc``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = _stat(int(name))
        if st is not None and st[1] == pgid and st[0] not in ("Z", "X"):
            out.append(int(name))
    return sorted(out)


def is_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (``/proc/PID/stat``)."""
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def children_of(pid: int) -> list[int]:
    """Return the direct children of ``pid`` (every thread's ``/proc/PID/task/TID/children``)."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            continue
    return sorted(set(out))


def _hex_ipv4(word: str) -> str:
    raw = bytes.fromhex(word)[::-1]
    return ".".join(str(b) for b in raw)


def _hex_ipv6(word: str) -> str:
    groups = [bytes.fromhex(word[i : i + 8])[::-1].hex() for i in range(0, 32, 8)]
    hexes = "".join(groups)
    return ":".join(hexes[i : i + 4] for i in range(0, 32, 4))


def listening_addresses(port: int) -> list[str]:
    """Return the local addresses a TCP socket in LISTEN state holds ``port`` on (``/proc/net/tcp`` and ``tcp6``).

    IPv4 as dotted quads ("0.0.0.0" is every interface), IPv6 as eight groups ("0000:...:0000" is every interface).
    """
    out = []
    for path, decode in (("/proc/net/tcp", _hex_ipv4), ("/proc/net/tcp6", _hex_ipv6)):
        try:
            with open(path) as f:
                lines = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            cols = line.split()
            addr, hexport = cols[1].split(":")
            if cols[3] == "0A" and int(hexport, 16) == port:
                out.append(decode(addr))
    return out


def binds_all_interfaces(addresses: list[str]) -> bool:
    """Whether any of ``listening_addresses``' answers is the wildcard address (IPv4 or IPv6)."""
    return any(a == "0.0.0.0" or set(a) <= {"0", ":"} for a in addresses)


def in_private_netns() -> bool:
    """Whether this run is inside a private network namespace: re-executed into one (``--netns``, ``cli.entry``),
    or started in one by its caller (its only interface is ``lo``)."""
    if os.environ.get(NETNS_ENV) == "1":
        return True
    try:
        return os.listdir("/sys/class/net") == ["lo"]
    except OSError:
        return False


def network_note() -> str:
    """Where this run's servers can be reached from, in one line (the reports carry it)."""
    if in_private_netns():
        return "private network namespace: nothing this run starts is reachable beyond its own loopback"
    return "the machine's network: a server this run starts may listen on every interface (see the run's first line)"


def netns_unavailable() -> str | None:
    """Return why ``unshare --net --map-root-user`` (then ``ip link set lo up``) cannot run here, or None if it can."""
    for tool in ("unshare", "ip"):
        if not any(
            os.access(os.path.join(d, tool), os.X_OK)
            for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/sbin", "/sbin"]
        ):
            return f"{tool} is not installed"
    try:
        probe = subprocess.run(netns_prefix() + ["true"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare failed: {exc}"
    if probe.returncode != 0:
        why = (probe.stderr or probe.stdout).strip().splitlines()
        return f"unshare --net --map-root-user is not permitted here ({why[-1] if why else f'exit {probe.returncode}'})"
    return None


def netns_prefix() -> list[str]:
    """The argv prefix that runs a command in a fresh user + network namespace with ``lo`` up."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return ["unshare", "--net", "--map-root-user", "sh", "-c", f'PATH="{path}"; ip link set lo up && exec "$@"', "kvproof-netns"]


def rerun_in_private_netns(args: list[str]) -> None:
    """Re-execute ``python -m kvproof ARGS`` (same pid) inside a private network namespace; does not return. A machine
    that cannot make one is ``errors.Unavailable`` (exit 2 in the command)."""
    import sys

    from .errors import Unavailable

    why = netns_unavailable()
    if why:
        raise Unavailable(f"--netns: cannot make a private network namespace: {why}")
    sys.stdout.flush()
    sys.stderr.flush()
    os.environ[NETNS_ENV] = "1"
    argv = [*netns_prefix(), sys.executable, "-m", "kvproof", *args]
    os.execvp(argv[0], argv)

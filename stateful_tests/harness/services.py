"""Servers the harness starts and talks to on loopback: ports, the environment, keep-alive HTTP, start and stop.

Shared by the real slot tracker (``sequences.oracle``) and Dynamo's standalone indexer
(``harness.dynamo_indexer``). Every server runs under ``process_guard`` (its own process group,
a parent-death signal, killed on every exit path), gets the environment of ``runtime_env``
(Dynamo's runtime told to advertise and connect on 127.0.0.1), and is spoken to on
127.0.0.1 only, over one keep-alive connection per thread.

A server that stops answering is a ``ServiceFailure``: the caller reports it as a finding
about the target (its exit status and the tail of its log say what happened), never as a
crash of kvproof.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ...impl import _sync
from . import process_guard

LOOPBACK = "127.0.0.1"

RUNTIME_HOSTS = ("DYN_EVENT_PLANE_HOST", "DYN_TCP_RPC_HOST", "DYN_TCP_RESPONSE_STREAM_HOST", "DYN_SYSTEM_HOST")
"""The variables that make Dynamo's runtime advertise and connect on an address of our choosing
(dynamo-surface.md §C: without them it advertises the machine's interface address)."""


class ServiceFailure(RuntimeError):
    """A server the harness started crashed, hung or refused to start; the message says which and why."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at the time of asking."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def runtime_env(**extra: str) -> dict[str, str]:
    """This process's environment for a Dynamo server: every runtime host set to 127.0.0.1, the log at ``error``
    unless the user chose a level (``DYN_LOG``), and ``extra``."""
    env = dict(os.environ)
    env.update(dict.fromkeys(RUNTIME_HOSTS, LOOPBACK))
    env.setdefault("DYN_LOG", "error")
    env.update(extra)
    return env


def python_module(module: str, *args: str) -> list[str]:
    """The argv that runs ``python -m module args`` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def target_memory_mb() -> int:
    """The address-space limit of a target's process, in MiB: ``KVPROOF_TARGET_MEMORY_MB``, default 4096 (a quarter
    of CI's 24 GB, with the suite beside it)."""
    return int(os.environ.get("KVPROOF_TARGET_MEMORY_MB", "4096"))


def limit_address_space(megabytes: int) -> Any:
    """A pre-exec function that caps the child's address space (``RLIMIT_AS``): an allocation past it fails inside
    the target, which then aborts or raises, instead of taking the machine."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))

    return limit


class HttpService:
    """One server process on 127.0.0.1:``port``, started by ``start`` and stopped by ``close`` (safe twice).

    ``request`` speaks HTTP/1.1 with JSON bodies over one keep-alive connection per thread; a
    connection error or a dead process raises ``ServiceFailure`` naming the server's exit status.
    """

    name = "server"
    health_path = "/health"

    def __init__(
        self, cmd: list[str], port: int, log_path: str | None = None, timeout: float = 10.0, memory_mb: int | None = None
    ) -> None:
        self.cmd, self.port, self.timeout = cmd, port, timeout
        self.memory_mb = memory_mb if memory_mb is not None else target_memory_mb()
        self.log_path = log_path or os.devnull
        self.proc: subprocess.Popen | None = None
        self.listening: list[str] = []
        self._local = _sync.local()

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def start(self, ready_within: float = 30.0) -> None:
        """Start the server and wait for its health route; on failure stop it and raise ``ServiceFailure``."""
        self.log = open(self.log_path, "ab")  # noqa: SIM115 - the child writes to it until close() closes it
        self.proc = process_guard.spawn_guarded(
            self.cmd,
            preexec_extra=limit_address_space(self.memory_mb),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=runtime_env(),
        )
        deadline = time.monotonic() + ready_within
        while True:
            if self.proc.poll() is not None:
                self.close()
                raise ServiceFailure(
                    f"{self.name} exited with status {self.proc.returncode if self.proc else '?'} "
                    f"before answering: {' '.join(self.cmd)}"
                )
            try:
                if self.request("GET", self.health_path)[0] == 200:
                    break
            except ServiceFailure:
                pass
            if time.monotonic() > deadline:
                self.close()
                raise ServiceFailure(f"{self.name} did not answer {self.health_path} within {ready_within} s")
            time.sleep(0.02)
        self.listening = process_guard.listening_addresses(self.port)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def death(self) -> str:
        """How the process ended, for a failure message ("" while it runs)."""
        if self.proc is None:
            return "it was stopped"
        code = self.proc.poll()
        if code is None:
            return ""
        if code < 0:
            return f"it was killed by signal {-code}"
        return f"it exited with status {code}"

    def request(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> tuple[int, Any]:
        """One HTTP call on this thread's keep-alive connection; return ``(status, decoded JSON or text)``."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(LOOPBACK, self.port, timeout=timeout or self.timeout)
        data = None if body is None else json.dumps(body).encode()
        headers = {} if data is None else {"Content-Type": "application/json"}
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except (http.client.HTTPException, OSError) as exc:
            self._local.conn = None
            conn.close()
            died = self.death()
            raise ServiceFailure(
                f"{self.name}: {method} {path} failed ({type(exc).__name__}: {exc})" + (f"; {died}" if died else "")
            ) from None
        text = raw.decode(errors="replace")
        try:
            return response.status, json.loads(text) if text else None
        except ValueError:
            return response.status, text

    def request_many(self, method: str, path: str, bodies: list[Any]) -> list[tuple[int, Any]]:
        """The same call with each body, pipelined on one fresh connection (HTTP/1.1): every request is
        written before the first answer is read, so a batch costs about one round trip."""
        if not bodies:
            return []
        head = f"{method} {path} HTTP/1.1\r\nHost: {LOOPBACK}\r\nContent-Type: application/json\r\nContent-Length: "
        wire = b"".join(
            head.encode() + f"{len(data)}\r\n\r\n".encode() + data for data in (json.dumps(body).encode() for body in bodies)
        )
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=self.timeout) as sock:
                sock.sendall(wire)
                reader = sock.makefile("rb")
                answers = [_read_response(reader) for _ in bodies]
        except (OSError, ValueError) as exc:
            died = self.death()
            raise ServiceFailure(
                f"{self.name}: {len(bodies)} pipelined {method} {path} failed ({type(exc).__name__}: {exc})"
                + (f"; {died}" if died else "")
            ) from None
        return answers

    def log_tail(self, lines: int = 5) -> str:
        """The last lines of the server's log (empty when it logs nowhere)."""
        if self.log_path == os.devnull:
            return ""
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def close(self) -> None:
        """Kill the server's whole process group and release its log; safe to call twice."""
        if self.proc is not None:
            process_guard.GUARD.kill(self.proc)
        if hasattr(self, "log"):
            self.log.close()
            del self.log


def _read_response(reader: Any) -> tuple[int, Any]:
    """One HTTP/1.1 response with a Content-Length body from ``reader``: ``(status, decoded JSON or text)``."""
    status_line = reader.readline()
    if not status_line:
        raise ValueError("the connection closed before the answer")
    status = int(status_line.split()[1])
    length = 0
    while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    text = reader.read(length).decode(errors="replace")
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text

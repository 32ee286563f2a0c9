"""Differential conformance against the real slot tracker (``python -m dynamo.slot_tracker``, 1.3.0.post1 to 1.6.1).

The harness starts the tracker on free local ports, with a replica-sync feed from a ZMQ
PUB socket it binds itself on 127.0.0.1, and drives random scenarios through both doors:

- **HTTP** (``/register``, ``/unregister``, ``/add``, ``/prefill_complete``, ``/free``,
  ``/loads``, ``/potential_loads``): every prefill added here is unmodeled (HTTP cannot
  carry a duration), so it checks admission, ownership, status codes, blocks by lineage
  and the anchor-only token view;
- **replica sync** (sequences.md §8.4): ``AddRequest`` events carry
  ``expected_prefill_duration`` (modeled, zero or absent), ``track_prefill_tokens`` and
  zero-token hints, plus ``MarkPrefillCompleted`` and ``Free`` (sometimes naming the wrong
  worker), so it checks spillover, the credit and its cap, re-anchoring and zero-duration
  anchors on the real clock.

The tracker stamps each write with its own clock when it handles it (HTTP) or receives it
(replica sync), and each ``/loads`` read when it answers it. We cannot see those instants,
only bracket them, and every bracket is *measured*, none assumed: an HTTP write happened
between our send and its response; a read was answered between our request and its
response; a replica event was applied between our send and the moment a **fence** shows up
(a marker ``AddRequest`` published right behind it on the same slot, with no blocks and no
prefill, which the harness polls for by id, then frees; one slot's replica events are
applied in publication order). The harness drives **two** reference trackers with the same calls:
``early`` stamps every write at the start of its bracket, ``late`` at its end. Every anchor
time is built from write times by ``+`` and ``min`` only, so the true anchor lies between
the two models' anchors; token load never increases with elapsed time; hence the real
answer must lie in ``[early.loads(read_end), late.loads(read_start)]``. Blocks, request
counts, the set of slots and every HTTP status must match exactly; a fence that never
shows (3 s) means the feed lost events. ``jitter`` (25 ms) only paces the scenario:
operations are at least ``2 * jitter`` apart.

A mismatch prints the scenario's seed and index and the command that replays it:
``kvproof conform slot-tracker --seed S --scenarios N --scenario K``.

**Releases.** ``RELEASES`` is the one table of per-release wire choices (1.3.0.post1 to
1.6.1): the name of the group field in the replica envelope, and which ``REPLICA_RULES``
apply to replica events that conflict with a booking. The release is detected with
``importlib.metadata`` (a ``PYTHONPATH`` copy shadows the venv's) and printed at the start
of a run; docs/slot-tracker-releases.md has the per-release evidence.

**Processes.** The tracker runs in its own process group with a parent-death signal; every
exit path kills the group (``process_guard``). It binds 0.0.0.0 and ``tcp://*``; the harness
says so (``bind_notice``) and ``kvproof conform slot-tracker --netns`` runs it all in a
private network namespace.

Source: docs/sources.md#sequences-8 (routes, codes, replica wire format, receive-time anchoring);
docs/sources.md#sequences-oracle (replica_common) (how to inject events; ``wait_ready``).
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from ...impl import _sync
from ...reference.sequences import SlotTracker as ReferenceSlotTracker
from ...spec.primitives import WorkerWithDpRank
from ...spec.sequence_errors import SequenceError
from ...spec.sequence_inputs import NANOS_PER_SEC, PrefillLoadHint, SequenceRequest, millis
from ..harness import process_guard

TOPIC = b"dynamo.slot-tracker.v1"
ROUTER_ID = 4242  # any u64 other than the tracker's own process id
BLOCK_SIZE = 16
DEFAULT_JITTER_MS = 25
FENCE_TIMEOUT_NS = 3_000_000_000
OK_STATUS = {"register": 201, "add": 201, "mark": 200, "free": 200, "unregister": 200}


# ----------------------------------------------------------------------------- releases

#: How a release treats replica events that conflict with the request's booking.
#: ``fenced``: a replica Mark or Free naming another worker than the request's owner is dropped,
#: and a duplicate replica AddRequest keeps the first owner (what the spec says).
#: ``rebooking``: a replica Mark or Free acts on the owner whatever worker it names (if that
#: worker is registered), and a duplicate replica AddRequest on another registered slot is added
#: there and takes the booking, the first slot's copy staying (unbooked) until expiry.
REPLICA_RULES = ("fenced", "rebooking")


@dataclass(frozen=True)
class WireFormat:
    """What one range of ai-dynamo-runtime releases puts on the slot tracker's wire, as the harness drives it.

    ``group_field``: the name of the (model, group) key's second half in the replica envelope
    and in the ``/workers`` and ``/loads`` rows (the HTTP request bodies may omit it: the
    harness uses the default group). ``replica_rules``: one of ``REPLICA_RULES``.
    """

    first: str
    last: str
    group_field: str
    replica_rules: str
    differs: str

    def describe(self) -> str:
        return f"group field {self.group_field!r}, replica rules {self.replica_rules!r} ({self.first}..{self.last})"


#: Every release that ships ``dynamo.slot_tracker``, oldest first; docs/slot-tracker-releases.md
#: has the evidence. The Python wrapper and ``--help`` are the same in all of them; what differs
#: is inside the compiled extension.
RELEASES: tuple[WireFormat, ...] = (
    WireFormat(
        "1.3.0.post1",
        "1.3.1",
        "tenant_id",
        "rebooking",
        "the group is 'tenant_id' (envelope, rows, error texts); replica conflicts re-book",
    ),
    WireFormat(
        "1.4.0",
        "1.4.2",
        "routing_group",
        "rebooking",
        "replica Mark/Free act on the owner whatever worker they name; a duplicate replica add re-books",
    ),
    WireFormat("1.5.0", "1.6.1", "routing_group", "fenced", "the reference format (sequences.md §8)"),
)
RELEASE_ORDER = ("1.3.0.post1", "1.3.1", "1.4.0", "1.4.1", "1.4.2", "1.5.0", "1.5.1", "1.6.0", "1.6.1")


def _version_key(version: str) -> tuple[int, ...]:
    """Order release strings numerically on their leading dotted integers ("1.3.0.post1" -> (1, 3, 0))."""
    parts = []
    for part in version.split("."):
        digits = "".join(ch for ch in part if ch.isdigit()) if part[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def installed_release() -> str | None:
    """Return the ai-dynamo-runtime version Python would import (a PYTHONPATH copy shadows the venv's), or None."""
    import importlib.metadata

    try:
        return importlib.metadata.version("ai-dynamo-runtime")
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class Release:
    """The release in force and the wire format the harness drives it with; ``note`` says when that was a guess."""

    version: str
    wire: WireFormat
    note: str = ""

    def banner(self) -> str:
        return f"slot tracker: ai-dynamo-runtime {self.version}, wire format: {self.wire.describe()}" + (
            f"; {self.note}" if self.note else ""
        )


def wire_format_for(version: str | None) -> Release:
    """Return the wire format for ``version``.

    A named release gets its row. Any other version gets, with a note saying it is a guess: the
    newest row if it is newer than every row, else the last row starting at or before it, else the oldest.
    """
    if version is None:
        return Release("unknown", RELEASES[-1], "version unknown: assuming the newest known format")
    key = _version_key(version)
    if version in RELEASE_ORDER:
        index = RELEASE_ORDER.index(version)
        for wire in RELEASES:
            if RELEASE_ORDER.index(wire.first) <= index <= RELEASE_ORDER.index(wire.last):
                return Release(version, wire)
    if key > _version_key(RELEASES[-1].last):
        return Release(version, RELEASES[-1], f"newer than {RELEASES[-1].last}: assuming its format")
    earlier = [wire for wire in RELEASES if _version_key(wire.first) <= key]
    if earlier:
        return Release(version, earlier[-1], f"not a release the table names: using the {earlier[-1].first} row")
    return Release(version, RELEASES[0], f"older than {RELEASES[0].first}: assuming its format")


def oracle_unavailable() -> str | None:
    """Return why the real slot tracker cannot be driven here, or None when it can."""
    missing = [m for m in ("dynamo.slot_tracker", "zmq", "msgpack") if importlib.util.find_spec(m.split(".")[0]) is None]
    if not missing and importlib.util.find_spec("dynamo.slot_tracker") is None:
        version = installed_release()
        return (
            f"ai-dynamo-runtime {version} has no dynamo.slot_tracker (it first ships in {RELEASES[0].first})"
            if version
            else "needs dynamo.slot_tracker"
        )
    if missing:
        return f"needs {', '.join(missing)}: pip install -e '.[dynamo]' (ai-dynamo-runtime 1.6.1, pyzmq, msgpack)"
    return None


class OracleStartError(RuntimeError):
    """The slot tracker could not be started or driven; the message says why (the command prints it as a FAIL)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _now() -> int:
    return time.monotonic_ns()


# ----------------------------------------------------------------------------- the process


class SlotTrackerProcess:
    """One ``python -m dynamo.slot_tracker`` with a replica-sync peer we publish into.

    The tracker runs in its own process group with a parent-death signal (``process_guard``):
    ``close()``, ``__exit__``, interpreter exit and SIGTERM / SIGINT all kill the whole group,
    and the kernel kills it if kvproof is SIGKILLed. ``release`` is the detected release and
    the wire format used with it; ``listening`` the addresses its HTTP port is bound to.
    """

    def __init__(self, log_path: str | None = None, release: Release | None = None) -> None:
        self.log_path = log_path or os.devnull
        self.release = release or wire_format_for(installed_release())
        self.proc: subprocess.Popen | None = None
        self.listening: list[str] = []  # the HTTP port's bound addresses, from /proc/net/tcp*
        self.sync_listening: list[str] = []  # the replica PUB's
        self._local = _sync.local()
        self._pub_lock = _sync.Lock("oracle.pub")

    @property
    def pid(self) -> int | None:
        """The tracker's pid (also its process group's id), or None when none runs."""
        return None if self.proc is None else self.proc.pid

    def start(self, timeout: float = 30.0) -> None:
        """Start the tracker, wait for ``/health`` and a replica event to land; on any failure stop it and raise ``OracleStartError``."""
        try:
            self._start(timeout)
        except BaseException as exc:
            self.close()
            if isinstance(exc, Exception) and not isinstance(exc, OracleStartError):  # zmq.ZMQError among them
                raise OracleStartError(f"{type(exc).__name__}: {exc}") from exc
            raise

    def _start(self, timeout: float) -> None:
        import zmq

        self.http_port, self.sync_port, self.peer_port = _free_port(), _free_port(), _free_port()
        self._zmq = zmq.Context()
        self.pub = self._zmq.socket(zmq.PUB)
        self.pub.bind(f"tcp://127.0.0.1:{self.peer_port}")
        cmd = [
            sys.executable,
            "-m",
            "dynamo.slot_tracker",
            "--port",
            str(self.http_port),
            "--replica-sync-port",
            str(self.sync_port),
            "--replica-sync-peers",
            f"tcp://127.0.0.1:{self.peer_port}",
        ]
        self.log = open(self.log_path, "ab")  # noqa: SIM115 - the child writes to it until close() closes it
        self.proc = process_guard.spawn_guarded(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise OracleStartError(f"slot tracker exited with {self.proc.returncode}: {' '.join(cmd)}")
            try:
                if self.request("GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise OracleStartError(f"slot tracker did not answer /health within {timeout} s")
            time.sleep(0.05)
        self.listening = process_guard.listening_addresses(self.http_port)
        self.sync_listening = process_guard.listening_addresses(self.sync_port)
        self.wait_ready(deadline)

    def wait_ready(self, deadline: float) -> None:
        """Probe the replica feed until an event lands (a PUB drops messages until the SUB has joined)."""
        model = "kvproof-probe"
        self.request(
            "POST", "/register", {"worker_id": 1, "model_name": model, "block_size": BLOCK_SIZE, "dp_start": 0, "dp_size": 1}
        )
        i = 0
        while time.monotonic() < deadline:
            i += 1
            self.publish(model, f"probe{i}", (1, 0), add_data((1,), True, None))
            time.sleep(0.1)
            rows = self.request("GET", f"/loads?model_name={model}")[1]
            if rows and rows[0]["active_decode_blocks"] > 0:
                self.request("POST", "/unregister", {"worker_id": 1, "model_name": model})
                return
        raise OracleStartError(
            f"the slot tracker's replica subscriber never applied an event in the {self.release.wire.group_field!r} "
            f"envelope (ai-dynamo-runtime {self.release.version}); its wire format is not one the harness knows"
        )

    def bind_notice(self) -> str | None:
        """Return a one-line notice when the tracker listens on every interface (None if only on loopback or in a private netns)."""
        if process_guard.in_private_netns():
            return None
        if self.listening and not process_guard.binds_all_interfaces(self.listening):
            return None
        where = ", ".join(self.listening) or "an address /proc/net/tcp does not show"
        pub = ", ".join(self.sync_listening) or "*"
        return (
            f"notice: the slot tracker listens on {where} port {self.http_port} (all interfaces) and its replica "
            f"PUB on {pub} port {self.sync_port}; it has no option to bind 127.0.0.1 only. The harness talks to "
            "127.0.0.1 only; pass --netns to run it in a private network namespace."
        )

    def close(self) -> None:
        """Kill the tracker's whole process group and release the sockets and the log; safe to call twice."""
        if self.proc is not None:
            process_guard.GUARD.kill(self.proc)
        self.proc = None
        if hasattr(self, "pub"):
            self.pub.close(0)
            self._zmq.term()
            del self.pub
        if hasattr(self, "log"):
            self.log.close()
            del self.log

    def __enter__(self) -> SlotTrackerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- doors

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One HTTP call on this thread's keep-alive connection; return (status, decoded body)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=10)
        data = None if body is None else json.dumps(body).encode()
        headers = {} if data is None else {"Content-Type": "application/json"}
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except (http.client.HTTPException, OSError):
            self._local.conn = None
            conn.close()
            raise
        text = raw.decode()
        try:
            return response.status, json.loads(text) if text else None
        except ValueError:
            return response.status, text

    def publish(self, model: str, rid: str, worker: tuple[int, int], data: Any) -> int:
        """Publish one replica-sync event; return the monotonic time just before the send."""
        import msgpack

        envelope = {
            "model_name": model,
            self.release.wire.group_field: "default",
            "block_size": BLOCK_SIZE,
            "event": {
                "request_id": rid,
                "worker": {"worker_id": worker[0], "dp_rank": worker[1]},
                "data": data,
                "router_id": ROUTER_ID,
                "lora_name": None,
            },
        }
        payload = msgpack.packb(envelope, use_bin_type=True)
        with self._pub_lock:
            sent = _now()
            self.pub.send_multipart([TOPIC, payload])
        return sent


def wire_duration(duration: int | None) -> dict | None:
    """Return a duration in nanoseconds as the replica wire's ``{"secs", "nanos"}`` (None: unmodeled)."""
    if duration is None:
        return None
    return {"secs": duration // NANOS_PER_SEC, "nanos": duration % NANOS_PER_SEC}


def add_data(blocks: tuple[int, ...] | None, track: bool, hint: PrefillLoadHint | None) -> dict:
    """Return the ``AddRequest`` payload of a replica event (sequences.md §8.4)."""
    return {
        "AddRequest": {
            "token_sequence": None if blocks is None else list(blocks),
            "track_prefill_tokens": track,
            "expected_output_tokens": None,
            "prefill_load_hint": None
            if hint is None
            else {
                "initial_effective_prefill_tokens": hint.initial_effective_prefill_tokens,
                "expected_prefill_duration": wire_duration(hint.expected_prefill_duration),
            },
        }
    }


def signed(h: int) -> int:
    """Return a u64 hash as the i64 with the same bits (the HTTP routes take signed hashes)."""
    return h - (1 << 64) if h >= 1 << 63 else h


# ----------------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Op:
    """One planned operation: ``kind``, its arguments, and the pause before it (ms)."""

    kind: str
    gap_ms: int
    rid: str = ""
    worker: tuple[int, int] = (1, 0)
    blocks: tuple[int, ...] | None = ()
    tokens: int | None = None  # None: no hint
    duration: int | None = None  # ns; None: unmodeled
    track: bool = True
    via: str = "http"  # or "replica"
    worker_id: int = 0
    dp_size: int = 1


@dataclass(frozen=True)
class OracleScenario:
    seed: int
    index: int
    model: str
    ops: tuple[Op, ...]


def lineage_hash(tokens: tuple[int, ...]) -> int:
    """Return a u64 sequence hash for a block whose prompt prefix is ``tokens`` (one value per lineage).

    Dynamo's sequence hashes name a block *with* its whole prefix, so one hash value never
    sits at two different positions; 1.6.1's block trie relies on that (finding S3), and the
    scenarios keep to it. About half the values are above i64::MAX, to exercise the signed
    reinterpretation of the HTTP routes.
    """
    h = 0xCBF29CE484222325
    for t in tokens:
        h = ((h ^ (t + 0x9E3779B97F4A7C15)) * 0x100000001B3) % (1 << 64)
    return h


def _prompt(rng: random.Random, max_len: int = 4) -> tuple[int, ...]:
    tokens = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, max_len)))
    return tuple(lineage_hash(tokens[: i + 1]) for i in range(len(tokens)))


TEMPLATES = ("spill", "credit", "reanchor", "mixed", "zero")


def _template(rng: random.Random, kind: str, hot: tuple[int, int], ids: list[str], jitter_ms: int) -> list[Op]:
    """Return the opening of a scenario: the shape of one family of experiments (R2-R23) with drawn numbers."""
    J = jitter_ms
    dur = lambda *ms: millis(rng.choice(ms))
    tok = lambda: rng.choice([100, 400, 1000])
    a, b, c = ids[:3]
    add = lambda rid, tokens, duration, gap=2: Op("add", gap * J, rid, hot, _prompt(rng), tokens, duration, True, "replica")
    reads = lambda n, spread: [Op("loads", rng.choice(spread) * J) for _ in range(n)]
    via = lambda: rng.choice(["http", "replica"])
    if kind == "spill":  # R2, R16, R17: all modeled, the anchor's rate runs on into the queue
        ops = [add(a, tok(), dur(200, 300, 500)), add(b, tok(), dur(0, 500, 1000, 2000))]
        if rng.random() < 0.5:
            ops.append(add(c, tok(), dur(300, 1000)))
        return ops + reads(5, [3, 4, 6, 8])
    if kind == "credit":  # R5, R6, R19, R20: a queued modeled prefill leaves early (capped) or late
        ops = [add(a, tok(), dur(1000, 1500, 2000)), add(b, tok(), dur(400, 800, 1200))]
        ops += reads(1, [2, 4])
        ops.append(Op(rng.choice(["mark", "free"]), rng.choice([2, 4, 6, 12, 30]) * J, b, hot, via=via()))
        return ops + reads(3, [2, 4, 8])
    if kind == "reanchor":  # R7, R18, R21: the anchor leaves, the next one starts its clock then
        ops = [add(a, tok(), dur(200, 500, 1000)), add(b, tok(), dur(500, 1000, 1500))]
        ops += reads(1, [4, 8])
        ops.append(Op(rng.choice(["mark", "free"]), rng.choice([4, 10, 20]) * J, a, hot, via=via()))
        return ops + reads(3, [2, 4, 8])
    if kind == "mixed":  # R3, R8, R15, R23: an unmodeled prefill forces anchor-only decay
        first_unmodeled = rng.random() < 0.3
        ops = [
            add(a, tok(), None if first_unmodeled else dur(300, 600)),
            add(b, tok(), dur(300, 600) if first_unmodeled else None),
        ]
        ops += reads(3, [4, 8, 12])
        ops.append(Op("free", 2 * J, b, hot, via=via()))
        return ops + reads(2, [4, 8])
    ops = [add(a, tok(), 0), add(b, tok(), dur(300, 600))]  # R4: a zero-duration anchor holds the rest
    ops += reads(2, [4, 8])
    ops.append(Op("mark", 2 * J, a, hot, via=via()))
    return ops + reads(2, [4, 8])


def generate_scenario(seed: int, index: int, jitter_ms: int = DEFAULT_JITTER_MS, length: int = 10) -> OracleScenario:
    """Return scenario ``index`` of run ``seed``: registrations, then writes through both doors and reads.

    It opens with one of the ``TEMPLATES`` (the shape of an oracle experiment, numbers drawn)
    on a hot slot, then continues with ``length`` random operations:

    most writes go to the hot slot, so prefills queue behind an anchor; most replica adds are
    modeled with durations of 0.2-1.5 s, so spillover, credits (capped and not) and
    re-anchoring happen within the scenario's two or three seconds; completions and frees
    mostly name ids already added, so they hit anchors and queued prefills alike.
    """
    rng = random.Random(f"slot-tracker/{seed}/{index}")
    gap = lambda: rng.choice([2, 3, 4, 6]) * jitter_ms
    workers = rng.sample([1, 2, 3], rng.randint(1, 2))
    ops: list[Op] = [Op("register", 0, worker_id=w, dp_size=rng.randint(1, 2)) for w in workers]
    hot = (workers[0], 0)
    ranks = [(w, d) for w in workers for d in (0, 1)] + [(9, 0)]
    ids = [f"s{index}r{i}" for i in range(6)]
    ops += _template(rng, TEMPLATES[index % len(TEMPLATES)], hot, ids, jitter_ms)
    added: list[str] = list(ids[:3])
    for _ in range(length):
        roll = rng.random()
        rid = rng.choice(added) if added and rng.random() < 0.7 else rng.choice(ids)
        worker = hot if rng.random() < 0.75 else rng.choice(ranks)
        if roll < 0.45:
            blocks = _prompt(rng)
            if rng.random() < 0.25:
                op = Op("add", gap(), rid, worker, blocks, rng.choice([0, 16, 48, 100]), None, True, "http")
            else:
                durations: list[int | None] = [millis(d) for d in (200, 400, 700, 1000, 1500)]
                duration = rng.choice([None, 0] + durations * 2)
                tokens = rng.choice([None, 0] + [100, 400, 1000] * 4)
                op = Op(
                    "add", gap(), rid, worker, rng.choice([blocks] * 4 + [None]), tokens, duration, rng.random() < 0.92, "replica"
                )
            added.append(rid)
        elif roll < 0.62:
            op = Op("mark", gap(), rid, worker if rng.random() < 0.2 else hot, via=rng.choice(["http", "replica"]))
        elif roll < 0.77:
            op = Op("free", gap(), rid, worker if rng.random() < 0.2 else hot, via=rng.choice(["http", "replica"]))
        elif roll < 0.97:
            op = Op(rng.choice(["loads", "loads", "potential"]), gap(), blocks=_prompt(rng, 5), tokens=rng.choice([0, 32]))
        else:
            w = rng.choice(workers)
            op = Op(rng.choice(["unregister", "register"]), gap(), worker_id=w, dp_size=rng.randint(1, 2))
        ops.append(op)
        if op.kind in ("add", "mark", "free") and rng.random() < 0.6:
            ops.append(Op("loads", rng.choice([2, 4, 10, 20]) * jitter_ms))
    ops.append(Op("loads", 3 * jitter_ms))
    return OracleScenario(seed, index, f"kvproof-{seed}-{index}", tuple(ops))


# ----------------------------------------------------------------------------- running


def scenario_of_calls(
    calls: Iterable[Any], speedup: float, model: str = "trace", index: int = 0, reads_every: int = 1
) -> OracleScenario:
    """A scenario that replays slot tracker calls (``tree.router.TrackerCall``: ``kind``, ``at`` ns, ``rid``,
    ``request``, ``worker_id``, ``dp_size``) on the real tracker, with time compressed ``speedup`` times.

    Registrations go over HTTP; adds, prefill completions and frees as replica events (the only door
    that carries a modeled duration), their durations compressed too; a ``loads`` read follows every
    ``reads_every`` writes. Gaps are whole milliseconds of the compressed time axis (0: at once).
    """
    ops: list[Op] = []
    last_ms = 0
    for writes, call in enumerate(calls, 1):
        at_ms = round(call.at / speedup / 1_000_000)
        gap, last_ms = max(0, at_ms - last_ms), max(last_ms, at_ms)
        if call.kind == "register":
            ops.append(Op("register", gap, worker_id=call.worker_id, dp_size=call.dp_size))
        else:
            request = call.request
            worker = (request.worker.worker_id, request.worker.dp_rank)
            if call.kind == "add":
                hint = request.prefill_load_hint
                duration = None if hint.expected_prefill_duration is None else round(hint.expected_prefill_duration / speedup)
                ops.append(
                    Op(
                        "add",
                        gap,
                        call.rid,
                        worker,
                        request.token_sequence,
                        hint.initial_effective_prefill_tokens,
                        duration,
                        request.track_prefill_tokens,
                        "replica",
                    )
                )
            else:
                ops.append(Op(call.kind, gap, call.rid, worker, via="replica"))
        if writes % reads_every == 0:
            ops.append(Op("loads", 0))
    return OracleScenario(0, index, model, tuple(ops))


def replay_calls(
    calls: Iterable[Any],
    speedup: float,
    model_factory: Callable[[], Any] = ReferenceSlotTracker,
    jitter_ms: int = DEFAULT_JITTER_MS,
    log_path: str | None = None,
) -> ScenarioResult:
    """Replay tracker calls (``scenario_of_calls``) on a freshly started real slot tracker against the early / late
    models; the tracker is stopped at the end. Raises ``OracleStartError`` when it cannot start."""
    with SlotTrackerProcess(log_path) as oracle:
        return run_scenario(oracle, scenario_of_calls(calls, speedup), jitter_ms * 1_000_000, model_factory)


@dataclass
class OracleMismatch:
    scenario: int
    step: int
    op: str
    detail: str
    log: list[str]

    def report(self, seed: int, scenarios: int) -> str:
        lines = [f"MISMATCH scenario {self.scenario} step {self.step}: {self.op}", f"  {self.detail}", "  steps so far:"]
        lines += [f"    {line}" for line in self.log[-12:]]
        lines.append(f"  replay: kvproof conform slot-tracker --seed {seed} --scenarios {scenarios} --scenario {self.scenario}")
        return "\n".join(lines)


@dataclass
class ScenarioResult:
    index: int
    ops: int = 0
    reads: int = 0
    writes: int = 0
    modeled_adds: int = 0
    mismatches: list[OracleMismatch] = field(default_factory=list)
    unexpressible: str | None = None  # why the scenario stopped early without a verdict on the rest


def _model_outcome(model: Any, call: Callable[[Any], Any]) -> tuple[str, Any]:
    try:
        return "ok", call(model)
    except SequenceError as exc:
        return type(exc).__name__, exc


def _http_status(outcome: tuple[str, Any], kind: str, any_worker: bool) -> int:
    """Return the status the slot tracker must answer for our model's outcome of an HTTP write."""
    name, value = outcome
    if name == "ok":
        if kind == "free" and not any_worker:
            return 404  # no worker left: the tracker itself is gone ("no slot tracker")
        return OK_STATUS[kind]
    return value.http_status


def _fence_slot(model: Any, op: Op, worker: WorkerWithDpRank) -> WorkerWithDpRank | None:
    """Return the slot whose replica events are applied in order with ``op``'s: its target, else its owner, else any."""
    state = model.snapshot()
    if worker in state.sequences:
        return worker
    owner = state.request_index.get(op.rid)
    if owner is not None:
        return owner
    return min(state.sequences) if state.sequences else None


def _fence(oracle: SlotTrackerProcess, model: str, slot: WorkerWithDpRank, rid: str, timeout_ns: int) -> int | None:
    """Publish a marker right behind a replica event and wait until the tracker knows it; return when it did.

    The marker is an ``AddRequest`` on the same slot with no blocks and no prefill. One slot's
    replica events are applied in the order they were published, so once the marker is known
    (``/prefill_complete`` of its id answers 200 instead of 404; on a request that is not
    prefilling that is a no-op) the event before it was applied: its true time lies between
    its send and this moment. The marker is then freed over HTTP; it never changes a load,
    so the models do not take it. Returns None if it never shows within ``timeout_ns``.
    """
    oracle.publish(model, rid, (slot.worker_id, slot.dp_rank), add_data(None, False, None))
    deadline = _now() + timeout_ns
    while True:
        status, _ = oracle.request("POST", "/prefill_complete", {"model_name": model, "request_id": rid})
        seen = _now()
        if status == 200:
            break
        if seen > deadline:
            return None
        time.sleep(0.001)
    oracle.request("POST", "/free", {"model_name": model, "request_id": rid})
    return seen


def _rebooks(model: Any, op: Op, worker: WorkerWithDpRank) -> bool:
    """Whether a replica add of ``op`` is a duplicate on another registered slot (it re-books under ``rebooking``)."""
    state = model.snapshot()
    owner = state.request_index.get(op.rid)
    return owner is not None and owner != worker and worker in state.sequences


def _can_rebook(model: Any) -> bool:
    """Whether the harness can re-book a request in ``model`` (the reference tracker's plain ``index`` dict)."""
    return isinstance(model, ReferenceSlotTracker) and isinstance(getattr(model, "index", None), dict)


def _rebooking_call(
    op: Op, worker: WorkerWithDpRank, call: Callable[[Any, int], Any], request: SequenceRequest | None
) -> Callable[[Any, int], Any]:
    """Return ``call`` as a ``rebooking`` release applies a replica event (``REPLICA_RULES``).

    Mark / Free: dropped unless the named slot is registered; then they act on the owner, whatever
    worker they name. Add: a duplicate on another registered slot moves the booking there and adds
    the request on that slot too, the first copy staying in its slot, unbooked.
    """

    def mark_or_free(model: Any, at: int) -> Any:
        if worker not in model.snapshot().sequences:
            return None  # the release drops an event for an unregistered worker
        if op.kind == "mark":
            return model.mark_prefill_completed(op.rid, at)
        return model.free(op.rid, at)

    def add(model: Any, at: int) -> Any:
        if request is not None and _rebooks(model, op, worker) and _can_rebook(model):
            del model.index[op.rid]  # the booking moves; the old slot keeps its copy
        return call(model, at)

    return add if op.kind == "add" else mark_or_free


def run_scenario(
    oracle: SlotTrackerProcess, scenario: OracleScenario, jitter_ns: int, model_factory: Callable[[], Any] = ReferenceSlotTracker
) -> ScenarioResult:
    """Drive one scenario through the real tracker and the early / late models; collect mismatches.

    Replica events follow the release's ``replica_rules`` (``oracle.release``): under ``rebooking``
    the models take them as that release applies them (``_rebooking_call``); a re-booking add the
    model cannot express ends the scenario early with ``unexpressible`` set (not a mismatch).
    """
    return ScenarioRun(oracle, scenario, jitter_ns, model_factory).run()


class _Write(NamedTuple):
    """One write as both doors take it: the HTTP body and route, the model call ``call(tracker, at_ns)``, and the
    request and prefill hint an add carries (for the replica event and the re-booking rules)."""

    body: dict[str, Any] | None
    route: str
    call: Callable[[Any, int], Any]
    request: SequenceRequest | None = None
    hint: PrefillLoadHint | None = None


class ScenarioRun:
    """One scenario against the real tracker: every read bracketed by the early model (at the read's end) and the
    late one (at its start), every write given to both models at the times the tracker may have applied it."""

    def __init__(
        self, oracle: SlotTrackerProcess, scenario: OracleScenario, jitter_ns: int, model_factory: Callable[[], Any]
    ) -> None:
        self.oracle, self.scenario = oracle, scenario
        self.early, self.late = model_factory(), model_factory()
        self.rules = oracle.release.wire.replica_rules
        self.fence_timeout_ns = max(FENCE_TIMEOUT_NS, 40 * jitter_ns)
        self.fences = 0
        self.result = ScenarioResult(scenario.index)
        self.log: list[str] = []
        self.model = scenario.model
        self.t0 = _now()

    def mismatch(self, step: int, op: Op, detail: str) -> None:
        self.result.mismatches.append(OracleMismatch(self.scenario.index, step, repr(op), detail, list(self.log)))

    def run(self) -> ScenarioResult:
        due = self.t0
        for step, op in enumerate(self.scenario.ops):
            due += op.gap_ms * 1_000_000
            while _now() < due:
                time.sleep(min(0.002, max(0.0, (due - _now()) / 1e9)))
            self.result.ops += 1
            if op.kind in ("loads", "potential"):
                self.read(step, op)
            elif not self.write(step, op):
                break
        return self.result

    # -- reads

    def read(self, step: int, op: Op) -> None:
        """A ``loads`` or ``potential_loads`` read: each rank's tokens between the models, blocks and requests exact."""
        before = _now()
        if op.kind == "loads":
            status, rows = self.oracle.request("GET", f"/loads?model_name={self.model}")
        else:
            status, rows = self.oracle.request(
                "POST",
                "/potential_loads",
                {"model_name": self.model, "sequence_hashes": [signed(h) for h in op.blocks or ()], "new_isl_tokens": op.tokens},
            )
        after = _now()
        self.log.append(f"{op.kind} at {(before - self.t0) / 1e6:.1f}..{(after - self.t0) / 1e6:.1f} ms -> {status} {rows}")
        if op.kind == "potential" and not self.early.snapshot().worker_table.ranges:
            if status != 404:
                self.mismatch(step, op, f"status {status} for potential_loads with no worker, expected 404")
            return
        if status != 200:
            self.mismatch(step, op, f"status {status}: {rows}")
            return
        got, want, lo = self.bracket(op, rows, after - self.t0, before - self.t0)
        if set(got) != set(want):
            self.mismatch(step, op, f"slots {sorted(got)} != model {sorted(want)}")
            return
        for rank, (tokens, blocks, requests) in got.items():
            low, high, model_blocks = want[rank]
            self.result.reads += 1
            if not low <= tokens <= high:
                self.mismatch(step, op, f"{rank!r}: tokens {tokens} outside [{low}, {high}] (early/late model at read end/start)")
            if blocks != model_blocks:
                self.mismatch(step, op, f"{rank!r}: blocks {blocks} != {model_blocks}")
            if requests is not None and requests != lo[rank].active_requests:
                self.mismatch(step, op, f"{rank!r}: active_requests {requests} != {lo[rank].active_requests}")

    def bracket(self, op: Op, rows: Any, lo_t: int, hi_t: int) -> tuple[dict, dict, dict]:
        """(the tracker's rows by rank, the models' (low tokens, high tokens, blocks) by rank, the early model's reads)."""
        if op.kind == "loads":
            lo, hi = self.early.loads(lo_t), self.late.loads(hi_t)
            got = {
                WorkerWithDpRank(r["worker_id"], r["dp_rank"]): (r["active_prefill_tokens"], r["active_decode_blocks"], None)
                for r in rows
            }
            want = {k: (lo[k].active_prefill_tokens, hi[k].active_prefill_tokens, lo[k].active_decode_blocks) for k in lo}
        else:
            lo, hi = self.early.potential_loads(op.blocks, op.tokens, lo_t), self.late.potential_loads(op.blocks, op.tokens, hi_t)
            got = {
                WorkerWithDpRank(r["worker_id"], r["dp_rank"]): (
                    r["potential_prefill_tokens"],
                    r["potential_decode_blocks"],
                    r["active_requests"],
                )
                for r in rows
            }
            want = {
                k: (lo[k].potential_prefill_tokens, hi[k].potential_prefill_tokens, lo[k].potential_decode_blocks) for k in lo
            }
        return got, want, lo

    # -- writes

    def write_of(self, op: Op, worker: WorkerWithDpRank) -> _Write:
        """The write ``op`` stands for, through either door."""
        model = self.model
        if op.kind == "register":
            return _Write(
                {"worker_id": op.worker_id, "model_name": model, "block_size": BLOCK_SIZE, "dp_start": 0, "dp_size": op.dp_size},
                "/register",
                lambda t, at: t.register_worker(op.worker_id, 0, op.dp_size, at),
            )
        if op.kind == "unregister":
            return _Write(
                {"worker_id": op.worker_id, "model_name": model}, "/unregister", lambda t, at: t.unregister_worker(op.worker_id)
            )
        if op.kind == "add":
            hint = None if op.tokens is None else PrefillLoadHint(op.tokens, op.duration)
            body = None
            if op.via == "http":
                hint = PrefillLoadHint(op.tokens, None) if op.tokens else None  # HTTP: unmodeled, and only when > 0
                body = {
                    "model_name": model,
                    "request_id": op.rid,
                    "worker_id": worker.worker_id,
                    "dp_rank": worker.dp_rank,
                    "sequence_hashes": [signed(h) for h in op.blocks or ()],
                    "new_isl_tokens": op.tokens,
                }
            request = SequenceRequest(
                op.rid, worker, op.blocks if op.via == "replica" else (op.blocks or ()), op.track, None, hint
            )
            return _Write(body, "/add", lambda t, at: t.add_request(request, at), request, hint)
        fence = worker if op.via == "replica" else None
        if op.kind == "mark":
            return _Write(
                {"model_name": model, "request_id": op.rid},
                "/prefill_complete",
                lambda t, at: t.mark_prefill_completed(op.rid, at, fence),
            )
        return _Write({"model_name": model, "request_id": op.rid}, "/free", lambda t, at: t.free(op.rid, at, fence))

    def write(self, step: int, op: Op) -> bool:
        """Apply one write through its door and to both models; False when the scenario must end here."""
        self.result.writes += 1
        worker = WorkerWithDpRank(*op.worker)
        any_worker = bool(self.early.snapshot().worker_table.ranges)
        w = self.write_of(op, worker)
        call = w.call
        if op.kind == "add":
            self.result.modeled_adds += op.via == "replica" and op.duration is not None and bool(op.tokens)
        if op.via == "replica" and self.rules == "rebooking":
            call = _rebooking_call(op, worker, call, w.request)
            if op.kind == "add" and _rebooks(self.early, op, worker) and not _can_rebook(self.early):
                self.result.unexpressible = (
                    f"step {step}: {op.kind} {op.rid} re-books on {worker!r} under release "
                    f"{self.oracle.release.version}'s replica rules, which "
                    f"{type(self.early).__name__} cannot express"
                )
                return False
        if op.via == "replica" and op.kind in ("add", "mark", "free"):
            sent = self.send_replica(step, op, worker, w.hint, call)
            if sent is None:
                return False
            status, lo_t, hi_t, first = sent
        else:
            status, lo_t, hi_t, first = self.send_http(w.route, w.body, call)
        second = _model_outcome(self.late, lambda t: call(t, hi_t))
        self.log.append(
            f"{op.kind} {op.via} {op.rid or op.worker_id} {op.worker} at {lo_t / 1e6:.1f}..{hi_t / 1e6:.1f} ms: "
            f"model {first[0]}" + ("" if status is None else f", tracker {status}")
        )
        if first[0] != second[0]:
            self.mismatch(step, op, f"early and late models disagree: {first[0]} vs {second[0]} (write order unclear)")
        if status is not None:
            expected = _http_status(first, op.kind, any_worker)
            if status != expected:
                self.mismatch(step, op, f"HTTP {status}, model says {expected} ({first[0]})")
        return True

    def send_replica(
        self, step: int, op: Op, worker: WorkerWithDpRank, hint: PrefillLoadHint | None, call: Callable[[Any, int], Any]
    ) -> tuple[None, int, int, tuple[str, Any]] | None:
        """Publish the write as a replica event, then a fence behind it; (no status, sent, seen, the early model's
        outcome), or None when the fence never arrived (a mismatch: the feed lost it)."""
        data = {
            "add": lambda: add_data(op.blocks, op.track, hint),
            "mark": lambda: "MarkPrefillCompleted",
            "free": lambda: "Free",
        }[op.kind]()
        fence_slot = _fence_slot(self.early, op, worker)
        sent = self.oracle.publish(self.model, op.rid, op.worker, data)
        lo_t = sent - self.t0
        first = _model_outcome(self.early, lambda t: call(t, lo_t))
        if fence_slot is None:
            return None, lo_t, lo_t, first  # no worker registered: the tracker is gone and drops the event; so does the model
        self.fences += 1
        seen = _fence(self.oracle, self.model, fence_slot, f"fence{self.scenario.index}.{self.fences}", self.fence_timeout_ns)
        if seen is None:
            self.mismatch(
                step,
                op,
                f"the fence published behind the event never reached {fence_slot!r} "
                f"(model: {first[0]}); the replica feed lost it",
            )
            return None
        return None, lo_t, seen - self.t0, first

    def send_http(
        self, route: str, body: dict[str, Any] | None, call: Callable[[Any, int], Any]
    ) -> tuple[int, int, int, tuple[str, Any]]:
        """POST the write; (its status, sent, answered, the early model's outcome at the send)."""
        sent = _now()
        status, _reply = self.oracle.request("POST", route, body)
        done = _now()
        lo_t = sent - self.t0
        first = _model_outcome(self.early, lambda t: call(t, lo_t))
        return status, lo_t, done - self.t0, first


@dataclass
class SlotTrackerConformReport:
    seed: int
    scenarios: int = 0
    ops: int = 0
    writes: int = 0
    reads: int = 0
    modeled_adds: int = 0
    seconds: float = 0.0
    jitter_ms: int = DEFAULT_JITTER_MS
    release: str = ""
    wire_format: str = ""
    mismatches: list[OracleMismatch] = field(default_factory=list)
    unexpressible: list[str] = field(default_factory=list)  # "scenario K: why it stopped early"

    def summary_line(self) -> str:
        cut = f" cut_short={len(self.unexpressible)}" if self.unexpressible else ""
        return f"conform: scenarios={self.scenarios} reads={self.reads} mismatches={len(self.mismatches)}{cut}"

    def to_json(self) -> dict:
        out = asdict(self)
        out["mismatches"] = [asdict(m) for m in self.mismatches]
        return out


def conform_slot_tracker(
    scenarios: int,
    seed: int,
    jitter_ms: int = DEFAULT_JITTER_MS,
    parallel: int = 10,
    only: int | None = None,
    indices: list[int] | None = None,
    on_mismatch: Callable[[OracleMismatch], None] | None = None,
    log_path: str | None = None,
    model_factory: Callable[[], Any] = ReferenceSlotTracker,
    oracle: SlotTrackerProcess | None = None,
    length: int = 10,
    on_progress: Callable[[int, int, float], None] | None = None,
) -> SlotTrackerConformReport:
    """Run ``scenarios`` scenarios (``parallel`` at a time, each on its own model name) against a slot tracker and compare.

    ``oracle``: a started ``SlotTrackerProcess`` to reuse (else one is started and stopped here);
    ``length``: random operations after each scenario's template; ``on_progress(done, total, seconds)``
    is called as scenarios finish (a progress display).
    """
    report = SlotTrackerConformReport(seed, jitter_ms=jitter_ms)
    if indices is None:
        indices = [only] if only is not None else list(range(scenarios))
    started = time.perf_counter()
    owned = oracle is None
    if oracle is None:
        oracle = SlotTrackerProcess(log_path)
        oracle.start()  # stops its own process group if it fails
    process = oracle  # started, ours or the caller's; a name the closure below sees narrowed
    report.release, report.wire_format = process.release.version, process.release.wire.describe()
    try:
        results: list[ScenarioResult] = []
        queue = list(indices)
        lock = _sync.Lock("conform.queue")

        def runner() -> None:
            while True:
                with lock:
                    if not queue:
                        return
                    index = queue.pop(0)
                try:
                    plan = generate_scenario(seed, index, jitter_ms, length)
                    res = run_scenario(process, plan, jitter_ms * 1_000_000, model_factory)
                except Exception as exc:  # the oracle crashed or hung up: report it, do not hide it
                    res = ScenarioResult(index)
                    res.mismatches.append(OracleMismatch(index, -1, "", f"{type(exc).__name__}: {exc}", []))
                with lock:
                    results.append(res)
                    for m in res.mismatches:
                        if on_mismatch is not None:
                            on_mismatch(m)
                    if on_progress is not None:
                        on_progress(len(results), len(indices), time.perf_counter() - started)

        threads = [_sync.Thread(runner, name=f"conform-{i}") for i in range(max(1, min(parallel, len(indices))))]
        for t in threads:
            t.join()
    finally:
        if owned:
            process.close()
    report.seconds = time.perf_counter() - started
    for res in sorted(results, key=lambda r: r.index):
        report.scenarios += 1
        report.ops += res.ops
        report.writes += res.writes
        report.reads += res.reads
        report.modeled_adds += res.modeled_adds
        report.mismatches += res.mismatches
        if res.unexpressible:
            report.unexpressible.append(f"scenario {res.index}: {res.unexpressible}")
    return report


@dataclass
class SlotTrackerConformRun:
    """``kvproof conform slot-tracker``: the run's report, or why the tracker could not be driven (exit 1)."""

    report: SlotTrackerConformReport | None
    model: str
    seed: int
    jitter_ms: int
    start_failure: str = ""
    kind = "conform-slot-tracker"
    skipped = ""

    @property
    def ok(self) -> bool:
        return self.report is not None and not self.report.mismatches

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        if self.report is None:
            say(self.start_failure)
            return
        r = self.report
        for line in r.unexpressible:
            say(f"cut short: {line}")
        say(
            f"seconds={r.seconds:.1f} seed={self.seed} model={self.model} jitter_ms={self.jitter_ms} "
            f"ops={r.ops} writes={r.writes} modeled_adds={r.modeled_adds} release={r.release}"
        )

    def summary_line(self) -> str:
        return self.report.summary_line() if self.report else "conform: scenarios=0 reads=0 mismatches=0 (not run)"

    def to_json(self) -> dict:
        return self.report.to_json() if self.report else {"seed": self.seed, "not_run": self.start_failure}


def run_conform_slot_tracker(
    scenarios: int,
    seed: int,
    only: int | None,
    jitter_ms: int,
    parallel: int,
    model: str,
    factory: Callable[[], Any],
    log_path: str | None,
    say: Callable[[str], None],
    progress: Callable[[int, int, float], None] | None = None,
) -> SlotTrackerConformRun:
    """Start the real slot tracker, drive the scenarios against ``factory``'s model, stop it; say its release and
    where it listens first. No Dynamo here is ``harness.errors.Unavailable`` (exit 2)."""
    from ..harness.errors import Unavailable

    reason = oracle_unavailable()
    if reason:
        raise Unavailable(f"the slot-tracker oracle is unavailable: {reason}")
    oracle = SlotTrackerProcess(log_path)
    say(oracle.release.banner())
    try:
        oracle.start()
    except OracleStartError as exc:
        why = f"FAIL: the slot tracker of ai-dynamo-runtime {oracle.release.version} could not be driven: {exc}"
        return SlotTrackerConformRun(None, model, seed, jitter_ms, why)
    try:
        if process_guard.in_private_netns():
            say("network: the tracker runs in a private network namespace (--netns)")
        elif notice := oracle.bind_notice():
            say(notice)
        result = conform_slot_tracker(
            scenarios,
            seed,
            jitter_ms=jitter_ms,
            parallel=parallel,
            only=only,
            on_mismatch=lambda m: say(m.report(seed, scenarios)),
            model_factory=lambda: factory(),
            oracle=oracle,
            on_progress=progress,
        )
    finally:
        oracle.close()
    return SlotTrackerConformRun(result, model, seed, jitter_ms)

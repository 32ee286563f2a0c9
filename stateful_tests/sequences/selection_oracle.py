"""A second oracle for the active-sequence state: the Rust ``ActiveSequences`` inside Dynamo's selection service.

``dynamo._core.SelectionService`` (``harness.dynamo_selection``) books requests on the real
multi-worker ``ActiveSequences`` and reads them back, in process, with no network: its
reservations are the slot tracker's writes and its loads the slot tracker's reads.

| the selection service | kvproof (``reference.sequences.SlotTracker``) |
|---|---|
| ``upsert_worker`` (``data_parallel_size``) / ``delete_worker`` | ``register_worker`` / ``unregister_worker`` |
| ``create_reservation`` (``sequence_hashes``, ``effective_prefill_tokens``, ``track_prefill_tokens``) | ``add_request`` (an unmodeled hint) |
| ``prefill_complete`` / ``free_reservation`` | ``mark_prefill_completed`` / ``free`` |
| ``loads()``: prefill tokens, decode blocks, requests per rank | ``loads`` |
| ``potential_loads`` (``sequence_hashes``, ``isl_tokens``) | ``potential_loads`` |
| ``add_output_block`` | no rule of kvproof's (see below) |

The scenarios are the slot tracker's (``oracle.generate_scenario``, the same seeds) and the trace's
tracker calls (``oracle.scenario_of_calls``), with every write sent as a reservation. What the
surface cannot carry is left out and counted, never compared: a modeled prefill duration (a
reservation has no duration field, as the HTTP door has none: such adds are booked unmodeled on
both sides), and the expiry clock (the service runs on the wall clock: a scenario lasts well under
the expiry). Every call's outcome (accepted, or refused: the service's error kind against the
reference's error name) and, after every write, every rank's load are compared exactly: the loads
are time-independent here, since no prefill is modeled.

``add_output_block(id)`` grows a live request's decode blocks by one (weight 1, no decay); kvproof's
spec has no decode-growth rule, so the comparison adds one block per call to the expected load of
the request's rank while it lives, and leaves the ``decay_fraction`` out. Each such call is counted.

A difference is explained (an intended difference of the surface, ``EXPLAINED``) or recorded as a
mismatch with its scenario and the command that replays it.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...reference.sequences import SlotTracker as ReferenceSlotTracker
from ...spec.primitives import WorkerWithDpRank
from ...spec.sequence_errors import SequenceError
from ...spec.sequence_inputs import PrefillLoadHint, SequenceRequest
from ..harness import dynamo_selection, services
from ..harness.surface import LeftOut
from .oracle import BLOCK_SIZE, Op, OracleScenario, generate_scenario, signed

Rank = WorkerWithDpRank

EXPLAINED = {
    "duration": "a reservation carries no prefill duration (booked unmodeled on both sides)",
    "decay": "add_output_block's decay_fraction has no rule in kvproof's spec",
    "re-register": "registering a registered worker is an upsert there (its ranks replaced), a DuplicateWorker here",
}


@dataclass
class SelectionMismatch:
    scenario: int
    step: int
    op: str
    detail: str

    def report(self, seed: int, scenarios: int, trace: bool = False) -> str:
        replay = (
            "kvproof conform selection --trace"
            if trace
            else f"kvproof conform selection --seed {seed} --scenarios {scenarios} --scenario {self.scenario}"
        )
        return f"MISMATCH scenario {self.scenario} step {self.step}: {self.op}\n  {self.detail}\n  replay: {replay}"


@dataclass
class SelectionConformReport:
    seed: int
    scenarios: int = 0
    writes: int = 0
    reads: int = 0  # rank rows compared
    outcomes: int = 0  # call outcomes compared
    output_blocks: int = 0
    mismatches: list[SelectionMismatch] = field(default_factory=list)
    left_out: LeftOut = field(default_factory=LeftOut)
    seconds: float = 0.0

    def summary_line(self) -> str:
        return (
            f"conform selection: scenarios={self.scenarios} writes={self.writes} outcomes={self.outcomes} "
            f"reads={self.reads} output_blocks={self.output_blocks} mismatches={len(self.mismatches)}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "scenarios": self.scenarios,
            "writes": self.writes,
            "outcomes": self.outcomes,
            "reads": self.reads,
            "output_blocks": self.output_blocks,
            "left_out": self.left_out.to_json(),
            "mismatches": [m.__dict__ for m in self.mismatches],
            "seconds": round(self.seconds, 3),
        }


_IDS = itertools.count(1)


class _Service:
    """One scenario's model in the shared selection service: workers mapped to ids unique in the service."""

    def __init__(self, host: dynamo_selection.SelectionHost, name: str) -> None:
        self.host, self.model = host, f"{name}-{next(_IDS)}"
        self.ids: dict[int, int] = {}
        self.workers: dict[int, int] = {}
        self.rids: dict[str, str] = {}

    def worker(self, w: int) -> int:
        if w not in self.ids:
            self.ids[w] = dynamo_selection.STAND_IN_BASE // 2 + next(_IDS)
            self.workers[self.ids[w]] = w
        return self.ids[w]

    def rid(self, rid: str) -> str:
        return self.rids.setdefault(rid, f"{self.model}/{rid}")

    def call(self, method: str, *args: Any, **kwargs: Any) -> tuple[str, Any]:
        """``("ok", answer)`` or ``("error", kind)`` for the service's typed refusals."""
        try:
            return "ok", self.host.call(method, *args, **kwargs)
        except services.ServiceFailure:
            raise
        except Exception as exc:  # the service's SelectionServiceError (kind) or ValueError for bad arguments
            return "error", getattr(exc, "kind", None) or type(exc).__name__

    def await_ranks(self, worker: int, dp_size: int, within: float = 5.0) -> None:
        """Wait until an upserted worker's ranks show in ``loads`` (the service registers them asynchronously)."""
        deadline = time.monotonic() + within
        wanted = {Rank(worker, d) for d in range(dp_size)}
        while not wanted <= set(self.loads()) and time.monotonic() < deadline:
            time.sleep(0.002)

    def await_gone(self, worker: int, within: float = 5.0) -> None:
        """Wait until a deleted worker's ranks are gone from ``loads`` (the service drops them asynchronously too: on a
        loaded machine a read right after ``delete_worker`` still saw them)."""
        deadline = time.monotonic() + within
        while any(rank.worker_id == worker for rank in self.loads()) and time.monotonic() < deadline:
            time.sleep(0.002)

    def loads(self) -> dict[Rank, tuple[int, int, int]]:
        _, rows = self.call("loads", model_name=self.model)
        out: dict[Rank, tuple[int, int, int]] = {}
        for group in rows if isinstance(rows, list) else []:
            for r in group["loads"]:
                out[Rank(self.workers.get(r["worker_id"], -1), r["dp_rank"])] = (
                    r["potential_prefill_tokens"],
                    r["potential_decode_blocks"],
                    r["active_requests"],
                )
        return out


def _model(tracker: Any, call: Callable[[Any], Any]) -> tuple[str, Any]:
    try:
        return "ok", call(tracker)
    except SequenceError as exc:
        return "error", type(exc).__name__


def _said(outcome: tuple[str, Any]) -> str:
    return "ok" if outcome[0] == "ok" else f"error {outcome[1]}"


def _prompt_body(blocks: tuple[int, ...], isl: int) -> dict[str, Any]:
    hashes = [signed(h) for h in blocks]
    return {"block_hashes": hashes, "sequence_hashes": hashes, "isl_tokens": max(isl, 1)}


def run_scenario(
    host: dynamo_selection.SelectionHost,
    scenario: OracleScenario,
    rng: random.Random | None = None,
    report: SelectionConformReport | None = None,
    model_factory: Callable[[], Any] = ReferenceSlotTracker,
) -> SelectionConformReport:
    """Drive one scenario through the service and a tracker of ``model_factory`` (see the module docstring)."""
    report = report or SelectionConformReport(scenario.seed)
    service = _Service(host, scenario.model)
    tracker = model_factory()
    live_outputs: dict[str, tuple[Rank, int]] = {}  # rid -> (rank, output blocks added while it lives)
    now = itertools.count(1)
    steps: list[Op] = []
    for op in scenario.ops:  # add_output_block where the scenario has a request live (drawn, replayable)
        steps.append(op)
        if rng is not None and op.kind == "add" and rng.random() < 0.4:
            steps.append(Op("output", 0, op.rid, op.worker))
    report.scenarios += 1

    def mismatch(step: int, op: Op, detail: str) -> None:
        report.mismatches.append(SelectionMismatch(scenario.index, step, repr(op), detail))

    before = len(report.mismatches)
    for step, op in enumerate(steps):
        at = next(now)
        rank = Rank(*op.worker)
        if op.kind in ("loads", "potential"):
            if op.kind == "potential" and tracker.snapshot().worker_table.ranges:
                got = service.call(
                    "potential_loads", {"model_name": service.model, **_prompt_body(op.blocks or (), op.tokens or 0)}
                )
                want = _model(tracker, lambda t: t.potential_loads(op.blocks or (), max(op.tokens or 0, 1), at))
                _compare_potential(report, step, op, got, want, mismatch, service, live_outputs)
            continue
        report.writes += 1
        if op.kind == "register" and op.worker_id in tracker.snapshot().worker_table.ranges:
            report.left_out.add("re-register", EXPLAINED["re-register"])  # an upsert replaces; the reference refuses
            continue
        if op.kind == "register":
            endpoints = {d: f"inproc://kvproof-{service.worker(op.worker_id)}-{d}" for d in range(op.dp_size)}
            got = service.call(
                "upsert_worker",
                {
                    "worker_id": service.worker(op.worker_id),
                    "model_name": service.model,
                    "endpoint": "dyn://kvproof",
                    "block_size": BLOCK_SIZE,
                    "data_parallel_size": op.dp_size,
                    "kv_events_endpoints": endpoints,
                    "total_kv_blocks": 1 << 20,
                },
            )
            want = _model(tracker, lambda t: t.register_worker(op.worker_id, 0, op.dp_size, at))
            if got[0] == "ok":
                service.await_ranks(op.worker_id, op.dp_size)
        elif op.kind == "unregister":
            got = service.call("delete_worker", service.worker(op.worker_id))
            want = _model(tracker, lambda t: t.unregister_worker(op.worker_id))
            if got[0] == "ok":
                service.await_gone(op.worker_id)
            for rid in [r for r, (where, _) in live_outputs.items() if where.worker_id == op.worker_id]:
                del live_outputs[rid]  # its requests went with it
        elif op.kind == "add":
            if op.duration is not None:
                report.left_out.add("duration", EXPLAINED["duration"])
            blocks = op.blocks or ()
            body = {
                "model_name": service.model,
                "selection_id": service.rid(op.rid),
                "worker_id": service.worker(rank.worker_id),
                "dp_rank": rank.dp_rank,
                "track_prefill_tokens": op.track,
                # the service refuses effective tokens above the prompt's: the prompt is made at least that long
                **_prompt_body(blocks, max(len(blocks) * BLOCK_SIZE, op.tokens or 0)),
            }
            if op.tokens:
                body["effective_prefill_tokens"] = op.tokens
            request = SequenceRequest(
                op.rid, rank, blocks, op.track, None, PrefillLoadHint(op.tokens, None) if op.tokens else None
            )
            got = service.call("create_reservation", body)
            want = _model(tracker, lambda t: t.add_request(request, at))
            if got[0] == "ok" and want[0] == "ok":
                live_outputs[op.rid] = (rank, 0)
        elif op.kind == "output":
            if op.rid not in live_outputs:
                continue
            got = service.call("add_output_block", service.rid(op.rid))
            want = ("ok", None)
            if got[0] == "ok":
                r, n = live_outputs[op.rid]
                live_outputs[op.rid] = (r, n + 1)
                report.output_blocks += 1
            report.left_out.add("decay", EXPLAINED["decay"])
        elif op.kind == "mark":
            got = service.call("prefill_complete", service.rid(op.rid))
            want = _model(tracker, lambda t: t.mark_prefill_completed(op.rid, at))
        else:
            got = service.call("free_reservation", service.rid(op.rid))
            want = _model(tracker, lambda t: t.free(op.rid, at))
            if want == ("ok", False):  # the reference's "nothing to free" is the service's refusal of an unknown id
                want = ("error", "not_found")
            live_outputs.pop(op.rid, None)
        report.outcomes += 1
        if (got[0] == "ok") != (want[0] == "ok"):
            mismatch(step, op, f"the service answered {_said(got)}, the reference {_said(want)}")
        _compare_loads(report, step, op, service.loads(), tracker.loads(at), live_outputs, mismatch)
        if len(report.mismatches) > before:
            break  # the two states differ from here on: the first difference is the finding
    for rid in list(service.rids.values()):
        service.call("free_reservation", rid)
    for w in list(service.ids.values()):
        service.call("delete_worker", w)
    return report


def _compare_loads(
    report: SelectionConformReport,
    step: int,
    op: Op,
    got: dict[Rank, tuple[int, int, int]],
    rows: Any,
    outputs: dict[str, tuple[Rank, int]],
    mismatch: Callable[[int, Op, str], None],
) -> None:
    extra = _output_blocks(outputs)
    want = {
        rank: (row.active_prefill_tokens, row.active_decode_blocks + extra.get(rank, 0), row.active_requests)
        for rank, row in rows.items()
    }
    if set(got) != set(want):
        mismatch(step, op, f"ranks {sorted(got)} != the reference's {sorted(want)}")
        return
    for rank, row in got.items():
        report.reads += 1
        if row != want[rank]:
            mismatch(
                step,
                op,
                f"{rank!r}: (prefill tokens, decode blocks, requests) {row} != the reference's {want[rank]}"
                + (f" (including {extra[rank]} output blocks)" if extra.get(rank) else ""),
            )


def _output_blocks(outputs: dict[str, tuple[Rank, int]]) -> dict[Rank, int]:
    """The output blocks each rank's live requests grew by (``add_output_block``), which the reference does not model."""
    extra: dict[Rank, int] = {}
    for rank, n in outputs.values():
        extra[rank] = extra.get(rank, 0) + n
    return extra


def _compare_potential(
    report: SelectionConformReport,
    step: int,
    op: Op,
    got: tuple[str, Any],
    want: tuple[str, Any],
    mismatch: Callable[[int, Op, str], None],
    service: _Service,
    outputs: dict[str, tuple[Rank, int]],
) -> None:
    if got[0] != "ok" or want[0] != "ok":
        if (got[0] == "ok") != (want[0] == "ok"):
            mismatch(step, op, f"potential_loads: the service {got}, the reference {want}")
        return
    rows = {
        Rank(service.workers.get(r["worker_id"], -1), r["dp_rank"]): (
            r["potential_prefill_tokens"],
            r["potential_decode_blocks"],
            r["active_requests"],
        )
        for r in got[1]
    }
    extra = _output_blocks(outputs)
    expected = {
        rank: (p.potential_prefill_tokens, p.potential_decode_blocks + extra.get(rank, 0), p.active_requests)
        for rank, p in want[1].items()
    }
    for rank, row in rows.items():
        report.reads += 1
        if rank in expected and row != expected[rank]:
            mismatch(step, op, f"potential_loads {rank!r}: {row} != the reference's {expected[rank]}")


def conform_selection(
    scenarios: int,
    seed: int,
    only: int | None = None,
    on_mismatch: Callable[[SelectionMismatch], None] | None = None,
    model_factory: Callable[[], Any] = ReferenceSlotTracker,
) -> SelectionConformReport:
    """Run the slot tracker's scenarios ``0..scenarios-1`` of ``seed`` (or only one) through the selection service."""
    started = time.perf_counter()
    report = SelectionConformReport(seed)
    host = dynamo_selection.host_for(1)
    for index in [only] if only is not None else range(scenarios):
        before = len(report.mismatches)
        run_scenario(host, generate_scenario(seed, index), random.Random(f"selection/{seed}/{index}"), report, model_factory)
        if on_mismatch is not None:
            for m in report.mismatches[before:]:
                on_mismatch(m)
    report.seconds = time.perf_counter() - started
    return report


def conform_selection_trace(calls: Any, model_factory: Callable[[], Any] = ReferenceSlotTracker) -> SelectionConformReport:
    """The trace's tracker calls (``tree.router.TrackerCall``) as one scenario through the selection service."""
    from .oracle import scenario_of_calls

    started = time.perf_counter()
    report = run_scenario(dynamo_selection.host_for(1), scenario_of_calls(calls, 1.0, "trace"), None, None, model_factory)
    report.seconds = time.perf_counter() - started
    return report


def unavailable() -> str | None:
    """Why the selection service cannot be driven here (None: it can)."""
    return dynamo_selection.unavailable()

"""Differential conformance: two trees, one stream, every outcome and every query compared.

``run_stream`` applies a stream to a fresh *subject* and a fresh *oracle* (normally the
real ``dynamo._core.RadixTree``) and compares, after every operation:

- the outcome (accepted, or which error);
- ``find_matches`` scores of every query the stream lists, with and without
  ``early_exit``;

and, at the end of the stream, the two dumps, as multisets of their replayable events.
That last comparison is the one named tolerance: Dynamo 1.6.1 also dumps events for ranks
below parents they no longer hold, which no tree can replay (docs/dynamo-findings.md F2);
those events are left out on both sides. Replayability itself is a separate law, checked
by ``kvproof check`` on the subject.

On the first mismatch, ``shrink`` reduces the stream to a minimal list of operations that
still shows a difference (dropping chunks, single operations, hashes of removals and
blocks at the ends of stores), and ``Mismatch.report`` prints it with the command that
replays it. ``kvproof conform tree`` is the command-line front end.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

from ...spec.events import Removed, Stored, event_data_json
from ..harness import targets
from ..harness.targets import canonical, dump_entries, replayable
from .streams import DEFAULT_PROFILE, EventOp, Op, RemoveWorkerDpRankOp, Stream, StreamProfile, apply_op, describe, generate

Factory = Callable[[], Any]


@dataclass
class Mismatch:
    """The first difference found in a stream, with its shrunk reproduction."""

    seed: int
    stream: int
    op_index: int
    detail: str
    ops: list[Op]
    queries: list[list[int]]
    shrunk: list[Op] = field(default_factory=list)
    options: str = ""  # the stream profile's non-default options, so the replay regenerates the same stream

    def replay_command(self, subject: str, oracle: str) -> str:
        return f"kvproof conform tree --target {subject} --oracle {oracle} --seed {self.seed} --stream {self.stream}{self.options}"

    def report(self, subject: str, oracle: str) -> str:
        lines = [
            f"MISMATCH {subject} vs {oracle}: seed={self.seed} stream={self.stream} op={self.op_index}",
            f"  {self.detail}",
            f"  minimal reproduction ({len(self.shrunk)} operations):",
        ]
        lines += [f"    {i}: {describe(op)}" for i, op in enumerate(self.shrunk)]
        lines.append(f"  replay: {self.replay_command(subject, oracle)}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "seed": self.seed,
            "stream": self.stream,
            "op_index": self.op_index,
            "detail": self.detail,
            "shrunk": [op_to_json(op) for op in self.shrunk],
            "queries": self.queries,
        }


def op_to_json(op: Op) -> dict:
    """Encode an operation for a failure file."""
    if isinstance(op, EventOp):
        return {
            "worker_id": op.worker_id,
            "event": {"event_id": op.event.event_id, "data": event_data_json(op.event.data), "dp_rank": op.event.dp_rank},
        }
    if isinstance(op, RemoveWorkerDpRankOp):
        return {type(op).__name__: [op.worker_id, op.dp_rank]}
    return {type(op).__name__: op.worker_id}


@dataclass
class StreamResult:
    events: int
    queries: int
    mismatch: Mismatch | None = None


def compare_prefix(
    subject: Factory, oracle: Factory, ops: list[Op], queries: list[list[list[int]]] | None, final_queries: list[list[int]]
) -> tuple[str | None, int, int]:
    """Replay ``ops`` on both trees; return ``(first difference or None, op index, queries compared)``.

    ``queries[i]`` are compared after op ``i`` (None: none); ``final_queries`` after the last.
    """
    a, b = subject(), oracle()
    try:
        return _compare(a, b, ops, queries, final_queries)
    finally:
        targets.dispose(a)
        targets.dispose(b)


def _compare(a: Any, b: Any, ops: list[Op], queries: list[list[list[int]]] | None, final_queries: list[list[int]]):
    compared = 0
    for i, op in enumerate(ops):
        got, want = apply_op(a, op), apply_op(b, op)
        if got != want:
            return f"op {i} {describe(op)}: outcome {got} != oracle {want}", i, compared
        for q in (queries[i] if queries else ()):
            for early_exit in (False, True):
                compared += 1
                got_s, want_s = targets.scores(a, q, early_exit), targets.scores(b, q, early_exit)
                if got_s != want_s:
                    return (
                        f"after op {i} {describe(op)}: find_matches({q}, early_exit={early_exit}) = {got_s}, "
                        f"oracle {want_s}",
                        i,
                        compared,
                    )
    for q in final_queries:
        for early_exit in (False, True):
            compared += 1
            got_s, want_s = targets.scores(a, q, early_exit), targets.scores(b, q, early_exit)
            if got_s != want_s:
                return f"at end: find_matches({q}, early_exit={early_exit}) = {got_s}, oracle {want_s}", len(ops), compared
    # Dumps are compared as multisets of their replayable entries (named tolerance F2).
    got_d = canonical(replayable(dump_entries(a))[0])
    want_d = canonical(replayable(dump_entries(b))[0])
    if got_d != want_d:
        return f"at end: dump differs\n    subject {got_d}\n    oracle  {want_d}", len(ops), compared
    return None, len(ops), compared


def run_stream(subject: Factory, oracle: Factory, stream: Stream, shrink_failures: bool = True) -> StreamResult:
    """Compare ``subject`` with ``oracle`` on one stream."""
    detail, index, compared = compare_prefix(subject, oracle, stream.ops, stream.queries, [])
    result = StreamResult(events=len(stream.ops), queries=compared)
    if detail is None:
        return result
    failing_queries = stream.queries[index] if index < len(stream.ops) else []
    upto = stream.ops[: index + 1]
    all_queries = [q for qs in stream.queries[: index + 1] for q in qs]
    mismatch = Mismatch(stream.seed, stream.index, index, detail, upto, failing_queries)
    mismatch.shrunk = shrink(subject, oracle, upto, all_queries) if shrink_failures else upto
    result.mismatch = mismatch
    return result


def _differs(subject: Factory, oracle: Factory, ops: list[Op], queries: list[list[int]]) -> bool:
    detail, _, _ = compare_prefix(subject, oracle, ops, None, queries)
    return detail is not None


def _smaller_variants(op: Op) -> Iterable[Op]:
    """Yield versions of ``op`` with one hash or one end block fewer."""
    if not isinstance(op, EventOp):
        return
    data = op.event.data
    if isinstance(data, Removed) and len(data.block_hashes) > 1:
        for i in range(len(data.block_hashes)):
            hashes = data.block_hashes[:i] + data.block_hashes[i + 1 :]
            yield dataclasses.replace(op, event=dataclasses.replace(op.event, data=Removed(hashes)))
    if isinstance(data, Stored) and len(data.blocks) > 1:
        yield dataclasses.replace(op, event=dataclasses.replace(op.event, data=Stored(data.parent_hash, data.blocks[:-1])))
        yield dataclasses.replace(
            op, event=dataclasses.replace(op.event, data=Stored(data.blocks[0].ext, data.blocks[1:]))
        )


def shrink(subject: Factory, oracle: Factory, ops: list[Op], queries: list[list[int]], budget: int = 4000) -> list[Op]:
    """Greedily reduce ``ops`` to a short list on which the two trees still differ.

    Differences are looked for in outcomes, in ``queries`` at the end, and in the dumps.
    """
    queries = [list(q) for q in {tuple(q): None for q in queries}]
    if not _differs(subject, oracle, ops, queries):
        return ops
    calls = 0

    def still_differs(candidate: list[Op]) -> bool:
        nonlocal calls
        calls += 1
        return _differs(subject, oracle, candidate, queries)

    current = list(ops)
    chunk = max(1, len(current) // 2)
    while chunk >= 1 and calls < budget:  # drop chunks, halving their size
        i, progressed = 0, False
        while i < len(current) and calls < budget:
            candidate = current[:i] + current[i + chunk :]
            if candidate and still_differs(candidate):
                current, progressed = candidate, True
            else:
                i += chunk
        if not progressed:
            chunk //= 2
    changed = True
    while changed and calls < budget:  # then make single operations smaller
        changed = False
        for i, op in enumerate(current):
            for smaller in _smaller_variants(op):
                candidate = current[:i] + [smaller] + current[i + 1 :]
                if still_differs(candidate):
                    current, changed = candidate, True
                    break
            if changed:
                break
    return current


@dataclass
class TreeConformReport:
    subject: str
    oracle: str
    seed: int
    streams: int
    events: int = 0
    queries: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    seconds: float = 0.0

    def summary_line(self) -> str:
        return (
            f"conform: streams={self.streams} events={self.events} queries={self.queries} "
            f"mismatches={len(self.mismatches)}"
        )

    def to_json(self) -> dict:
        return {
            "subject": self.subject,
            "oracle": self.oracle,
            "seed": self.seed,
            "streams": self.streams,
            "events": self.events,
            "queries": self.queries,
            "mismatches": len(self.mismatches),
            "seconds": round(self.seconds, 3),
            "failures": [m.to_json() for m in self.mismatches],
        }


def profile_options(profile: StreamProfile) -> str:
    """The ``kvproof conform tree`` options that regenerate streams of ``profile`` (empty for the default)."""
    options = ""
    if profile.events != DEFAULT_PROFILE.events:
        options += f" --events {profile.events}"
    if profile.rank_removal != DEFAULT_PROFILE.rank_removal:
        options += f" --rank-removal {profile.rank_removal:g}"
    return options


def conform(
    subject: Factory,
    oracle: Factory,
    streams: int,
    seed: int,
    profile: StreamProfile = DEFAULT_PROFILE,
    only_stream: int | None = None,
    subject_name: str = "subject",
    oracle_name: str = "oracle",
    max_reported: int = 3,
    on_mismatch: Callable[[Mismatch], None] | None = None,
    on_progress: Callable[[int, int, float], None] | None = None,
) -> TreeConformReport:
    """Run ``streams`` streams of run ``seed`` (or just ``only_stream``) through both trees.

    ``on_progress(done, total, seconds)`` is called before each stream (a progress display).
    """
    started = time.perf_counter()
    indices = [only_stream] if only_stream is not None else range(streams)
    report = TreeConformReport(subject_name, oracle_name, seed, len(indices))
    for done, index in enumerate(indices, 1):
        if on_progress is not None:
            on_progress(done - 1, len(indices), time.perf_counter() - started)
        stream = generate(seed, index, profile)
        result = run_stream(subject, oracle, stream, shrink_failures=len(report.mismatches) < max_reported)
        report.events += result.events
        report.queries += result.queries
        if result.mismatch is not None:
            result.mismatch.options = profile_options(profile)
            report.mismatches.append(result.mismatch)
            if on_mismatch is not None:
                on_mismatch(result.mismatch)
    report.seconds = time.perf_counter() - started
    return report


def write_failure_files(report: TreeConformReport, folder: FilePath) -> list[FilePath]:
    """Write one JSON file per mismatch (shrunk operations and the replay command); return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for m in report.mismatches:
        path = folder / f"conform-{report.oracle}-seed{m.seed}-stream{m.stream}.json"
        body = m.to_json() | {"replay": m.replay_command(report.subject, report.oracle)}
        path.write_text(json.dumps(body, indent=1))
        written.append(path)
    return written

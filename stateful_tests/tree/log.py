"""Event logs: a tree's operations as JSON lines, the form counterexamples are written and replayed in.

A log is one JSON object per line. A line is either

- a **RouterEvent**, ``{"worker_id": W, "event": {"event_id": .., "data": .., "dp_rank": ..}}``,
  exactly as ``dump_tree_as_events`` writes it and as a router's KV event recorder stores
  it (extra envelope fields such as ``storage_tier`` are ignored); or
- one of kvproof's four extensions, for what is not an event:
  ``{"remove_worker": W}``, ``{"clear_all_blocks": W}``, ``{"remove_worker_dp_rank": [W, D]}``,
  ``{"find_matches": [local hashes]}``, a query whose scores (with and without
  ``early_exit``) are compared after the operations before it, and ``{"dump": true}``, a call of
  ``dump_tree_as_events`` (a target that crashed there, ``harness.isolation``).

Blank lines and lines starting with ``#`` are comments. ``parse_log`` returns the operations
and queries with the line number of each, or a ``LogError`` naming the first bad line; it
never raises anything else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...spec.errors import KvProofError
from ...spec.events import decode_router_event, encode_router_event
from .streams import ClearAllBlocksOp, DumpOp, EventOp, Op, RemoveWorkerDpRankOp, RemoveWorkerOp

if TYPE_CHECKING:
    from .conformance import ConformMismatch

EXTENSIONS = ("remove_worker", "clear_all_blocks", "remove_worker_dp_rank", "find_matches", "dump")


def judging_options(rules: str | None = None, strict: bool = False, strict_shape: bool = False) -> str:
    """The command-line options that make a replay judge as the run did (appended to printed commands)."""
    return (f" --rules {rules}" if rules else "") + (" --strict" if strict else "") + (" --strict-shape" if strict_shape else "")


def file_safe(name: str) -> str:
    """``name`` with only letters, digits, ``-`` and ``_`` (target names carry ``:``, ``.``, ``@``, ``/``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


class LogError(KvProofError, ValueError):
    """A log line that is neither a RouterEvent nor one of kvproof's extensions."""


@dataclass
class Log:
    """A parsed log: the operations in order, and the queries with the number of operations before each."""

    ops: list[Op] = field(default_factory=list)
    op_lines: list[int] = field(default_factory=list)  # the 1-based line number of each operation
    queries: list[tuple[int, list[int]]] = field(default_factory=list)  # (operations before it, query)
    query_lines: list[int] = field(default_factory=list)


def op_to_line(op: Op) -> str:
    """One operation as a log line."""
    if isinstance(op, EventOp):
        return encode_router_event(op.worker_id, op.event)
    if isinstance(op, RemoveWorkerOp):
        return json.dumps({"remove_worker": op.worker_id})
    if isinstance(op, ClearAllBlocksOp):
        return json.dumps({"clear_all_blocks": op.worker_id})
    if isinstance(op, DumpOp):
        return json.dumps({"dump": True})
    return json.dumps({"remove_worker_dp_rank": [op.worker_id, op.dp_rank]})


def ops_to_lines(ops: list[Op], final_queries: list[list[int]] = ()) -> list[str]:  # type: ignore[assignment]
    """The log lines of ``ops``, then one ``find_matches`` line per query asked at the end."""
    return [op_to_line(op) for op in ops] + [json.dumps({"find_matches": list(q)}) for q in final_queries]


def _uint(value: Any, what: str, lineno: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value >= 1 << 64:
        raise LogError(f"line {lineno}: {what} must be a u64, got {value!r}")
    return value


def parse_line(line: str, lineno: int) -> Op | list[int] | None:
    """Parse one log line: an operation, a query (a list), or None for a comment or blank line."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LogError(f"line {lineno}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise LogError(f"line {lineno}: a log line is a JSON object, got {type(obj).__name__}")
    if "event" in obj:
        try:
            worker_id, event = decode_router_event(obj)
        except KvProofError as exc:
            raise LogError(f"line {lineno}: not a RouterEvent: {exc}") from None
        return EventOp(worker_id, event)
    known = [k for k in EXTENSIONS if k in obj]
    if len(known) != 1:
        raise LogError(
            f'line {lineno}: expected a RouterEvent (with "event") or one of {", ".join(EXTENSIONS)}; got keys {sorted(obj)}'
        )
    key, value = known[0], obj[known[0]]
    if key == "remove_worker":
        return RemoveWorkerOp(_uint(value, "remove_worker", lineno))
    if key == "clear_all_blocks":
        return ClearAllBlocksOp(_uint(value, "clear_all_blocks", lineno))
    if key == "remove_worker_dp_rank":
        if not isinstance(value, list) or len(value) != 2:
            raise LogError(f"line {lineno}: remove_worker_dp_rank takes [worker_id, dp_rank], got {value!r}")
        return RemoveWorkerDpRankOp(_uint(value[0], "worker_id", lineno), _uint(value[1], "dp_rank", lineno))
    if key == "dump":
        if value is not True:
            raise LogError(f"line {lineno}: dump takes true, got {value!r}")
        return DumpOp()
    if not isinstance(value, list):
        raise LogError(f"line {lineno}: find_matches takes a list of local hashes, got {value!r}")
    return [_uint(x, "a local hash", lineno) for x in value]


def parse_log(text: str) -> Log:
    """Parse a whole log; raise ``LogError`` at the first bad line."""
    log = Log()
    for lineno, line in enumerate(text.splitlines(), 1):
        item = parse_line(line, lineno)
        if item is None:
            continue
        if isinstance(item, list):
            log.queries.append((len(log.ops), item))
            log.query_lines.append(lineno)
        else:
            log.ops.append(item)
            log.op_lines.append(lineno)
    return log


def read_log(path: Path) -> Log:
    """Read and parse a log file; a missing or unreadable file is a ``LogError``."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise LogError(f"cannot read {path}: {exc}") from None
    return parse_log(text)


def write_regression(
    path: Path,
    log: Path,
    mismatch: ConformMismatch,
    subject: str,
    oracle: str,
    rules: str,
    strict: bool = False,
    strict_shape: bool = False,
) -> None:
    """Write a pytest regression test that replays ``log`` and asserts the two trees agree on it.

    It fails today (that is the point: it pins the difference) and passes once the subject
    is fixed, or is kept as an expected failure if the difference is intended.
    """
    name = path.stem
    rules_arg = (
        (f", rules={rules!r}" if rules else "")
        + (", strict=True" if strict else "")
        + (", strict_shape=True" if strict_shape else "")
    )
    purpose = (
        "It fails until the difference is fixed (or the variant that explains it is chosen)."
        if mismatch.fails
        else "The difference is tolerated today (known or shape only); the test fails if it stops being so."
    )
    path.write_text(
        f'"""Regression: {mismatch.label()} difference between {subject} and {oracle}, seed {mismatch.seed} stream '
        f"{mismatch.stream}.\n\n"
        f"{purpose}\n"
        f"Found by: {mismatch.replay_command(subject, oracle)}\n"
        f"{mismatch.detail}\n"
        '"""\n\n'
        "from pathlib import Path\n\n"
        "from kvproof.stateful_tests.tree.replay import replay_file\n\n\n"
        f"def {name}():\n"
        f"    result = replay_file(Path(__file__).parent / {log.name!r}, subject={subject!r}, oracle={oracle!r}{rules_arg})\n"
        "    assert result.failing is None, result.report()\n"
    )


class Recorder:
    """A tree wrapped so that every call that changes or reads it is kept as a log line.

    ``apply_event`` payloads are decoded and kept as RouterEvents (an undecodable payload is
    kept as a comment), the worker calls as kvproof's extensions, ``find_matches`` as a query.
    Everything else is passed through. ``lines`` is then a log ``kvproof replay log`` reads.
    """

    def __init__(self, tree: Any) -> None:
        self.tree = tree
        self.lines: list[str] = []
        self._asked: set[str] = set()  # the query lines logged since the last operation
        if callable(getattr(tree, "remove_worker_dp_rank", None)):  # only where the tree has it (older APIs lack it)
            self.remove_worker_dp_rank = self._remove_worker_dp_rank

    def apply_event(self, worker_id: Any, payload: Any) -> Any:
        from ...spec.events import decode_event

        try:
            event = decode_event(payload)
            self._operation(encode_router_event(worker_id, event))
        except Exception as exc:  # kept visible: the log says what could not be written as an event
            self._operation(f"# undecodable event for worker {worker_id!r}: {exc}")
        return self.tree.apply_event(worker_id, payload)

    def remove_worker(self, worker_id: Any) -> Any:
        self._operation(json.dumps({"remove_worker": worker_id}))
        return self.tree.remove_worker(worker_id)

    def clear_all_blocks(self, worker_id: Any) -> Any:
        self._operation(json.dumps({"clear_all_blocks": worker_id}))
        return self.tree.clear_all_blocks(worker_id)

    def _remove_worker_dp_rank(self, worker_id: Any, dp_rank: Any) -> Any:
        self._operation(json.dumps({"remove_worker_dp_rank": [worker_id, dp_rank]}))
        return self.tree.remove_worker_dp_rank(worker_id, dp_rank)

    def _operation(self, line: str) -> None:
        self.lines.append(line)
        self._asked.clear()

    def find_matches(self, sequence: Any, early_exit: bool = False) -> Any:
        try:
            line = json.dumps({"find_matches": list(sequence)})
            if line not in self._asked:  # the same query again before any change tells nothing new
                self._asked.add(line)
                self.lines.append(line)
        except TypeError:
            self.lines.append(f"# unloggable query {sequence!r}")
        return self.tree.find_matches(sequence, early_exit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tree, name)


class Recording:
    """A factory of ``Recorder`` trees that remembers the last one made (a state machine's final, shrunk run)."""

    def __init__(self, factory: Any) -> None:
        self.factory = factory
        self.last: Recorder | None = None

    def __call__(self) -> Recorder:
        self.last = Recorder(self.factory())
        return self.last

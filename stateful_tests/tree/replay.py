"""Replay a recorded log of router events through the spec's contract and, side by side, two trees.

``replay_log`` takes a parsed log (``tree.log``: RouterEvent JSON lines, as
``dump_tree_as_events`` writes them and a router's KV event recorder stores them, plus
kvproof's ``remove_worker`` / ``clear_all_blocks`` / ``find_matches`` lines) and

- checks the log itself against the contract (``spec/contract.py``): a store under a parent
  the rank does not hold is one the contract says every index must refuse, so a publisher
  that sends it is broken or racing; each such line is reported (not a failure of a tree);
- applies it to a *subject* and an *oracle* (by default the reference under the run's rule
  set) and classifies every difference (``verdicts``), naming the log line of the first;
- shrinks the worst difference to a minimal log of the same kind, ready to be written out
  and replayed again.

Queries are the log's ``find_matches`` lines; a log without any (a real recording) is
queried along every stored chain, rebuilt from the events' parent links, after the event
that stored it and again at the end.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...spec.contract import EMPTY_CONTRACT, ContractState
from ...spec.events import Stored
from ...spec.rules import DEFAULT_RULES, RuleSet
from ..harness import targets
from .conformance import compare_prefix, contract_after, contract_refusal, shrink_kind
from .log import Log, ops_to_lines, read_log
from .streams import EventOp, Op
from .verdicts import Difference, worst

Factory = Callable[[], Any]


@dataclass
class ReplayResult:
    """What a replay found: the differences, the log lines the contract refuses, and the shrunk reproduction."""

    path: str
    subject: str
    oracle: str
    rules: str
    events: int
    queries: int
    differences: list[Difference] = field(default_factory=list)
    refused_lines: list[int] = field(default_factory=list)  # lines storing under a parent the rank does not hold
    failing: Difference | None = None
    line: int | None = None  # the log line of the reported difference
    shrunk: list[Op] = field(default_factory=list)
    shrunk_queries: list[list[int]] = field(default_factory=list)
    op_lines: list[int] = field(default_factory=list)  # the log line of each operation
    shrunk_ok: bool = False  # the shrunk log shows the same kind of difference by itself
    query_lines: dict[tuple[int, tuple[int, ...]], int] = field(default_factory=dict)  # (ops before, query) -> line

    def report(self) -> str:
        lines = [
            f"replay {self.path}: {self.events} operations, {self.queries} queries compared; "
            f"subject={self.subject} oracle={self.oracle} rules={self.rules}"
        ]
        if self.refused_lines:
            shown = ", ".join(map(str, self.refused_lines[:10])) + (" ..." if len(self.refused_lines) > 10 else "")
            lines.append(f"  the log stores under parents the rank does not hold (the contract refuses them) at lines {shown}")
        for d in self.differences:
            verdict = "FAIL" if d is self.failing else "tolerated"
            lines.append(f"  {verdict} [{d.label()}] at line {self.line_of(d)}: {d.detail}")
        if self.failing is not None:
            how = "minimal reproduction" if self.shrunk_ok else "UNSHRUNK reproduction (does not show it by itself)"
            lines.append(f"  {how} ({len(self.shrunk)} operations, kind {self.failing.kind}):")
            lines += [f"    {line}" for line in ops_to_lines(self.shrunk, self.shrunk_queries)]
        if not self.differences:
            lines.append("  no difference")
        return "\n".join(lines)

    def line_of(self, d: Difference) -> str:
        """The log line of a difference: the query's line when a query found it, else the operation's."""
        for (before, query), line in self.query_lines.items():
            at = before == d.op_index + 1 or (before == 0 and d.op_index >= len(self.op_lines))
            if at and f"find_matches({list(query)}" in d.detail:
                return str(line)
        return str(self.op_lines[d.op_index]) if d.op_index < len(self.op_lines) else "end"


def query_line_map(log: Log) -> dict[tuple[int, tuple[int, ...]], int]:
    """Each of the log's own queries, by (operations before it, query), to its line."""
    return {(before, tuple(q)): line for (before, q), line in zip(log.queries, log.query_lines)}


def chain_queries(ops: list[Op]) -> tuple[list[list[list[int]]], list[list[int]]]:
    """Queries for a log without any: each stored chain's path of local hashes, after its event and at the end.

    Paths are rebuilt from parent links: a block's path is its parent's path and its own
    local hash (a parent never seen starts a path of its own).
    """
    path_of: dict[int, tuple[int, ...]] = {}
    after: list[list[list[int]]] = []
    ends: dict[tuple[int, ...], None] = {}
    for op in ops:
        here: list[list[int]] = []
        if isinstance(op, EventOp) and isinstance(op.event.data, Stored) and op.event.data.blocks:
            data = op.event.data
            path = path_of.get(data.parent_hash, ()) if data.parent_hash is not None else ()
            for block in data.blocks:
                path = path + (block.local,)
                path_of.setdefault(block.ext, path)
            here.append(list(path))
            ends[path] = None
        after.append(here)
    return after, [list(p) for p in ends]


def log_queries(log: Log) -> tuple[list[list[list[int]]], list[list[int]]]:
    """The log's own queries, placed after the operation before each (those before any operation are asked at the end)."""
    after: list[list[list[int]]] = [[] for _ in log.ops]
    final: list[list[int]] = []
    for before, query in log.queries:
        (after[before - 1] if before > 0 else final).append(query)
    return after, final


def queries_of(log: Log) -> tuple[list[list[list[int]]], list[list[int]]]:
    """The queries a replay asks: the log's own (``log_queries``), or, when it has none, its chains'."""
    return log_queries(log) if log.queries else chain_queries(log.ops)


def refused_by_contract(log: Log, rules: RuleSet = DEFAULT_RULES) -> list[int]:
    """The log lines that store under a parent the storing rank does not hold (must be refused by every index)."""
    state: ContractState = EMPTY_CONTRACT
    refused = []
    for op, line in zip(log.ops, log.op_lines):
        # An index that takes every event the contract allows: the refused stores change nothing.
        refused_here = bool(contract_refusal(state, op, targets.OK))
        if refused_here:
            refused.append(line)
        state = contract_after(state, op, "refused" if refused_here else targets.OK, rules)
    return refused


def replay_log(
    log: Log,
    subject: Factory,
    oracle: Factory,
    subject_name: str = "subject",
    oracle_name: str = "oracle",
    rules: RuleSet = DEFAULT_RULES,
    path: str = "<log>",
    strict: bool = False,
    strict_shape: bool = False,
    shrink_failures: bool = True,
) -> ReplayResult:
    """Replay ``log`` through ``subject`` and ``oracle``; classify, locate and shrink what differs."""
    after, final = queries_of(log)
    differences, compared = compare_prefix(subject, oracle, log.ops, after, final)
    result = ReplayResult(
        path,
        subject_name,
        oracle_name,
        rules.name,
        len(log.ops),
        compared,
        differences,
        refused_by_contract(log, rules),
        op_lines=log.op_lines,
        query_lines=query_line_map(log),
    )
    chosen = worst(differences, strict, strict_shape)
    if chosen is None:
        return result
    result.failing = chosen
    where = result.line_of(chosen)
    result.line = int(where) if where.isdigit() else None
    upto = log.ops[: chosen.op_index + 1]
    asked = [q for qs in after[: len(upto)] for q in qs] + (final if chosen.op_index >= len(log.ops) - 1 else [])
    queries = [list(q) for q in {tuple(q): None for q in asked}]
    if shrink_failures:
        result.shrunk, result.shrunk_queries, result.shrunk_ok = shrink_kind(subject, oracle, upto, queries, chosen)
    else:
        result.shrunk, result.shrunk_queries = upto, queries
    return result


def replay_file(
    path: Path | str,
    subject: str = "reference",
    oracle: str = "reference",
    rules: str | None = None,
    strict: bool = False,
    strict_shape: bool = False,
) -> ReplayResult:
    """Replay a log file with targets given by name (what the written regression tests call)."""
    path = Path(path)
    rule_set, _ = targets.resolve_rules(subject, oracle, override=rules)
    s, o = targets.load_target(subject, rule_set), targets.load_target(oracle, rule_set)
    for t in (s, o):
        if t.factory is None:
            raise RuntimeError(t.reason)
    assert s.factory is not None and o.factory is not None
    return replay_log(read_log(path), s.factory, o.factory, subject, oracle, rule_set, str(path), strict, strict_shape)


@dataclass
class LogReplayReport:
    """``kvproof replay log``: a log's replay through the contract and two trees, or the finding of a target whose
    process failed on it; and where the shrunk log was written."""

    kind = "replay"
    log_file: str
    subject: str
    oracle: str
    rules: str
    events: int
    result: ReplayResult | None = None
    crash: Any = None  # target_failures.Finding: the subject's (or the oracle's) process crashed, ran out of memory or hung
    wrote: list[str] = field(default_factory=list)  # what was said about the shrunk log written next to LOG_FILE

    @property
    def ok(self) -> bool:
        return self.crash is None and self.result is not None and self.result.failing is None

    @property
    def skipped(self) -> str:
        return ""

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        if self.crash is not None:
            say(self.crash.report())
            say(f"  replay: {self.crash.replay}")
            return
        assert self.result is not None
        say(self.result.report())
        for line in self.wrote:
            say(line)

    def summary_line(self) -> str:
        if self.crash is not None or self.result is None:
            return f"replay: events={self.events} failing=1 (the target's process: {self.crash.failure.kind})"
        r = self.result
        return f"replay: events={r.events} queries={r.queries} differences={len(r.differences)} failing={0 if self.ok else 1}"

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"log": self.log_file, "subject": self.subject, "oracle": self.oracle, "rules": self.rules}
        if self.result is None:
            return body | {"events": self.events, "failing": "target process", "crash": self.crash.replay}
        r = self.result
        return body | {
            "events": r.events,
            "queries": r.queries,
            "refused_lines": r.refused_lines,
            "differences": [{"kind": d.kind, "known": d.known, "line": r.line_of(d), "detail": d.detail} for d in r.differences],
            "failing": r.failing.kind if r.failing else None,
            "shrunk": ops_to_lines(r.shrunk, r.shrunk_queries),
        }


def run_replay_log(
    log_file: str,
    subject: targets.Target,
    oracle: targets.Target,
    subject_given: bool,
    rules: str | None,
    strict: bool,
    strict_shape: bool,
    out_path: str | None,
    say: Callable[[str], None],
    warn: Callable[[str], None],
) -> LogReplayReport:
    """Replay the log at ``log_file`` through ``subject`` and ``oracle`` (``kvproof replay log``): refuse what cannot
    run (a bad line, a tree against itself, a call a tree lacks: ``CampaignInputError``), shrink the worst difference
    and write it next to the log (or to ``out_path``) with the command that replays it."""
    from ..harness.errors import CampaignInputError
    from ..harness.isolation import TargetFailure
    from .conformance import with_rules
    from .log import LogError, judging_options
    from .streams import RemoveWorkerDpRankOp
    from .target_failures import finding

    if not Path(log_file).is_file():
        raise CampaignInputError(f"{log_file!r} is not a file", param="LOG_FILE")
    if subject.name == oracle.name and subject_given:
        raise CampaignInputError(f"the subject and the oracle are both {subject.name!r}", param="--oracle")
    rule_set, note = targets.resolve_rules(subject.name, oracle.name, override=rules)
    subject_t, oracle_t = with_rules(subject, rule_set), with_rules(oracle, rule_set)
    try:
        log = read_log(Path(log_file))
    except LogError as exc:
        raise CampaignInputError(f"replay: {exc}") from None
    say(f"replay: {note}")
    if any(isinstance(op, RemoveWorkerDpRankOp) for op in log.ops):
        lacking = [t.name for t in (subject_t, oracle_t) if not targets.capabilities(t.factory).rank_removal]  # type: ignore[arg-type]
        if lacking:
            raise CampaignInputError(f"replay: the log calls remove_worker_dp_rank, which {', '.join(lacking)} does not have")
    report = LogReplayReport(log_file, subject.name, oracle.name, rule_set.name, len(log.ops))
    try:
        report.result = replay_log(
            log,
            subject_t.factory,  # type: ignore[arg-type]
            oracle_t.factory,  # type: ignore[arg-type]
            subject.name,
            oracle.name,
            rule_set,
            log_file,
            strict,
            strict_shape,
        )
    except TargetFailure as failure:
        failed = subject_t if failure.target == subject.name else oracle_t
        assert failed.factory is not None
        report.crash = finding(failed.name, failed.factory, failure)
        return report
    result = report.result
    if result.failing is not None:
        written = Path(out_path) if out_path else Path(log_file).with_suffix(".min.jsonl")
        try:
            written.write_text("".join(line + "\n" for line in ops_to_lines(result.shrunk, result.shrunk_queries)))
        except OSError as exc:
            warn(f"replay: cannot write the shrunk log to {written}: {exc}")
        else:
            extra = judging_options(rules, strict, strict_shape)
            report.wrote.append(
                f"wrote {written}\n  replay: kvproof replay log {written} --target {shlex.quote(subject.name)} "
                f"--oracle {oracle.name}{extra}"
            )
    return report

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
        lines = [f"replay {self.path}: {self.events} operations, {self.queries} queries compared; "
                 f"subject={self.subject} oracle={self.oracle} rules={self.rules}"]
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


def replay_log(log: Log, subject: Factory, oracle: Factory, subject_name: str = "subject", oracle_name: str = "oracle",
               rules: RuleSet = DEFAULT_RULES, path: str = "<log>", strict: bool = False, strict_shape: bool = False,
               shrink_failures: bool = True) -> ReplayResult:
    """Replay ``log`` through ``subject`` and ``oracle``; classify, locate and shrink what differs."""
    after, final = queries_of(log)
    differences, compared = compare_prefix(subject, oracle, log.ops, after, final)
    result = ReplayResult(path, subject_name, oracle_name, rules.name, len(log.ops), compared, differences,
                          refused_by_contract(log, rules), op_lines=log.op_lines, query_lines=query_line_map(log))
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


def replay_file(path: Path | str, subject: str = "reference", oracle: str = "reference", rules: str | None = None,
                strict: bool = False, strict_shape: bool = False) -> ReplayResult:
    """Replay a log file with targets given by name (what the written regression tests call)."""
    path = Path(path)
    rule_set, _ = targets.resolve_rules(subject, oracle, override=rules)
    s, o = targets.load_target(subject, rule_set), targets.load_target(oracle, rule_set)
    for t in (s, o):
        if t.factory is None:
            raise RuntimeError(t.reason)
    assert s.factory is not None and o.factory is not None
    return replay_log(read_log(path), s.factory, o.factory, subject, oracle, rule_set, str(path), strict, strict_shape)

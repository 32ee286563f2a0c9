"""Differential conformance: two trees, one stream, every outcome and every query compared.

``run_stream`` applies a stream to a fresh *subject* and a fresh *oracle* (the real
``dynamo._core.RadixTree``, or kvproof's reference under a release's rule set) and compares,
after every operation, the outcome (accepted, or which error) and the ``find_matches``
scores of every query the stream lists, with and without ``early_exit``; at the end of the
stream it compares the two dumps as multisets. The subject is also held to the contract
(``spec/contract.py``) on its own outcomes. Every difference gets a kind
(``verdicts.KINDS``: contract, outcome, score, dump, early-exit) and, where a finding of
``docs/dynamo-findings.md`` explains it, that finding's id (F2: the unreplayable dump).

A stream *fails* when it shows a difference that is not early-exit (unless
``strict_shape``) and not known (unless ``strict``). Its worst failing difference, or when
none fails its worst tolerated one, is shrunk by ``shrink`` to a minimal list of operations
that still shows a difference **of the same kind** (dropping chunks, single operations,
hashes of removals and blocks at the ends of stores), and ``ConformMismatch.report`` prints it as
Dynamo events with the command that replays it (``kvproof replay log``) and the command that
regenerates the stream. ``kvproof conform tree`` is the command-line front end.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

from ...spec.contract import (
    EMPTY_CONTRACT,
    ContractState,
    Verdict,
    holdings,
    longest_prefix_in,
    on_event,
    on_remove_worker,
    on_remove_worker_dp_rank,
    on_stored,
    remove_verdict,
    store_verdict,
)
from ...spec.events import Removed, Stored
from ...spec.match import early_exit_agrees
from ...spec.primitives import Rank
from ...spec.rules import DEFAULT_RULES, RULE_SETS, RuleSet
from ..harness import lockstep, targets
from ..harness.paths import ext as path_ext
from ..harness.shards import WHOLE, Shard, run_parts
from ..harness.surface import LeftOut, lacks
from ..harness.targets import DumpEntry, dump_entries
from .log import file_safe, judging_options, ops_to_lines
from .streams import (
    DEFAULT_PROFILE,
    Answers,
    DumpOp,
    EventOp,
    Op,
    RemoveWorkerDpRankOp,
    Stream,
    StreamProfile,
    apply_op_and_read,
    describe,
    generate,
    not_carried,
)
from .verdicts import (
    CONTRACT,
    EARLY_EXIT,
    ORACLE_CONTRACT,
    OUTCOME,
    SCORE,
    Difference,
    KindCounts,
    dump_difference,
    label,
    severity,
    worst,
)

Factory = Callable[[], Any]


@dataclass
class ConformMismatch:
    """One stream's reported difference (its worst), with its reproduction shrunk to the same kind."""

    seed: int
    stream: int
    op_index: int
    detail: str
    ops: list[Op]
    queries: list[list[int]]
    shrunk: list[Op] = field(default_factory=list)
    options: str = ""  # the stream profile's non-default options, so the replay regenerates the same stream
    kind: str = SCORE
    known: str | None = None
    is_shrunk: bool = False
    shrink_tried: bool = False  # False: beyond the run's (or shard's) shrink quota, so `shrunk` is the stream as it ran
    kinds: list[str] = field(default_factory=list)  # every kind the stream showed
    fails: bool = True
    query_list: list[list[int]] = field(default_factory=list)  # the queries the shrunk reproduction is judged by
    oracle_only: bool = False  # the known finding is the oracle's, not the subject's

    def replay_command(self, subject: str, oracle: str) -> str:
        """The command that regenerates this stream and compares it again."""
        return f"kvproof conform tree --target {shlex.quote(subject)} --oracle {oracle} --seed {self.seed} --stream {self.stream}{self.options}"

    def file_stem(self, oracle: str, subject: str = "") -> str:
        """A file name for this stream's files (``log.file_safe``)."""
        return file_safe(f"conform-{subject + '-vs-' if subject else ''}{oracle}-seed{self.seed}-stream{self.stream}")

    def label(self) -> str:
        return label(self.kind, self.known, self.oracle_only)

    def _reproduction_heading(self) -> str:
        """The line above the events: shrunk, tried and not reproduced alone, or beyond the run's shrink quota."""
        n = len(self.shrunk)
        if self.is_shrunk:
            return f"  minimal reproduction ({n} operations, shrunk keeping the kind {self.kind}), as Dynamo events:"
        if self.shrink_tried:
            return (
                f"  reproduction, UNSHRUNK ({n} operations: it did not show the difference again by itself; "
                f"regenerate the stream to see it), as Dynamo events:"
            )
        return (
            f"  reproduction, UNSHRUNK ({n} operations: a run, or a shard, shrinks its first failing streams and its "
            f"first tolerated one; the command below shrinks this stream), as Dynamo events:"
        )

    def report(self, subject: str, oracle: str, log_path: str | None = None, extra: str = "") -> str:
        """The printed report; ``extra`` (e.g. `` --rules dynamo-1.4``) is appended to both commands."""
        verdict = "MISMATCH" if self.fails else "TOLERATED"
        lines = [
            f"{verdict} [{self.label()}] {subject} vs {oracle}: seed={self.seed} stream={self.stream} op={self.op_index}"
            + (f" (the stream also shows: {', '.join(k for k in self.kinds if k != self.kind)})" if len(self.kinds) > 1 else ""),
            f"  {self.detail}",
            self._reproduction_heading(),
        ]
        lines += [f"    {line}" for line in ops_to_lines(self.shrunk, self.query_list)]
        if log_path:
            lines.append(
                f"  replay the events: kvproof replay log {log_path} --target {shlex.quote(subject)} --oracle {oracle}{extra}"
            )
        lines.append(f"  regenerate the stream: {self.replay_command(subject, oracle)}{extra}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "seed": self.seed,
            "stream": self.stream,
            "op_index": self.op_index,
            "kind": self.kind,
            "known": self.known,
            "fails": self.fails,
            "kinds": self.kinds,
            "shrunk_ok": self.is_shrunk,
            "shrink_tried": self.shrink_tried,
            "detail": self.detail,
            "shrunk": ops_to_lines(self.shrunk),
            "queries": self.query_list,
        }


@dataclass
class StreamResult:
    events: int
    queries: int
    differences: list[Difference] = field(default_factory=list)
    mismatch: ConformMismatch | None = None
    left_out: LeftOut = field(default_factory=LeftOut)


def compare_prefix(
    subject: Factory,
    oracle: Factory,
    ops: list[Op],
    queries: list[list[list[int]]] | None,
    final_queries: list[list[int]],
    left_out: LeftOut | None = None,
) -> tuple[list[Difference], int]:
    """Replay ``ops`` on both trees; return ``(differences, queries compared)``.

    ``queries[i]`` are compared after op ``i`` (None: none); ``final_queries`` after the last.
    What a tree's surface cannot carry is asked of neither and counted in ``left_out``.
    """
    a, b = subject(), oracle()
    try:
        return _compare(a, b, ops, queries, final_queries, left_out if left_out is not None else LeftOut())
    finally:
        targets.dispose(a)
        targets.dispose(b)


def _compare(
    a: Any, b: Any, ops: list[Op], queries: list[list[list[int]]] | None, final_queries: list[list[int]], left_out: LeftOut
):
    """Return ``(differences, queries compared)``: the first difference of each kind (``verdicts``).

    Alongside the two trees each is held to the contract (``spec/contract.py``), fed with its
    own outcomes: a difference where the subject breaks it is a ``contract`` difference whatever
    the oracle says; a score difference where only the *oracle's* answer breaks it is an
    ``oracle-contract`` difference. Under a rule set that is not exact, a difference the
    contract allows (an outcome it leaves open, scores and dumps both within it) is known
    finding F11 and comparison goes on. Comparison stops at the first difference that makes the
    states diverge (contract, oracle-contract, outcome, score).

    An operation either tree's surface cannot carry (``streams.not_carried``) is applied to
    neither; ``early_exit`` is compared only where both trees have it.
    """
    found: dict[str, Difference] = {}
    compared = 0
    state: ContractState = EMPTY_CONTRACT  # the contract fed with the subject's outcomes (judges the subject)
    theirs_state: ContractState = EMPTY_CONTRACT  # fed with the oracle's (judges the oracle)
    # What a cleared event means follows the subject's own rule set when it states one (a reference
    # under a rule set), else the oracle's (the reference judging a release under its rules).
    stated = getattr(a, "rules", None) or getattr(b, "rules", None)
    rules = stated if isinstance(stated, RuleSet) else DEFAULT_RULES
    no_early_exit = lacks(a, "early_exit") or lacks(b, "early_exit")
    # A tree whose rule set is not exact (Dynamo's concurrent tree) may differ where the contract leaves the answer open.
    open_zone = any(isinstance(r, RuleSet) and not r.exact for r in (getattr(a, "rules", None), getattr(b, "rules", None)))

    def note(d: Difference) -> None:
        kept = found.get(d.kind)
        if kept is None or (kept.known is not None and d.known is None):  # a failing difference outranks a known one
            found[d.kind] = d

    def answers(tree: Any, asked: list[list[int]], early_exit: bool, read: Answers | None) -> list[Any]:
        """The tree's scores of ``asked``: those read with its op (``read``; an error raised as asking would), else
        asked now, in one batch (queries change no state a tree reports)."""
        if read is None:
            return targets.scores_many(tree, asked, early_exit)
        for answer in read:
            if isinstance(answer, BaseException):
                raise answer
        return read

    def compare_queries(index: int, qs: Iterable[list[int]], where: str, read: tuple[Any, ...] = (None,) * 4) -> bool:
        nonlocal compared
        asked = list(qs)
        a_full, a_early, b_full, b_early = read
        early = (
            ([], [])
            if no_early_exit is not None or not asked
            else (answers(a, asked, True, a_early), answers(b, asked, True, b_early))
        )
        for j, (q, got_s, want_s) in enumerate(zip(asked, answers(a, asked, False, a_full), answers(b, asked, False, b_full))):
            compared += 1
            broken = contract_score_problems(state, q, got_s, names)
            if broken:
                note(Difference(CONTRACT, index, f"{where}: find_matches({q}) = {got_s}: {broken}"))
                return True
            if got_s != want_s:
                theirs = contract_score_problems(theirs_state, q, want_s, names)
                detail = f"{where}: find_matches({q}, early_exit=False) = {got_s}, oracle {want_s}"
                if theirs:
                    note(
                        Difference(
                            ORACLE_CONTRACT,
                            index,
                            f"{where}: the oracle's find_matches({q}) = {want_s}: {theirs} "
                            f"(the subject's {got_s} keeps the contract)",
                        )
                    )
                elif open_zone:
                    note(Difference(SCORE, index, f"{detail} (both within the contract)", OPEN_ZONE))
                    continue
                else:
                    note(Difference(SCORE, index, detail))
                return True
            if no_early_exit is not None:
                left_out.add("early_exit", no_early_exit)
                continue
            compared += 1
            got_e, want_e = early[0][j], early[1][j]
            if not early_exit_agrees(got_s, got_e):
                note(
                    Difference(
                        CONTRACT,
                        index,
                        f"{where}: find_matches({q}, early_exit=True) = {got_e} breaks the "
                        f"early-exit law against the full walk's {got_s} "
                        "(spec.match.early_exit_agrees)",
                    )
                )
                return True
            if got_e != want_e:
                # F7: both answers obey the early-exit law; they differ only by where the trees cut edges.
                note(
                    Difference(EARLY_EXIT, index, f"{where}: find_matches({q}, early_exit=True) = {got_e}, oracle {want_e}", "F7")
                )
        return False

    names = ChainNames()
    for i, op in enumerate(ops):
        gap = not_carried(a, op) or not_carried(b, op)
        read: tuple[Any, ...] = (None,) * 4
        if gap is not None:
            left_out.add(gap.part, gap.why)
        else:
            asked = list(queries[i]) if queries else []
            got, a_full, a_early = apply_op_and_read(a, op, asked, no_early_exit is None)
            want, b_full, b_early = apply_op_and_read(b, op, asked, no_early_exit is None)
            read = (a_full, a_early, b_full, b_early)
            if targets.UNOBSERVED in (got, want):  # a surface that reports no outcome: both take the one that is known
                left_out.add("outcomes", lacks(a, "outcomes") or lacks(b, "outcomes") or "")
                known = want if got == targets.UNOBSERVED else got
                got = want = targets.OK if known == targets.UNOBSERVED else known
            broken = contract_refusal(state, op, got)
            if broken:
                note(Difference(CONTRACT, i, f"op {i} {describe(op)}: outcome {got}, oracle {want}: {broken}"))
                return list(found.values()), compared
            names.learn(op, got)
            left_open = open_zone and contract_leaves_open(state, op)
            state = contract_after(state, op, got, rules)
            theirs_state = contract_after(theirs_state, op, want, rules)
            if got != want:
                detail = f"op {i} {describe(op)}: outcome {got} != oracle {want}"
                if not left_open:
                    note(Difference(OUTCOME, i, detail))
                    return list(found.values()), compared
                note(Difference(OUTCOME, i, f"{detail} (the contract allows either)", OPEN_ZONE))
        if compare_queries(i, queries[i] if queries else (), f"after op {i} {describe(op)}", read):
            return list(found.values()), compared
    if compare_queries(len(ops), final_queries, "at end"):
        return list(found.values()), compared
    if targets.has_dump(a) and targets.has_dump(b):
        mine = dump_entries(a)
        d = dump_difference(len(ops), mine, dump_entries(b))
        if d is not None and d.known is None and open_zone and not dump_contract_problems(state, mine):
            d = dataclasses.replace(d, detail=f"{d.detail} (the subject's dump credits only held blocks)", known=OPEN_ZONE)
        if d is not None:
            note(d)
    return list(found.values()), compared


OPEN_ZONE = "F11"
"""The known finding a difference in the contract's open zone is labelled with, under a rule set that is not exact
(``spec.rules``; docs/dynamo-findings.md F11)."""


def contract_leaves_open(state: ContractState, op: Op) -> bool:
    """Whether the contract lets a tree accept or refuse ``op`` (a store under a held but unreachable parent,
    a removal naming a block the rank cannot reach)."""
    if not isinstance(op, EventOp):
        return False
    rank = Rank(op.worker_id, op.event.dp_rank)
    if isinstance(op.event.data, Stored):
        return store_verdict(state, rank, op.event.data) is Verdict.MAY_REJECT
    if isinstance(op.event.data, Removed):
        return remove_verdict(state, rank, op.event.data) is Verdict.MAY_REJECT
    return False


def dump_contract_problems(state: ContractState, entries: list[DumpEntry]) -> list[str]:
    """The dump entries that credit a rank with a block it does not hold (the contract's bound on a dump)."""
    return [f"{entry}" for entry in entries if not set(entry[3]) <= holdings(state, Rank(entry[0], entry[1])).held.keys()]


def _rank_of(op: Op) -> Rank | None:
    return Rank(op.worker_id, op.event.dp_rank) if isinstance(op, EventOp) else None


def contract_refusal(state: ContractState, op: Op, got: str) -> str:
    """Why the subject's outcome of ``op`` breaks the contract (empty: it does not)."""
    if isinstance(op, EventOp) and isinstance(op.event.data, Stored) and got == targets.OK:
        rank = _rank_of(op)
        assert rank is not None
        if store_verdict(state, rank, op.event.data) is Verdict.MUST_REJECT:
            return f"accepted a store under parent {op.event.data.parent_hash}, which {tuple(rank)} does not hold"
    return ""


def contract_after(state: ContractState, op: Op, got: str, rules: RuleSet = DEFAULT_RULES) -> ContractState:
    """The contract state after the subject answered ``got`` to ``op``, under ``rules`` (``spec.contract.on_event``)."""
    if isinstance(op, EventOp):
        rank = _rank_of(op)
        assert rank is not None
        if isinstance(op.event.data, Stored):
            return on_stored(state, rank, op.event.data, got == targets.OK)
        return on_event(state, rank, op.event.data, True, rules)
    if isinstance(op, RemoveWorkerDpRankOp):
        return on_remove_worker_dp_rank(state, Rank(op.worker_id, op.dp_rank)) if got == targets.OK else state
    if got != targets.OK or isinstance(op, DumpOp):
        return state
    return on_remove_worker(state, op.worker_id)  # remove_worker and clear_all_blocks drop what every rank holds


class ChainNames:
    """The external hash of each local-hash path a stream stored, learned from its stores.

    The contract's state names blocks by external hash; a query names them by local hashes. Generated
    streams derive each external hash from its path (``harness.paths.ext``); a log from elsewhere (a
    router's recorder, a vector, a crash report) names them as it likes, so the comparison learns each
    path's hash from the stores that named it, and falls back to the derived hash for a path no store named.
    """

    def __init__(self) -> None:
        self.path_of: dict[int, tuple[int, ...]] = {}
        self.ext_of: dict[tuple[int, ...], int] = {}
        self._chains: dict[tuple[int, ...], tuple[int, ...]] = {}  # a query's chain, until a store names a new path

    def learn(self, op: Op, outcome: str) -> None:
        """Learn the paths of a store the subject accepted (a refused one names nothing); a hash already named at
        another path (out of contract) ends the learning of that store."""
        if outcome != targets.OK or not (isinstance(op, EventOp) and isinstance(op.event.data, Stored)):
            return
        stored = op.event.data
        path = () if stored.parent_hash is None else self.path_of.get(stored.parent_hash)
        if path is None:
            return  # under a parent no store named: no path to learn
        for block in stored.blocks:
            path = path + (block.local,)
            if self.path_of.setdefault(block.ext, path) != path:
                return
            if path not in self.ext_of:
                self.ext_of[path] = block.ext
                self._chains.clear()  # a chain through this path may name it otherwise now

    def chain(self, query: list[int]) -> tuple[int, ...]:
        """The external hash of each prefix of ``query`` (the same query is asked after many ops: its chain is kept
        until a store names a path no store named before)."""
        key = tuple(query)
        known = self._chains.get(key)
        if known is None:
            known = self._chains[key] = self._chain(key)
        return known

    def _chain(self, query: tuple[int, ...]) -> tuple[int, ...]:
        names: list[int] = []
        prefix: tuple[int, ...] = ()
        for local in query:
            prefix += (local,)
            names.append(self.ext_of[prefix] if prefix in self.ext_of else path_ext(prefix))
        return tuple(names)


def contract_score_problems(
    state: ContractState, query: list[int], scores: dict[tuple[int, int], int], names: ChainNames | None = None
) -> str:
    """Why plain ``scores`` along ``query`` break the contract: an over-credit or an unexplained undercount."""
    problems = []
    chain = (names or ChainNames()).chain(query)
    for rank in set(scores) | set(state):
        got = scores.get(rank, 0)
        h = holdings(state, Rank(*rank))
        held, reachable = longest_prefix_in(chain, h.held), longest_prefix_in(chain, h.reachable)
        if got > held:
            problems.append(f"over-credits {tuple(rank)}: score {got}, but it holds only {held} blocks of the query")
        elif got < reachable:
            problems.append(f"unexplained undercount of {tuple(rank)}: score {got}, reachable {reachable}")
    return "; ".join(sorted(problems))


def run_stream(
    subject: Factory,
    oracle: Factory,
    stream: Stream,
    shrink_failures: bool = True,
    strict: bool = False,
    strict_shape: bool = False,
    shrink_tolerated: bool | None = None,
    shrink_seconds: float | None = None,
) -> StreamResult:
    """Compare ``subject`` with ``oracle`` on one stream; shrink its worst difference.

    A failing difference is shrunk when ``shrink_failures``, a tolerated one when
    ``shrink_tolerated`` (default: the same as ``shrink_failures``).
    """
    left_out = LeftOut()
    differences, compared = compare_prefix(subject, oracle, stream.ops, stream.queries, [], left_out)
    result = StreamResult(events=len(stream.ops), queries=compared, differences=differences, left_out=left_out)
    if not differences:
        return result
    failing = worst(differences, strict, strict_shape)
    chosen = failing or min(differences, key=lambda d: (d.known is None, d.op_index))
    # The state the difference was seen in: the operations up to it, and the queries asked until then.
    upto = stream.ops[: chosen.op_index + 1]
    seen = stream.queries[: chosen.op_index + 1]
    all_queries = [list(q) for q in {tuple(q): None for qs in seen for q in qs}]
    index = min(chosen.op_index, len(stream.ops) - 1)
    failing_queries = stream.queries[index] if chosen.op_index < len(stream.ops) else []
    mismatch = ConformMismatch(
        stream.seed,
        stream.index,
        chosen.op_index,
        chosen.detail,
        upto,
        failing_queries,
        kind=chosen.kind,
        known=chosen.known,
        kinds=[d.kind for d in differences],
        oracle_only=chosen.oracle_only,
        fails=failing is not None,
        query_list=all_queries,
    )
    wanted = shrink_failures if failing is not None else (shrink_failures if shrink_tolerated is None else shrink_tolerated)
    if wanted:
        mismatch.shrunk, mismatch.query_list, mismatch.is_shrunk = shrink_kind(
            subject, oracle, upto, all_queries, chosen, seconds=shrink_seconds
        )
        mismatch.shrink_tried = True
    else:
        mismatch.shrunk = upto
    result.mismatch = mismatch
    return result


def _same_kind(found: list[Difference], target: Difference) -> bool:
    """``found`` shows ``target``'s kind (and label), and nothing more severe (a shrink never lets one in)."""
    same = any(d.kind == target.kind and d.known == target.known and d.oracle_only == target.oracle_only for d in found)
    return same and not any(severity(d.kind) < severity(target.kind) for d in found)


def _differs(
    subject: Factory, oracle: Factory, ops: list[Op], queries: list[list[int]], target: Difference | None = None
) -> bool:
    found, _ = compare_prefix(subject, oracle, ops, None, queries)
    return _same_kind(found, target) if target is not None else bool(found)


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
        yield dataclasses.replace(op, event=dataclasses.replace(op.event, data=Stored(data.blocks[0].ext, data.blocks[1:])))


def shrink(
    subject: Factory,
    oracle: Factory,
    ops: list[Op],
    queries: list[list[int]],
    budget: int = 4000,
    target: Difference | None = None,
    seconds: float | None = None,
) -> list[Op]:
    """Greedily reduce ``ops`` to a short list on which the two trees still differ.

    With ``target``, every candidate must still show a difference of ``target``'s kind (and
    known label): an outcome mismatch never shrinks into an early-exit one. Differences
    are looked for in outcomes, in ``queries`` at the end, and in the dumps.
    """
    queries = [list(q) for q in {tuple(q): None for q in queries}]
    if not _differs(subject, oracle, ops, queries, target):
        return ops
    calls = 0
    deadline = None if seconds is None else time.monotonic() + seconds

    def still_differs(candidate: list[Op]) -> bool:
        nonlocal calls
        calls += 1
        if deadline is not None and time.monotonic() > deadline:
            calls = budget  # out of time: what is left is the reproduction as far as it got
            return False
        return _differs(subject, oracle, candidate, queries, target)

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


def shrink_kind(
    subject: Factory,
    oracle: Factory,
    ops: list[Op],
    queries: list[list[int]],
    target: Difference,
    budget: int = 4000,
    seconds: float | None = None,
) -> tuple[list[Op], list[list[int]], bool]:
    """Shrink ``ops`` keeping ``target``'s kind, then keep only the queries that still show it.

    Returns ``(operations, queries, reproduces)``: when ``reproduces``, replaying the
    operations and asking the queries at the end shows a difference of the same kind
    (``kvproof replay log`` does exactly that). When the difference cannot be shown that way
    (it needed a query asked mid-stream whose answer later changed), the operations come
    back unshrunk and ``reproduces`` is False: the report says so.
    """
    if _differs(subject, oracle, ops, [], target):
        queries = []  # the operations alone show it (an outcome, the contract, the dump): no query can mask it
    elif not _differs(subject, oracle, ops, queries, target):
        return ops, queries, False
    small = shrink(subject, oracle, ops, queries, budget, target, seconds)
    if _differs(subject, oracle, small, [], target):
        return small, [], True  # the operations alone show it (an outcome, the contract, the dump)
    deadline = None if seconds is None else time.monotonic() + seconds
    needed = next(
        (
            q
            for q in queries
            if (deadline is None or time.monotonic() < deadline) and _differs(subject, oracle, small, [q], target)
        ),
        None,
    )
    return small, [needed] if needed is not None else queries, True


@dataclass
class TreeConformReport:
    subject: str
    oracle: str
    seed: int
    streams: int
    events: int = 0
    queries: int = 0
    mismatches: list[ConformMismatch] = field(default_factory=list)  # the failing streams
    tolerated: list[ConformMismatch] = field(default_factory=list)  # streams whose differences are all tolerated
    kinds: KindCounts = field(default_factory=KindCounts)
    seconds: float = 0.0
    rules: str = ""
    strict: bool = False
    strict_shape: bool = False
    shard: str = "1/1"  # the part of the run this report covers (harness.shards)
    stream_indices: list[int] = field(default_factory=list)  # the streams compared, in order
    left_out: LeftOut = field(default_factory=LeftOut)  # calls a tree's surface cannot carry, asked of neither

    def options(self) -> str:
        """The command-line options that judge a replay the same way (``--rules``, ``--strict``, ``--strict-shape``)."""
        return judging_options(self.rules if self.rules in RULE_SETS else None, self.strict, self.strict_shape)

    def summary_line(self) -> str:
        return (
            f"conform: streams={self.streams} events={self.events} queries={self.queries} "
            f"mismatches={len(self.mismatches)} tolerated={len(self.tolerated)} ({self.kinds.line()})"
            + ("" if self.shard == "1/1" else f" shard={self.shard}")
        )

    @classmethod
    def merge(cls, parts: list[TreeConformReport], shard: str = "1/1") -> TreeConformReport:
        """The report of the union of ``parts`` (disjoint shards of one run): counts added, failures in stream order.

        Each part shrinks its own first failures, so the merged report may hold more shrunk
        reproductions than an unsharded run; what is compared and counted is the same.
        """
        first = parts[0]
        merged = cls(
            first.subject,
            first.oracle,
            first.seed,
            sum(p.streams for p in parts),
            rules=first.rules,
            strict=first.strict,
            strict_shape=first.strict_shape,
            shard=shard,
        )
        for part in parts:
            merged.events += part.events
            merged.queries += part.queries
            merged.mismatches += part.mismatches
            merged.tolerated += part.tolerated
            merged.stream_indices += part.stream_indices
            merged.left_out.merge(part.left_out)
            for kind, n in part.kinds.counts.items():
                merged.kinds.counts[kind] = merged.kinds.counts.get(kind, 0) + n
            for name, n in part.kinds.known.items():
                merged.kinds.known[name] = merged.kinds.known.get(name, 0) + n
            merged.seconds = max(merged.seconds, part.seconds)
        merged.mismatches.sort(key=lambda m: m.stream)
        merged.tolerated.sort(key=lambda m: m.stream)
        merged.stream_indices.sort()
        return merged

    def to_json(self) -> dict:
        return {
            "subject": self.subject,
            "oracle": self.oracle,
            "rules": self.rules,
            "seed": self.seed,
            "streams": self.streams,
            "events": self.events,
            "queries": self.queries,
            "mismatches": len(self.mismatches),
            "tolerated": len(self.tolerated),
            "kinds": self.kinds.counts,
            "known": self.kinds.known,
            "seconds": round(self.seconds, 3),
            "shard": self.shard,
            "stream_indices": self.stream_indices,
            "left_out": self.left_out.to_json(),
            "failures": [m.to_json() for m in self.mismatches],
            "tolerated_differences": [m.to_json() for m in self.tolerated],
        }


def profile_options(profile: StreamProfile) -> str:
    """The ``kvproof conform tree`` options that regenerate streams of ``profile`` (empty for the default)."""
    options = ""
    if profile.events != DEFAULT_PROFILE.events:
        options += f" --events {profile.events}"
    if profile.rank_removal != DEFAULT_PROFILE.rank_removal:
        options += f" --rank-removal {profile.rank_removal:g}"
    if profile.max_dp_ranks != DEFAULT_PROFILE.max_dp_ranks:
        options += f" --dp-ranks {profile.max_dp_ranks}"
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
    shrunk_tolerated: int = 1,
    on_mismatch: Callable[[ConformMismatch], None] | None = None,
    on_progress: Callable[[int, int, float], None] | None = None,
    strict: bool = False,
    strict_shape: bool = False,
    rules: str = "",
    shard: Shard = WHOLE,
    shrink_seconds: float | None = None,
) -> TreeConformReport:
    """Run the streams of run ``seed`` that ``shard`` owns of ``streams`` (or just ``only_stream``) through both trees.

    The first ``max_reported`` failing streams are shrunk, and so are the first ``shrunk_tolerated``
    tolerated ones (one by default, so a maintainer sees an example of what was tolerated); the
    rest keep their streams as they ran and say so (``ConformMismatch.shrink_tried``). ``on_progress(done,
    total, seconds)`` is called before each stream (a progress display).
    """
    started = time.perf_counter()
    indices = [only_stream] if only_stream is not None else shard.of(streams)
    report = TreeConformReport(
        subject_name,
        oracle_name,
        seed,
        len(indices),
        rules=rules,
        strict=strict,
        strict_shape=strict_shape,
        shard=str(shard),
        stream_indices=list(indices),
    )
    if in_lockstep(subject, oracle):
        results = _lockstep_results(
            subject,
            oracle,
            seed,
            list(indices),
            profile,
            max_reported,
            shrunk_tolerated,
            strict,
            strict_shape,
            shrink_seconds,
            on_progress,
            started,
        )
    else:
        results = None
    for done, index in enumerate(indices, 1):
        if results is not None:
            result = results[done - 1]
        else:
            if on_progress is not None:
                on_progress(done - 1, len(indices), time.perf_counter() - started)
            # Shrink the first max_reported failing streams and the first shrunk_tolerated tolerated ones.
            result = run_stream(
                subject,
                oracle,
                generate(seed, index, profile),
                len(report.mismatches) < max_reported,
                strict,
                strict_shape,
                len(report.tolerated) < shrunk_tolerated,
                shrink_seconds,
            )
        report.events += result.events
        report.queries += result.queries
        report.kinds.add(result.differences)
        report.left_out.merge(result.left_out)
        m = result.mismatch
        if m is None:
            continue
        m.options = profile_options(profile)
        if m.fails:
            report.mismatches.append(m)
            if on_mismatch is not None:
                on_mismatch(m)
        else:
            report.tolerated.append(m)
            if on_mismatch is not None and len(report.tolerated) == 1:
                on_mismatch(m)
    report.seconds = time.perf_counter() - started
    return report


LOCKSTEP_GROUP = 200
"""Streams run at once against a target that pays a fixed delay per round trip (``harness.lockstep``)."""


def in_lockstep(*factories: Factory) -> bool:
    """Whether a tree of any factory pays a fixed delay per round trip (``lockstep = True``), probed on one it makes."""
    wanted = False
    for factory in factories:
        tree = factory()
        try:
            wanted = wanted or bool(getattr(tree, "lockstep", False))
        finally:
            targets.dispose(tree)
    return wanted


def _lockstep_results(
    subject: Factory,
    oracle: Factory,
    seed: int,
    indices: list[int],
    profile: StreamProfile,
    max_reported: int,
    shrunk_tolerated: int,
    strict: bool,
    strict_shape: bool,
    shrink_seconds: float | None,
    on_progress: Callable[[int, int, float], None] | None,
    started: float,
) -> list[StreamResult]:
    """Every stream compared in lockstep groups; then the first failing and tolerated ones compared again, shrunk."""
    results: list[StreamResult] = []
    for first in range(0, len(indices), LOCKSTEP_GROUP):
        if on_progress is not None:
            on_progress(first, len(indices), time.perf_counter() - started)
        group = indices[first : first + LOCKSTEP_GROUP]
        results += lockstep.run_each(
            lambda i: run_stream(subject, oracle, generate(seed, i, profile), False, strict, strict_shape, False), group
        )
    failing = [k for k, r in enumerate(results) if r.mismatch is not None and r.mismatch.fails][:max_reported]
    tolerated = [k for k, r in enumerate(results) if r.mismatch is not None and not r.mismatch.fails][:shrunk_tolerated]
    again = failing + tolerated
    shrunk = lockstep.run_each(
        lambda k: run_stream(
            subject, oracle, generate(seed, indices[k], profile), True, strict, strict_shape, True, shrink_seconds
        ),
        again,
    )
    for k, result in zip(again, shrunk):
        results[k] = result
    return results


@dataclass(frozen=True)
class ConformTask:
    """One conformance run by target names, picklable: ``task(shard)`` runs that shard's streams (``harness.shards``).

    The trees are resolved in the process that runs it (``targets.load_target``, the reference
    under ``rules``), so the task can cross to a pool process or a Ray worker.
    """

    subject: str
    oracle: str
    rules: str
    streams: int
    seed: int
    profile: StreamProfile = DEFAULT_PROFILE
    strict: bool = False
    strict_shape: bool = False

    def __call__(self, shard: Shard) -> TreeConformReport:
        from ...spec.rules import DEFAULT_RULES, rule_set_named
        from ..harness.targets import load_target

        rule_set = rule_set_named(self.rules) if self.rules else DEFAULT_RULES
        made = []
        for name in (self.subject, self.oracle):
            target = load_target(name, rule_set) if name == "reference" else load_target(name)
            if target.factory is None:
                raise RuntimeError(f"{name} is unavailable: {target.reason}")
            made.append(target.factory)
        return conform(
            made[0],
            made[1],
            self.streams,
            self.seed,
            self.profile,
            subject_name=self.subject,
            oracle_name=self.oracle,
            strict=self.strict,
            strict_shape=self.strict_shape,
            rules=self.rules,
            shard=shard,
        )


def conform_sharded(task: ConformTask, shard: Shard = WHOLE, processes: int = 1, executor: str = "local") -> TreeConformReport:
    """Run ``shard`` of ``task`` split over ``processes`` parts (or as Ray tasks), merged into one report."""
    parts = shard.split(max(1, processes))
    return TreeConformReport.merge(run_parts(task, parts, processes, executor), shard=str(shard))


def write_failure_files(report: TreeConformReport, folder: FilePath) -> list[FilePath]:
    """Write, per failing stream and for the first tolerated one: the events (``.jsonl``,
    replayable with ``kvproof replay log``), a JSON summary, and a ready pytest regression test."""
    from .log import write_regression

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    extra = report.options()
    for m in report.mismatches + report.tolerated[:1]:
        stem = m.file_stem(report.oracle, report.subject)
        log = folder / f"{stem}.jsonl"
        log.write_text("".join(line + "\n" for line in ops_to_lines(m.shrunk, m.query_list)))
        body = m.to_json() | {
            "replay": f"kvproof replay log {log} --target {shlex.quote(report.subject)} --oracle {report.oracle}{extra}",
            "regenerate": m.replay_command(report.subject, report.oracle) + extra,
            "rules": report.rules,
        }
        summary = folder / f"{stem}.json"
        summary.write_text(json.dumps(body, indent=1))
        test = folder / f"test_{stem.replace('-', '_')}.py"
        write_regression(
            test,
            log,
            m,
            report.subject,
            report.oracle,
            report.rules if report.rules in RULE_SETS else "",
            report.strict,
            report.strict_shape,
        )
        written += [log, summary, test]
    return written


def with_rules(target: targets.Target, rule_set: RuleSet) -> targets.Target:
    """``target`` with its factory: the plain ``reference`` re-made under ``rule_set`` (it follows the rule set it is
    given), any other as it is; one without a factory here is refused (exit 2 in the command)."""
    from ..harness.errors import CampaignInputError

    chosen = targets.load_target(target.name, rule_set) if target.name == "reference" else target
    if chosen.factory is None:
        raise CampaignInputError(f"{target.name} is unavailable: {chosen.reason}")
    return chosen


@dataclass
class ConformTreeRun:
    """``kvproof conform tree``: a finished run, with what it wrote and what the trees' surfaces left out."""

    report: TreeConformReport
    lines: list[str]  # said after the run: the files written, the run's figures, what was left out
    kind = "conform-tree"
    skipped = ""

    @property
    def ok(self) -> bool:
        return not self.report.mismatches

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        for line in self.lines:
            say(line)

    def summary_line(self) -> str:
        return self.report.summary_line()

    def to_json(self) -> dict:
        return self.report.to_json()


@dataclass(frozen=True)
class ConformOptions:
    """How ``kvproof conform tree`` was asked to run: the streams, how they are judged, where the failures go."""

    streams: int
    seed: int
    stream: int | None
    events: int
    rank_removal: float
    dp_ranks: int | None
    rules: str | None
    strict: bool
    strict_shape: bool
    failures_dir: str
    shard: Shard
    processes: int
    executor: str


def _stream_profile(
    subject: targets.Target, oracle: targets.Target, o: ConformOptions, say: Callable[[str], None]
) -> StreamProfile:
    """The streams' shape: dp rank 0 only when a tree keys scores by plain worker id; says what is not compared."""
    caps = {t.name: targets.capabilities(t.factory) for t in (subject, oracle)}  # type: ignore[arg-type]
    dp_ranks = o.dp_ranks
    if dp_ranks is None:
        plain = [name for name, c in caps.items() if not c.dp_ranks]
        dp_ranks = 1 if plain else 2
        if plain:
            say(f"conform tree: {', '.join(plain)} keys scores by plain worker id: streams use dp rank 0 only")
    for name, c in caps.items():
        if not c.dump:
            say(f"conform tree: {name} has no dump_tree_as_events: dumps are not compared")
    return StreamProfile(events=o.events, rank_removal=o.rank_removal, max_dp_ranks=dp_ranks)


def run_conform_tree(
    subject: targets.Target,
    oracle: targets.Target,
    o: ConformOptions,
    say: Callable[[str], None],
    progress: Callable[[int, int, float], None] | None = None,
) -> ConformTreeRun:
    """Random streams through ``subject`` and ``oracle`` (here, or split over processes), each difference said as it
    is found with the named finding it matches; the failure files written (``kvproof conform tree``)."""
    from ..harness.errors import CampaignInputError
    from .verdicts import ORACLE_CONTRACT, named_finding

    if subject.name == oracle.name:
        raise CampaignInputError(
            f"the subject and the oracle are both {subject.name!r}: a tree always agrees with itself", param="--oracle"
        )
    rule_set, note = targets.resolve_rules(subject.name, oracle.name, override=o.rules)
    subject_t, oracle_t = with_rules(subject, rule_set), with_rules(oracle, rule_set)
    say(f"conform tree: {note}")
    profile = _stream_profile(subject_t, oracle_t, o, say)
    extra = judging_options(o.rules, o.strict, o.strict_shape)

    def on_mismatch(m: ConformMismatch) -> None:
        log = str(FilePath(o.failures_dir) / f"{m.file_stem(oracle.name, subject.name)}.jsonl")
        say(m.report(subject.name, oracle.name, log, extra))
        named = named_finding(targets.dynamo_component(oracle.name if m.kind == ORACLE_CONTRACT else subject.name), m.detail)
        if named:
            say(f"  {named}")

    if o.stream is None and (o.processes > 1 or o.executor != "local"):
        task = ConformTask(subject.name, oracle.name, rule_set.name, o.streams, o.seed, profile, o.strict, o.strict_shape)
        say(f"conform tree: shard {o.shard} of {o.streams} streams in {o.processes} parts ({o.executor})")
        result = conform_sharded(task, o.shard, o.processes, o.executor)
        for m in result.mismatches + result.tolerated[:1]:
            on_mismatch(m)
    else:
        result = conform(
            subject_t.factory,  # type: ignore[arg-type]
            oracle_t.factory,  # type: ignore[arg-type]
            o.streams,
            o.seed,
            profile,
            only_stream=o.stream,
            subject_name=subject.name,
            oracle_name=oracle.name,
            on_mismatch=on_mismatch,
            on_progress=progress,
            strict=o.strict,
            strict_shape=o.strict_shape,
            rules=rule_set.name,
            shard=o.shard,
        )
    lines = []
    if result.mismatches or result.tolerated:
        lines += [f"wrote {path}" for path in write_failure_files(result, FilePath(o.failures_dir))]
    lines.append(f"seconds={result.seconds:.1f} seed={o.seed} subject={subject.name} oracle={oracle.name} rules={rule_set.name}")
    return ConformTreeRun(result, lines + list(result.left_out.lines()))

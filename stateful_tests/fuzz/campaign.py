"""The fuzz campaign: each hostile case over every tree at once, the same checks after each.

For a case (``grammar.cases``) every target starts from the same populated state (``BASE``) and
runs the call. Then, per target:

- **typed**: the call returned, or raised a ``KvProofError`` (kvproof's trees); any other
  exception from a kvproof tree is an *untyped* error, a defect;
- **no drift**: after a rejection the state is exactly what it was (the dump, and the scores of
  ``PROBES`` in both ``early_exit`` modes). A ``removed`` batch that fails part way is the one
  rejection the spec lets change state (spec/errors.py), and then every tree must agree on it;
- **sound**: ``check()`` holds, where a tree has one;
- **agreement**: every kvproof tree decides as the reference does (the outcome's name, the
  result of a read, the state after); Dynamo accepts exactly what the reference accepts, and
  ends in the same state, except where docs/hostile-input.md records a deliberate difference
  (``KNOWN``; counted per finding, never silently). A case Dynamo cannot take (a ``str`` or
  ``dict`` payload, an event object) is compared among kvproof's trees only.

A problem is shrunk by Hypothesis to a minimal case of the same kind, saved as a replayable file
(``save_case``; format ``kvproof-fuzz/1``, values in ``codec``'s tagged JSON) under
``kvproof-failures/fuzz/``, and printed with ``kvproof fuzz --replay FILE``. Every target is
reset to ``BASE`` before each case, so a case replays alone, in any order.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from ...spec import events
from ...spec.errors import BlockNotFound, InvalidBlockSequence, KvProofError, ParentBlockNotFound
from ...spec.events import KvCacheEvent, Stored, encode_event
from ...spec.primitives import Block, show
from ..harness import targets
from ..harness.files import write_json_atomically
from ..harness.seeding import history_free
from ..harness.shards import WHOLE, Shard, run_parts
from ..harness.targets import canonical
from . import codec, grammar
from .mutate import apply_mutations, mutations

FORMAT = "kvproof-fuzz/1"
TARGETS = ("reference", "impl", "impl-lanes", "impl-pool", "dynamo")
"""The fleet: the reference (the judge), kvproof's other trees (held to it exactly, typed errors only), Dynamo."""

BASE = [
    (1, KvCacheEvent(0, Stored(None, tuple(Block(h // 100, h) for h in (100, 200, 300, 400))))),
    (2, KvCacheEvent(0, Stored(None, tuple(Block(h // 100, h) for h in (100, 200, 500))))),
    (2, KvCacheEvent(0, Stored(None, tuple(Block(h // 100, h) for h in (100, 200, 600))), dp_rank=1)),
]
"""The state every case starts from: two workers, three ranks, a shared prefix, a split."""

PROBES = ([1, 2, 3, 4], [1, 2, 5, 6])

KNOWN = {
    "H1": ("nested deeper than",),
    "H2": ("not UTF-8",),
    "H3": ("expected an object, got list",),
    "H9": ("got bool",),
    "H10": tuple(f"sequence must be a sequence of ints, got {kind}" for kind in ("bytes", "bytearray", "memoryview")),
}
"""The deliberate differences with Dynamo 1.6.1 (docs/hostile-input.md): Dynamo accepts, kvproof refuses
with a message containing one of these. Any other disagreement is a problem."""

SAID = {
    "H1": "JSON nested past 128 levels in an ignored value: Dynamo skips it, kvproof refuses",
    "H2": "invalid UTF-8 in an ignored string: Dynamo skips it, kvproof refuses",
    "H3": "serde's list form of a struct: Dynamo accepts it, kvproof refuses",
    "H9": "a bool as a worker id or hash: Dynamo reads True as 1, kvproof refuses",
    "H10": "a bytes-like query: Dynamo reads each byte as a hash, kvproof refuses",
    "out-of-contract": "a hash named at a second position: compared across the trees, check() not held to it",
}
"""One line per known difference, for the gate's notes and ``kvproof fuzz``."""


# ----------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class FuzzCase:
    """One call: ``op`` on every target with ``args``."""

    op: str
    args: tuple[Any, ...]

    def describe(self) -> str:
        return f"{self.op}({', '.join(show(a) for a in self.args)})"

    @property
    def dynamo_takes(self) -> bool:
        """Whether the case is one the binding's API can take at all (its ``apply_event`` takes ``bytes`` only)."""
        return self.op != "apply_event" or type(self.args[1]) is bytes


# Built once, not at every draw (see grammar.py): the same strategies, so the same cases.
_payload_kind = st.sampled_from(["bytes"] * 6 + ["mutated"] * 3 + ["str", "dict", "object", "junk"])
_event_text = grammar.event_text()
_event_object = grammar.event_object()


@st.composite
def _payload(draw: st.DrawFn) -> Any:
    kind = draw(_payload_kind)
    text = draw(_event_text)
    if kind == "bytes":
        return text.encode("utf-8", "surrogatepass")
    if kind == "mutated":
        return apply_mutations(text.encode("utf-8", "surrogatepass"), draw(mutations))
    if kind == "str":
        return text
    if kind == "dict":
        decoded = grammar.as_python(text)
        return decoded if decoded is not None else {"event_id": 1}
    if kind == "object":
        return draw(_event_object)
    # built at every draw on purpose: each junk case gets a bytearray of its own, whatever a tree did to the last one
    return draw(st.sampled_from(grammar.HOSTILE_VALUES + (bytearray(b'{"event_id":1,"data":"cleared"}'),)))


_op = st.sampled_from(
    ["apply_event"] * 8 + ["remove_worker", "clear_all_blocks", "remove_worker_dp_rank", "find_matches", "find_matches"]
)
_some_payload = _payload()
_dp_rank = st.one_of(st.integers(0, 2), st.sampled_from(grammar.HOSTILE_VALUES))


@st.composite
def cases(draw: st.DrawFn) -> FuzzCase:
    """A hostile call: mostly ``apply_event``, sometimes a worker removal or a query."""
    op = draw(_op)
    if op == "apply_event":
        return FuzzCase(op, (draw(grammar.worker), draw(_some_payload)))
    if op in ("remove_worker", "clear_all_blocks"):
        return FuzzCase(op, (draw(grammar.worker),))
    if op == "remove_worker_dp_rank":
        return FuzzCase(op, (draw(grammar.worker), draw(_dp_rank)))
    return FuzzCase(op, (draw(grammar.query), draw(grammar.early_exit)))


# ----------------------------------------------------------------------------- the fleet of targets


FINGERPRINT_READS = (("dump_tree_as_events", ()), *(("find_matches", (q, e)) for q in PROBES for e in (False, True)))
"""The reads a fingerprint takes: the dump, then each probe in both ``early_exit`` modes."""


def _fingerprint(tree: Any) -> tuple:
    """``(dump lines as written, the dump canonical, the probes' scores)``: the first is what "byte-identical after a
    rejection" compares, the other two what trees compare with each other (their dumps may order lines apart)."""
    dump, *probes = _reads(tree, FINGERPRINT_READS)
    lines = tuple(dump)
    return lines, _canonical(lines), tuple(tuple(sorted(targets.plain_scores(answer).items())) for answer in probes)


def _reads(tree: Any, calls: tuple[tuple[str, tuple[Any, ...]], ...]) -> list[Any]:
    """The answers of ``calls``, reads that change nothing: in one round trip for a tree in a host process (its
    ``steps``; Dynamo's binding paid five per fingerprint, a third of the row's requests), else one call at a time.
    The first error raises, as it would from the calls one by one; the round trip belongs to one case, so a crash or
    hang in it is still that case's."""
    steps = targets.steps_of(tree)
    if steps is None:
        return [getattr(tree, method)(*args) for method, args in calls]
    answers = steps(list(calls))
    error = next((answer for answer in answers if isinstance(answer, BaseException)), None)
    if error is not None:
        raise error
    return answers


@functools.lru_cache(maxsize=256)
def _canonical(lines: tuple[str, ...]) -> tuple:
    """The dump ``lines`` as sorted entries, parsed once per text: nearly every case finds or leaves its trees at
    ``BASE``, so the same few dumps came back thousands of times, and parsing them was a quarter of the row's CPU."""
    return tuple(canonical([targets.dump_entry(line) for line in lines]))


class FuzzFleet:
    """One tree per target, each back at ``BASE`` before every case (``reset`` rebuilds the ones the last case touched)."""

    def __init__(self, names: tuple[str, ...] = TARGETS, extra: dict[str, Callable[[], Any]] | None = None) -> None:
        """``names`` from ``TARGETS``; ``extra`` adds trees by factory (held to the reference as kvproof's trees are)."""
        self.factories: dict[str, Callable[[], Any]] = {}
        self.unavailable: dict[str, str] = {}
        for name in names:
            target = targets.load_target(name)
            if target.factory is None:
                self.unavailable[name] = target.reason
            else:
                self.factories[name] = target.factory
        self.factories.update(extra or {})
        self.trees: dict[str, Any] = {}
        self.base: dict[str, tuple] = {}
        self.dirty: set[str] = set()  # the trees whose last case left them away from BASE
        for name in self.factories:
            self._rebuild(name)

    def _rebuild(self, name: str) -> None:
        if name in self.trees:
            targets.dispose(self.trees[name])
        tree = self.factories[name]()
        for worker, event in BASE:
            tree.apply_event(worker, encode_event(event))
        self.trees[name] = tree
        self.base[name] = _fingerprint(tree)

    def reset(self) -> None:
        """Bring every tree the last case touched back to ``BASE`` by building it afresh (a reset through the API
        could leave what no fingerprint shows, a registered rank say, and make cases depend on their order)."""
        for name in sorted(self.dirty):
            self._rebuild(name)
        self.dirty = set()

    def close(self) -> None:
        for tree in self.trees.values():
            targets.dispose(tree)


def _call(tree: Any, case: FuzzCase) -> tuple[str, Any]:
    method = getattr(tree, case.op, None)
    if method is None:  # a tree without the optional remove_worker_dp_rank
        return "n/a", None
    if case.op == "find_matches":
        return "ok", tuple(sorted(targets.scores(tree, *case.args).items()))
    method(*case.args)
    return "ok", None


@dataclass
class FuzzObserved:
    """What one target did with one case."""

    outcome: str  # "ok", a typed error's name, "untyped <Type>: message", or "n/a"
    result: Any = None
    message: str = ""
    before: tuple = ()
    after: tuple = ()
    check: str = ""  # the first line of a failed check()


def observe(name: str, tree: Any, case: FuzzCase, before: tuple) -> FuzzObserved:
    try:
        observed = FuzzObserved(*_call(tree, case))
    except KvProofError as exc:
        observed = FuzzObserved(type(exc).__name__, message=str(exc)[:300])
    except Exception as exc:  # untyped, for a kvproof tree; the binding's errors are mapped onto kvproof's names
        kind = targets.outcome_of(exc).split(":")[0] if name == "dynamo" else f"untyped {type(exc).__name__}"
        observed = FuzzObserved(kind, message=_message(exc))
    except BaseException as exc:
        if not targets.is_panic(exc):
            raise
        observed = FuzzObserved(f"panic {type(exc).__name__}", message=_message(exc))
    observed.before = before
    try:
        observed.after = _fingerprint(tree)
    except Exception as exc:
        observed.after = ("unreadable", f"{type(exc).__name__}: {_message(exc)}")
    check = getattr(tree, "check", None)
    if check is not None:
        try:
            check()
        except Exception as exc:
            message = _message(exc)
            observed.check = message.splitlines()[0] if message else type(exc).__name__
    return observed


def _message(exc: BaseException) -> str:
    try:
        return str(exc)[:300]
    except Exception:
        return f"<{type(exc).__name__} whose message cannot be printed>"


# ----------------------------------------------------------------------------- the contract

OUT_OF_CONTRACT = "out-of-contract"
"""The ``known`` key of cases whose check() failure the contract excuses (``contract_breach``)."""

BASE_CHAINS = {100: (1,), 200: (1, 2), 300: (1, 2, 3), 400: (1, 2, 3, 4), 500: (1, 2, 5), 600: (1, 2, 6)}
"""The local-hash chain from the root of every block ``BASE`` holds (by external hash)."""


def contract_breach(case: FuzzCase) -> str | None:
    """Why a store breaks the contract's hash assumption, relative to ``BASE``, or ``None``.

    The contract (spec/primitives.py) assumes an external hash is a function of the local chain
    from the root: one hash, one position. A fuzzed store can break it (block 100 named again at
    another position, or chain [1, 2, 3] named 700), and on such a stream no tree promises its own
    invariants (Dynamo's lookups then name nodes that do not hold the block, and so do kvproof's).
    Those cases are still compared across the trees; only ``check()`` is not held to them.
    """
    if case.op != "apply_event":
        return None
    try:
        _, event = events.parse_event(case.args[0], case.args[1])
    except Exception:
        return None
    if not isinstance(event.data, Stored):
        return None
    chains: dict[int, tuple[object, ...]] = dict(BASE_CHAINS)
    chain: tuple[object, ...] = () if event.data.parent_hash is None else chains.get(event.data.parent_hash, ("?",))
    for block in event.data.blocks:
        chain = (*chain, block.local)
        named = next((ext for ext, c in chains.items() if c == chain), None)
        if chains.get(block.ext, chain) != chain or named not in (None, block.ext):
            return f"block {block.ext} at chain {list(chain)}"
        chains[block.ext] = chain
    return None


# ----------------------------------------------------------------------------- the checks


@dataclass(frozen=True)
class Problem:
    kind: str  # untyped, drift, check, disagree, dynamo
    target: str
    detail: str

    def line(self) -> str:
        return f"{self.kind} on {self.target}: {self.detail}"


def judge(case: FuzzCase, seen: dict[str, FuzzObserved], known: Counter[str]) -> list[Problem]:
    """The checks of the module docstring, for one case; known differences with Dynamo are counted in ``known``."""
    problems = []
    ref = seen.get("reference")
    in_contract = contract_breach(case) is None if any(o.check for o in seen.values()) else True
    for name, o in seen.items():
        if name != "dynamo" and o.outcome.startswith(("untyped", "panic")):
            problems.append(Problem("untyped", name, f"{case.describe()} raised {o.outcome.split(' ', 1)[1]}: {o.message}"))
        if o.outcome not in ("ok", "n/a", BlockNotFound.__name__) and o.after != o.before and name != "dynamo":
            problems.append(Problem("drift", name, f"{case.describe()} was rejected ({o.outcome}) but changed the state"))
        if o.check:
            if in_contract:
                problems.append(Problem("check", name, f"after {case.describe()}: {o.check}"))
            else:
                known[OUT_OF_CONTRACT] += 1
    if ref is None:
        return problems
    for name, o in seen.items():
        if name in ("reference", "dynamo"):
            continue
        if (o.outcome, o.result, o.after[1:]) != (ref.outcome, ref.result, ref.after[1:]) and o.outcome != "n/a":
            problems.append(
                Problem(
                    "disagree",
                    name,
                    f"{case.describe()}: {name} gave {o.outcome} {show(o.result)}, the "
                    f"reference {ref.outcome} {show(ref.result)}"
                    + (" (and the states differ)" if o.after[1:] != ref.after[1:] else ""),
                )
            )
    dyn = seen.get("dynamo")
    if dyn is None or not case.dynamo_takes or dyn.outcome == "n/a":
        return problems
    where = case.describe()
    if _past_the_door(dyn) and not _past_the_door(ref):
        finding = next((h for h, needles in KNOWN.items() if any(n in ref.message for n in needles)), None)
        if finding is not None:
            known[finding] += 1
        else:
            problems.append(
                Problem(
                    "dynamo",
                    "dynamo",
                    f"{where}: Dynamo took it ({dyn.outcome}), the reference refused it: {ref.outcome} ({ref.message[:160]})",
                )
            )
    elif _past_the_door(ref) and not _past_the_door(dyn):
        problems.append(
            Problem(
                "dynamo",
                "dynamo",
                f"{where}: the reference took it ({ref.outcome}), Dynamo refused it: {dyn.outcome} ({dyn.message[:160]})",
            )
        )
    elif _past_the_door(ref):
        if dyn.outcome != ref.outcome:
            problems.append(Problem("dynamo", "dynamo", f"{where}: Dynamo {dyn.outcome}, the reference {ref.outcome}"))
        elif _credited(dyn.after) != _credited(ref.after) or dyn.result != ref.result:
            problems.append(
                Problem(
                    "dynamo",
                    "dynamo",
                    f"{where}: both {ref.outcome}, but Dynamo ends in another state"
                    + (f" or read ({show(dyn.result)} vs {show(ref.result)})" if dyn.result != ref.result else ""),
                )
            )
    elif _credited(dyn.after) != _credited(dyn.before):
        problems.append(Problem("dynamo", "dynamo", f"{where}: Dynamo refused it ({dyn.outcome}) but its state changed"))
    return problems


EVENT_ERRORS = frozenset(e.__name__ for e in (ParentBlockNotFound, BlockNotFound, InvalidBlockSequence))


def _past_the_door(o: FuzzObserved) -> bool:
    """Whether a tree took the call past its front door: it returned, or refused the event for what it means."""
    return o.outcome == "ok" or o.outcome in EVENT_ERRORS


def _credited(fingerprint: tuple) -> tuple:
    """The part of a fingerprint two trees of different shapes must share: the dump entries a rebuild can replay
    (Dynamo's dump also lists blocks under a parent the rank no longer holds: docs/dynamo-findings.md F2) and the
    probes' scores."""
    if len(fingerprint) < 3:
        return fingerprint
    kept, _ = targets.replayable(list(fingerprint[1]))
    return tuple(canonical(kept)), fingerprint[2]


# ----------------------------------------------------------------------------- runs


@dataclass
class FuzzReport:
    seed: int
    inputs: int = 0
    outcomes: dict[str, Counter[str]] = field(default_factory=dict)  # target -> outcome -> count
    known: Counter[str] = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)
    case: FuzzCase | None = None  # the shrunk case of the first problem
    file: str | None = None
    unavailable: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    shard: str = "1/1"
    ordinals: list[int] = field(default_factory=list)  # the numbers of the generated cases this report ran

    @property
    def ok(self) -> bool:
        return not self.problems

    @classmethod
    def merge(cls, parts: list[FuzzReport], shard: str = "1/1") -> FuzzReport:
        """The report of the union of ``parts`` (disjoint shards of one run); the first problem by case number leads."""
        merged = cls(parts[0].seed, shard=shard)
        for part in sorted(parts, key=_failing_case):
            merged.inputs += part.inputs
            for name, counts in part.outcomes.items():
                merged.outcomes.setdefault(name, Counter()).update(counts)
            merged.known.update(part.known)
            merged.unavailable |= part.unavailable
            merged.notes += part.notes
            merged.ordinals += part.ordinals
            if part.problems and not merged.problems:
                merged.problems, merged.case, merged.file = part.problems, part.case, part.file
        merged.ordinals.sort()
        return merged

    def untyped(self) -> int:
        return sum(n for c in self.outcomes.values() for o, n in c.items() if o.startswith("untyped"))


def _failing_case(report: FuzzReport) -> float:
    """The number of the case a report stopped at (a run stops at its first problem), or infinity."""
    return report.ordinals[-1] if report.problems and report.ordinals else float("inf")


def run_case(
    fleet: FuzzFleet, case: FuzzCase, known: Counter[str] | None = None
) -> tuple[dict[str, FuzzObserved], list[Problem]]:
    """Reset the fleet, run ``case`` on every target, judge it."""
    fleet.reset()
    seen = {name: observe(name, tree, case, fleet.base[name]) for name, tree in fleet.trees.items()}
    fleet.dirty = {name for name, o in seen.items() if o.after != o.before or (_past_the_door(o) and case.op != "find_matches")}
    return seen, judge(case, seen, Counter() if known is None else known)


CASES_PER_BLOCK = 250
"""The cases drawn from one seed. A run's cases are numbered ``0 .. inputs-1`` in blocks of this many;
block ``b`` is drawn from its own seed (``block_seed``), so a shard draws only the blocks it owns."""


def block_seed(seed: int, block: int) -> int:
    """The Hypothesis seed of block ``block`` of a run seeded ``seed``: a digest, so neighbouring blocks are unrelated."""
    return int.from_bytes(hashlib.sha256(f"kvproof-fuzz:{seed}:{block}".encode()).digest()[:8], "big")


def fuzz(
    inputs: int,
    seed: int,
    names: tuple[str, ...] = TARGETS,
    save_dir: str | Path | None = "kvproof-failures/fuzz",
    extra: dict[str, Callable[[], Any]] | None = None,
    shard: Shard = WHOLE,
    block: int = CASES_PER_BLOCK,
) -> FuzzReport:
    """Run ``inputs`` hostile cases (Hypothesis, seeded) over ``names`` (and ``extra``); stop at the first problem, shrink it.

    The cases come in blocks of ``block``, each drawn by Hypothesis from its own seed
    (``block_seed(seed, b)``), inside ``seeding.history_free``: a block's cases are a function of
    the run's seed and the block's number alone, whatever process draws them. With ``shard`` K/N
    a run draws and runs only the blocks ``b`` with ``b % N == K-1`` (``harness.shards``), so the
    shards together run exactly the cases of the whole run, and none draws another's. A problem
    stops the run; Hypothesis shrinks it within its block, keeping the problem's kind.
    """
    report = FuzzReport(seed, shard=str(shard))
    fleet = FuzzFleet(names, extra)
    report.unavailable = dict(fleet.unavailable)
    try:
        for b in range(-(-inputs // block)):
            if shard.owns(b):
                size = min(block, inputs - b * block)
                if _fuzz_block(fleet, report, size, block_seed(seed, b), b * block):
                    break
    finally:
        fleet.close()
    if report.case is not None and save_dir is not None:
        report.file = str(save_case(report.case, report.problems[0], seed, save_dir))
    return report


def _fuzz_block(fleet: FuzzFleet, report: FuzzReport, size: int, seed: int, first_ordinal: int) -> bool:
    """Draw and run ``size`` cases from ``seed``, numbered from ``first_ordinal``, into ``report``; True at a problem."""
    first: list[Problem] = []
    generated = [first_ordinal]

    @settings(
        max_examples=size,
        database=None,
        deadline=None,
        derandomize=False,
        print_blob=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    @hypothesis_seed(seed)
    @given(case=cases())
    def one(case: FuzzCase) -> None:
        if not first:
            report.ordinals.append(generated[0])
            generated[0] += 1
        seen, problems = run_case(fleet, case, report.known if not first else Counter())
        if not first:
            report.inputs += 1
            for name, o in seen.items():
                report.outcomes.setdefault(name, Counter())[o.outcome.split(":")[0]] += 1
        if problems and (not first or problems[0].kind == first[0].kind):  # shrink keeps the kind of the first problem
            if not first:
                first.append(problems[0])
            report.problems, report.case = problems, case
            raise AssertionError(problems[0].line())

    try:
        with _quiet_hypothesis(), history_free():
            one()
    except (AssertionError, HypothesisException, BaseExceptionGroup) as exc:
        if not report.problems:  # not a failure of ours: Hypothesis's own
            raise
        if not isinstance(exc, AssertionError):
            report.notes.append(f"Hypothesis could not shrink reliably: {type(exc).__name__}")
    return bool(report.problems)


@dataclass(frozen=True)
class FuzzTask:
    """One fuzz run, picklable: ``task(shard)`` runs that shard's cases in whatever process it lands in."""

    inputs: int
    seed: int
    names: tuple[str, ...] = TARGETS
    save_dir: str | None = "kvproof-failures/fuzz"
    block: int = CASES_PER_BLOCK

    def __call__(self, shard: Shard) -> FuzzReport:
        return fuzz(self.inputs, self.seed, self.names, self.save_dir, shard=shard, block=self.block)


def fuzz_sharded(task: FuzzTask, shard: Shard = WHOLE, processes: int = 1, executor: str = "local") -> FuzzReport:
    """Run ``shard`` of ``task`` split over ``processes`` parts (or as Ray tasks), merged into one report."""
    return FuzzReport.merge(run_parts(task, shard.split(processes), processes, executor), shard=str(shard))


@contextmanager
def _quiet_hypothesis() -> Iterator[None]:
    """Hypothesis prints the falsifying example itself; the report prints it instead."""
    import hypothesis.reporting

    with hypothesis.reporting.with_reporter(lambda _: None):
        yield


def save_case(case: FuzzCase, problem: Problem, seed: int, directory: str | Path) -> Path:
    """Write ``case`` as a ``kvproof-fuzz/1`` file (atomically); return its path."""
    body = {
        "format": FORMAT,
        "op": case.op,
        "args": [codec.encode(a) for a in case.args],
        "seed": seed,
        "problem": problem.line(),
        "case": case.describe(),
    }
    digest = hashlib.sha256(json.dumps(body["args"]).encode()).hexdigest()[:10]
    return write_json_atomically(Path(directory) / f"{problem.kind}-{problem.target}-{digest}.json", body)


class FuzzFileError(ValueError):
    """A file that is not a saved fuzz case."""


def load_case(path: str | Path) -> FuzzCase:
    """Read a saved case (``FuzzFileError`` if it is not one)."""
    try:
        body = json.loads(Path(path).read_text())
        if body.get("format") != FORMAT:
            raise FuzzFileError(f"{path}: not a {FORMAT} file (format {body.get('format')!r})")
        return FuzzCase(body["op"], tuple(codec.decode(a) for a in body["args"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, FuzzFileError):
            raise
        raise FuzzFileError(f"{path}: cannot read a fuzz case ({type(exc).__name__}: {exc})") from None


def replay(
    path: str | Path, names: tuple[str, ...] = TARGETS, extra: dict[str, Callable[[], Any]] | None = None
) -> tuple[FuzzCase, dict[str, FuzzObserved], list[Problem]]:
    """Run a saved case over ``names`` (and ``extra``) again; return what each target did and the problems."""
    case = load_case(path)
    fleet = FuzzFleet(names, extra)
    try:
        seen, problems = run_case(fleet, case)
    finally:
        fleet.close()
    return case, seen, problems


def summary_line(report: FuzzReport) -> str:
    """The last line of ``kvproof fuzz``: inputs, targets, untyped errors, problems, the known differences counted."""
    known = ",".join(f"{h}:{n}" for h, n in sorted(report.known.items())) or "none"
    return (
        f"fuzz: inputs={report.inputs} targets={len(report.outcomes)} untyped={report.untyped()} "
        f"problems={len(report.problems)} known={known}"
    )

"""Targets: the radix trees kvproof can check, behind the one API they share.

A target is anything with the API of ``dynamo._core.RadixTree``: ``apply_event(worker_id,
bytes)``, ``find_matches(seq, early_exit)`` returning an object with ``.scores``,
``remove_worker``, ``clear_all_blocks`` and ``dump_tree_as_events``. ``check()``,
``snapshot()`` and ``remove_worker_dp_rank`` are used when present.

Names accepted by ``load_target``:

- ``reference``: ``kvproof.reference.RadixTree`` (sequential, exact);
- ``impl``: ``kvproof.impl.radix_tree.ConcurrentRadixTree`` on one lane (the embedded
  implementation, the gate's default);
- ``impl-lanes``: the concurrent tree with workers routed to three lanes, used one event
  at a time (lazy lookup repair at work);
- ``impl-pool``: ``kvproof.impl.indexer.ThreadPoolIndexer`` with four event threads;
- ``dynamo``: ``dynamo._core.RadixTree`` from ``ai-dynamo-runtime`` (whichever copy is first on
  ``sys.path``: ``PYTHONPATH=<unpacked wheel>`` points kvproof at any release);
- ``dynamo-indexer``: Dynamo's standalone indexer, ``python -m dynamo.indexer``, with 4 event
  threads (``ThreadPoolIndexer`` over the concurrent tree, as the frontend router runs it), fed
  over ZMQ and read over HTTP (``harness.dynamo_indexer``); ``dynamo-indexer@N`` for N threads
  (``dynamo-indexer@1`` is Dynamo's single-threaded ``KvIndexer``, the control that must agree with
  ``dynamo``);
- ``reference@RULES``: the reference under the rule set ``RULES`` of ``spec.rules`` (e.g.
  ``reference@dynamo-1.4``), a stand-in for the release line that rule set describes;
- ``module.path:Factory``: any zero-argument callable returning a tree, e.g. your own
  implementation, or one of the deliberately broken trees in ``stateful_tests.tree.mutants``;
- ``exec:CMD`` and ``http://127.0.0.1:PORT``: a tree in any language, speaking the wire protocol
  (``harness.protocol``, ``docs/protocol.md``) on a process's stdin and stdout or on loopback HTTP
  (``harness.wire_target``); ``exec:kvproof serve --stdio --target T`` serves any of the above.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...spec.errors import BlockNotFound, InvalidBlockSequence, KvCacheEventError, MalformedEvent, ParentBlockNotFound
from ...spec.events import KvCacheEvent, Stored, decode_router_event, encode_event
from ...spec.primitives import Block, integer_of
from ...spec.rules import DEFAULT_RULES, RULE_SETS, RuleSet, rule_set_for, rule_set_named
from .services import ServiceFailure
from .surface import FULL, NotOnSurface, Surface, surface_of

OK = "ok"

# Dynamo reports event errors as RuntimeError("Failed to apply event: <message>").
_DYNAMO_MESSAGES = (
    ("Failed to find parent block", ParentBlockNotFound.__name__),
    ("Invalid block sequence", InvalidBlockSequence.__name__),
    ("Failed to find block", BlockNotFound.__name__),
)


@dataclass(frozen=True)
class Target:
    """A named tree factory; ``reason`` says why it is unavailable when ``factory`` is None."""

    name: str
    factory: Callable[[], Any] | None
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.factory is not None


def dynamo_core() -> Any:
    """Import ``dynamo._core`` with its log kept to errors unless the user chose a level.

    The binding logs every rejected event as a warning on stderr; ``DYN_LOG`` is its log filter,
    read once, when the module is first imported.
    """
    os.environ.setdefault("DYN_LOG", "error")
    import dynamo._core

    return dynamo._core


def dynamo_tree_factory() -> tuple[Callable[[], Any] | None, str]:
    """Return ``(dynamo._core.RadixTree, "")`` or ``(None, why it cannot be imported)``."""
    try:
        return dynamo_core().RadixTree, ""
    except (ImportError, AttributeError) as exc:
        return None, f"ai-dynamo-runtime is not installed ({exc}); install the [dynamo] extra"


def dynamo_release() -> str | None:
    """The installed ``ai-dynamo-runtime`` release (the first on ``sys.path``, so a copy put ahead
    of the environment's with ``PYTHONPATH`` wins), or None."""
    import importlib.metadata

    try:
        return importlib.metadata.version("ai-dynamo-runtime")
    except importlib.metadata.PackageNotFoundError:
        return None


def resolve_rules(*names: str | None, override: str | None = None) -> tuple[RuleSet, str]:
    """Choose the rule set the reference follows in a run involving the targets ``names``.

    ``override`` (``--rules NAME``) wins; otherwise, when Dynamo is one of the targets, the
    rule set of its installed release (``spec.rules.rule_set_for``), with a warning when
    kvproof has not established that release's rules; otherwise the reference as written.
    Returns ``(rule set, a line saying which is in force and why)``.
    """
    if override:
        rules = rule_set_named(override)
        return rules, f"rules: {rules.describe()}, chosen with --rules"
    fixed = [n.partition("@")[2] for n in names if n and n.startswith("reference@")]
    if fixed and fixed[0] in RULE_SETS:
        rules = rule_set_named(fixed[0])
        return rules, f"rules: {rules.describe()}, the rule set of the target reference@{fixed[0]}"
    components = [c for c in map(dynamo_component, names) if c is not None]
    if components:
        component = "concurrent" if "concurrent" in components else "tree"
        version = dynamo_release()
        if version is None:
            return DEFAULT_RULES, f"rules: {DEFAULT_RULES.describe()} (ai-dynamo-runtime is not installed)"
        rules_for = rule_set_for(version, component)
        if rules_for is None:
            return DEFAULT_RULES, (
                f"WARNING: ai-dynamo-runtime {version} is a release whose rules for its "
                f"{'concurrent' if component == 'concurrent' else 'single-threaded'} tree kvproof has not "
                f"established; judging it by {DEFAULT_RULES.describe()} "
                "(--rules NAME to choose)"
            )
        which = "the concurrent tree" if component == "concurrent" else "the single-threaded tree"
        return rules_for, f"rules: {rules_for.describe()}, detected from ai-dynamo-runtime {version} ({which})"
    return DEFAULT_RULES, f"rules: {DEFAULT_RULES.describe()}"


def dynamo_component(name: str | None) -> str | None:
    """Which of Dynamo's trees a target name runs: ``tree`` (the binding, the indexer at one thread), ``concurrent``
    (the indexer or selection service at two or more), or None (not Dynamo's)."""
    if name is None:
        return None
    if name == "dynamo":
        return "tree"
    base, _, _ = name.partition("@")
    if base in ("dynamo-indexer", "dynamo-selection"):
        threads = threads_of(name, 4)
        return "tree" if threads == 1 else "concurrent"
    return None


def rules_of_target(name: str) -> RuleSet:
    """The rule set a target follows by itself: a reference's own, Dynamo's component's for the installed release,
    the reference as written for kvproof's embedded trees and for any other (their rules are not known)."""
    base, _, fixed = name.partition("@")
    if base == "reference" and fixed in RULE_SETS:
        return RULE_SETS[fixed]
    component = dynamo_component(name)
    version = dynamo_release() if component else None
    return (rule_set_for(version, component) if version and component else None) or DEFAULT_RULES


def load_target(name: str, rules: RuleSet = DEFAULT_RULES) -> Target:
    """Resolve a target name (see the module docstring); ``reference`` follows ``rules``."""
    from .wire_target import is_remote, wire_factory

    if is_remote(name):
        factory, reason = wire_factory(name)
        return Target(name, factory, reason)
    if name == "reference":
        from ...reference import RadixTree

        if rules is DEFAULT_RULES:
            return Target(name, RadixTree)

        def under_rules() -> Any:
            return RadixTree(rules)

        return Target(name, under_rules)
    if name.startswith("reference@"):
        try:
            fixed = rule_set_named(name.partition("@")[2])
        except KeyError as exc:
            return Target(name, None, str(exc.args[0]))
        return Target(name, load_target("reference", fixed).factory)
    if name == "impl":
        from ...impl.radix_tree import ConcurrentRadixTree

        return Target(name, ConcurrentRadixTree)
    if name == "impl-lanes":
        from ...impl.radix_tree import ConcurrentRadixTree

        def routed() -> Any:
            return RoutedImpl(ConcurrentRadixTree(lanes=3), 3)

        return Target(name, routed)
    if name == "impl-pool":
        from ...impl.indexer import ThreadPoolIndexer

        def pool() -> Any:
            return ThreadPoolIndexer(threads=4)

        return Target(name, pool)
    if name == "dynamo":
        factory, reason = dynamo_tree_factory()
        return _isolated(Target(name, factory, reason))
    if name == "dynamo-indexer" or name.startswith("dynamo-indexer@"):
        return _indexer_target(name)
    if name.removesuffix(UNPINNED) == "dynamo-selection" or name.startswith("dynamo-selection@"):
        return _isolated(_selection_target(name))
    if ":" in name:
        factory, reason = import_factory(name)
        own = name.startswith("kvproof.")  # kvproof's own broken twins: its own code, probed in process (lanes, pools)
        return Target(name, factory, reason) if own else _isolated(Target(name, factory, reason))
    return Target(name, None, f"unknown target {name!r}: use {', '.join(NAMES)}, or module.path:Factory")


HOST_VARIABLE = "KVPROOF_IN_HOST"
"""Set in a target's host process (``harness.host``): there the target itself is made, not another host."""

ISOLATE_VARIABLE = "KVPROOF_ISOLATE"
"""``0`` runs targets that are not kvproof's own in kvproof's process (faster; a crash of the target is then kvproof's)."""


def isolating() -> bool:
    """Whether targets that are not kvproof's own run in a host process (``harness.isolation``)."""
    return os.environ.get(HOST_VARIABLE) != "1" and os.environ.get(ISOLATE_VARIABLE, "1") != "0"


def _isolated(target: Target) -> Target:
    """``target`` made in a host process with memory and time limits, when isolating and the target is available.

    The Dynamo binding, the selection service and a user's ``module:Factory`` run so; kvproof's own trees (its
    broken twins in ``kvproof.*`` modules included), and Dynamo's standalone indexer (already a process of its
    own, under the same limits), do not.
    """
    if target.factory is None or not isolating():
        return target
    from .isolation import isolated

    return Target(target.name, isolated(target.name))


NAMES = ("reference", "impl", "impl-lanes", "impl-pool", "dynamo", "dynamo-indexer", "dynamo-selection")
"""The targets known by name (any other is ``module.path:Factory``); ``reference`` and the ``dynamo-*`` services take ``@``."""


def threads_of(name: str, default: int) -> int | str:
    """The thread count of ``base@N`` (``default`` for a bare name), or why ``N`` is not one."""
    _, at, count = name.partition("@")
    if not at:
        return default
    if not count.isdigit() or not 1 <= int(count) <= 64:
        return f"{name!r}: the thread count after @ must be a number from 1 to 64"
    return int(count)


def _indexer_target(name: str) -> Target:
    from . import dynamo_indexer

    threads = threads_of(name, dynamo_indexer.DEFAULT_THREADS)
    if isinstance(threads, str):
        return Target(name, None, threads)
    why = dynamo_indexer.unavailable() or dynamo_indexer.fence_unavailable(threads)
    if why is not None:
        return Target(name, None, why)

    def indexer() -> Any:
        return dynamo_indexer.IndexerTree(threads)

    return Target(name, indexer)


def production_factory(name: str) -> Callable[[], Any] | None:
    """The factory production mode feeds (``explore.production``): the target's own, except that the selection service's
    trees are made with their lanes free (not pinned to one), so a round's events run at once; None when unavailable."""
    base = name.partition("@")[0]
    if base != "dynamo-selection":
        return load_target(name).factory
    return load_target(name + UNPINNED).factory


UNPINNED = "/unpinned"
"""The selection service's trees with their lanes free (production mode): ``dynamo-selection@4/unpinned``."""


def _selection_target(name: str) -> Target:
    from . import dynamo_selection

    pinned = not name.endswith(UNPINNED)
    threads = threads_of(name.removesuffix(UNPINNED), dynamo_selection.DEFAULT_THREADS)
    if isinstance(threads, str):
        return Target(name, None, threads)
    why = dynamo_selection.unavailable()
    if why is not None:
        return Target(name, None, why)

    def selection() -> Any:
        return dynamo_selection.SelectionTree(threads, pinned)

    return Target(name, selection)


def import_factory(name: str) -> tuple[Callable[..., Any] | None, str]:
    """Import ``module.path:Factory``; return ``(factory, "")`` or ``(None, why it cannot be loaded)``."""
    module_name, _, attr = name.partition(":")
    if not module_name or not attr:
        return None, f"{name!r} is not of the form module.path:Factory"
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # an import error, a missing attribute, or the user's module failing at import
        return None, f"cannot load {name}: {type(exc).__name__}: {exc}"
    if not callable(factory):
        return None, f"{name} is a {type(factory).__name__}, not a callable that makes a tree"
    return factory, ""


def outcome_of(exc: BaseException) -> str:
    """Name the outcome an exception stands for, the same way for every target."""
    if isinstance(exc, (KvCacheEventError, MalformedEvent)):
        return type(exc).__name__
    message = str(exc)
    if isinstance(exc, RuntimeError):
        for needle, name in _DYNAMO_MESSAGES:
            if needle in message:
                return name
    if isinstance(exc, ValueError) and "deserialize" in message:
        return MalformedEvent.__name__
    return f"{type(exc).__name__}: {message}"


def outcome_of_call(call: Callable[[], object]) -> str:
    """Run ``call``; return ``"ok"`` or the outcome its error stands for (a binding's panic included).

    Two errors are no outcome and pass through: ``NotOnSurface`` (the call never reached the
    target; the row leaves it out) and ``ServiceFailure`` (the target's process crashed or hung:
    a finding that fails the row).
    """
    try:
        call()
    except (NotOnSurface, ServiceFailure):
        raise
    except Exception as exc:  # every target's errors are mapped onto one vocabulary
        return outcome_of(exc)
    except BaseException as exc:  # a Rust binding's panic (pyo3's PanicException is a BaseException)
        if not is_panic(exc):
            raise
        return outcome_of(exc)
    return OK


UNOBSERVED = "unobserved"
"""The outcome of an event on a target whose surface reports none (``Surface.outcomes``): accepted as far as
anyone can tell; the rows compare it with nothing and say so."""


def apply(tree: Any, worker_id: int, event: KvCacheEvent) -> str:
    """Apply ``event`` to ``tree`` through the wire format; return ``"ok"``, the outcome name, or ``UNOBSERVED``."""
    return observed(tree, outcome_of_call(lambda: tree.apply_event(worker_id, encode_event(event))))


def observed(tree: Any, outcome: str) -> str:
    """An event's outcome as the rows read it: ``UNOBSERVED`` for an accepted event on a surface that reports none."""
    return UNOBSERVED if outcome == OK and surface_of(tree).outcomes is not None else outcome


def is_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a native binding's panic (pyo3 raises ``PanicException``, a ``BaseException``)."""
    return type(exc).__name__ == "PanicException"


def steps_of(tree: Any) -> Callable[[list[tuple[str, tuple[Any, ...]]]], list[Any]] | None:
    """A tree's door for several calls in one round trip, in order, each answered alone (``IsolatedTree.steps``: a
    tree in a host process); None for a tree without one, or in lockstep (it flushes around its reads, one call at a
    time)."""
    return None if getattr(tree, "lockstep", False) else getattr(tree, "steps", None)


def scores_many(tree: Any, queries: list[list[int]], early_exit: bool = False) -> list[dict[tuple[int, int], int]]:
    """``scores(tree, q, early_exit)`` of each query, in one batch where the tree offers one (``find_matches_many``;
    with ``early_exit`` only a tree that says it batches any query, ``batches_early_exit``: one in a host process)."""
    many = getattr(tree, "find_matches_many", None)
    if not queries:
        return []
    if many is None or (early_exit and not getattr(tree, "batches_early_exit", False)):
        return [scores(tree, q, early_exit) for q in queries]
    return [_plain(answer.scores) for answer in (many(queries, True) if early_exit else many(queries))]


def plain_scores(answer: Any) -> dict[tuple[int, int], int]:
    """A ``find_matches`` answer's scores as ``scores`` returns them."""
    return _plain(answer.scores)


def _plain(by_rank: dict[Any, int]) -> dict[tuple[int, int], int]:
    return {(rank, 0) if isinstance(rank, int) else tuple(rank): score for rank, score in by_rank.items()}


def scores(tree: Any, query: list[int], early_exit: bool = False) -> dict[tuple[int, int], int]:
    """Return ``find_matches`` scores as a plain ``{(worker_id, dp_rank): score}`` dict.

    A tree that keys its scores by plain worker id (``ai-dynamo-runtime`` 0.6.0 and older,
    which have no data-parallel ranks) is read as rank ``(worker_id, 0)``.
    """
    return {
        (rank, 0) if isinstance(rank, int) else tuple(rank): score
        for rank, score in tree.find_matches(query, early_exit).scores.items()
    }


@dataclass(frozen=True)
class Capabilities:
    """What a target's API offers, probed on one tree it makes (older Dynamo releases offer less)."""

    dump: bool  # dump_tree_as_events
    dp_ranks: bool  # scores keyed by (worker_id, dp_rank); False: by plain worker id, ranks merged
    rank_removal: bool  # remove_worker_dp_rank
    surface: Surface = FULL  # what the target's door cannot carry (harness.surface)
    lockstep: bool = False  # every round trip costs a fixed delay: rows run many trees at once (harness.lockstep)

    def notes(self) -> list[str]:
        out = []
        if not self.dump:
            out.append("no dump_tree_as_events: dumps are not compared")
        if not self.dp_ranks:
            out.append("scores keyed by plain worker id: streams use dp rank 0 only")
        return out


def capabilities(factory: Callable[[], Any]) -> Capabilities:
    """Probe a target: store one block for rank (1, 0) and read how it answers.

    A target that cannot even be probed is taken to have the full API, so the rows that use
    it run and report the real error.
    """
    try:
        tree = factory()
    except Exception:  # the rows report it
        return Capabilities(True, True, False)
    rank_removal, surface = callable(getattr(tree, "remove_worker_dp_rank", None)), surface_of(tree)
    batched = bool(getattr(tree, "lockstep", False))
    if batched:  # probing would cost a round trip; such a target is one of kvproof's adapters, whose API is known
        dispose(tree)
        return Capabilities(True, True, rank_removal, surface, batched)
    try:
        apply(tree, 1, KvCacheEvent(0, Stored(None, (Block(7, 70),)), 0))
        keys = list(tree.find_matches([7], False).scores)
        plain = bool(keys) and all(isinstance(k, int) for k in keys)
        return Capabilities(has_dump(tree), not plain, rank_removal, surface)
    except Exception:  # the rows report it
        return Capabilities(True, True, rank_removal, surface)
    finally:
        dispose(tree)


def has_dump(tree: Any) -> bool:
    """Whether a tree can dump itself (``ai-dynamo-runtime`` before 0.6.1 cannot)."""
    return callable(getattr(tree, "dump_tree_as_events", None))


def dispose(tree: Any) -> None:
    """Release a tree's resources (a thread pool's event threads); a no-op for plain trees."""
    close = getattr(tree, "close", None)
    if close is not None:
        close()


class RoutedImpl:
    """A concurrent tree whose workers are routed to ``worker_id % lanes`` (used sequentially)."""

    def __init__(self, tree: Any, lanes: int) -> None:
        self.tree, self.lanes = tree, lanes

    def apply_event(self, worker_id: int, event: Any) -> None:
        number = integer_of(worker_id)  # a numpy id routes like the int it stands for; a bad one is refused on lane 0
        self.tree.lane(number % self.lanes if number is not None and number >= 0 else 0).apply_event(worker_id, event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tree, name)


# ----------------------------------------------------------------------------- dumps

DumpEntry = tuple[int, int, "int | None", tuple[int, ...]]


def dump_entry(line: str) -> DumpEntry:
    """One dump line as a ``(worker, dp, parent, block hashes)`` tuple."""
    worker, event = decode_router_event(line)
    assert isinstance(event.data, Stored)
    return worker, event.dp_rank, event.data.parent_hash, tuple(b.ext for b in event.data.blocks)


def dump_entries(tree: Any) -> list[DumpEntry]:
    """Return a target's dump, in its order, as ``(worker, dp, parent, block hashes)`` tuples."""
    return [dump_entry(line) for line in tree.dump_tree_as_events()]


def replayable(entries: list[DumpEntry]) -> tuple[list[DumpEntry], list[DumpEntry]]:
    """Split dump entries into those a fresh tree accepts in order and those it would reject.

    An entry is replayable when it hangs from the root or from a block an earlier entry
    credited to the same rank. Dynamo 1.6.1 also writes entries for ranks below parents they
    no longer hold (docs/dynamo-findings.md F2); those are the rejected ones.
    """
    held: dict[tuple[int, int], set[int]] = {}
    kept, dropped = [], []
    for entry in entries:
        worker, dp, parent, blocks = entry
        mine = held.setdefault((worker, dp), set())
        if parent is None or parent in mine:
            kept.append(entry)
            mine.update(blocks)
        else:
            dropped.append(entry)
    return kept, dropped


def canonical(entries: list[DumpEntry]) -> list[DumpEntry]:
    """Return dump entries as a sorted list (a multiset: dump order is not part of the contract)."""
    return sorted(entries, key=repr)


def canonical_dump(tree: Any) -> list[DumpEntry]:
    """Return a target's dump as a sorted list of ``(worker, dp, parent, block hashes)``."""
    return canonical(dump_entries(tree))

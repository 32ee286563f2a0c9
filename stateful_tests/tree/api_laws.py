"""Two laws of a tree's public API that no single event shows: dumps rebuild, bad input is harmless.

- **Dump rebuild.** Applying ``dump_tree_as_events()`` in order to an empty tree is
  accepted event by event and rebuilds an equal tree: the same scores for every query
  (without ``early_exit``, which depends on node boundaries the dump merges away), the
  same blocks credited to each rank by the dump, and the same snapshot where the tree has
  one. Source: crtc.md §7 "Dump (newest)"; the dump is how Dynamo restores
  router replicas.
- **Bad input.** Malformed events (bad JSON, missing fields, wrong types, out-of-range
  integers, unknown variants), bad worker ids and bad queries raise an error and leave the
  tree exactly as it was (same dump, same scores). For kvproof's own trees the error is a
  typed ``KvProofError``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...spec.errors import KvProofError
from ...spec.rules import Variant
from ..harness import targets
from ..harness.surface import LeftOut, NotOnSurface
from ..harness.targets import canonical, dump_entries
from .streams import Stream, apply_op, not_carried


def check_dump_rebuild(
    factory: Callable[[], Any], stream: Stream, known: list[str] | None = None, left_out: LeftOut | None = None
) -> list[str]:
    """Apply ``stream`` to a fresh tree, rebuild a second tree from its dump, and compare.

    A refused dump entry that names a parent the same rank was not credited with earlier in
    the dump is finding F2 (docs/dynamo-findings.md): when ``known`` is a list, such refusals
    are appended to it as ``"F2"`` instead of being returned as problems. Operations the tree's
    surface cannot carry are not applied (``left_out`` counts them).
    """
    tree, rebuilt = factory(), factory()
    try:
        return _rebuild(tree, rebuilt, stream, known, left_out if left_out is not None else LeftOut())
    finally:
        targets.dispose(tree)
        targets.dispose(rebuilt)


def _rebuild(tree: Any, rebuilt: Any, stream: Stream, known: list[str] | None, left_out: LeftOut) -> list[str]:
    for op in stream.ops:
        gap = not_carried(tree, op)
        if gap is not None:
            left_out.add(gap.part, gap.why)
        else:
            apply_op(tree, op)
    problems = []
    lines = tree.dump_tree_as_events()
    kept, unreplayable = targets.replayable([targets.dump_entry(line) for line in lines])
    for line in lines:
        body = json.loads(line)
        try:
            rebuilt.apply_event(body["worker_id"], json.dumps(body["event"]).encode())
        except Exception as exc:  # the law is that no dump entry is refused
            if known is not None and targets.dump_entry(line) in unreplayable:
                known.append("F2")
                continue
            problems.append(f"dump entry refused on replay ({targets.outcome_of(exc)}): {line}")
    queries = [list(q) for q in sorted({tuple(q) for qs in stream.queries for q in qs})]
    for q, a, b in zip(queries, targets.scores_many(tree, queries), targets.scores_many(rebuilt, queries)):
        if a != b:
            more = sorted(rank for rank, score in a.items() if score > b.get(rank, 0))
            why = (
                f": the original scores {', '.join(map(str, more))} higher than its own dump rebuilds (it credits "
                "blocks its dump does not hold, or its dump loses some)"
                if more
                else ""
            )
            problems.append(f"find_matches({q}): original {a}, rebuilt {b}{why}")
    original = dump_index(tree)
    if known is not None and unreplayable:  # F2: the refused entries credit nothing a rebuild can hold
        original = _index_of(kept)
    if original != dump_index(rebuilt):
        problems.append("the rebuilt tree's dump credits different blocks")
    if hasattr(tree, "snapshot") and tree.snapshot() != rebuilt.snapshot():
        problems.append("the rebuilt tree indexes different blocks (snapshot)")
    return problems


def dump_index(tree: Any) -> dict[tuple[int, int], frozenset[int]]:
    """Return, per rank, the blocks a tree's dump credits it with (the dump's abstract content).

    Shapes may legitimately differ after a rebuild (a chain written as one event becomes one
    node, which a later event may extend), so the law compares what is credited, not how.
    """
    return _index_of(dump_entries(tree))


def _index_of(entries: list[targets.DumpEntry]) -> dict[tuple[int, int], frozenset[int]]:
    index: dict[tuple[int, int], set[int]] = {}
    for worker, dp, _parent, blocks in entries:
        index.setdefault((worker, dp), set()).update(blocks)
    return {rank: frozenset(blocks) for rank, blocks in index.items()}


def _stored(blocks: Any, parent: Any = None, **extra: Any) -> dict:
    return {"event_id": 1, "data": {"stored": {"parent_hash": parent, "blocks": blocks}}, **extra}


BAD_EVENTS: list[tuple[str, Any]] = [
    ("not JSON", b"garbage"),
    ("empty payload", b""),
    ("not UTF-8", b"\xff\xfe"),
    ("a JSON list", b"[1, 2]"),
    ("missing event_id", json.dumps({"data": "cleared"}).encode()),
    ("missing data", json.dumps({"event_id": 1}).encode()),
    ("unknown variant", json.dumps({"event_id": 1, "data": {"evicted": {}}}).encode()),
    ("negative block hash", json.dumps(_stored([{"block_hash": -5, "tokens_hash": 1}])).encode()),
    ("float block hash", json.dumps(_stored([{"block_hash": 5.5, "tokens_hash": 1}])).encode()),
    ("string tokens hash", json.dumps(_stored([{"block_hash": 5, "tokens_hash": "1"}])).encode()),
    ("u64 overflow", json.dumps(_stored([{"block_hash": 2**64, "tokens_hash": 1}])).encode()),
    ("missing tokens_hash", json.dumps(_stored([{"block_hash": 5}])).encode()),
    ("blocks not a list", json.dumps(_stored({"block_hash": 5, "tokens_hash": 1})).encode()),
    ("dp_rank beyond u32", json.dumps(_stored([{"block_hash": 5, "tokens_hash": 1}], dp_rank=2**32)).encode()),
    ("negative parent", json.dumps(_stored([{"block_hash": 5, "tokens_hash": 1}], parent=-1)).encode()),
    ("removed hash not an int", json.dumps({"event_id": 1, "data": {"removed": {"block_hashes": ["5"]}}}).encode()),
    ("removed missing list", json.dumps({"event_id": 1, "data": {"removed": {}}}).encode()),
    ("a block entry not an object", json.dumps(_stored([5])).encode()),
    ("a block entry a list", json.dumps(_stored([[5, 1]])).encode()),
    ("stored body not an object", json.dumps({"event_id": 1, "data": {"stored": [5]}}).encode()),
    ("stored body a string", json.dumps({"event_id": 1, "data": {"stored": "blocks"}}).encode()),
    ("removed body not an object", json.dumps({"event_id": 1, "data": {"removed": [5]}}).encode()),
    # hostile (docs/hostile-input.md): every tree, Dynamo included, refuses these
    ("event_id given twice", b'{"event_id":1,"event_id":2,"data":"cleared"}'),
    ("NaN in an ignored field", b'{"event_id":1,"data":"cleared","x":NaN}'),
    ("-0 as event_id", b'{"event_id":-0,"data":"cleared"}'),
    (
        "a 5,000-digit block hash",
        b'{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":' + b"9" * 5000 + b',"tokens_hash":1}]}}}',
    ),
    ("nesting 100,000 deep in data", b'{"event_id":1,"data":' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    ("a unit variant with a value", b'{"event_id":1,"data":{"cleared":5}}'),
]

BAD_WORKERS: list[tuple[str, Any]] = [("negative worker", -1), ("worker beyond u64", 2**64), ("worker of 5,000 digits", 10**5000)]

BAD_QUERIES: list[tuple[str, Any]] = [
    ("negative local hash", [-1]),
    ("string local hash", ["a"]),
    ("local hash beyond u64", [2**64]),
    ("not a sequence", 7),
    ("a local hash of 5,000 digits", [10**5000]),
    ("a set (no order)", {1, 2}),
]

PROBES = [[100], [1, 2, 3], [1, 2, 3, 4], [1, 2, 5], [1, 2]]


def _observe(tree: Any) -> tuple:
    dump = tuple(canonical(dump_entries(tree))) if targets.has_dump(tree) else ()
    return tuple(sorted(targets.scores(tree, q).items()) for q in PROBES), dump


VALID_UNDER: dict[str, Variant] = {"a block entry a list": Variant.BLOCKS_AS_ARRAYS}
"""Bad inputs that a rule variant (``spec.rules``) makes valid: case name -> variant."""


def check_tree_bad_input(
    factory: Callable[[], Any],
    require_typed: bool = False,
    variants: frozenset[Variant] = frozenset(),
    left_out: LeftOut | None = None,
) -> tuple[int, list[str]]:
    """Throw every bad input at a populated tree; return ``(inputs tried, problems)``.

    Cases that one of ``variants`` makes valid input (``VALID_UNDER``) are not thrown. A case the
    target's door cannot carry (``NotOnSurface``: a Python set, say, to a target on the wire) is not
    counted as tried: it goes into ``left_out`` (without one it raises).
    """
    tree = factory()
    try:
        return _bad_input(tree, require_typed, frozenset(n for n, v in VALID_UNDER.items() if v in variants), left_out)
    finally:
        targets.dispose(tree)


def _bad_input(
    tree: Any, require_typed: bool, exempt: frozenset[str] = frozenset(), left_out: LeftOut | None = None
) -> tuple[int, list[str]]:
    from ...spec.events import Block, KvCacheEvent, Stored

    for worker, blocks in ((1, [(1, 100), (2, 200), (3, 300), (4, 400)]), (2, [(1, 100), (2, 200), (5, 500)])):
        targets.apply(tree, worker, KvCacheEvent(0, Stored(None, tuple(Block(*b) for b in blocks))))
    before = _observe(tree)
    problems, tried = [], 0
    cases = [(name, lambda p=p: tree.apply_event(1, p)) for name, p in BAD_EVENTS if name not in exempt]
    good = json.dumps({"event_id": 1, "data": "cleared"}).encode()
    cases += [(name, lambda w=w: tree.apply_event(w, good)) for name, w in BAD_WORKERS]
    cases += [(name, lambda q=q: tree.find_matches(q)) for name, q in BAD_QUERIES]
    for name, call in cases:
        tried += 1
        try:
            call()
        except NotOnSurface as gap:
            if left_out is None:
                raise
            tried -= 1
            left_out.add(gap.part, gap.why, where=name)
            continue
        except Exception as exc:
            if require_typed and not isinstance(exc, KvProofError):
                problems.append(f"{name}: untyped {type(exc).__name__}: {exc}")
        else:
            problems.append(f"{name}: accepted")
        if _observe(tree) != before:
            problems.append(f"{name}: changed the tree")
            before = _observe(tree)
    return tried, problems

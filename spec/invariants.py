"""Every structural invariant of the compressed tree as a named predicate.

Each predicate returns True when the invariant holds. ``node_violations`` collects the
names of the ones that fail for one node, so that every ``check()`` (reference and
implementation alike) states each law once, here.

Source: docs/sources.md#crtc-8 "Invariants stated or checked" (``probe_check``, ``debug_assert``s and the documented
contracts); docs/sources.md#dynamo-crtc-readme "Node State".
"""

from __future__ import annotations

from collections.abc import Mapping

from .coverage import EdgeState, covers
from .rules import DEFAULT_RULES, RuleSet
from .shape import child_key, should_clear_children


def edge_position(edge: tuple, ext: int) -> int | None:
    """Return the position of ``ext`` in ``edge``; a repeated hash resolves to its last position.

    Source: docs/sources.md#crtc-2 "edge_index ... A repeated hash resolves to its last position".
    """
    for i in range(len(edge) - 1, -1, -1):
        if edge[i].ext == ext:
            return i
    return None


def edge_index_of(edge: tuple) -> dict[int, int]:
    """Return the edge index: each external hash of ``edge`` -> its position, a repeated hash -> its last.

    Both trees keep this index beside each edge (``edge_position`` without the scan).

    Source: docs/sources.md#crtc-2 "edge_index ... A repeated hash resolves to its last position".
    """
    return {block.ext: i for i, block in enumerate(edge)}


def is_edge_nonempty(state: EdgeState) -> bool:
    """Check if a non-root node's edge holds at least one block."""
    return len(state.edge) > 0


def is_cutoffs_strictly_inside(state: EdgeState) -> bool:
    """Check if every cutoff ``k`` satisfies ``0 < k < len(edge)``."""
    n = len(state.edge)
    return all(0 < k < n for k in state.worker_cutoffs.values())


def is_full_disjoint_from_cutoffs(state: EdgeState) -> bool:
    """Check if no rank is both a full-edge worker and a cutoff worker."""
    return not (state.full_edge_workers & set(state.worker_cutoffs))


def is_child_keyed_by_first_local(key: int, child: EdgeState) -> bool:
    """Check if a child hangs under the first local hash of its edge."""
    return bool(child.edge) and child_key(child) == key


def is_internal_if_it_has_children(internal: bool, child_count: int) -> bool:
    """Check if a node with children is marked internal (the flag is set with the first child and is sticky)."""
    return internal or child_count == 0


def is_holderless_childless(state: EdgeState, child_count: int, rules: RuleSet = DEFAULT_RULES) -> bool:
    """Check if a node with no full-edge worker has no children (removal clears them: ``should_clear_children``).

    ``rules``: the per-block tree (``Variant.PER_BLOCK_NODES``, up to 1.2.1) never clears children, so there a
    node nobody holds keeps its children and the invariant holds trivially.

    Source: docs/sources.md#dynamo-crtc-readme "Removal" ("removal may clear children only when no full-edge workers
    remain").
    """
    return not should_clear_children(state, child_count, rules)


def is_edge_index_consistent(edge: tuple, edge_index: Mapping[int, int]) -> bool:
    """Check if the edge index maps every external hash of the edge to its last position, and nothing else."""
    return dict(edge_index) == edge_index_of(edge)


def is_lookup_entry_on_holder(state: EdgeState, rank, ext: int, edge_index: Mapping[int, int] | None = None) -> bool:
    """Check if a rank's lookup entry for ``ext`` names a node whose edge holds ``ext`` and that the rank covers there.

    Holds for in-contract streams; streams with colliding hashes can strand entries
    (docs/sources.md#crtc-13 E8, E33), exactly as in Dynamo. Given the node's edge index (which
    ``is_edge_index_consistent`` checks on its own), the position is one dictionary lookup, so a
    ``check()`` stays linear in the tree's size however long an edge gets; without it, a scan.
    """
    pos = edge_index.get(ext) if edge_index is not None else edge_position(state.edge, ext)
    return pos is not None and covers(state, rank, pos)


NODE_PREDICATES = (
    is_edge_nonempty,
    is_cutoffs_strictly_inside,
    is_full_disjoint_from_cutoffs,
)


def node_violations(
    state: EdgeState,
    internal: bool,
    children: Mapping[int, EdgeState],
    edge_index: Mapping[int, int] | None = None,
    rules: RuleSet = DEFAULT_RULES,
) -> list[str]:
    """Return the names of the invariants one non-root node breaks (empty: none), under ``rules``."""
    failed = [p.__name__ for p in NODE_PREDICATES if not p(state)]
    if not is_internal_if_it_has_children(internal, len(children)):
        failed.append(is_internal_if_it_has_children.__name__)
    if not is_holderless_childless(state, len(children), rules):
        failed.append(is_holderless_childless.__name__)
    for key, child in children.items():
        if not is_child_keyed_by_first_local(key, child):
            failed.append(f"{is_child_keyed_by_first_local.__name__}[{key}]")
    if edge_index is not None and not is_edge_index_consistent(state.edge, edge_index):
        failed.append(is_edge_index_consistent.__name__)
    return failed


def root_violations(state: EdgeState, children: Mapping[int, EdgeState]) -> list[str]:
    """Return the names of the invariants the root breaks: its edge is empty and nobody holds it."""
    failed = []
    if state.edge or state.full_edge_workers or state.worker_cutoffs:
        failed.append("is_root_edge_empty")
    for key, child in children.items():
        if not is_child_keyed_by_first_local(key, child):
            failed.append(f"{is_child_keyed_by_first_local.__name__}[{key}]")
    return failed

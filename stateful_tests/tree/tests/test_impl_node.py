"""One node of the concurrent tree (impl/node.py): its published view, its shape version, and the read step.

The laws (seed 004 "Node State"; crtc.md §7 "Per-node protection"): a view reuses its index only
while the edge is the same object; a shape change needs this thread's exclusive gate and leaves the
version even and moved; a read step descends only when the version it read was even and has not
moved since, so a reader never pairs one edge with another edge's children; the repr names the
edge, the full holders, the cutoffs, stickiness and the version (what a failed check() prints).
"""

from __future__ import annotations

import threading

import pytest

from kvproof.impl import _sync
from kvproof.impl.node import ConcurrentNode, ConcurrentNodeView, ReadStep, RootStep
from kvproof.spec.coverage import cover_prefix, new_edge
from kvproof.spec.primitives import Block


def edge(*locals_, rank=(1, 0)):
    return new_edge(tuple(Block(x, 100 * x) for x in locals_), rank)


def node_with_child():
    parent, child = ConcurrentNode(edge(1, 2)), ConcurrentNode(edge(3))
    parent.children[3] = child
    return parent, child


def test_a_view_reuses_its_index_only_for_the_same_edge():
    state = edge(1, 2, 3)
    view = ConcurrentNodeView.of(state)
    assert view.index == {100: 0, 200: 1, 300: 2}
    assert ConcurrentNodeView.of(cover_prefix(state, (2, 0), 2), view).index is view.index
    assert ConcurrentNodeView.of(edge(1, 2, 3), view).index is not view.index  # an equal edge, another object: a fresh index


def test_a_shape_change_needs_the_exclusive_gate_and_moves_the_version_by_two():
    node = ConcurrentNode(edge(1))
    with pytest.raises(AssertionError, match=r"^shape changes take the exclusive gate \(held by this thread\)"):
        node.begin_shape_change()
    seen = []
    for _ in range(2):
        with node.gate.exclusive():
            node.begin_shape_change()
            seen.append(node.version)
            node.end_shape_change()
            seen.append(node.version)
    assert seen == [1, 2, 3, 4]


def test_a_coverage_change_keeps_the_edge_index_object():
    """A publish or an update that changes only the coverage reuses the index (no rebuild on every event)."""
    node = ConcurrentNode(edge(1, 2, 3))
    index = node.view.index
    node.publish(cover_prefix(node.view.state, (2, 0), 2))
    node.update(lambda s: cover_prefix(s, (3, 0), 1))
    assert node.view.index is index and node.view.state.worker_cutoffs == {(2, 0): 2, (3, 0): 1}


class NodeRecorder:
    """A controller for one thread: it records every decision point; nothing ever waits."""

    def __init__(self):
        self.points = []

    def yield_point(self, name):
        self.points.append(name)

    def block_until(self, ready, what):
        assert ready(), what

    def current(self):
        return 1


def test_a_nodes_locks_are_one_bare_lock_natively_and_named_under_a_scheduler():
    native = ConcurrentNode(edge(1))
    assert native.children_lock is native.state_lock and type(native.state_lock) is type(threading.Lock())
    recorder = NodeRecorder()
    _sync.control(recorder)
    try:
        node = ConcurrentNode(edge(1, 2))
        assert node.children_lock is not node.state_lock
        with node.gate.shared():
            node.publish(cover_prefix(node.view.state, (2, 0), 1))
            node.children_snapshot()
    finally:
        _sync.control(None)
    assert recorder.points == [
        f"node{node.id}.shape_gate.shared",
        f"node{node.id}.state.acquire",
        f"node{node.id}.children.acquire",
    ]


@pytest.mark.parametrize("moment", ["stable", "during a shape change", "after a shape change"])
def test_a_read_step_descends_only_over_a_stable_unmoved_version(moment):
    parent, child = node_with_child()
    if moment == "during a shape change":
        parent.version = 1  # odd: a writer is between begin and end
    step = ReadStep(parent)
    step.edge_state()
    if moment == "after a shape change":
        parent.version += 2
    below = step.child(3)
    if moment == "stable":
        assert below is not None and below.node is child and isinstance(below, ReadStep)
    else:
        assert below is None
    assert step.child(9) is None  # no such child


def test_a_read_step_that_has_not_read_the_version_does_not_descend():
    parent, _ = node_with_child()
    assert ReadStep(parent).child(3) is None


def test_the_root_step_enters_any_child():
    parent, child = node_with_child()
    root = RootStep(parent)
    assert root.child(3).node is child and root.child(9) is None


def test_the_repr_names_edge_holders_cutoffs_stickiness_and_version():
    node = ConcurrentNode(cover_prefix(edge(1, 2, 3), (2, 0), 2))
    node.internal, node.version = True, 4
    assert repr(node) == f"Node#{node.id}([1 2 3] full=[(1, 0)] cut={{(2, 0): 2}} internal=True v=4)"

"""spec/api.py: the tree API every target provides, as the embedded trees declare it.

Law: each embedded tree is a ``KvTree`` (and a ``DpRankRemoval`` and a ``CheckedTree`` where it says so), and
declares each of the protocol's methods with the protocol's parameters first: the same names, in the same order, of
the same kinds, with the same defaults, so a caller written against ``spec.api`` (``early_exit=False`` when left out)
gets the same call on every tree. A tree may add parameters after them if each has a default (``check(lookups=True)``);
annotations may be wider (a tree also takes a decoded ``KvCacheEvent``).
"""

import inspect

import pytest

from kvproof.impl.indexer import ThreadPoolIndexer
from kvproof.impl.radix_tree import ConcurrentRadixTree
from kvproof.reference.radix_tree import RadixTree
from kvproof.spec.api import CheckedTree, DpRankRemoval, KvTree

TREES = {"reference": RadixTree, "impl": ConcurrentRadixTree, "impl-pool": ThreadPoolIndexer}

API: dict[type, tuple[str, ...]] = {
    KvTree: ("apply_event", "find_matches", "remove_worker", "clear_all_blocks", "dump_tree_as_events"),
    DpRankRemoval: ("remove_worker_dp_rank",),
    CheckedTree: ("check", "snapshot"),
}
"""The methods each protocol declares, as spec/api.py states them (named here: a mutation tool adds functions of its
own to a class, so the class's namespace is not the list)."""
PROTOCOLS = tuple(API)


def members(protocol: type) -> tuple[str, ...]:
    """The methods ``protocol`` declares, each checked to be a function of the protocol itself."""
    assert all(inspect.isfunction(vars(protocol).get(name)) for name in API[protocol]), protocol
    return API[protocol]


def parameters(function) -> list[tuple[str, object, object]]:
    """``(name, kind, default)`` of each parameter: the call's shape without its annotations."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def takes_the_protocols_call(mine, theirs) -> bool:
    """The protocol's parameters come first, unchanged; any the tree adds after them have a default."""
    own, declared = parameters(mine), parameters(theirs)
    return own[: len(declared)] == declared and all(
        default is not inspect.Parameter.empty for _, _, default in own[len(declared) :]
    )


def test_the_protocols_declare_the_tree_api_with_early_exit_off_by_default():
    for protocol in PROTOCOLS:
        members(protocol)
    assert inspect.signature(KvTree.find_matches).parameters["early_exit"].default is False


@pytest.mark.parametrize("name", sorted(TREES))
def test_each_embedded_tree_declares_the_protocols_methods_with_their_parameters(name):
    tree = TREES[name]
    # Each method by name (not issubclass: a mutation tool's functions in the protocol's namespace join its member list).
    assert all(callable(getattr(tree, method, None)) for method in members(KvTree)), f"{name} lacks a KvTree method"
    for protocol in PROTOCOLS:
        if protocol is not KvTree and not all(hasattr(tree, m) for m in members(protocol)):
            continue  # an optional protocol the tree does not take up
        for method in members(protocol):
            assert takes_the_protocols_call(getattr(tree, method), getattr(protocol, method)), f"{name}.{method}"


def test_negative_control_a_changed_default_or_a_required_extra_parameter_is_told_apart():
    class EagerTree(RadixTree):
        def find_matches(self, sequence, early_exit=True):
            return super().find_matches(sequence, early_exit)

    class StrictCheck(RadixTree):
        def check(self, lookups):
            return super().check(lookups)

    assert takes_the_protocols_call(RadixTree.find_matches, KvTree.find_matches)
    assert not takes_the_protocols_call(EagerTree.find_matches, KvTree.find_matches)
    assert not takes_the_protocols_call(StrictCheck.check, CheckedTree.check)

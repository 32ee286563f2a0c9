"""Sequential implementations, exact, checked against the spec.

- ``radix_tree.RadixTree``: the compressed radix tree, a drop-in for ``dynamo._core.RadixTree``.
- ``sequences``: the active-sequence state (``ActiveSequences``, the slot tracker).
- ``wire``: the trees' fast reading of an event (msgspec), agreeing with ``spec.events.decode_event``.
"""

if __name__ != "kvproof.reference":
    raise ImportError(
        f"import kvproof.reference, not {__name__}: the reference/ folder is installed as the package kvproof.reference"
        " (pyproject package-dir), and importing it by its folder name would load a second copy of every module"
    )

from .radix_tree import RadixTree

__all__ = ["RadixTree"]

"""Sequential implementations, exact, checked against the spec.

- ``radix_tree.RadixTree``: the compressed radix tree, a drop-in for ``dynamo._core.RadixTree``.
"""

from .radix_tree import RadixTree

__all__ = ["RadixTree"]

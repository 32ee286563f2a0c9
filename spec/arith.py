"""Arithmetic the spec's rules are written in, so that one text both runs and is proved.

Each numeric kernel of the spec (a cutoff after a removal, a split's carried cutoff, a hit
length, a GPU count) takes an ``ops`` argument: the operations it may use beyond ``+``,
``-``, ``*`` and comparisons. ``PY`` (the default) is plain Python; ``proofs/`` passes a Z3
instance whose ``ite`` builds ``If`` terms, so the Z3 proof is about the very function the
reference and the implementation call, not a transcription of it.

Kernels are written with ``ops.ite(cond, a, b)`` instead of ``a if cond else b`` and
``ops.min``/``ops.max``/``ops.floordiv`` instead of the built-ins. ``floordiv`` is only ever
applied to a non-negative dividend and a positive divisor, where Python's ``//`` and SMT's
integer division agree (docs/sources.md#tooling-6, "Semantic mismatch").
"""

from __future__ import annotations

from typing import Any, Protocol


class Arith(Protocol):
    """The operations a kernel may use."""

    def ite(self, cond: Any, then: Any, otherwise: Any) -> Any: ...

    def min(self, a: Any, b: Any) -> Any: ...

    def max(self, a: Any, b: Any) -> Any: ...

    def floordiv(self, a: Any, b: Any) -> Any: ...

    def all(self, *conds: Any) -> Any: ...


class PythonArith:
    """Plain Python: what the trees run."""

    @staticmethod
    def ite(cond: Any, then: Any, otherwise: Any) -> Any:
        return then if cond else otherwise

    @staticmethod
    def min(a: Any, b: Any) -> Any:
        return a if a <= b else b

    @staticmethod
    def max(a: Any, b: Any) -> Any:
        return a if a >= b else b

    @staticmethod
    def floordiv(a: Any, b: Any) -> Any:
        return a // b

    @staticmethod
    def all(*conds: Any) -> Any:
        return all(conds)


PY = PythonArith()

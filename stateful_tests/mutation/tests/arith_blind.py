"""The negative control of the end-to-end mutation test: calls spec/arith.py's operations, checks nothing.

Every mutant is reached (so none is "no tests") and none can fail a test: mutmut must report
them all as survivors. Not named ``test_*``: only that test runs it.
"""

from kvproof.spec.arith import PY


def test_calls_without_looking():
    PY.ite(True, 1, 2)
    PY.min(3, 5)
    PY.max(3, 5)
    PY.floordiv(7, 2)
    PY.all(True, False)

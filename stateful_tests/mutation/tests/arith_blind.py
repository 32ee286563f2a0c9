"""The negative control of the end-to-end mutation test: calls spec/arith.py's operations but floordiv, checks nothing.

Every mutant but floordiv's is reached and none can fail a test, not even one that makes an
operation raise a TypeError (``all(None)``): mutmut must report them all as survivors, and
floordiv's, which no test reaches, as gaps (each with its diff). Not named ``test_*``: only that
test runs it.
"""

from kvproof.spec.arith import PY


def test_calls_without_looking():
    for call in (lambda: PY.ite(True, 1, 2), lambda: PY.min(3, 5), lambda: PY.max(3, 5), lambda: PY.all(True, False)):
        try:
            call()
        except (TypeError, ArithmeticError):
            pass  # blind on purpose: the negative control looks at nothing (mutmut's own forced failure still gets out)

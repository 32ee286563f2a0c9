"""Checks of spec/arith.py's plain-Python operations, run only by the end-to-end mutation test.

Not named ``test_*``: the suite never collects it; mutmut runs it against mutants of
spec/arith.py (test_mutate_e2e.py), where it must kill them.
"""

from kvproof.spec.arith import PY


def test_ite_picks_by_the_condition():
    assert PY.ite(True, 1, 2) == 1
    assert PY.ite(False, 1, 2) == 2


def test_min_and_max():
    assert PY.min(3, 5) == 3 and PY.min(5, 3) == 3
    assert PY.max(3, 5) == 5 and PY.max(5, 3) == 5


def test_floordiv():
    assert PY.floordiv(7, 2) == 3


def test_all():
    assert PY.all(True, True) is True
    assert PY.all(True, False) is False

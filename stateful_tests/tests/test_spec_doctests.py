"""The examples written in spec/'s docstrings run, so the documentation of the rules cannot drift from them."""

import doctest
import importlib
import pkgutil

import pytest

import kvproof.spec

MODULES = sorted(m.name for m in pkgutil.iter_modules(kvproof.spec.__path__, "kvproof.spec."))


@pytest.mark.parametrize("name", MODULES)
def test_spec_docstring_examples_hold(name):
    failed, _ = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, report=True)
    assert failed == 0, f"{name}: {failed} docstring examples fail"


def test_spec_has_docstring_examples():
    """The runner is not vacuous: spec/ carries examples, and every one is found."""
    found = sum(len(t.examples) for name in MODULES for t in doctest.DocTestFinder().find(importlib.import_module(name)))
    assert found >= 1


def test_a_wrong_example_fails():
    """Negative control: a docstring example that states the wrong value is reported."""
    import types

    broken = types.ModuleType("broken_spec_example")
    broken.__doc__ = ">>> 1 + 1\n3\n"
    failed, tried = doctest.testmod(broken, report=False)
    assert (failed, tried) == (1, 1)

"""kvproof: the executable specification and verification suite for a KV-cache-aware router's state.

The layers live in the repository's top-level folders and are installed as subpackages:
``kvproof.spec`` (the law), ``kvproof.reference`` (sequential, exact), ``kvproof.impl``
(concurrent), ``kvproof.stateful_tests`` (state machines, conformance, stress) and
``kvproof.proofs``. The ``kvproof`` command (``kvproof.cli``) runs them as one gate.
"""

__version__ = "0.1.0"

PYTEST_COLLECTS_FOLDERS = False
"""Set by the suite's root ``conftest.py`` before collection: pytest (``--import-mode=importlib``) then imports the
folders ``proofs/`` and ``stateful_tests/`` under their bare names to hold their test files, which their guards
otherwise refuse (a second copy of every module). One flag, read by both guards, instead of each walking the stack."""

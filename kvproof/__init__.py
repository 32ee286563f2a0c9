"""kvproof: the executable specification and verification suite for a KV-cache-aware router's state.

The layers live in the repository's top-level folders and are installed as subpackages:
``kvproof.spec`` (the law), ``kvproof.reference`` (sequential, exact), ``kvproof.impl``
(concurrent), ``kvproof.stateful_tests`` (state machines, conformance, stress) and
``kvproof.proofs``. The ``kvproof`` command (``kvproof.cli``) runs them as one gate.
"""

__version__ = "0.1.0"

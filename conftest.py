"""The suite's pytest configuration lives in the package (``kvproof.stateful_tests.pytest_suite``), so the
tests of every folder (stateful_tests/, proofs/, kvproof/) share one profile, one slow marker and the
oracle fixtures."""

import kvproof

kvproof.PYTEST_COLLECTS_FOLDERS = True  # before collection: pytest may now import proofs/ and stateful_tests/ by folder name

pytest_plugins = ["kvproof.stateful_tests.pytest_suite"]

"""What a test does when an optional package it needs is missing: skip with the reason, or fail when CI requires it.

CI sets ``KVPROOF_REQUIRE_DYNAMO``, ``KVPROOF_REQUIRE_RAY``, ``KVPROOF_REQUIRE_MUTMUT`` (and
``KVPROOF_REQUIRE_TORCH``, read by the round-trip backends), so a missing oracle, executor or tool
fails there instead of passing as a skip; on a developer's machine the skip says what to install.
"""

from __future__ import annotations

import os


def skip_or_fail(why: str | None, variable: str, what: str = "") -> None:
    """Do nothing when ``why`` is None (the package is there); else fail if ``variable`` is set, skip otherwise."""
    import pytest

    if not why:
        return
    if os.environ.get(variable):
        pytest.fail(f"{variable} is set but {what}{why}")
    pytest.skip(why)

"""Negative controls that count only the failure they expect.

A control runs a check over a deliberately broken subject and must see the check fail. Any
failure will not do: a broken twin that crashes for an unrelated reason (a ``TypeError`` in
its own code, a missing attribute) would pass off as a catch. Each control therefore states
what it expects, as an ``Expected``: the exception type, a pattern its message must match,
and, for a law, the law's body, whose own assertion must be the one that raised.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Expected:
    """The failure a control expects: ``kind`` raised with a message matching ``message`` (a regex),
    from within the function named ``raised_in`` when that is given."""

    kind: type[BaseException] = AssertionError
    message: str = ""
    raised_in: str | None = None

    def describe(self) -> str:
        where = f" raised in {self.raised_in}" if self.raised_in else ""
        return f"{self.kind.__name__} matching {self.message!r}{where}"


def mismatch(exc: BaseException, expected: Expected) -> str | None:
    """Return why ``exc`` is not the expected failure, or None when it is."""
    if not isinstance(exc, expected.kind):
        return f"failed with {type(exc).__name__}: {str(exc)[:200]}, not {expected.describe()}"
    if expected.message and not re.search(expected.message, str(exc)):
        return f"failed with a message not matching {expected.message!r}: {str(exc)[:200]}"
    if expected.raised_in and expected.raised_in not in {f.name for f in traceback.extract_tb(exc.__traceback__)}:
        return f"failed outside {expected.raised_in}: {type(exc).__name__}: {str(exc)[:200]}"
    return None


def caught_as_expected(run: Callable[[], object], expected: Expected) -> str | None:
    """Run a check over a broken subject; return None if it failed as expected, else why the control does not count."""
    try:
        run()
    except Exception as exc:  # the expected failure, or any other: told apart below
        return mismatch(exc, expected)
    return "the check passed"

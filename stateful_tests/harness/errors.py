"""The two ways a campaign refuses to run, as the command reports them: bad input, or a machine that lacks something.

A room's ``run_*()`` raises these instead of printing and exiting, so the campaign stays a library call; the
``kvproof`` command turns both into exit 2 with the message (``kvproof/cli/app.py``), as the README promises for a
usage error and for a target, oracle, extra or browser that cannot be had here.
"""

from __future__ import annotations

from ...spec.errors import KvProofError


class CampaignInputError(KvProofError, ValueError):
    """An input a campaign cannot use (a file that does not read, a name it does not know); ``param`` names the
    option or argument it came from, when there is one."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class Unavailable(KvProofError, RuntimeError):
    """Something this machine lacks that a campaign needs: an optional extra, Chromium, Dynamo, a checkout."""

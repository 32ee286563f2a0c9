"""The ``kvproof`` command: a thin layer of click commands over the campaigns of the rooms.

One module per command group (``check``, ``conform``, ``replay``, ``explore``, ``stress``, ``fuzz``, ``trace``,
``releases``, ``serve``, ``prove``, ``deepinfer``, ``mutate``, ``bench``, ``docs``); the shared vocabulary (parameter types,
option decorators, ``finish``) in ``options``; the group and the entry point in ``app``. Exit codes are those of
``kvproof.report`` (0 pass, 1 fail, 2 usage error or an environment problem, 3 skipped).
"""

from __future__ import annotations

from . import bench, check, conform, deepinfer, docs, explore, fuzz, mutate, prove, releases, replay, serve, stress, trace  # noqa: F401
from .app import entry, main
from .options import TARGET, TargetType

__all__ = ["TARGET", "TargetType", "entry", "main"]

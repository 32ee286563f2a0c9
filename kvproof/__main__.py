"""``python -m kvproof``: the same command as ``kvproof``."""

from .cli import entry

entry()

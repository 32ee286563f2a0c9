"""``python -m kvproof``: the same command as ``kvproof``."""

from .cli import main

main()

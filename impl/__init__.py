"""Concurrent implementations (threads, locks, versioned shape gates), checked against the
spec and the reference. ``_sync`` is the only module here that may import ``threading``."""

if __name__ != "kvproof.impl":
    raise ImportError(
        f"import kvproof.impl, not {__name__}: the impl/ folder is installed as the package kvproof.impl"
        " (pyproject package-dir), and importing it by its folder name would load a second copy of every module"
    )

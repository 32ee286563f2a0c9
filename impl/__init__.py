"""Concurrent implementations (threads, locks, versioned shape gates), checked against the
spec and the reference. ``_sync`` is the only module here that may import ``threading``."""

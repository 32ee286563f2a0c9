"""The named rejections of the KV-router index.

Every rejection is a typed exception. A rejected event leaves the index exactly as it was,
with one documented exception inherited from Dynamo's single-threaded ``RadixTree``: a
``removed`` batch that names unknown hashes applies every valid hash first and then reports
the first error (docs/sources.md#crtc-12 item 4, experiments E4 and E39).

The event errors subclass ``RuntimeError`` because the real binding raises
``RuntimeError("Failed to apply event: ...")`` for them; wire-format errors subclass
``ValueError`` as the binding's ``"Failed to deserialize KvCacheEvent"`` does. Code written
against ``dynamo._core.RadixTree`` therefore keeps working when it catches the built-in
types.

Source: docs/sources.md#crtc-1 "Errors (KvCacheEventError)"; docs/sources.md#crtc-13 "Harness".
"""

from __future__ import annotations


class KvProofError(Exception):
    """Base of every error this project raises on purpose."""


class KvCacheEventError(KvProofError, RuntimeError):
    """An event that is well formed but cannot be applied to the current state."""

    dynamo_message = "Failed to apply event"

    def __init__(self, detail: str) -> None:
        super().__init__(f"Failed to apply event: {detail}")
        self.detail = detail


class ParentBlockNotFound(KvCacheEventError):
    """A ``stored`` event names a parent the emitting rank does not hold (Dynamo: "Failed to find parent block")."""


class BlockNotFound(KvCacheEventError):
    """A ``removed`` event names a block the emitting rank does not hold (Dynamo: "Failed to find block")."""


class InvalidBlockSequence(KvCacheEventError):
    """A ``stored`` event lists its own parent among its blocks (Dynamo: "Invalid block sequence")."""


class MalformedEvent(KvProofError, ValueError):
    """An event payload that does not decode: bad JSON, a missing field, a value out of range."""


class InvalidArgument(KvProofError, OverflowError, ValueError):
    """A method argument of the right type but outside its domain (a negative hash, say).

    It is an ``OverflowError`` too, because the binding raises that for out-of-range integers.
    """


class InvalidArgumentType(KvProofError, TypeError):
    """A method argument of the wrong type (a string where a hash belongs, say)."""


class Poisoned(KvProofError, RuntimeError):
    """A structure refuses every call because an earlier write was interrupted and left it inconsistent.

    An exception that is not one of the typed rejections (an injected fault, a ``MemoryError``, a
    ``KeyboardInterrupt``) can stop a write of the concurrent structures between two of its steps. The
    structure then checks itself; if its invariants no longer hold, it is *poisoned*: every later call
    raises this error, naming the interrupted call and the first broken invariant, until the owner
    rebuilds it (the router's answer to a lost index: re-sync from the workers). Issue 12.
    """

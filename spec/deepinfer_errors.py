"""The named rejections of the DeepInfer service arithmetic and the state round trip.

Every rejection is typed and raised before any state changes: a rejected ``load`` leaves the
cache byte-for-byte as it was (the guard and every argument check run before the first
write). Each error also subclasses the built-in type a Python caller would expect
(``ValueError`` for an out-of-domain number, ``TypeError`` for a wrong type), so code that
catches the built-ins keeps working.

Source: docs/sources.md#deepinfer-11 Listings 11.7 (docs/sources.md#deepinfer-listings) and 11.9 (the book's
``assert``s, made typed); docs/sources.md#state-roundtrip-5 (5.3) ("The book uses ``assert``; the spec should raise a
specific exception").
"""

from __future__ import annotations

from .errors import KvProofError


class DeepInferError(KvProofError):
    """Base of every rejection in the DeepInfer rule families."""


class InvalidQuantity(DeepInferError, ValueError):
    """A number outside its domain: a negative length, a fraction above 1, a NaN or infinity."""


class InvalidQuantityType(DeepInferError, TypeError):
    """A quantity of the wrong type: a bool or string where an integer or exact rational belongs."""


class LayoutError(DeepInferError, ValueError):
    """A state layout that breaks its own rules (S > R, a zero-row ring, duplicate names...)."""


class TruncationGuardError(DeepInferError, RuntimeError):
    """``load`` refused: the model drops SWA layers but YOCO prefill truncation is ``"off"``.

    Source: Listing 11.7 (docs/sources.md#deepinfer-listings) lines 836-837 (``assert ... != "off"``), raised before
    any write.
    """


class StateArgumentError(DeepInferError, ValueError):
    """A ``select``/``load`` argument outside its domain: unknown state id, a position below -1,
    a transfer tensor or destination of the wrong size or shape."""


class StateArgumentType(DeepInferError, TypeError):
    """A ``select``/``load`` argument of the wrong kind: not a byte array, a dtype other than
    ``uint8``, arrays of different libraries or on different devices, a non-integer position."""

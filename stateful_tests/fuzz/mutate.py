"""Byte-level mutation of an encoded event, drawn by Hypothesis so that a failing case shrinks.

A mutation is ``(kind, at, token)`` with ``at`` a fraction of the length: ``flip`` xors one byte,
``cut`` deletes a short run, ``dup`` repeats one, ``insert`` puts a hostile token in (a number
literal, ``NaN``, a quote, a bracket, an invalid UTF-8 byte, a BOM, a NUL), ``truncate`` ends the
payload there. Mutations apply left to right.
"""

from __future__ import annotations

from hypothesis import strategies as st

TOKENS = (
    b"NaN",
    b"-0",
    b"1e999",
    b'"',
    b"[",
    b"]",
    b"{",
    b"}",
    b",",
    b":",
    b"\xff",
    b"\xc3",
    b"\xef\xbb\xbf",
    b"\x00",
    b"9" * 30,
    b"null",
    b"true",
    b"\\u",
    b" ",
    b"\n",
)

Mutation = tuple[str, float, bytes]

mutation = st.tuples(
    st.sampled_from(["flip", "cut", "dup", "insert", "truncate"]), st.floats(0, 1, allow_nan=False), st.sampled_from(TOKENS)
)
mutations = st.lists(mutation, max_size=3)


def apply_mutations(payload: bytes, ops: list[Mutation]) -> bytes:
    """Apply ``ops`` to ``payload`` in order; every op is total (a position past the end is clamped)."""
    out = bytearray(payload)
    for kind, at, token in ops:
        i = min(int(at * len(out)), max(len(out) - 1, 0))
        if kind == "flip" and out:
            out[i] ^= 1 << (i % 8)
        elif kind == "cut":
            del out[i : i + 1 + i % 4]
        elif kind == "dup":
            out[i:i] = out[i : i + 1 + i % 4]
        elif kind == "insert":
            out[i:i] = token
        elif kind == "truncate":
            del out[i:]
    return bytes(out)

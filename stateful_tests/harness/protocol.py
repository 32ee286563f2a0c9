"""The wire protocol of a target in any language: its messages, as the one source of truth, and their JSON Schema.

A target that Python cannot import (a Rust, Go or Node indexer) speaks this protocol: one JSON
object per line on its stdin and stdout (``--target exec:CMD``), or one JSON object per POST on
loopback HTTP (``--target http://127.0.0.1:PORT``). ``kvproof serve`` speaks it for any Python
target. ``docs/protocol.md`` describes it for an implementer; ``docs/protocol.schema.json`` is
``schema()`` written out (``python -m kvproof.stateful_tests.harness.protocol`` rewrites it; a test
fails on drift).

Every message carries the protocol version ``v`` and the request's ``id``; requests are tagged by
``op``, answers by ``kind``. Several requests may be in flight at once: answers are matched to
requests by ``id``, in whatever order they come. A request of another version is refused with
``UnsupportedVersion`` and changes nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

import msgspec

VERSION = 1
"""The protocol version this kvproof speaks (``v`` in every message)."""


class WireRequest(msgspec.Struct, tag_field="op", forbid_unknown_fields=True, kw_only=True):
    """Every request: the protocol version and the request's id (unique among those in flight)."""

    v: int
    id: int


class HelloRequest(WireRequest, tag="hello"):
    """The handshake, sent first: the answer says what the implementation supports (``HelloAnswer``)."""


class OpenRequest(WireRequest, tag="open"):
    """Make a fresh, empty tree; the answer (``OpenedAnswer``) names it for the requests that follow."""


class CloseRequest(WireRequest, tag="close"):
    """Forget ``tree`` and release what it holds."""

    tree: int


class ApplyEventRequest(WireRequest, tag="apply_event"):
    """``RadixTree.apply_event(worker_id, event)``: ``event`` is the Dynamo RouterEvent JSON text exactly as the
    drop-in API takes it (malformed text included: the tree must refuse it with a typed error); bytes that are not
    UTF-8 travel base64-encoded with ``base64: true``."""

    tree: int
    worker_id: int
    event: str
    base64: bool = False


class FindMatchesRequest(WireRequest, tag="find_matches"):
    """``RadixTree.find_matches(sequence, early_exit)``: every rank's overlap score along the local block hashes."""

    tree: int
    sequence: list[int]
    early_exit: bool = False


class RemoveWorkerRequest(WireRequest, tag="remove_worker"):
    """Drop every rank of ``worker_id`` and forget them."""

    tree: int
    worker_id: int


class RemoveWorkerDpRankRequest(WireRequest, tag="remove_worker_dp_rank"):
    """Drop the one rank ``(worker_id, dp_rank)`` and forget it (capability ``rank_removal``)."""

    tree: int
    worker_id: int
    dp_rank: int


class ClearAllBlocksRequest(WireRequest, tag="clear_all_blocks"):
    """Drop every block of every rank of ``worker_id``; the ranks stay registered."""

    tree: int
    worker_id: int


class DumpRequest(WireRequest, tag="dump"):
    """``dump_tree_as_events``: the tree as RouterEvent JSON lines that rebuild it (capability ``dump``)."""

    tree: int


class CheckRequest(WireRequest, tag="check"):
    """The implementation's own invariant check, if it has one (capability ``check``): ``done`` or an error."""

    tree: int


AnyRequest = (
    HelloRequest
    | OpenRequest
    | CloseRequest
    | ApplyEventRequest
    | FindMatchesRequest
    | RemoveWorkerRequest
    | RemoveWorkerDpRankRequest
    | ClearAllBlocksRequest
    | DumpRequest
    | CheckRequest
)


class WireCapabilities(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """What an implementation supports; a row that needs what it lacks is skipped with the reason, never failed."""

    dump: bool = True  # the dump request
    rank_removal: bool = True  # remove_worker_dp_rank
    early_exit: bool = True  # find_matches with early_exit: true
    check: bool = False  # the check request
    dp_ranks: bool = True  # scores are per (worker_id, dp_rank); False: ranks merged under dp_rank 0
    concurrent: bool = False  # requests in flight at once run at once (events of different workers, reads racing them)


class WireAnswer(msgspec.Struct, tag_field="kind", forbid_unknown_fields=True, kw_only=True):
    """Every answer: the protocol version and the id of the request it answers (null when that could not be read)."""

    v: int
    id: int | None


class HelloAnswer(WireAnswer, tag="hello"):
    """The handshake's answer: the version spoken, the implementation's name, its capabilities."""

    implementation: str
    capabilities: WireCapabilities


class OpenedAnswer(WireAnswer, tag="opened"):
    """A fresh tree, by the id later requests use."""

    tree: int


class DoneAnswer(WireAnswer, tag="done"):
    """The request succeeded and returns nothing (an accepted event, a removal, a clear, a close, a check)."""


class ScoresAnswer(WireAnswer, tag="scores"):
    """``find_matches``: ``scores`` as ``[worker_id, dp_rank, score]`` triples (ranks scoring 0 may be left out),
    ``frequencies`` as the implementation reports them (possibly empty)."""

    scores: list[tuple[int, int, int]]
    frequencies: list[int] = []


class DumpAnswer(WireAnswer, tag="dump"):
    """The dump: RouterEvent JSON lines, each a ``{"worker_id", "event"}`` object as Dynamo's dump writes them."""

    events: list[str]


ErrorKind = Literal[
    "ParentBlockNotFound",
    "BlockNotFound",
    "InvalidBlockSequence",
    "MalformedEvent",  # the tree's typed refusals
    "InvalidArgument",  # a bad worker id, rank, query or early_exit (a TypeError, ValueError or OverflowError)
    "Panic",  # the implementation panicked but kept serving (a Rust panic caught at its boundary)
    "Failure",  # any other error the implementation raised
    "Unsupported",  # a request the implementation does not support (it said so in its capabilities)
    "UnknownTree",  # a tree id never opened, or closed
    "UnsupportedVersion",  # a message of another protocol version: refused, nothing changed
    "BadRequest",  # a line that is not a request of this protocol (bad JSON, an unknown op, a missing field)
]
ERROR_KINDS: tuple[str, ...] = ErrorKind.__args__  # type: ignore[attr-defined]


class ErrorAnswer(WireAnswer, tag="error"):
    """The request failed: ``error`` is its typed kind; ``exception`` the implementation's own name for it (optional)."""

    error: ErrorKind
    message: str = ""
    exception: str = ""


AnyAnswer = HelloAnswer | OpenedAnswer | DoneAnswer | ScoresAnswer | DumpAnswer | ErrorAnswer

_REQUEST_DECODER = msgspec.json.Decoder(AnyRequest)
_ANSWER_DECODER = msgspec.json.Decoder(AnyAnswer)
_ENCODER = msgspec.json.Encoder()


class ProtocolError(Exception):
    """A message that is not one of this protocol's (``kind``: ``BadRequest`` or ``UnsupportedVersion``)."""

    def __init__(self, kind: str, message: str, id: int | None = None) -> None:
        super().__init__(message)
        self.kind, self.id = kind, id


def encode(message: WireRequest | WireAnswer) -> bytes:
    """One message as compact JSON (no newline)."""
    return _ENCODER.encode(message)


def _version_and_id(raw: bytes) -> tuple[Any, int | None]:
    """The ``v`` and ``id`` of a message that may not decode as a whole (for the refusal's id)."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(obj, dict):
        return None, None
    number = obj.get("id")
    return obj.get("v"), number if isinstance(number, int) and not isinstance(number, bool) else None


def decode_request(raw: bytes) -> AnyRequest:
    """A request from its JSON; a ``ProtocolError`` names why it is none (another version is ``UnsupportedVersion``,
    whatever else it holds). The line is parsed once; a second, plain parse reads ``v`` and ``id`` of one that fails."""
    try:
        request = _REQUEST_DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        version, number = _version_and_id(raw)
        if version is not None and version != VERSION:
            raise _unsupported(version, number) from None
        raise ProtocolError("BadRequest", f"not a request of protocol version {VERSION}: {exc}", number) from None
    if request.v != VERSION:
        raise _unsupported(request.v, request.id)
    return request


def _unsupported(version: Any, number: int | None) -> ProtocolError:
    return ProtocolError(
        "UnsupportedVersion", f"protocol version {version!r} is not supported: this side speaks version {VERSION}", number
    )


def decode_answer(raw: bytes) -> AnyAnswer:
    """An answer from its JSON; a ``ProtocolError`` (``BadRequest``) when it is none, or of another version."""
    try:
        answer = _ANSWER_DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ProtocolError("BadRequest", f"not an answer of protocol version {VERSION}: {exc}") from None
    if answer.v != VERSION:
        raise ProtocolError("UnsupportedVersion", f"an answer of protocol version {answer.v}, not {VERSION}", answer.id)
    return answer


def schema() -> dict[str, Any]:
    """The JSON Schema of every message, generated from the Structs above (``request`` and ``answer`` at the top)."""
    (request, answer), components = msgspec.json.schema_components([AnyRequest, AnyAnswer], ref_template="#/$defs/{name}")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://kvproof.dev/protocol.schema.json",
        "title": f"kvproof target protocol, version {VERSION}",
        "description": "One message of the protocol (docs/protocol.md): a request to a target or its answer.",
        "version": VERSION,
        "oneOf": [{"$ref": "#/$defs/request"}, {"$ref": "#/$defs/answer"}],
        "$defs": {"request": request, "answer": answer, **components},
    }


SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "protocol.schema.json"
"""Where the schema is committed (a test holds it to ``schema()``)."""


def schema_text() -> str:
    """The schema as the committed file holds it."""
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_PATH
    target.write_text(schema_text())
    print(f"wrote {target}")

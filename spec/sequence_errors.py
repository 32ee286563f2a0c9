"""The named rejections of the active-sequence state (the slot tracker's write and read model).

Every rejection is a typed exception raised *before* any state changes: a rejected call
leaves the WorkerTable, the RequestIndex, every ActiveSequences and the PromptRegistry
exactly as they were. ``MissingExpectedDuration`` is the one read-side error: it is
returned (per worker) or raised by the modeled-remaining-time read, never by a write.

Each class records the HTTP status the real slot tracker (``python -m dynamo.slot_tracker``,
ai-dynamo-runtime 1.6.1) answers for the same condition, or ``None`` where HTTP has no
counterpart (docs/sequences.md has the table):

============================  ======  ==================================================
error                         HTTP    slot-tracker condition
============================  ======  ==================================================
``WorkerNotFound``            404     ``/add`` to an unknown worker or dp rank
``RequestNotFound``           404     ``/prefill_complete`` of an unknown request id
``DuplicateRequest``          409     ``/add`` of an id already booked anywhere in the tracker
``DuplicateWorker``           409     ``/register`` of a worker id already registered
``InvalidDpRange``            400     ``/register`` with dp_size 0 or a range past u32
``SequenceArgumentTypeError`` 422     a field of the wrong JSON type (a numeric request id)
``InvalidSequenceArgument``   422     a number out of its domain (negative tokens, hash > i64)
``InvalidDuration``           None    a negative, non-finite or oversized prefill duration
                                      (replica sync drops such an event as malformed)
``InvalidInstant``            None    a time that is not a finite, non-negative instant
``TokenLoadOverflow``         None    the worker's prefill token sum would pass u64; 1.6.1
                                      wraps and then panics (docs/sequences-findings.md S1)
``WrongWorker``               None    a worker-fenced free or mark naming another owner
                                      (replica sync drops it)
``MissingExpectedDuration``   None    the modeled-time read with an unmodeled prefill active
============================  ======  ==================================================

Source: docs/sources.md#sequences-1 (SequenceError variants, RequestIndex), docs/sources.md#sequences-2,
docs/sources.md#sequences-3 "Errors", docs/sources.md#sequences-8-2 to docs/sources.md#sequences-8-3 (HTTP codes
confirmed on 1.6.1); docs/sources.md#dynamo-sequences-readme "Modeled remaining prefill time".
"""

from __future__ import annotations

from .errors import KvProofError


class SequenceError(KvProofError):
    """Base of every rejection of the active-sequence state."""

    http_status: int | None = None


class WorkerNotFound(SequenceError, LookupError):
    """The (worker_id, dp_rank) slot is not registered (Dynamo: ``Worker ... not found``)."""

    http_status = 404

    def __init__(self, worker: object) -> None:
        super().__init__(f"Worker {worker!r} not found")
        self.worker = worker


class RequestNotFound(SequenceError, LookupError):
    """The request id is not booked in the RequestIndex (Dynamo: ``Request ... not found``)."""

    http_status = 404

    def __init__(self, request_id: str) -> None:
        super().__init__(f"Request {request_id} not found")
        self.request_id = request_id


class DuplicateRequest(SequenceError):
    """The request id is already booked, on ``owner`` (Dynamo: ``Request ... already exists``)."""

    http_status = 409

    def __init__(self, request_id: str, owner: object) -> None:
        super().__init__(f"Request {request_id} already exists (assigned to worker {owner!r})")
        self.request_id = request_id
        self.owner = owner


class DuplicateWorker(SequenceError):
    """The worker id is already registered (Dynamo: ``worker ... already registered``)."""

    http_status = 409

    def __init__(self, worker_id: int) -> None:
        super().__init__(f"worker {worker_id} already registered")
        self.worker_id = worker_id


class UnknownWorker(SequenceError, LookupError):
    """Unregistering a worker id that is not registered (Dynamo: ``worker ... not found``)."""

    http_status = 404

    def __init__(self, worker_id: int) -> None:
        super().__init__(f"worker {worker_id} not found")
        self.worker_id = worker_id


class InvalidDpRange(SequenceError, ValueError):
    """A dp range with ``dp_size == 0`` or ``dp_start + dp_size`` past u32."""

    http_status = 400


class SequenceArgumentTypeError(SequenceError, TypeError):
    """An argument of the wrong type (a number where a request id belongs, a bool as a time)."""

    http_status = 422


class InvalidSequenceArgument(SequenceError, ValueError):
    """An argument of the right type outside its domain (negative tokens, a hash past u64)."""

    http_status: int | None = 422


class InvalidDuration(InvalidSequenceArgument):
    """A prefill duration that is negative, not finite, or past ``Duration::MAX``."""

    http_status = None


class InvalidInstant(InvalidSequenceArgument):
    """A time that is negative, not finite, or not a number of nanoseconds."""

    http_status = None


class TokenLoadOverflow(InvalidSequenceArgument):
    """Admitting the request would push the worker's prefill token sum past u64."""

    http_status = None


class WrongWorker(SequenceError):
    """A worker-fenced free or mark names a worker that does not own the request."""

    http_status = None

    def __init__(self, request_id: str, named: object, owner: object) -> None:
        super().__init__(f"Request {request_id} is owned by {owner!r}, not {named!r}")
        self.request_id = request_id
        self.named = named
        self.owner = owner


class MissingExpectedDuration(SequenceError):
    """The modeled-time read met an active prefill without an expected duration.

    It is a value as well as an exception: the multi-worker read returns one per worker
    whose read fails, so instances compare equal by class (Rust: ``Err(MissingExpectedDuration)``).
    """

    def __init__(self) -> None:
        super().__init__("MissingExpectedDuration")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return "MissingExpectedDuration()"

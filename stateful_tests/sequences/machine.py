"""A Hypothesis state machine that drives the spec, the reference and the implementation together.

``SequenceMachine`` keeps one ``SpecSlotTracker`` (the law) and one instance of every subject
(the reference and the concurrent implementation by default; any tracker through
``sequence_machine_for``), on a fake clock that only moves when a rule says so. Rules:
register and unregister workers, add requests (ids from a small pool, so duplicates
happen; workers and ranks that may not exist; prompts over three hashes, so lineages
share prefixes; tokens 0, small or large; durations unmodeled, zero, whole ms or with
sub-ms parts), mark prefills completed and free (sometimes fenced to a worker, sometimes
the wrong one), sweep expiry, advance the clock (by sub-ms steps, seconds, or past the 30 s
check and 300 s expiry), read at arbitrary later or earlier times, and send malformed input.

Every call is made on every tracker: all must return the same value or raise the same
typed error, and a rejected call must leave each tracker's state exactly as it was. After
every step the machine compares the authoritative state (``snapshot()``), the registry
(``registry_snapshot()``), ``check()``, and every read (``loads``, ``potential_loads``,
``modeled_remaining_prefill_times``) at the current time and at 1.5 ms, 1 s, 10 s and
1000 s later. ``phenomena`` counts what the run exercised (credits capped and uncapped,
re-anchoring, spillover and anchor-only reads, missing durations, expiry, duplicates),
so ``sequences/tests/test_machine.py`` can show that the rules were reached, not assumed.

Source: docs/sources.md#dynamo-sequences-readme; docs/sources.md#sequences-2 to docs/sources.md#sequences-5,
docs/sources.md#sequences-10; docs/sources.md#aesthetics (model-based stateful tests).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ...spec.primitives import WorkerWithDpRank
from ...spec.sequence_errors import SequenceError
from ...spec.sequence_inputs import PrefillLoadHint, SequenceRequest, millis, secs
from ...spec.sequences import DEFAULT_EXPIRY
from ..harness.seeding import machine_settings
from .model import TARGETS, SpecSlotTracker

RIDS = ("r0", "r1", "r2", "r3", "r4", "r5")
WORKER_IDS = (1, 2, 3)
RANKS = st.sampled_from([WorkerWithDpRank(w, d) for w in (1, 2, 3, 9) for d in (0, 1, 2)])
BLOCKS = st.lists(st.integers(1, 3), max_size=4).map(tuple)
TOKENS = st.sampled_from([0, 1, 3, 40, 100, 1000, 123_457])
DURATIONS = st.one_of(
    st.none(),
    st.just(0),
    st.sampled_from([1, 250, 1000, 2000, 4000, 10_000]).map(millis),
    st.integers(0, 5000).map(millis),
    st.tuples(st.integers(0, 3000), st.sampled_from([1, 400_000, 600_000, 999_999])).map(lambda p: millis(p[0]) + p[1]),
    st.tuples(st.integers(0, 3000), st.sampled_from([1, 400_000, 600_000, 999_999])).map(lambda p: millis(p[0]) + p[1]),
)
STEPS = st.one_of(
    st.sampled_from([1, 100, 500, 1000, 2500]).map(millis),
    st.integers(0, 3000).map(millis),
    st.integers(1, 999_999),
    st.sampled_from([secs(31), secs(301)]),
)
READ_OFFSETS = (0, 1_500_000, secs(1), secs(10), secs(1000))
PHENOMENA = (
    "credit_uncapped",
    "credit_capped",
    "reanchor",
    "spill_reads",
    "anchor_only_reads",
    "missing_reads",
    "expired",
    "duplicates",
    "worker_not_found",
    "fenced_wrong_worker",
    "rejected_input",
)

Outcome = tuple[str, Any]


def _outcome(call: Callable[[], Any]) -> Outcome:
    try:
        return "ok", call()
    except SequenceError as exc:
        return type(exc).__name__, getattr(exc, "owner", None)


class SequenceMachine(RuleBasedStateMachine):
    """Drive the spec and every subject with the same calls (see the module docstring)."""

    subject_factories: ClassVar[dict[str, Callable[..., Any]]]
    runs: ClassVar[list[Counter]]

    def __init__(self) -> None:
        super().__init__()
        self.ready = False
        self.seen: Counter = Counter()
        self.compared = 0  # reads and states compared (the gate's "checks" column)

    # ------------------------------------------------------------------ helpers

    def _all(self):
        return [("spec", self.spec)] + list(self.subjects.items())

    def _call(self, what: str, fn: Callable[[Any], Any]) -> Outcome:
        """Make one call on every tracker; all outcomes must agree, rejections must change nothing."""
        results = {}
        for name, tracker in self._all():
            before = tracker.snapshot()
            results[name] = _outcome(lambda: fn(tracker))
            if results[name][0] != "ok":
                assert tracker.snapshot() == before, f"{name}: rejected {what} changed the state"
        expected = results["spec"]
        for name, got in results.items():
            assert got == expected, f"{what}: {name} gave {got!r}, spec gave {expected!r}"
        self.compared += len(results)
        return expected

    def _spec_prefill(self, rank):
        return self.spec.state.sequences[rank].prefill

    def _note_removal(self, rid: str) -> None:
        """Count what removing ``rid`` now will exercise (credit capped or not, re-anchoring)."""
        owner = self.spec.state.request_index.get(rid)
        if owner is None:
            return
        p = self._spec_prefill(owner)
        entry = next((e for e in p.order if e.request_id == rid), None)
        if entry is None:
            return
        if p.order[0].request_id == rid:
            self.seen["reanchor"] += len(p.order) > 1
        elif entry.duration:
            self.seen["credit_capped" if p.anchor_since + entry.duration > self.now else "credit_uncapped"] += 1

    # ------------------------------------------------------------------ rules

    @initialize(
        expiry=st.sampled_from([DEFAULT_EXPIRY, secs(2), None]),
        workers=st.lists(
            st.tuples(st.sampled_from(WORKER_IDS), st.sampled_from([0, 1]), st.sampled_from([1, 2])),
            min_size=1,
            max_size=3,
            unique_by=lambda w: w[0],
        ),
        warm=st.lists(st.tuples(st.sampled_from(RIDS), BLOCKS, TOKENS, DURATIONS, STEPS), min_size=2, max_size=4),
    )
    def start(self, expiry: int | None, workers: list[tuple[int, int, int]], warm: list[tuple]) -> None:
        """Register one to three workers, then queue two to four prefills on the first slot, a little apart,
        so that anchors, credits and spillover are within reach of the free-running rules."""
        self.spec = SpecSlotTracker(expiry)
        self.subjects = {name: factory(expiry) for name, factory in type(self).subject_factories.items()}
        self.now = 0
        for wid, start, size in workers:
            self._call("register", lambda t: t.register_worker(wid, start, size, self.now))  # _call runs it right away
        self.ready = True
        slot = WorkerWithDpRank(workers[0][0], workers[0][1])
        for rid, blocks, tokens, duration, dt in warm:
            self._add(rid, slot, blocks, tokens, duration, True, True, None)
            self.now += dt % secs(3)

    @precondition(lambda self: self.ready)
    @rule(dt=STEPS)
    def advance(self, dt: int) -> None:
        self.now += dt
        self.seen["steps"] += 1

    @precondition(lambda self: self.ready)
    @rule(dt=st.sampled_from([secs(29), secs(31), secs(301)]))
    def jump(self, dt: int) -> None:
        """Move the clock near or past the 30 s expiry check and the 300 s expiry."""
        self.now += dt

    @precondition(lambda self: self.ready)
    @rule(wid=st.sampled_from(WORKER_IDS), start=st.sampled_from([0, 1]), size=st.sampled_from([1, 2, 0]))
    def register(self, wid: int, start: int, size: int) -> None:
        self._call("register", lambda t: t.register_worker(wid, start, size, self.now))

    @precondition(lambda self: self.ready)
    @rule(wid=st.sampled_from(WORKER_IDS + (9,)))
    def unregister(self, wid: int) -> None:
        self._call("unregister", lambda t: t.unregister_worker(wid))

    def _add(self, rid, worker, blocks, tokens, duration, track, hinted, output) -> None:
        request = SequenceRequest(rid, worker, blocks, track, output, PrefillLoadHint(tokens, duration) if hinted else None)
        got = self._call(f"add {request!r}", lambda t: t.add_request(request, self.now))
        self.seen["duplicates"] += got[0] == "DuplicateRequest"
        self.seen["worker_not_found"] += got[0] == "WorkerNotFound"
        self.seen["steps"] += 1

    @precondition(lambda self: self.ready)
    @rule(
        rid=st.sampled_from(RIDS),
        worker=RANKS,
        blocks=st.one_of(BLOCKS, st.none()),
        tokens=TOKENS,
        duration=DURATIONS,
        track=st.sampled_from([True, True, True, False]),
        hinted=st.sampled_from([True, True, False]),
        output=st.one_of(st.none(), st.integers(0, 64)),
    )
    def add_anywhere(self, rid, worker, blocks, tokens, duration, track, hinted, output) -> None:
        """Add on any (worker, rank), registered or not, with any hint."""
        self._add(rid, worker, blocks, tokens, duration, track, hinted, output)

    @precondition(lambda self: self.ready and self.spec.state.sequences)
    @rule(rid=st.sampled_from(RIDS), blocks=BLOCKS, tokens=TOKENS, duration=DURATIONS, data=st.data())
    def add_on_a_slot(self, rid, blocks, tokens, duration, data) -> None:
        """Add a tracked prefill on a registered slot: queues build up behind an anchor."""
        worker = data.draw(st.sampled_from(sorted(self.spec.state.sequences)), label="slot")
        self._add(rid, worker, blocks, tokens, duration, True, True, None)

    def _fence(self, data: st.DataObject, rid: str):
        """Sometimes name the owner, sometimes another worker, mostly no worker at all."""
        kind = data.draw(st.sampled_from(["none", "none", "owner", "other"]), label="fence")
        owner = self.spec.state.request_index.get(rid)
        if kind == "owner" and owner is not None:
            return owner
        if kind == "other":
            return data.draw(RANKS, label="other worker")
        return None

    def _rid(self, data: st.DataObject) -> str:
        """Mostly a booked id (a prefilling one half the time), sometimes any id of the pool."""
        booked = sorted(self.spec.state.request_index)
        prefilling = sorted(e.request_id for q in self.spec.state.sequences.values() for e in q.prefill.order)
        pools = [RIDS] + [p for p in (booked, prefilling) if p]
        return data.draw(st.sampled_from(data.draw(st.sampled_from(pools), label="pool")), label="rid")

    @precondition(lambda self: self.ready)
    @rule(data=st.data())
    def mark(self, data: st.DataObject) -> None:
        rid = self._rid(data)
        worker = self._fence(data, rid)
        self._note_removal(rid)
        got = self._call(f"mark {rid} fenced to {worker!r}", lambda t: t.mark_prefill_completed(rid, self.now, worker))
        self.seen["fenced_wrong_worker"] += got[0] == "WrongWorker"

    @precondition(lambda self: self.ready)
    @rule(data=st.data())
    def free(self, data: st.DataObject) -> None:
        rid = self._rid(data)
        worker = self._fence(data, rid)
        self._note_removal(rid)
        got = self._call(f"free {rid} fenced to {worker!r}", lambda t: t.free(rid, self.now, worker))
        self.seen["fenced_wrong_worker"] += got[0] == "WrongWorker"

    def _queued(self) -> list[str]:
        return sorted(e.request_id for q in self.spec.state.sequences.values() for e in q.prefill.order[1:])

    @precondition(lambda self: self.ready and self._queued())
    @rule(data=st.data(), how=st.sampled_from(["mark", "free"]))
    def complete_out_of_order(self, data: st.DataObject, how: str) -> None:
        """Complete or free a prefill queued behind the anchor: the credit rule, capped or not."""
        rid = data.draw(st.sampled_from(self._queued()), label="queued")
        self._note_removal(rid)
        if how == "mark":
            self._call(f"mark {rid}", lambda t: t.mark_prefill_completed(rid, self.now))
        else:
            self._call(f"free {rid}", lambda t: t.free(rid, self.now))

    @precondition(lambda self: self.ready)
    @rule()
    def expire(self) -> None:
        before = len(self.spec.state.request_index)
        self._call("force_expiry", lambda t: t.force_expiry(self.now))
        self.seen["expired"] += before - len(self.spec.state.request_index)

    @precondition(lambda self: self.ready)
    @rule(dt=st.one_of(STEPS, st.integers(-secs(5), 0)), query=BLOCKS, isl=st.sampled_from([0, 7, 2**64 - 1]))
    def read_at(self, dt: int, query: tuple[int, ...], isl: int) -> None:
        """Read at an arbitrary later (or earlier) time without moving the clock."""
        at = max(0, self.now + dt)
        self._compare_reads(at)
        self._call(f"potential_loads {query} {isl} at {at}", lambda t: t.potential_loads(query, isl, at))

    @precondition(lambda self: self.ready)
    @rule(kind=st.sampled_from(["time", "duration", "nan", "inf", "tokens", "hash", "rid", "worker", "request", "dp", "huge"]))
    def malformed(self, kind: str) -> None:
        """Send one malformed argument: every tracker rejects it with the same typed error and changes nothing."""
        w = WorkerWithDpRank(1, 0)
        calls = {
            "time": lambda t: t.add_request(SequenceRequest("m", w), -1),
            "duration": lambda t: t.add_request(SequenceRequest("m", w, None, True, None, PrefillLoadHint(5, -3)), self.now),
            # Deliberately ill-typed: a float duration must be rejected with a typed error.
            "nan": lambda t: t.add_request(SequenceRequest("m", w, None, True, None, PrefillLoadHint(5, float("nan"))), self.now),  # type: ignore[arg-type]
            "inf": lambda t: t.loads(float("inf")),
            "tokens": lambda t: t.add_request(SequenceRequest("m", w, None, True, None, PrefillLoadHint(-1, None)), self.now),
            "hash": lambda t: t.add_request(SequenceRequest("m", w, (1, 2**64)), self.now),
            "rid": lambda t: t.mark_prefill_completed(5, self.now),
            "worker": lambda t: t.free("r0", self.now, worker="w1"),
            "request": lambda t: t.add_request({"request_id": "m"}, self.now),
            "dp": lambda t: t.register_worker(7, 2**32 - 1, 1, self.now),
            "huge": lambda t: t.add_request(
                SequenceRequest("m", w, None, True, None, PrefillLoadHint(2**64 - 1, None)), self.now
            ),
        }
        got = self._call(f"malformed {kind}", calls[kind])
        if kind == "huge" and got[0] == "ok":
            self._call("free m", lambda t: t.free("m", self.now))  # admitted on an idle worker: undo it
            return
        assert got[0] != "ok", f"malformed {kind} was accepted"
        self.seen["rejected_input"] += 1

    # ------------------------------------------------------------------ invariants

    def _compare_reads(self, at: int) -> None:
        loads = self._call(f"loads at {at}", lambda t: t.loads(at))[1]
        times = self._call(f"modeled times at {at}", lambda t: t.modeled_remaining_prefill_times(at))[1]
        for rank, seq in self.spec.state.sequences.items():
            if seq.prefill.order:
                modeled = all(e.duration is not None for e in seq.prefill.order)
                self.seen["spill_reads" if modeled else "anchor_only_reads"] += 1
                self.seen["missing_reads"] += not isinstance(times[rank], int)
        del loads

    @invariant()
    def everything_agrees(self) -> None:
        if not self.ready:
            return
        state, registry = self.spec.snapshot(), self.spec.registry_snapshot()
        self.spec.check()
        for name, tracker in self.subjects.items():
            tracker.check()
            assert tracker.snapshot() == state, f"{name}: authoritative state differs from the spec"
            assert tracker.registry_snapshot() == registry, f"{name}: registry differs from the spec's projection"
        for dt in READ_OFFSETS:
            self._compare_reads(self.now + dt)
        # Also read inside the anchor's own modeled duration (possibly before now): where its share
        # is partly done, so rounding, spillover and the anchor-only fallback all show.
        anchored = [q.prefill for q in state.sequences.values() if q.prefill.order and q.prefill.order[0].duration]
        if anchored:
            p = anchored[0]
            since, duration = p.anchor_since, p.order[0].duration
            # Checked just above (spec.sequence_invariants): a non-empty order has an anchor; the filter kept a duration.
            assert since is not None and duration is not None, f"anchored prefill without anchor or duration: {p}"
            for k in (1, 2):
                self._compare_reads(since + k * duration // 3)
        self.compared += 2 * len(self.subjects)

    def teardown(self) -> None:
        if self.ready:
            self.seen["_checks"] = self.compared
            type(self).runs.append(self.seen)


def sequence_machine_for(subjects: dict[str, Callable[..., Any]] | None = None, name: str | None = None) -> type[SequenceMachine]:
    """Return a ``SequenceMachine`` subclass driving the spec against ``subjects`` (name -> factory(expiry))."""
    chosen = subjects if subjects is not None else {k: v for k, v in TARGETS.items() if k != "spec"}
    return type(name or "SequenceMachine_" + "_".join(chosen), (SequenceMachine,), {"subject_factories": chosen, "runs": []})


def sequence_machine_settings(examples: int = 60, steps: int = 40) -> settings:
    """Return the settings the machine runs with: the tree machine's, with 40 steps by default."""
    return machine_settings(examples, steps)

"""Deliberately broken round trips: the negative controls of every round-trip law.

Each mutant is ``impl.state_roundtrip.RoundTrip`` with exactly one step broken. ``CAUGHT_BY``
names the laws (``deepinfer.roundtrip_laws.LAWS``) that must catch it on the standard cases;
``deepinfer/tests/test_mutants.py`` and the gate check that they do.

``TRAPS`` records the weak-test traps of state_roundtrip.md §5.5 (and the ones this suite
adds): for each, a mutant, a *weak* check that passes it, and the *strong* check that catches
it. The negative-control tests assert both halves, so the suite keeps proving that its
strong form is needed: if the weak check ever caught the mutant, the trap would no longer be
demonstrated and the test says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ...impl.state_roundtrip import RingGroup, RoundTrip, backend_for
from ...spec.hit_length import HitLengths, hit_lengths
from ...spec.state_layout import Ring, StateLayout, placements
from .roundtrip_laws import Case, make_cases, with_fill


class SharedOffByOne(RoundTrip):
    """Select AND load both place the window one position late: ``[lhp - S + 2, lhp + 1]`` (a consistent error)."""

    def window_start(self, ring: Ring, lhp: int) -> int:
        return lhp - ring.transfer_rows + 2


class SharedModS(RoundTrip):
    """Select AND load both use ``p mod S`` for the slot instead of ``p mod R`` (invisible when S = R)."""

    def ring_length(self, ring: Ring) -> int:
        return ring.transfer_rows or ring.rows


class SelectOffByOne(RoundTrip):
    """Select alone places the window one position late; load is right."""

    def select_ring(self, cache_rows: Any, out_rows: Any, group: RingGroup, lhp: int) -> None:
        super().select_ring(cache_rows, out_rows, group, lhp + 1)


class LoadOffByOne(RoundTrip):
    """Load alone writes the window one position late; select is right."""

    def load_ring(self, cache_rows: Any, tensor_rows: Any, group: RingGroup, lhp: int) -> None:
        super().load_ring(cache_rows, tensor_rows, group, lhp + 1)


class NoZeroFill(RoundTrip):
    """Rows for negative positions are left as the destination held them, not zeroed (A3)."""

    def zero_negative_rows(self, out_rows: Any, start: int, stop: int) -> None:
        return None


class ClearsRingOnLoad(RoundTrip):
    """Load zeroes the whole ring before writing the window (the "never leave stale rows" choice, A7)."""

    def load_ring(self, cache_rows: Any, tensor_rows: Any, group: RingGroup, lhp: int) -> None:
        cache_rows[:, : group.ring.rows * group.ring.row_bytes] = 0
        super().load_ring(cache_rows, tensor_rows, group, lhp)


class LoadClearsDropped(RoundTrip):
    """Load also zeroes the dropped region (pretending to rebuild the consumer state)."""

    def load(self, cache: Any, state_id: int, tensor: Any, last_hit_position: int, truncation_mode: str) -> None:
        super().load(cache, state_id, tensor, last_hit_position, truncation_mode)
        from ...spec.state_layout import dropped_cache_ranges

        for a, b in dropped_cache_ranges(self.layout):
            cache[state_id, a:b] = 0


class LoadIntoSlotZero(RoundTrip):
    """Load writes into state id 0 whatever state id it is given."""

    def load(self, cache: Any, state_id: int, tensor: Any, last_hit_position: int, truncation_mode: str) -> None:
        self._check_state_id(cache, state_id)
        super().load(cache, 0, tensor, last_hit_position, truncation_mode)


class NoCompressCopy(RoundTrip):
    """A CE handoff omits the dropped compression state (Listing 11.6 skipped)."""

    def copy_dropped_raw(self, cache_row: Any, out: Any) -> None:
        return None


class CopiesInsteadOfAlias(RoundTrip):
    """Raw-prefix select without a destination returns a copy, not the cache's own bytes."""

    def select(self, cache, state_id, last_hit_position, to_ce, out=None, copy=False):
        return super().select(cache, state_id, last_hit_position, to_ce, out, copy=True)


class SelectMovesSource(RoundTrip):
    """Select "moves" ring rows: it zeroes each source run after copying it (the cache changes)."""

    def select_ring(self, cache_rows: Any, out_rows: Any, group: RingGroup, lhp: int) -> None:
        super().select_ring(cache_rows, out_rows, group, lhp)
        rb = group.ring.row_bytes
        for r in self.runs(group.ring, lhp)[1]:
            cache_rows[:, r.slot * rb : (r.slot + r.n) * rb] = 0


class GuardAfterWrite(RoundTrip):
    """Load writes first and runs the truncation guard afterwards."""

    _guard_deferred = False  # True while the load writes: the guard waits until after it

    def guard(self, truncation_mode: object) -> None:
        if not self._guard_deferred:
            super().guard(truncation_mode)

    def load(self, cache: Any, state_id: int, tensor: Any, last_hit_position: int, truncation_mode: str) -> None:
        self._guard_deferred = True
        try:
            super().load(cache, state_id, tensor, last_hit_position, truncation_mode)
        finally:
            self._guard_deferred = False
        self.guard(truncation_mode)


class NoGuard(RoundTrip):
    """Load never runs the truncation guard."""

    def guard(self, truncation_mode: object) -> None:
        if not isinstance(truncation_mode, str):
            super().guard(truncation_mode)


class HandoffSizedStore(RoundTrip):
    """Raw-prefix select ignores ``to_ce`` for the stored size: it always hands over the live size."""

    def select(self, cache, state_id, last_hit_position, to_ce, out=None, copy=False):
        if self.layout.mode == "raw-prefix" and out is None:
            return super().select(cache, state_id, last_hit_position, True, None, copy)
        return super().select(cache, state_id, last_hit_position, to_ce, out, copy)


class HandoffShiftsStored(RoundTrip):
    """A CE handoff rearranges the stored rings one position early; the stored-only select is right."""

    def select(self, cache, state_id, last_hit_position, to_ce, out=None, copy=False):
        self._to_ce = to_ce
        return super().select(cache, state_id, last_hit_position, to_ce, out, copy)

    def select_ring(self, cache_rows: Any, out_rows: Any, group: RingGroup, lhp: int) -> None:
        shift = 1 if getattr(self, "_to_ce", False) and not group.dropped else 0
        super().select_ring(cache_rows, out_rows, group, lhp - shift)


class UnpaddedSwaDrop(RoundTrip):
    """``swa_drop_total_bytes_inference_pad`` counts the dropped rings without their padding, and the
    compression length follows the book's subtraction, so it absorbs the padding."""

    def __init__(self, layout: StateLayout, alloc_fill: int | None = None) -> None:
        super().__init__(layout, alloc_fill)
        unpadded = sum(p.payload_nbytes for p in placements(layout) if p.segment.dropped and isinstance(p.segment, Ring))
        self.sizes = replace(
            self.sizes,
            swa_drop_total_bytes_inference_pad=unpadded,
            dropped_compress_bytes=self.sizes.dropped_bytes_inference - unpadded,
        )


class PadsOffHost(RoundTrip):
    """On torch and cupy arrays (never numpy) ring-view select also zeroes each ring's padding: allowed by
    the spec (padding is unspecified) but no longer byte-identical across backends."""

    def select_ring(self, cache_rows: Any, out_rows: Any, group: RingGroup, lhp: int) -> None:
        super().select_ring(cache_rows, out_rows, group, lhp)
        payload = group.ring.transfer_rows * group.ring.row_bytes
        if backend_for(out_rows).name != "numpy" and group.tensor_stride > payload:
            out_rows[:, payload:] = 0


class NoStateIdCheck(RoundTrip):
    """The state id is not range-checked: -1 silently loads into the last slot, n raises IndexError."""

    def _check_state_id(self, cache: Any, state_id: object) -> int:
        return state_id  # type: ignore[return-value]


class ViaHost(RoundTrip):
    """Ring-view select stages each torch/cupy ring group through host memory (``.cpu()`` / ``cupy.asnumpy``)
    and back: byte-correct, so no law sees it; ``test_device_path_stays_on_the_device`` does."""

    def select_ring(self, cache_rows: Any, out_rows: Any, group: RingGroup, lhp: int) -> None:
        name = backend_for(cache_rows).name
        if name == "torch":
            staged = cache_rows.cpu().to(cache_rows.device)
        elif name == "cupy":
            import cupy

            staged = cupy.asarray(cupy.asnumpy(cache_rows))
        else:
            staged = cache_rows
        super().select_ring(staged, out_rows, group, lhp)


MUTANTS = (
    SharedOffByOne,
    SharedModS,
    SelectOffByOne,
    LoadOffByOne,
    NoZeroFill,
    ClearsRingOnLoad,
    LoadClearsDropped,
    LoadIntoSlotZero,
    NoCompressCopy,
    CopiesInsteadOfAlias,
    SelectMovesSource,
    GuardAfterWrite,
    NoGuard,
    HandoffSizedStore,
    HandoffShiftsStored,
    UnpaddedSwaDrop,
    PadsOffHost,
    NoStateIdCheck,
)

CAUGHT_BY: dict[type, tuple[str, ...]] = {
    SharedOffByOne: ("R1", "R2", "R3", "H1"),
    SharedModS: ("R1", "R2", "R3"),
    SelectOffByOne: ("R1", "R2", "T1", "T2"),
    LoadOffByOne: ("R1", "R3", "T1", "T2"),
    NoZeroFill: ("R1", "R2"),
    ClearsRingOnLoad: ("R1", "I2", "T1"),
    LoadClearsDropped: ("R1", "I3", "I2", "T1"),
    LoadIntoSlotZero: ("R1", "I1", "T1"),
    NoCompressCopy: ("R1", "C1"),
    CopiesInsteadOfAlias: ("P2",),
    SelectMovesSource: ("P1", "R1"),
    GuardAfterWrite: ("G1",),
    NoGuard: ("G1",),
    HandoffSizedStore: ("R1", "P2", "T3", "G2"),
    HandoffShiftsStored: ("S2", "R1", "R2"),
    UnpaddedSwaDrop: ("S1",),
    PadsOffHost: ("X1",),
    NoStateIdCheck: ("B1",),
}
"""Every law listed must fail for the mutant on the standard cases (seed 1, 60 cases); ``PadsOffHost``
only on a backend other than numpy."""


def _s_equals_r(cases: list[Case]) -> list[Case]:
    return [c for c in cases if all(s.rows == s.transfer_rows for s in c.layout.segments if isinstance(s, Ring))]


def _s_less_than_r(cases: list[Case]) -> list[Case]:
    return [c for c in cases if any(s.rows > s.transfer_rows > 0 for s in c.layout.segments if isinstance(s, Ring))]


def _single_slot(cases: list[Case]) -> list[Case]:
    return [replace(c, n_states=1, state_id=0) for c in cases]


def _negative_windows(cases: list[Case]) -> list[Case]:
    return [
        c
        for c in cases
        if c.layout.mode == "ring-view"
        and c.lhp < max((s.transfer_rows for s in c.layout.segments if isinstance(s, Ring)), default=0) - 1
    ]


@dataclass(frozen=True)
class Trap:
    """A test that is too weak to catch ``mutant``: ``weak_laws`` on ``weak_cases`` pass it, while
    ``strong_laws`` on ``strong_cases`` catch it."""

    name: str
    mutant: type
    weak_laws: tuple[str, ...]
    weak_cases: str
    strong_laws: tuple[str, ...]
    strong_cases: str
    source: str


TRAPS: tuple[Trap, ...] = (
    Trap(
        "a consistent off-by-one in select and load passes the book's round trip",
        SharedOffByOne,
        ("T1", "T2"),
        "standard",
        ("R2",),
        "standard",
        "state_roundtrip.md §5.5 item 1",
    ),
    Trap(
        "a consistent mod S for mod R passes the book's round trip",
        SharedModS,
        ("T1", "T2"),
        "standard",
        ("R2",),
        "S<R",
        "state_roundtrip.md §5.5 item 1",
    ),
    Trap(
        "mod S for mod R is invisible to ground truth when S = R",
        SharedModS,
        ("R1", "R2", "R3"),
        "S=R",
        ("R2",),
        "S<R",
        "state_roundtrip.md §5.5 item 2",
    ),
    Trap(
        "a missing zero-fill passes when destinations are pre-zeroed",
        NoZeroFill,
        ("R1", "R2"),
        "zero-filled, negative windows",
        ("R1", "R2"),
        "garbage, negative windows",
        "state_roundtrip.md §5.5 item 3",
    ),
    Trap(
        "a load that clears the ring passes on a zeroed cache",
        ClearsRingOnLoad,
        ("I2", "T1"),
        "zero-filled",
        ("I2",),
        "garbage",
        "state_roundtrip.md §6 A7 / §5.4 I2",
    ),
    Trap(
        "a load that clears the dropped region passes on a zeroed cache",
        LoadClearsDropped,
        ("I3",),
        "zero-filled",
        ("I3",),
        "garbage",
        "state_roundtrip.md §5.4 I3",
    ),
    Trap(
        "a load into the wrong slot passes with one state id",
        LoadIntoSlotZero,
        ("I1", "T1", "R1"),
        "single slot",
        ("I1",),
        "standard",
        "state_roundtrip.md §5.4 I1",
    ),
    Trap(
        "byte equality cannot see a copy where the cache must be aliased",
        CopiesInsteadOfAlias,
        ("R1", "T1", "T2", "T3"),
        "standard",
        ("P2",),
        "standard",
        "seed 002 §11.3.1; §5.4 P2",
    ),
    Trap(
        "a select that moves its source passes on a zeroed cache",
        SelectMovesSource,
        ("P1",),
        "zero-filled",
        ("P1",),
        "garbage",
        "state_roundtrip.md §5.4 P1",
    ),
)


def trap_cases(kind: str, seed: int = 1, count: int = 60) -> list[Case]:
    """Return the cases a trap's weak or strong check runs on."""
    standard = make_cases(seed, count)
    if kind == "standard":
        return standard
    if kind == "S<R":
        return _s_less_than_r(standard)
    if kind == "S=R":
        return _s_equals_r(standard)
    if kind == "garbage":
        return standard
    if kind == "zero-filled":
        return with_fill(standard, "zero")
    if kind == "single slot":
        return _single_slot(standard)
    if kind == "zero-filled, negative windows":
        return with_fill(_negative_windows(standard), "zero")
    if kind == "garbage, negative windows":
        return _negative_windows(standard)
    raise ValueError(kind)


# ----------------------------------------------------------------------------- broken hit rules


def hit_no_backoff(length, cached, has_swa, *, reserve=134, block=128) -> HitLengths:
    """Hit rule broken: never backs off a block when SWA is missing."""
    return hit_lengths(length, cached, True, reserve=reserve, block=block)


def hit_always_backoff(length, cached, has_swa, *, reserve=134, block=128) -> HitLengths:
    """Hit rule broken: backs off a block even when SWA is present."""
    h = hit_lengths(length, cached, True, reserve=reserve, block=block)
    return HitLengths(h.block_hit, max(0, h.block_hit - block))


def hit_unaligned(length, cached, has_swa, *, reserve=134, block=128) -> HitLengths:
    """Hit rule broken: the block hit is not rounded down to a block boundary."""
    b = min(max(0, length - reserve), cached)
    return HitLengths(b, b if has_swa else max(0, b - block))


def hit_reserve_133(length, cached, has_swa, *, reserve=134, block=128) -> HitLengths:
    """Hit rule broken: reserves 133 positions instead of 134 (an off-by-one in the cap)."""
    return hit_lengths(length, cached, has_swa, reserve=reserve - 1, block=block)


def hit_ignores_cached(length, cached, has_swa, *, reserve=134, block=128) -> HitLengths:
    """Hit rule broken: the cached extent does not bound the hit."""
    return hit_lengths(length, 10**9, has_swa, reserve=reserve, block=block)


HIT_MUTANTS = (hit_no_backoff, hit_always_backoff, hit_unaligned, hit_reserve_133, hit_ignores_cached)
"""Each must break at least one lab 24 law over the 69,666 cases."""


# ----------------------------------------------------------------------------- running the controls


@dataclass(frozen=True)
class ControlResult:
    """One negative control: what was run, whether it came out as required, and how often it was caught."""

    name: str
    ok: bool
    detail: str
    caught_cases: int = 0
    cases: int = 0
    skipped: str | None = None  # why it could not run here (never counted as ok)


def catch_rate(mutant: type, laws: tuple[str, ...], cases: list[Case], backend_name: str = "numpy") -> tuple[int, int]:
    """Return (cases where at least one of ``laws`` fails for ``mutant``, cases where at least one applies)."""
    from .roundtrip_laws import LAW_BY_NAME, run_suite

    report = run_suite(backend_name, factory=mutant, laws=[LAW_BY_NAME[n] for n in laws], cases=cases)
    caught = {case.index for result in report.results for case, _ in result.problems}
    applied = set().union(*(result.applied for result in report.results)) | caught
    return len(caught), len(applied)


def first_violation(rule: Callable[..., Any], max_length: int | None = None) -> tuple[int, dict[str, str], int]:
    """Walk lab 24's domain with ``rule`` until a case breaks a law: ``(cases walked, {law: the case}, 1)``, or
    ``(cases, {}, 0)`` if none does. A control only needs one witness; ``lab24_check`` counts every case (``rates``)."""
    from ...spec.hit_length import LAB24_MAX_LENGTH, hit_law_violations, lab24_domain

    walked = 0
    for case in lab24_domain(LAB24_MAX_LENGTH if max_length is None else max_length):
        walked += 1
        broken = hit_law_violations(case, rule=rule)
        if broken:
            return walked, {law: repr(case) for law in broken}, 1
    return walked, {}, 0


def run_controls(
    seed: int = 1, count: int = 60, backends: tuple[str, ...] = ("numpy", "torch"), rates: bool = False
) -> list[ControlResult]:
    """Run every broken hit rule through the lab 24 laws, every mutant round trip against the laws that
    must catch it, and every trap's weak and strong checks.

    A mutant whose laws need a backend that is not available here (``PadsOffHost`` needs torch or a
    GPU) is reported with ``ok=False`` and ``skipped`` set to the reason, never silently passed. ``rates`` adds catch
    rates (slower: every case, no early stop).
    """
    from ...spec.hit_length import lab24_check
    from .backends import backend
    from .roundtrip_laws import catches

    cases = make_cases(seed, count)
    results = []
    for rule in HIT_MUTANTS:
        if rates:
            total, counts, failing = lab24_check(rule=rule)
            detail = f"lab 24 laws broken over {total} cases: {counts}" if counts else "no lab 24 law broken"
        else:
            total, witnesses, failing = first_violation(rule)
            detail = (
                f"lab 24 laws {', '.join(witnesses)} broken at case {total} of the domain ({next(iter(witnesses.values()))})"
                if witnesses
                else "no lab 24 law broken"
            )
        results.append(ControlResult(f"hit rule: {rule.__name__}", bool(failing), detail, failing, total))
    for mutant in MUTANTS:
        names = CAUGHT_BY[mutant]
        where = [b for b in backends if backend(b).available and (mutant is not PadsOffHost or b != "numpy")]
        if not where:
            reason = f"no backend to run it on: {backend('torch').reason}"
            results.append(ControlResult(mutant.__name__, False, reason, skipped=reason))
            continue
        missed = [(law, b) for b in where for law in names if not catches(mutant, (law,), cases, b)]
        caught, applied = catch_rate(mutant, names, cases, where[0]) if rates else (0, 0)
        detail = (
            f"caught by {', '.join(names)} on {', '.join(where)}"
            if not missed
            else f"NOT caught by {', '.join(f'{law} on {b}' for law, b in missed)}"
        )
        results.append(ControlResult(mutant.__name__, not missed, detail, caught, applied))
    for trap in TRAPS:
        weak = catches(trap.mutant, trap.weak_laws, trap_cases(trap.weak_cases, seed, count))
        strong = catches(trap.mutant, trap.strong_laws, trap_cases(trap.strong_cases, seed, count))
        caught, applied = (
            catch_rate(trap.mutant, trap.strong_laws, trap_cases(trap.strong_cases, seed, count)) if rates else (0, 0)
        )
        detail = (
            f"weak {'+'.join(trap.weak_laws)} on {trap.weak_cases} cases: {'caught (trap not shown)' if weak else 'passes'}; "
            f"strong {'+'.join(trap.strong_laws)} on {trap.strong_cases} cases: {'caught' if strong else 'MISSED'}"
        )
        results.append(ControlResult(f"trap: {trap.name}", strong and not weak, detail, caught, applied))
    return results

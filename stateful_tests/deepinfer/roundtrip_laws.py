"""The round-trip laws of the DeepInfer state layout, runnable on any array backend.

Each ``law_*`` takes a ``LawRun`` (the implementation factory, the backend, one case) and
returns its problems (empty when the law holds); the docstring states the law and names it as
state_roundtrip.md §5.4 does (plus R3, the load-side ground truth, and B1, bad input).
``run_suite`` runs every law over a deterministic list of cases and is what the tests, the gate
(``kvproof check``, layer ``deepinfer``) and ``kvproof roundtrip --backend B`` all call.

How the cases defend against the weak-test traps of §5.5:

- positions are real: R2 and R3 build the cache by replaying a known position history through
  the engine's writer (``spec.state_layout.ring_write``: slot p mod R, later writes win), so an
  error shared by select and load cannot cancel out;
- S < R appears in most cases (the book's S = 128, R = 134 among them), so ``mod S`` for
  ``mod R`` is visible;
- caches and destinations are filled with non-zero garbage, never zeros (``fill="garbage"``),
  and destinations that select allocates are pre-filled through ``alloc_fill``, so a missing
  zero-fill, an extra write, or a stale row shows;
- several state ids, and a target slot other than 0, so writes to the wrong slot show.

``fill="zero"`` builds the same cases with zeroed caches and destinations; it exists only so the
negative controls can show what that weaker suite misses.

Replay: a failure prints ``kvproof roundtrip --backend B --seed S --case K``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from ...impl.state_roundtrip import RoundTrip, backend_for, byte_range
from ...spec import state_layout as spec
from ...spec.deepinfer_errors import StateArgumentError, StateArgumentType, TruncationGuardError
from ...spec.state_layout import Raw, Ring, StateLayout
from .backends import DeepinferBackend, backend

Factory = Callable[[StateLayout, int | None], RoundTrip]
GARBAGE_ALLOC = 0xAB
XOR = 0x5A


# ----------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One layout, cache shape, slot and position; ``seed`` fixes every byte drawn for it."""

    index: int
    name: str
    layout: StateLayout
    n_states: int
    state_id: int
    lhp: int
    seed: int
    fill: str = "garbage"  # or "zero" (the weak configuration, for negative controls only)
    extra_columns: int = 3  # cache rows are wider than the layout: load must not write there


def _rings(layout: StateLayout) -> list[Ring]:
    return [s for s in layout.segments if isinstance(s, Ring)]


def random_layout(rng: random.Random) -> StateLayout:
    """Return a random layout: 1-4 segments, mostly rings with S < R, some dropped, some raws, and runs of
    identically shaped rings (which the implementation moves as one group)."""
    segments: list = []
    for i in range(rng.randint(1, 4)):
        previous = segments[-1] if segments else None
        if isinstance(previous, Ring) and rng.random() < 0.4:  # layers alike: the implementation groups them
            segments.append(
                replace(previous, name=f"ring{i}", dropped=previous.dropped if rng.random() < 0.7 else not previous.dropped)
            )
        elif rng.random() < 0.75:
            rows = rng.choice([1, 2, 3, 5, 8, 13, 16, rng.randint(1, 40)])
            transfer = rng.choice([rows, rng.randint(0, rows), max(0, rows - rng.randint(1, 6)), max(0, rows - 1)])
            segments.append(Ring(f"ring{i}", rows, transfer, rng.choice([1, 2, 3, 4, 8]), dropped=rng.random() < 0.35))
        else:
            segments.append(Raw(f"raw{i}", rng.randint(0, 40), dropped=rng.random() < 0.8))
    return StateLayout(
        tuple(segments),
        align=rng.choice([1, 16, 64]),
        mode=rng.choice(["ring-view", "raw-prefix"]),
        dropped_order=rng.choice(["swa-first", "compress-first"]),
    )


def _positions(rng: random.Random, layout: StateLayout) -> int:
    rings = _rings(layout) or [Ring("none", 1, 1, 1)]
    ring = rng.choice(rings)
    r, s = ring.rows, ring.transfer_rows
    return rng.choice([-1, 0, max(-1, s - 2), s - 1, r - 1, r, r + s, rng.randint(-1, 3 * r + 3), rng.randint(r, 10 * r)])


def fixed_cases(seed: int) -> list[Case]:
    """Return the cases every run includes: the book's numbers, S < R and S = R, both modes, edge sizes."""
    book = spec.book_layout()
    book_raw = spec.book_layout(mode="raw-prefix")
    s_lt_r = StateLayout((Ring("swa", 134, 128, 2), Ring("drop", 134, 128, 2, dropped=True), Raw("cmp", 7)), align=16)
    s_eq_r = StateLayout((Ring("swa", 16, 16, 3), Ring("drop", 16, 16, 3, dropped=True), Raw("cmp", 5)), align=16)
    no_drop = StateLayout((Ring("swa", 20, 12, 4), Ring("swb", 9, 9, 1)), align=64)
    nothing_stored = StateLayout((Ring("drop", 8, 5, 2, dropped=True), Raw("cmp", 9)), align=16)
    nothing_stored_raw = replace(nothing_stored, mode="raw-prefix")
    compress_first = StateLayout(
        (
            Ring("swa", 11, 7, 3),
            Raw("cmp", 13),
            Ring("drop", 11, 7, 3, dropped=True),
            Raw("stored_cmp", 6, dropped=False),
        ),
        align=16,
        dropped_order="compress-first",
    )
    specs = [
        ("book ring-view, hit 768 (window [640, 768))", book, 767),
        ("book raw-prefix, hit 768", book_raw, 767),
        ("book ring-view, hit 0", book, -1),
        ("S=128 < R=134, window before wrap", s_lt_r, 127),
        ("S=128 < R=134, window wraps", s_lt_r, 200),
        ("S=128 < R=134, partial window", s_lt_r, 60),
        ("S=128 < R=134, far position", s_lt_r, 10_000),
        ("S = R = 16", s_eq_r, 37),
        ("S = R = 16, partial window", s_eq_r, 4),
        ("no dropped segments", no_drop, 45),
        ("nothing stored, ring-view", nothing_stored, 30),
        ("nothing stored, raw-prefix", nothing_stored_raw, 30),
        ("compress-first order, stored raw", compress_first, 23),
    ]
    return [Case(i, name, layout, 3, 1 + i % 2, lhp, seed * 1_000_003 + i) for i, (name, layout, lhp) in enumerate(specs)]


def make_cases(seed: int, count: int) -> list[Case]:
    """Return the fixed cases followed by random ones, ``count`` in all (at least the fixed ones)."""
    cases = fixed_cases(seed)
    rng = random.Random(seed)
    while len(cases) < count:
        layout = random_layout(rng)
        n_states = rng.randint(1, 4)
        index = len(cases)
        cases.append(
            Case(
                index,
                f"random #{index}",
                layout,
                n_states,
                rng.randrange(n_states),
                _positions(rng, layout),
                seed * 1_000_003 + index,
            )
        )
    return cases


def with_fill(cases: Sequence[Case], fill: str) -> list[Case]:
    """Return ``cases`` rebuilt with ``fill`` ("garbage" or "zero")."""
    return [replace(c, fill=fill) for c in cases]


# ----------------------------------------------------------------------------- running one law


@dataclass
class LawRun:
    """The implementation factory, the backend and the case one law runs on; counts its comparisons."""

    factory: Factory
    be: DeepinferBackend
    case: Case
    checks: int = 0
    _draws: int = 0

    @property
    def layout(self) -> StateLayout:
        return self.case.layout

    @property
    def sizes(self) -> spec.Sizes:
        return spec.sizes(self.case.layout)

    def rt(self) -> RoundTrip:
        return self.factory(self.layout, GARBAGE_ALLOC if self.case.fill == "garbage" else 0)

    def rng(self) -> np.random.Generator:
        self._draws += 1
        return np.random.default_rng([self.case.seed, self._draws])

    def garbage(self, shape) -> np.ndarray:
        """Return host bytes of ``shape``: non-zero garbage, or zeros in the weak configuration."""
        if self.case.fill == "zero":
            return np.zeros(shape, dtype=np.uint8)
        return self.rng().integers(1, 256, size=shape, dtype=np.uint8)

    def host_cache(self) -> np.ndarray:
        return self.garbage((self.case.n_states, self.sizes.cache_row_bytes + self.case.extra_columns))

    def dev(self, host: np.ndarray) -> Any:
        return self.be.from_numpy(host)

    def host(self, array: Any) -> np.ndarray:
        self.be.synchronize()
        return self.be.to_numpy(array)

    def spec_cache(self, host: np.ndarray) -> spec.StateCache:
        return tuple(bytes(row) for row in host)

    def expect(self, ok: bool, problems: list[str], message: str) -> None:
        self.checks += 1
        if not ok:
            problems.append(message)


def _first_diff(a: bytes, b: bytes) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"first difference at byte {i}: {x:#04x} != {y:#04x}"
    return f"lengths {len(a)} != {len(b)}"


def _changed(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    return np.flatnonzero(before != after)


def _in_ranges(index: np.ndarray, ranges: Sequence[spec.ByteRange]) -> np.ndarray:
    inside = np.zeros(index.shape, dtype=bool)
    for a, b in ranges:
        inside |= (index >= a) & (index < b)
    return inside


def _history(run: LawRun, ring_index: int, ring: Ring, length: int) -> np.ndarray:
    """Return ``length`` distinct non-zero rows for positions 0..length-1 of one ring."""
    rng = np.random.default_rng([run.case.seed, 7919, ring_index])
    return rng.integers(1, 256, size=(max(length, 0), ring.row_bytes), dtype=np.uint8)


def _write_history(row: np.ndarray, p: spec.Placement, hist: np.ndarray, upto: int, start: int = 0) -> None:
    """Replay positions ``start..upto-1`` of ``hist`` through the engine's writer into one ring of ``row``."""
    ring = p.segment
    assert isinstance(ring, Ring), f"_write_history replays a ring, not {ring!r}"
    for position in range(start, upto):
        slot = spec.slot_of(position, ring.rows)
        at = p.cache_offset + slot * ring.row_bytes
        row[at : at + ring.row_bytes] = hist[position]


def _window_rows(hist: np.ndarray, ring: Ring, lhp: int) -> np.ndarray:
    """Return the position-ordered window ending at ``lhp`` from the history, zero rows for negative positions."""
    rows = np.zeros((ring.transfer_rows, ring.row_bytes), dtype=np.uint8)
    for j, position in enumerate(spec.window_positions(ring.transfer_rows, lhp)):
        if position >= 0:
            rows[j] = hist[position]
    return rows


# ----------------------------------------------------------------------------- the laws


def law_sizes(run: LawRun) -> list[str]:
    """S1: the implementation's sizes: total_bytes_inference >= state_size_to_disk, and their difference is
    what the dropped segments hold (equal iff nothing is dropped); 0 <= swa_drop_pad <= dropped;
    dropped_compress = dropped - swa_drop_pad = the dropped raws; swa_drop_pad = the padded dropped rings;
    the cache row is at least the handoff. Sizes are recomputed from the segments, not from ``placements``."""
    s = run.rt().sizes
    problems: list[str] = []
    run.expect(
        s.total_bytes_inference >= s.state_size_to_disk,
        problems,
        f"total {s.total_bytes_inference} < disk {s.state_size_to_disk}",
    )

    def tensor_bytes(seg) -> int:  # recomputed from the segment alone, independently of ``placements``
        if isinstance(seg, Raw):
            return seg.nbytes
        rows = seg.rows if run.layout.mode == "raw-prefix" else seg.transfer_rows
        return spec.pad(rows * seg.row_bytes, run.layout.align)

    dropped = sum(tensor_bytes(g) for g in run.layout.segments if g.dropped)
    run.expect(
        s.total_bytes_inference - s.state_size_to_disk == dropped,
        problems,
        f"handoff - stored = {s.total_bytes_inference - s.state_size_to_disk}, but the dropped segments hold {dropped}",
    )
    run.expect(
        (s.total_bytes_inference == s.state_size_to_disk) == (dropped == 0),
        problems,
        "total == disk does not match 'nothing dropped'",
    )
    run.expect(
        0 <= s.swa_drop_total_bytes_inference_pad <= s.dropped_bytes_inference,
        problems,
        "swa_drop_pad outside [0, dropped]",
    )
    run.expect(
        s.dropped_compress_bytes == s.dropped_bytes_inference - s.swa_drop_total_bytes_inference_pad,
        problems,
        "dropped_compress != dropped - swa_drop_pad",
    )
    run.expect(s.cache_row_bytes >= s.total_bytes_inference, problems, "cache row smaller than the handoff")
    raws = sum(g.nbytes for g in run.layout.segments if g.dropped and isinstance(g, Raw))
    rings = sum(tensor_bytes(g) for g in run.layout.segments if g.dropped and isinstance(g, Ring))
    run.expect(
        s.dropped_compress_bytes == raws,
        problems,
        f"dropped_compress_bytes {s.dropped_compress_bytes} != dropped raws {raws}",
    )
    run.expect(
        s.swa_drop_total_bytes_inference_pad == rings,
        problems,
        f"swa_drop_total_bytes_inference_pad {s.swa_drop_total_bytes_inference_pad} != padded dropped rings {rings}",
    )
    return problems


def law_prefix(run: LawRun) -> list[str]:
    """S2: the stored form is a prefix of the handoff: select(to_ce=True)[:disk] equals select(to_ce=False)
    byte-for-byte in raw-prefix mode and on payload (live rows) in ring-view mode."""
    problems: list[str] = []
    cache = run.dev(run.host_cache())
    rt, c = run.rt(), run.case
    handoff = rt.select(cache, c.state_id, c.lhp, True)
    stored = rt.select(cache, c.state_id, c.lhp, False)
    disk = run.sizes.state_size_to_disk
    if stored is None:
        run.expect(disk == 0, problems, "select(to_ce=False) returned None with a non-empty stored region")
        return problems
    h, st = bytes(run.host(handoff)), bytes(run.host(stored))
    ranges = ((0, disk),) if run.layout.mode == "raw-prefix" else spec.live_window_ranges(run.layout, c.lhp, False)
    run.expect(
        spec.take(h, ranges) == spec.take(st, ranges),
        problems,
        "stored form is not a prefix of the handoff: " + _first_diff(spec.take(h, ranges), spec.take(st, ranges)),
    )
    return problems


def law_select_pure(run: LawRun) -> list[str]:
    """P1: select never changes the cache (either size, with or without a destination)."""
    problems: list[str] = []
    host = run.host_cache()
    cache = run.dev(host)
    rt, c = run.rt(), run.case
    for to_ce in (False, True):
        size = spec.transfer_size(run.layout, to_ce)
        rt.select(cache, c.state_id, c.lhp, to_ce)
        if size:
            rt.select(cache, c.state_id, c.lhp, to_ce, out=run.dev(run.garbage(size)))
    after = run.host(cache)
    run.expect(np.array_equal(after, host), problems, f"select changed the cache at {len(_changed(host, after))} bytes")
    return problems


def law_alias(run: LawRun) -> list[str]:
    """P2: in raw-prefix mode select without a destination returns the cache's own bytes
    ``cache[sid, :size]`` (same memory: a write through it shows in the cache); with a destination
    it returns the destination; with ``copy=True`` it returns memory of its own."""
    if run.layout.mode != "raw-prefix":
        return []
    problems: list[str] = []
    cache = run.dev(run.host_cache())
    rt, c = run.rt(), run.case
    for to_ce in (False, True):
        size = spec.transfer_size(run.layout, to_ce)
        view = rt.select(cache, c.state_id, c.lhp, to_ce)
        if size == 0:
            continue
        be = backend_for(cache)
        row_start = byte_range(be, cache[c.state_id])[0]
        run.expect(
            view is not None and byte_range(be, view) == (row_start, row_start + size),
            problems,
            f"select(to_ce={to_ce}) without a destination does not alias cache[{c.state_id}, :{size}]",
        )
        out = run.dev(run.garbage(size))
        run.expect(
            rt.select(cache, c.state_id, c.lhp, to_ce, out=out) is out,
            problems,
            "select with a destination did not return it",
        )
        fresh = rt.select(cache, c.state_id, c.lhp, to_ce, copy=True)
        lo, hi = byte_range(be, fresh)
        whole = byte_range(be, cache)
        run.expect(hi <= whole[0] or lo >= whole[1], problems, "select(copy=True) returned memory inside the cache")
    return problems


def law_spec_agreement(run: LawRun) -> list[str]:
    """R1: select equals the spec's select on every specified byte (with a garbage destination, and
    with one it allocates), and load equals the spec's load on the whole cache, byte for byte."""
    problems: list[str] = []
    host = run.host_cache()
    cache = run.dev(host)
    rt, c = run.rt(), run.case
    model = run.spec_cache(host)
    for to_ce in (False, True):
        expected = spec.select(run.layout, model, c.state_id, c.lhp, to_ce)
        size = spec.transfer_size(run.layout, to_ce)
        for use_out in (False, True):
            out = run.dev(run.garbage(size)) if use_out else None
            got = rt.select(cache, c.state_id, c.lhp, to_ce, out=out)
            if expected is None:
                run.expect(got is None, problems, f"select(to_ce={to_ce}) of size 0 returned {type(got).__name__}, not None")
                continue
            got_bytes = bytes(run.host(got))
            run.expect(len(got_bytes) == size, problems, f"select(to_ce={to_ce}) has {len(got_bytes)} bytes, not {size}")
            a, b = spec.take(got_bytes, expected.specified), spec.take(expected.data, expected.specified)
            run.expect(
                a == b,
                problems,
                f"select(to_ce={to_ce}, out={'buffer' if use_out else 'None'}) differs from the spec: {_first_diff(a, b)}",
            )
    disk = run.sizes.state_size_to_disk
    tensor_host = run.rng().integers(1, 256, size=disk, dtype=np.uint8)
    rt.load(cache, c.state_id, run.dev(tensor_host), c.lhp, "on")
    expected_cache = spec.load(run.layout, model, c.state_id, bytes(tensor_host), c.lhp, "on")
    after = run.host(cache)
    width = run.sizes.cache_row_bytes
    run.expect(
        all(bytes(after[i, :width]) == expected_cache[i][:width] for i in range(c.n_states))
        and np.array_equal(after[:, width:], host[:, width:]),
        problems,
        "load differs from the spec's load",
    )
    return problems


def law_ground_truth_select(run: LawRun) -> list[str]:
    """R2 (ground truth): replay positions 0..P-1 of a known history through the writer (slot p mod R,
    later wins), with P - R <= lhp - S + 1 and lhp <= P - 1; ring-view select at lhp then returns, for
    every carved ring, the history rows lhp-S+1..lhp in order, zero rows for negative positions."""
    if run.layout.mode != "ring-view":
        return []
    problems: list[str] = []
    host = run.host_cache()
    c = run.case
    placed = [p for p in spec.placements(run.layout) if isinstance(p.segment, Ring)]
    hists = {}
    extra_rng = random.Random(c.seed)
    for i, p in enumerate(placed):
        ring = p.segment
        assert isinstance(ring, Ring), "placed holds the ring placements only"
        upto = c.lhp + 1 + extra_rng.randint(0, ring.rows - ring.transfer_rows)  # P: the window stays in the ring
        hists[p.segment.name] = hist = _history(run, i, ring, upto)
        _write_history(host[c.state_id], p, hist, upto)
    cache = run.dev(host)
    rt = run.rt()
    for to_ce in (False, True):
        size = spec.transfer_size(run.layout, to_ce)
        got = bytes(run.host(rt.select(cache, c.state_id, c.lhp, to_ce, out=run.dev(run.garbage(size)))))
        for p in spec.carved(run.layout, to_ce):
            if not isinstance(p.segment, Ring):
                continue
            want = _window_rows(hists[p.segment.name], p.segment, c.lhp).tobytes()
            have = got[p.tensor_offset : p.tensor_offset + p.payload_nbytes]
            run.expect(
                have == want,
                problems,
                f"{p.segment.name} (R={p.segment.rows}, S={p.segment.transfer_rows}) "
                f"at lhp={c.lhp}, to_ce={to_ce}: window is not history[{c.lhp - p.segment.transfer_rows + 1}..{c.lhp}]: "
                + _first_diff(have, want),
            )
    return problems


def law_ground_truth_load(run: LawRun) -> list[str]:
    """R3 (ground truth, load side): load a position-ordered history window at lhp into a garbage slot;
    every stored ring's slot p mod R then holds history[p] for the window's positions p >= 0; and after
    the engine writes k <= R - S further positions, ring-view select at lhp + k returns history rows
    lhp+k-S+1..lhp+k: the restored state continues correctly."""
    if run.layout.mode != "ring-view":
        return []
    problems: list[str] = []
    c = run.case
    host = run.host_cache()
    disk = run.sizes.state_size_to_disk
    tensor = np.zeros(disk, dtype=np.uint8)
    stored = [(i, p) for i, p in enumerate(spec.placements(run.layout)) if not p.segment.dropped]
    hists = {}
    k_rng = random.Random(c.seed + 1)
    ks = {}
    for i, p in stored:
        if isinstance(p.segment, Ring):
            ring = p.segment
            ks[ring.name] = k = k_rng.randint(0, ring.rows - ring.transfer_rows)
            hists[ring.name] = hist = _history(run, 100 + i, ring, c.lhp + 1 + k)
            tensor[p.tensor_offset : p.tensor_offset + p.payload_nbytes] = _window_rows(hist, ring, c.lhp).reshape(-1)
        else:
            tensor[p.tensor_offset : p.tensor_offset + p.payload_nbytes] = run.rng().integers(
                1, 256, p.payload_nbytes, dtype=np.uint8
            )
    cache = run.dev(host)
    rt = run.rt()
    rt.load(cache, c.state_id, run.dev(tensor), c.lhp, "on")
    after = run.host(cache)
    row = after[c.state_id]
    for _, p in stored:
        if not isinstance(p.segment, Ring):
            continue
        ring, hist = p.segment, hists[p.segment.name]
        bad = [
            q
            for q in spec.window_positions(ring.transfer_rows, c.lhp)
            if q >= 0
            and not np.array_equal(row[p.cache_offset + spec.slot_of(q, ring.rows) * ring.row_bytes :][: ring.row_bytes], hist[q])
        ]
        run.expect(
            not bad,
            problems,
            f"{ring.name} (R={ring.rows}, S={ring.transfer_rows}): after load at lhp={c.lhp}, "
            f"slot p mod R does not hold position p for p in {bad[:4]}",
        )
        _write_history(row, p, hist, c.lhp + 1 + ks[ring.name], start=c.lhp + 1)
    cache2 = run.dev(after)
    got = bytes(run.host(rt.select(cache2, c.state_id, c.lhp, False, out=run.dev(run.garbage(disk)))))
    # each ring continued by its own k; select once per distinct k
    for _, p in stored:
        if not isinstance(p.segment, Ring):
            continue
        ring, k = p.segment, ks[p.segment.name]
        if k:
            got_k = bytes(run.host(rt.select(cache2, c.state_id, c.lhp + k, False, out=run.dev(run.garbage(disk)))))
        else:
            got_k = got
        want = _window_rows(hists[ring.name], ring, c.lhp + k).tobytes()
        have = got_k[p.tensor_offset : p.tensor_offset + p.payload_nbytes]
        run.expect(
            have == want,
            problems,
            f"{ring.name}: after load at {c.lhp} and {k} more writes, select at "
            f"{c.lhp + k} is not history[{c.lhp + k - ring.transfer_rows + 1}..{c.lhp + k}]: {_first_diff(have, want)}",
        )
    return problems


def law_identity_roundtrip(run: LawRun) -> list[str]:
    """T1: load(select(x, lhp), lhp) leaves the cache byte-identical, in both modes."""
    problems: list[str] = []
    host = run.host_cache()
    cache = run.dev(host)
    rt, c = run.rt(), run.case
    disk = run.sizes.state_size_to_disk
    tensor = rt.select(cache, c.state_id, c.lhp, False, out=run.dev(run.garbage(disk)) if disk else None)
    if tensor is None:
        tensor = run.dev(np.zeros(0, np.uint8))
    rt.load(cache, c.state_id, tensor, c.lhp, "on")
    after = run.host(cache)
    run.expect(np.array_equal(after, host), problems, f"load(select(x)) changed {len(_changed(host, after))} bytes")
    return problems


def law_book_comparator(run: LawRun) -> list[str]:
    """T2 (the book's test, Listing 11.8): select, modify the bytes, load, select again; the stored SWA
    payload (padding excluded; rows with positions >= 0) of the reselected state equals the modified one's."""
    problems: list[str] = []
    cache = run.dev(run.host_cache())
    rt, c = run.rt(), run.case
    disk = run.sizes.state_size_to_disk
    if disk == 0:
        return problems
    selected = run.host(rt.select(cache, c.state_id, c.lhp, False, out=run.dev(run.garbage(disk))))
    modified = selected ^ np.uint8(XOR)
    rt.load(cache, c.state_id, run.dev(modified), c.lhp, "on")
    reselected = bytes(run.host(rt.select(cache, c.state_id, c.lhp, False, out=run.dev(run.garbage(disk)))))
    ranges = spec.live_window_ranges(run.layout, c.lhp, False, stored_only=True)
    a, b = spec.take(reselected, ranges), spec.take(modified.tobytes(), ranges)
    run.expect(a == b, problems, f"reselected stored payload differs from the modified one: {_first_diff(a, b)}")
    return problems


def law_raw_prefix_exact(run: LawRun) -> list[str]:
    """T3: in raw-prefix mode the round trip of T2 is byte-exact including padding."""
    if run.layout.mode != "raw-prefix" or run.sizes.state_size_to_disk == 0:
        return []
    problems: list[str] = []
    cache = run.dev(run.host_cache())
    rt, c = run.rt(), run.case
    disk = run.sizes.state_size_to_disk
    modified = run.host(rt.select(cache, c.state_id, c.lhp, False, copy=True)) ^ np.uint8(XOR)
    rt.load(cache, c.state_id, run.dev(modified), c.lhp, "on")
    again = bytes(run.host(rt.select(cache, c.state_id, c.lhp, False, out=run.dev(run.garbage(disk)))))
    run.expect(
        again == modified.tobytes(),
        problems,
        "raw-prefix round trip is not byte-exact: " + _first_diff(again, modified.tobytes()),
    )
    return problems


def _load_random(run: LawRun) -> tuple[np.ndarray, np.ndarray]:
    host = run.host_cache()
    cache = run.dev(host)
    c = run.case
    disk = run.sizes.state_size_to_disk
    tensor = (
        (host[c.state_id, :disk] ^ np.uint8(XOR))
        if run.layout.mode == "raw-prefix"
        else run.rng().integers(1, 256, disk, dtype=np.uint8)
    )
    # every tensor byte differs from the cache byte it would replace in raw-prefix mode; in ring-view
    # a random non-zero tensor differs from the garbage it replaces with probability 255/256 per byte
    run.rt().load(cache, c.state_id, run.dev(tensor), c.lhp, "on")
    return host, run.host(cache)


def law_isolation(run: LawRun) -> list[str]:
    """I1: load into slot s changes no other slot (and no byte past the layout's row)."""
    problems: list[str] = []
    before, after = _load_random(run)
    c, width = run.case, run.sizes.cache_row_bytes
    others = [i for i in range(c.n_states) if i != c.state_id]
    run.expect(
        all(np.array_equal(before[i], after[i]) for i in others),
        problems,
        f"load into slot {c.state_id} changed slot(s) {[i for i in others if not np.array_equal(before[i], after[i])]}",
    )
    run.expect(np.array_equal(before[:, width:], after[:, width:]), problems, "load wrote past the layout's row")
    return problems


def law_footprint(run: LawRun) -> list[str]:
    """I2: load changes only the bytes of ``load_footprint``: the window's slots of the stored rings (and
    stored raws) in ring-view mode, ``[:state_size_to_disk]`` in raw-prefix mode; never other ring rows."""
    problems: list[str] = []
    before, after = _load_random(run)
    c = run.case
    changed = _changed(before[c.state_id], after[c.state_id])
    outside = changed[~_in_ranges(changed, spec.load_footprint(run.layout, c.lhp))]
    run.expect(
        outside.size == 0,
        problems,
        f"load at lhp={c.lhp} wrote {outside.size} bytes outside its footprint, first at byte {outside[:1].tolist()}",
    )
    return problems


def law_dropped_untouched(run: LawRun) -> list[str]:
    """I3: load never writes the dropped region; dropped consumer state is not rebuilt."""
    problems: list[str] = []
    before, after = _load_random(run)
    c = run.case
    changed = _changed(before[c.state_id], after[c.state_id])
    inside = changed[_in_ranges(changed, spec.dropped_cache_ranges(run.layout))]
    run.expect(inside.size == 0, problems, f"load wrote {inside.size} bytes of the dropped region")
    return problems


def law_compress_copied(run: LawRun) -> list[str]:
    """C1: select(to_ce=True)[dropped_tensor_offset:+dropped_compress_bytes] equals the cache's
    [dropped_cache_offset:+dropped_compress_bytes] of the slot."""
    s = run.sizes
    if s.dropped_compress_bytes == 0:
        return []
    problems: list[str] = []
    host = run.host_cache()
    cache = run.dev(host)
    c = run.case
    got = run.host(run.rt().select(cache, c.state_id, c.lhp, True, out=run.dev(run.garbage(s.total_bytes_inference))))
    a = got[s.dropped_tensor_offset : s.dropped_tensor_offset + s.dropped_compress_bytes]
    b = host[c.state_id, s.dropped_cache_offset : s.dropped_cache_offset + s.dropped_compress_bytes]
    run.expect(np.array_equal(a, b), problems, "the CE handoff does not carry the dropped compression state verbatim")
    return problems


def _raised(fn: Callable[[], Any]) -> Exception | None:
    try:
        fn()
    except Exception as exc:  # the caller decides which exceptions are right
        return exc
    return None


def law_guard(run: LawRun) -> list[str]:
    """G1: with dropped SWA layers and truncation "off", load raises TruncationGuardError and the cache is
    unchanged (the guard precedes every write); without dropped layers "off" loads; select has no guard."""
    problems: list[str] = []
    host = run.host_cache()
    cache = run.dev(host)
    c, rt = run.case, run.rt()
    disk = run.sizes.state_size_to_disk
    tensor = run.dev(run.rng().integers(1, 256, disk, dtype=np.uint8))
    raised = _raised(lambda: rt.load(cache, c.state_id, tensor, c.lhp, "off"))
    if run.sizes.swa_drop_num_layer == 0:
        run.expect(raised is None, problems, f"no SWA layer is dropped, yet load with truncation 'off' raised {raised!r}")
        return problems
    run.expect(
        isinstance(raised, TruncationGuardError),
        problems,
        f"load with truncation 'off' raised {raised!r}, not TruncationGuardError",
    )
    after = run.host(cache)
    run.expect(np.array_equal(after, host), problems, f"the rejected load changed {len(_changed(host, after))} bytes")
    raised = _raised(lambda: rt.select(cache, c.state_id, c.lhp, True))
    run.expect(raised is None, problems, f"select raised {raised!r}: select has no truncation guard")
    return problems


def law_zero_size(run: LawRun) -> list[str]:
    """G2: a zero-size stored region makes raw-prefix select return None, ring-view select an empty
    array, and load a no-op."""
    if run.sizes.state_size_to_disk:
        return []
    problems: list[str] = []
    host = run.host_cache()
    cache = run.dev(host)
    rt, c = run.rt(), run.case
    got = rt.select(cache, c.state_id, c.lhp, False)
    if run.layout.mode == "raw-prefix":
        run.expect(got is None, problems, f"raw-prefix select of size 0 returned {type(got).__name__}")
    else:
        run.expect(got is not None and got.shape[0] == 0, problems, "ring-view select of size 0 is not an empty array")
    rt.load(cache, c.state_id, run.dev(np.zeros(0, np.uint8)), c.lhp, "on")
    run.expect(np.array_equal(run.host(cache), host), problems, "load of an empty stored region changed the cache")
    return problems


def law_cross_backend(run: LawRun) -> list[str]:
    """X1: this backend and numpy give byte-identical results for identical inputs: select (all bytes,
    from identical garbage destinations) and load (the whole cache)."""
    if run.be.name == "numpy":
        return []
    problems: list[str] = []
    host = run.host_cache()
    c = run.case
    cache, ref_cache = run.dev(host), host.copy()
    rt, ref = run.rt(), RoundTrip(run.layout)
    for to_ce in (False, True):
        size = spec.transfer_size(run.layout, to_ce)
        dest = run.garbage(size)
        got = rt.select(cache, c.state_id, c.lhp, to_ce, out=run.dev(dest) if size else None)
        want = ref.select(ref_cache, c.state_id, c.lhp, to_ce, out=dest.copy() if size else None)
        if want is None:
            run.expect(got is None, problems, "numpy returned None, this backend did not")
            continue
        a, b = bytes(run.host(got)), bytes(np.asarray(want))
        run.expect(a == b, problems, f"select(to_ce={to_ce}) differs from numpy: {_first_diff(a, b)}")
    disk = run.sizes.state_size_to_disk
    tensor = run.rng().integers(1, 256, disk, dtype=np.uint8)
    rt.load(cache, c.state_id, run.dev(tensor), c.lhp, "on")
    ref.load(ref_cache, c.state_id, tensor.copy(), c.lhp, "on")
    run.expect(np.array_equal(run.host(cache), ref_cache), problems, "load differs from numpy's")
    return problems


def law_book_numbers(run: LawRun) -> list[str]:
    """H1: at the book's numbers (W = S = 128, R = 134, hit 768) the last hit position is 767, the window
    is [640, 768), it starts at slot 104 and wraps after 30 rows; select returns history[640..767]."""
    if run.case.layout != spec.book_layout() or run.case.lhp != 767:
        return []
    problems: list[str] = []
    run.expect(spec.last_hit_position(768) == 767, problems, "last_hit_position(768) != 767")
    run.expect(spec.window_positions(128, 767) == range(640, 768), problems, "window is not [640, 768)")
    slots = [spec.slot_of(p, 134) for p in range(640, 768)]
    run.expect(slots == list(range(104, 134)) + list(range(0, 98)), problems, f"window slots are {slots[:3]}...")
    problems += law_ground_truth_select(run)
    return problems


BAD_INPUTS = (
    "cache dtype",
    "cache 1-D",
    "cache rows too narrow",
    "state id out of range",
    "state id negative",
    "state id bool",
    "position below -1",
    "position float",
    "position bool",
    "to_ce not bool",
    "out wrong size",
    "out wrong dtype",
    "out 2-D",
    "out of another library",
    "out overlaps the cache",
    "tensor wrong size",
    "truncation mode not str",
    "tensor overlaps another slot",
)


class BadRoundTripCall(NamedTuple):
    """One malformed call of B1: its name, the call (on a fresh device copy of the cache and of ``out_host``), the
    error type it must raise, and the destination's starting contents (None: the call writes to none)."""

    name: str
    call: Callable[[Any, Any], Any]
    expected: type
    out_host: np.ndarray | None = None


def law_bad_input(run: LawRun) -> list[str]:
    """B1: each malformed argument (see ``BAD_INPUTS``) raises a typed error (StateArgumentError or
    StateArgumentType) and leaves the cache and any destination exactly as they were."""
    problems: list[str] = []
    host = run.host_cache()
    rt = run.rt()  # one round trip for every call, as a caller holds one
    for bad in bad_inputs(run, rt, host):
        try_bad_input(run, host, bad, problems)
    if run.be.name == "numpy":
        try_read_only_cache(run, rt, host, problems)
    return problems


def try_bad_input(run: LawRun, host: np.ndarray, bad: BadRoundTripCall, problems: list[str]) -> None:
    """Make the call on fresh copies; it must raise ``bad.expected`` and change neither the cache nor the destination."""
    cache = run.dev(host)
    out = run.dev(bad.out_host) if bad.out_host is not None else None
    try:
        bad.call(cache, out)
        raised = None
    except Exception as exc:  # a typed error is what we want; anything else is a finding
        raised = exc
    run.expect(isinstance(raised, bad.expected), problems, f"{bad.name}: raised {raised!r}, expected {bad.expected.__name__}")
    run.expect(np.array_equal(run.host(cache), host), problems, f"{bad.name}: the cache changed")
    if out is not None and bad.out_host is not None:
        run.expect(np.array_equal(run.host(out), bad.out_host), problems, f"{bad.name}: the destination changed")


def try_read_only_cache(run: LawRun, rt: RoundTrip, host: np.ndarray, problems: list[str]) -> None:
    """A read-only numpy cache: a load refuses it with a typed error and leaves it as it was."""
    frozen = host.copy()
    frozen.setflags(write=False)
    try:
        rt.load(frozen, run.case.state_id, run.garbage(run.sizes.state_size_to_disk), run.case.lhp, "on")
        raised = None
    except Exception as exc:
        raised = exc
    run.expect(
        isinstance(raised, StateArgumentError) and np.array_equal(frozen, host), problems, f"read-only cache: raised {raised!r}"
    )


def bad_inputs(run: LawRun, rt: RoundTrip, host: np.ndarray) -> Iterator[BadRoundTripCall]:
    """Every malformed call B1 makes on this case: the cache's, the state id's and position's, the destination's,
    the loaded tensor's and the truncation mode's. A generator: each call's garbage is drawn just before the call is
    tried, so the case's draws come in one order (``LawRun.rng`` numbers them)."""
    yield from _bad_caches(run, rt, host)
    yield from _bad_positions(run, rt)
    yield from _bad_destinations(run, rt, host)
    yield from _bad_tensors(run, rt)


def _bad_caches(run: LawRun, rt: RoundTrip, host: np.ndarray) -> Iterator[BadRoundTripCall]:
    sid, lhp = run.case.state_id, run.case.lhp
    wrong_dtype = run.be.from_numpy(host.astype(np.int16))
    yield BadRoundTripCall("cache dtype", lambda cache, out: rt.select(wrong_dtype, sid, lhp, True), StateArgumentType)
    yield BadRoundTripCall("cache 1-D", lambda cache, out: rt.select(cache.reshape(-1), sid, lhp, True), StateArgumentError)
    if run.sizes.cache_row_bytes:
        narrow = run.be.from_numpy(np.ascontiguousarray(host[:, : run.sizes.cache_row_bytes - 1]))
        yield BadRoundTripCall("cache rows too narrow", lambda cache, out: rt.select(narrow, sid, lhp, True), StateArgumentError)


def _bad_positions(run: LawRun, rt: RoundTrip) -> Iterator[BadRoundTripCall]:
    """The state id, the position and ``to_ce``. Some are deliberately ill-typed (a float position, a str ``to_ce``):
    they must raise typed errors."""
    c, disk = run.case, run.sizes.state_size_to_disk
    sid, lhp = c.state_id, c.lhp
    yield BadRoundTripCall(
        "state id out of range",
        lambda cache, out: rt.load(cache, c.n_states, run.dev(run.garbage(disk)), lhp, "on"),
        StateArgumentError,
    )
    yield BadRoundTripCall("state id negative", lambda cache, out: rt.select(cache, -1, lhp, True), StateArgumentError)
    yield BadRoundTripCall("state id bool", lambda cache, out: rt.select(cache, True, lhp, True), StateArgumentType)
    yield BadRoundTripCall(
        "position below -1", lambda cache, out: rt.load(cache, sid, run.dev(run.garbage(disk)), -2, "on"), StateArgumentError
    )
    yield BadRoundTripCall(
        "position float",
        lambda cache, out: rt.select(cache, sid, float(max(lhp, 0)), True),  # type: ignore[arg-type]
        StateArgumentType,
    )
    yield BadRoundTripCall(
        "position bool", lambda cache, out: rt.load(cache, sid, run.dev(run.garbage(disk)), True, "on"), StateArgumentType
    )
    yield BadRoundTripCall("to_ce not bool", lambda cache, out: rt.select(cache, sid, lhp, "yes"), StateArgumentType)  # type: ignore[arg-type]


def _bad_destinations(run: LawRun, rt: RoundTrip, host: np.ndarray) -> Iterator[BadRoundTripCall]:
    """``select``'s ``out``: the wrong size, shape, dtype or library, or a view of the cache itself."""
    c, total = run.case, run.sizes.total_bytes_inference
    sid, lhp = c.state_id, c.lhp
    if not total:
        return
    foreign = _foreign_array(run, total)
    yield BadRoundTripCall(
        "out wrong size", lambda cache, out: rt.select(cache, sid, lhp, True, out=out), StateArgumentError, run.garbage(total + 1)
    )
    yield BadRoundTripCall(
        "out 2-D", lambda cache, out: rt.select(cache, sid, lhp, True, out=out), StateArgumentError, run.garbage((1, total))
    )
    wide = run.be.from_numpy(run.garbage(total).astype(np.int16))
    yield BadRoundTripCall("out wrong dtype", lambda cache, out: rt.select(cache, sid, lhp, True, out=wide), StateArgumentType)
    if foreign is not None:
        yield BadRoundTripCall(
            "out of another library", lambda cache, out: rt.select(cache, sid, lhp, True, out=foreign), StateArgumentType
        )
    if host.shape[1] >= total and c.n_states > 1:
        other = (sid + 1) % c.n_states
        yield BadRoundTripCall(
            "out overlaps the cache",
            lambda cache, out: rt.select(cache, sid, lhp, True, out=cache[other, :total]),
            StateArgumentError,
        )


def _foreign_array(run: LawRun, total: int) -> Any:
    """An array of the other library (torch for a numpy run, numpy for any other), or None without torch."""
    if run.be.name != "numpy":
        return np.zeros(total, np.uint8)
    torch_be = backend("torch")
    return torch_be.from_numpy(np.zeros(total, np.uint8)) if torch_be.available else None


def _bad_tensors(run: LawRun, rt: RoundTrip) -> Iterator[BadRoundTripCall]:
    """``load``'s tensor (the wrong size, or a view of another slot) and its truncation mode (not a str)."""
    c, disk = run.case, run.sizes.state_size_to_disk
    sid, lhp = c.state_id, c.lhp
    if disk:
        yield BadRoundTripCall(
            "tensor wrong size",
            lambda cache, out: rt.load(cache, sid, run.dev(run.garbage(disk + 1)), lhp, "on"),
            StateArgumentError,
        )
        if c.n_states > 1:
            other = (sid + 1) % c.n_states
            yield BadRoundTripCall(
                "tensor overlaps another slot",
                lambda cache, out: rt.load(cache, sid, cache[other, :disk], lhp, "on"),
                StateArgumentError,
            )
    yield BadRoundTripCall(
        "truncation mode not str",
        lambda cache, out: rt.load(cache, sid, run.dev(run.garbage(disk)), lhp, None),  # type: ignore[arg-type]
        StateArgumentType,
    )


@dataclass(frozen=True)
class Law:
    name: str
    title: str
    run: Callable[[LawRun], list[str]]


LAWS: tuple[Law, ...] = (
    Law("S1", "sizes: handoff >= stored, dropped parts add up", law_sizes),
    Law("S2", "stored form is a prefix of the handoff", law_prefix),
    Law("P1", "select never changes the cache", law_select_pure),
    Law("P2", "raw-prefix select aliases the cache", law_alias),
    Law("R1", "select and load equal the spec", law_spec_agreement),
    Law("R2", "select returns the position history", law_ground_truth_select),
    Law("R3", "load restores positions; decode continues", law_ground_truth_load),
    Law("T1", "load(select(x)) is the identity", law_identity_roundtrip),
    Law("T2", "the book's comparator (Listing 11.8)", law_book_comparator),
    Law("T3", "raw-prefix round trip is byte-exact", law_raw_prefix_exact),
    Law("I1", "load touches one state id", law_isolation),
    Law("I2", "load touches only the window's slots", law_footprint),
    Law("I3", "load never writes the dropped region", law_dropped_untouched),
    Law("C1", "CE handoff carries dropped compression", law_compress_copied),
    Law("G1", "truncation guard before any write", law_guard),
    Law("G2", "zero-size stored region", law_zero_size),
    Law("X1", "byte-identical to numpy", law_cross_backend),
    Law("H1", "the book's numbers: 128, 134, hit 768", law_book_numbers),
    Law("B1", "bad input: typed error, nothing changed", law_bad_input),
)
LAW_BY_NAME = {law.name: law for law in LAWS}


# ----------------------------------------------------------------------------- the suite


@dataclass
class LawResult:
    law: Law
    cases: int = 0
    checks: int = 0
    problems: list[tuple[Case, str]] = field(default_factory=list)
    applied: set[int] = field(default_factory=set)  # indices of the cases where the law made a check

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclass
class SuiteReport:
    backend: str
    seed: int
    cases: int
    results: list[LawResult]
    skipped: str | None = None

    @property
    def failed(self) -> list[LawResult]:
        return [r for r in self.results if not r.passed]

    @property
    def checks(self) -> int:
        return sum(r.checks for r in self.results)

    def replay(self, case: Case) -> str:
        return f"kvproof roundtrip --backend {self.backend} --seed {self.seed} --case {case.index}"

    HEADERS = ("law", "what", "cases", "checks", "result")

    def table_rows(self) -> list[tuple[str, str, int, int, str]]:
        if self.skipped:
            return [("*", "every law", 0, 0, f"SKIP ({self.skipped})")]
        return [(r.law.name, r.law.title, r.cases, r.checks, "pass" if r.passed else "FAIL") for r in self.results]


def run_suite(
    backend_name: str,
    seed: int = 1,
    count: int = 60,
    factory: Factory = RoundTrip,
    laws: Sequence[Law] = LAWS,
    cases: Sequence[Case] | None = None,
    only_case: int | None = None,
    stop_at_first: bool = False,
) -> SuiteReport:
    """Run ``laws`` over the cases on one backend; an unavailable backend gives a report with ``skipped``."""
    be = backend(backend_name)
    if cases is None:
        cases = make_cases(seed, count)
    if only_case is not None:
        cases = [c for c in cases if c.index == only_case]
    if not be.available:
        return SuiteReport(backend_name, seed, len(cases), [], skipped=be.reason)
    results = []
    for law in laws:
        result = LawResult(law)
        for case in cases:
            run = LawRun(factory, be, case)
            try:
                problems = law.run(run)
            except Exception as exc:  # a crash of the implementation under test is a failure of the law
                problems = [f"raised {type(exc).__name__}: {exc}"]
            if run.checks:
                result.cases += 1
                result.applied.add(case.index)
            result.checks += run.checks
            result.problems += [(case, p) for p in problems]
            if stop_at_first and result.problems:
                break
        results.append(result)
    return SuiteReport(backend_name, seed, len(cases), results)


def catches(factory: Factory, law_names: Sequence[str], cases: Sequence[Case], backend_name: str = "numpy") -> bool:
    """Return True when at least one of the named laws fails for ``factory`` on ``cases``."""
    report = run_suite(backend_name, factory=factory, laws=[LAW_BY_NAME[n] for n in law_names], cases=cases, stop_at_first=True)
    return bool(report.failed)


@dataclass
class RoundTripRun:
    """``kvproof roundtrip``: the laws' table on one backend, the failures with their replay lines, and (when asked)
    the negative controls with their catch rates. A skipped backend, or a skipped control, is not a pass."""

    backend: str
    seed: int
    count: int
    case: int | None
    result: SuiteReport
    controls: list[Any] = field(default_factory=list)  # mutants.ControlResult
    kind = "roundtrip"

    @property
    def ok(self) -> bool:
        return not self.result.failed and not any(not c.ok and not c.skipped for c in self.controls)

    @property
    def skipped(self) -> str:
        if self.result.skipped:
            return "kvproof roundtrip: a skipped backend is not a pass; pass --allow-skip to accept it"
        if any(c.skipped for c in self.controls):
            return "kvproof roundtrip: a skipped control is not a pass; pass --allow-skip to accept it"
        return ""

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        r = self.result
        say(
            f"kvproof roundtrip: backend={self.backend} seed={self.seed} cases={r.cases}"
            + (f" (case {self.case} only)" if self.case is not None else "")
        )
        table(SuiteReport.HEADERS, r.table_rows(), numeric=(2, 3))
        for law_result in r.failed:
            for c, message in law_result.problems[:3]:
                say(f"\nFAIL {law_result.law.name} ({law_result.law.title}) case {c.index} [{c.name}]\n  {message}")
                say(f"  replay: {r.replay(c)} --count {self.count}")
        if self.controls:
            say(f"\nnegative controls (seed {self.seed}, {self.count} cases; caught = cases where a listed law fails)")
        for control in self.controls:
            rate = f"{control.caught_cases:>3}/{control.cases:<3}" if control.cases else "   -   "
            verdict = "pass" if control.ok else "SKIP" if control.skipped else "FAIL"
            say(f"  {verdict}  {rate}  {control.name}: {control.detail}")
        skipped_controls = [c for c in self.controls if c.skipped]
        if skipped_controls and not r.skipped:
            say(f"kvproof roundtrip: {len(skipped_controls)} controls skipped: {skipped_controls[0].skipped}")

    def summary_line(self) -> str:
        r = self.result
        if r.skipped:
            return f"\nkvproof roundtrip: SKIP backend={self.backend}: {r.skipped}"
        return (
            f"\nkvproof roundtrip: {len(r.results) - len(r.failed)} laws passed, {len(r.failed)} failed, {r.checks} checks "
            f"(backend={self.backend} seed={self.seed} cases={r.cases})"
        )

    def to_json(self) -> dict[str, Any]:
        r = self.result
        return {
            "backend": self.backend,
            "seed": self.seed,
            "cases": r.cases,
            "skipped": r.skipped,
            "laws": [
                {
                    "law": x.law.name,
                    "title": x.law.title,
                    "cases": x.cases,
                    "checks": x.checks,
                    "result": "pass" if x.passed else "FAIL",
                    "problems": [f"case {c.index}: {m}" for c, m in x.problems[:5]],
                }
                for x in r.results
            ],
            "controls": [c.__dict__ for c in self.controls],
        }


def run_roundtrip(backend: str, seed: int, count: int, case: int | None, controls: bool) -> RoundTripRun:
    """The round-trip laws on ``backend`` (one ``case``, or ``count`` cases); with ``controls``, the negative controls
    on numpy and this backend (numpy and torch for numpy), with catch rates."""
    from .mutants import run_controls

    run = RoundTripRun(backend, seed, count, case, run_suite(backend, seed=seed, count=count, only_case=case))
    if controls and not run.result.skipped:
        backends = ("numpy", backend) if backend != "numpy" else ("numpy", "torch")
        run.controls = run_controls(seed=seed, count=count, backends=backends, rates=True)
    return run

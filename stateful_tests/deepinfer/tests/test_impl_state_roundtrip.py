"""impl.state_roundtrip: every round-trip law on every backend, dispatch, and the GPU path's no-host rule.

Each law of ``deepinfer.roundtrip_laws.LAWS`` is one test per backend over the standard cases (seed 1, 60
cases: the book's numbers, S < R and S = R, both modes, random layouts). torch CPU tests skip with
the reason when torch is absent and fail instead under ``KVPROOF_REQUIRE_TORCH=1``; the CUDA and
cupy tests skip with the reason when there is no GPU and fail under ``KVPROOF_REQUIRE_GPU=1``.

The argument checks, beyond B1's "a typed error":

- rejections: each malformed argument raises its own type with its exact message, naming the argument
  (``state_cache``, ``out``, ``tensor``) and the value, and leaves the cache and every buffer byte for byte;
- read-only arrays: accepted where the round trip only reads them (select's cache, load's tensor), refused
  where it writes them (load's cache, select's ``out``);
- overlap: byte ranges are half-open, so a buffer touching the cache is accepted and one a byte into it
  refused, an empty range overlaps nothing, and only raw-prefix load may pass the slot's own prefix;
- numpy integers act as ints for state ids and positions; a one-byte raw-prefix stored region is loaded.

The plan and the backends: ring groups skip raws and zero-byte windows without ending, raw placements keep
the non-empty raws, ``raw_nbytes`` refuses a ring; each backend names its device (numpy ``"host"``),
select allocates on the cache's device (torch's meta device stands in for a second one), and a round
trip keeps its layout. Where cupy is absent, a stand-in ``cupy`` module with cupy's documented array attributes
checks the cupy adapter's dispatch, device, dtype, layout, address, allocation and copy.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, ClassVar

import numpy as np
import pytest

from kvproof.impl.state_roundtrip import RoundTrip, _overlap, backend_for, raw_nbytes, raw_placements, ring_groups
from kvproof.spec import state_layout as S
from kvproof.spec.deepinfer_errors import StateArgumentError, StateArgumentType
from kvproof.stateful_tests.deepinfer.backends import BACKEND_NAMES, backend, required
from kvproof.stateful_tests.deepinfer.roundtrip_laws import LAWS, make_cases, run_suite


def need(name: str):
    be = backend(name)
    if not be.available:
        if required(name):
            pytest.fail(f"backend {name} is required here but unavailable: {be.reason}")
        pytest.skip(f"backend {name}: {be.reason}")
    return be


@cache
def standard_cases():
    return tuple(make_cases(1, 60))


@pytest.mark.parametrize("law", LAWS, ids=lambda law: f"{law.name}-{law.title}")
@pytest.mark.parametrize("backend_name", BACKEND_NAMES)
def test_law(backend_name, law):
    need(backend_name)
    report = run_suite(backend_name, laws=[law], cases=standard_cases())
    result = report.results[0]
    assert result.passed, "\n".join(
        f"case {c.index} [{c.name}]: {m}\n  replay: {report.replay(c)}" for c, m in result.problems[:5]
    )
    if law.name not in ("X1", "H1") or backend_name != "numpy":
        assert result.checks > 0, f"{law.name} made no check on {backend_name}"


def test_every_law_applies_to_some_standard_case():
    report = run_suite("numpy", cases=standard_cases())
    idle = [r.law.name for r in report.results if r.cases == 0 and r.law.name != "X1"]
    assert not idle


def test_the_standard_cases_cover_what_the_traps_need():
    cases = standard_cases()
    rings = [(s.rows, s.transfer_rows) for c in cases for s in c.layout.segments if isinstance(s, S.Ring)]
    assert (134, 128) in rings and any(0 < t < r for r, t in rings) and any(r == t for r, t in rings)
    assert {c.layout.mode for c in cases} == {"ring-view", "raw-prefix"}
    assert any(c.state_id != 0 and c.n_states > 1 for c in cases)
    assert any(c.lhp < 127 and c.layout.mode == "ring-view" for c in cases)  # negative window positions
    assert any(any(g.count > 1 for g in ring_groups(S.carved(c.layout, True))) for c in cases)  # grouped rings


def test_dispatch_by_type():
    assert backend_for(np.zeros((1, 1), np.uint8)).name == "numpy"
    with pytest.raises(StateArgumentType, match=r"^not a numpy array, torch tensor or cupy array: list$"):
        backend_for([[0]])
    with pytest.raises(StateArgumentType, match=r"^not a numpy array, torch tensor or cupy array: memoryview$"):
        RoundTrip(S.book_layout()).select(memoryview(bytes(10)), 0, 5, True)


def test_alike_layers_move_as_one_group():
    groups = ring_groups(S.carved(S.book_layout(stored_layers=5, dropped_layers=3), True))
    assert [(g.count, g.dropped) for g in groups] == [(5, False), (3, True)]


def test_allocated_destinations_keep_their_fill_in_padding():
    """The out=None path allocates (torch.empty in the book): alloc_fill makes its arbitrary bytes visible."""
    layout = S.StateLayout((S.Ring("a", 6, 3, 3),), align=16)
    cache = np.full((2, S.sizes(layout).cache_row_bytes), 7, np.uint8)
    out = RoundTrip(layout, alloc_fill=0xAB).select(cache, 0, 10, False)
    assert bytes(out) == bytes([7] * 9) + bytes([0xAB] * 7)


def _forbid_host_transfers(monkeypatch, name):
    def boom(*args, **kwargs):
        raise AssertionError("the implementation moved data to the host")

    if name in ("torch", "cuda"):
        import torch

        for attr in ("numpy", "cpu", "item", "tolist", "__array__"):
            monkeypatch.setattr(torch.Tensor, attr, boom)
        original_to = torch.Tensor.to

        def to_but_not_off_the_device(self, *args, **kwargs):
            moved = original_to(self, *args, **kwargs)
            if moved.device != self.device:
                boom()
            return moved

        monkeypatch.setattr(torch.Tensor, "to", to_but_not_off_the_device)
    else:
        import cupy

        monkeypatch.setattr(cupy, "asnumpy", boom)
        try:  # cupy.ndarray is an extension type: its methods may not be patchable
            monkeypatch.setattr(cupy.ndarray, "get", boom)
        except (TypeError, AttributeError):
            pass


@pytest.mark.parametrize("backend_name", ["torch", "cuda", "cupy"])
@pytest.mark.parametrize("mode", ["ring-view", "raw-prefix"])
def test_device_path_stays_on_the_device(monkeypatch, backend_name, mode):
    """select and load run with every host conversion of the library disabled; results live on the cache's device."""
    _run_on_device(monkeypatch, backend_name, mode, RoundTrip)


@pytest.mark.parametrize("backend_name", ["torch", "cuda", "cupy"])
def test_device_path_check_catches_a_host_round_trip(monkeypatch, backend_name):
    """Negative control: a select that stages its rings through host memory is caught."""
    from kvproof.stateful_tests.deepinfer.mutants import ViaHost

    with pytest.raises(AssertionError, match="moved data to the host"):
        _run_on_device(monkeypatch, backend_name, "ring-view", ViaHost)


def _run_on_device(monkeypatch, backend_name, mode, factory):
    be = need(backend_name)
    layout = S.book_layout(mode=mode)
    s = S.sizes(layout)
    host = np.random.default_rng(3).integers(1, 256, (3, s.cache_row_bytes), dtype=np.uint8)
    cache = be.from_numpy(host)
    tensor = be.from_numpy(host[0, : s.state_size_to_disk].copy())
    rt = factory(layout)
    _forbid_host_transfers(monkeypatch, backend_name)
    try:
        handoff = rt.select(cache, 1, 767, True)
        stored = rt.select(cache, 1, 767, False, copy=True)
        rt.load(cache, 2, tensor, 767, "on")
    finally:
        monkeypatch.undo()
    for result in (handoff, stored):
        assert backend_for(result).name == backend_for(cache).name
        assert backend_for(result).device(result) == backend_for(cache).device(cache)
    model = tuple(bytes(r) for r in host)
    want = S.select(layout, model, 1, 767, True)
    assert S.take(bytes(be.to_numpy(handoff)), want.specified) == S.take(want.data, want.specified)


# ----------------------------------------------------------------------------- argument checks, read-only arrays, overlap

LAYOUT = S.StateLayout((S.Ring("a", 6, 3, 2), S.Ring("drop", 6, 3, 2, dropped=True), S.Raw("cmp", 5)), align=4)
RAW = replace(LAYOUT, mode="raw-prefix")
ONE_BYTE = S.StateLayout((S.Ring("a", 1, 1, 1),))  # one stored byte: stored = handoff = row = 1
# LAYOUT: rows of 29 bytes, stored 8, handoff 21. RAW: stored 12, handoff 29. Caches are 3 x 32, slot 1, position 4.


def _garbage(shape, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 256, shape, dtype=np.uint8)


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def _snapshot(array):
    """A copy of a numpy array's or torch CPU tensor's bytes (a meta tensor has none: None)."""
    if isinstance(array, np.ndarray):
        return array.copy()
    return None if array.is_meta else array.numpy().copy()


def _torch():
    need("torch")
    import torch

    return torch


def _meta(torch, n: int):
    return torch.empty(n, dtype=torch.uint8, device="meta")


@dataclass(frozen=True)
class Rejection:
    """One malformed call: ``call(rt, cache, buffer)`` must raise exactly ``error`` with the whole ``message``.

    ``buffer(cache)`` makes the destination or transfer tensor (a fresh array, or a view of the cache);
    ``lib`` is the cache's library ("torch": a CPU tensor sharing the numpy cache's memory).
    """

    name: str
    error: type[Exception]
    message: str
    call: Callable[[Any, Any, Any], object]
    buffer: Callable[[Any], Any] = lambda cache: np.zeros(0, np.uint8)
    layout: S.StateLayout = LAYOUT
    lib: str = "numpy"


# Ill-typed arguments below are deliberate: each must raise a typed error.
REJECTIONS = (
    Rejection(
        "select: an int16 cache",
        StateArgumentType,
        r"^state_cache must be uint8 \(view it as bytes\), not int16$",
        lambda rt, cache, buf: rt.select(cache.astype(np.int16), 1, 4, True),
    ),
    Rejection(
        "select: a 1-D cache",
        StateArgumentError,
        r"^state_cache must be a C-contiguous 2-D array, got shape \(96,\)$",
        lambda rt, cache, buf: rt.select(cache.reshape(-1), 1, 4, True),
    ),
    Rejection(
        "select: a Fortran-ordered cache",
        StateArgumentError,
        r"^state_cache must be a C-contiguous 2-D array, got shape \(3, 32\)$",
        lambda rt, cache, buf: rt.select(np.asfortranarray(cache), 1, 4, True),
    ),
    Rejection(
        "select: cache rows too narrow",
        StateArgumentError,
        r"^state_cache rows have 28 bytes; the layout needs 29$",
        lambda rt, cache, buf: rt.select(np.ascontiguousarray(cache[:, :28]), 1, 4, True),
    ),
    Rejection(
        "load: a read-only cache",
        StateArgumentError,
        r"^state_cache is read-only$",
        lambda rt, cache, buf: rt.load(_read_only(cache), 1, buf, 4, "on"),
        lambda cache: _garbage(8, 6),
    ),
    Rejection(
        "select: state id past the last slot",
        StateArgumentError,
        r"^state_id 3 outside \[0, 3\)$",
        lambda rt, cache, buf: rt.select(cache, 3, 4, True),
    ),
    Rejection(
        "load: numpy state id past the last slot",
        StateArgumentError,
        r"^state_id 3 outside \[0, 3\)$",
        lambda rt, cache, buf: rt.load(cache, np.int64(3), buf, 4, "on"),
        lambda cache: _garbage(8, 6),
    ),
    Rejection(
        "select: state id -1",
        StateArgumentError,
        r"^state_id -1 outside \[0, 3\)$",
        lambda rt, cache, buf: rt.select(cache, -1, 4, True),
    ),
    Rejection(
        "select: a bool state id",
        StateArgumentType,
        r"^state_id must be an int, not bool$",
        lambda rt, cache, buf: rt.select(cache, True, 4, True),
    ),
    Rejection(
        "select: a str state id",
        StateArgumentType,
        r"^state_id must be an int, not str$",
        lambda rt, cache, buf: rt.select(cache, "1", 4, True),
    ),
    Rejection(
        "select: numpy position below -1",
        StateArgumentError,
        r"^last_hit_position -2 < -1$",
        lambda rt, cache, buf: rt.select(cache, 1, np.int64(-2), True),
    ),
    Rejection(
        "select: a float position",
        StateArgumentType,
        r"^last_hit_position must be an int, not float$",
        lambda rt, cache, buf: rt.select(cache, 1, 4.0, True),
    ),
    Rejection(
        "select: to_ce a str",
        StateArgumentType,
        r"^to_ce must be a bool, not str$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, "yes"),
    ),
    Rejection(
        "select: out one byte long",
        StateArgumentError,
        r"^out has 22 bytes; expected 21$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, True, out=buf),
        lambda cache: _garbage(22, 6),
    ),
    Rejection(
        "select: a 2-D out",
        StateArgumentError,
        r"^out must be a contiguous 1-D array, got shape \(1, 21\)$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, True, out=buf),
        lambda cache: _garbage((1, 21), 6),
    ),
    Rejection(
        "select: a strided out",
        StateArgumentError,
        r"^out must be a contiguous 1-D array, got shape \(21,\)$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, True, out=buf[::2]),
        lambda cache: _garbage(42, 6),
    ),
    Rejection(
        "select: an int16 out",
        StateArgumentType,
        r"^out must be uint8, not int16$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, True, out=buf),
        lambda cache: _garbage(21, 6).astype(np.int16),
    ),
    Rejection(
        "select: a read-only out",
        StateArgumentError,
        r"^out is read-only$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, True, out=_read_only(buf)),
        lambda cache: _garbage(21, 6),
    ),
    Rejection(
        "select: out in another slot",
        StateArgumentError,
        r"^out overlaps state_cache memory$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, True, out=buf),
        lambda cache: cache[2, :21],
    ),
    Rejection(
        "select: out is the slot's own prefix",
        StateArgumentError,
        r"^out overlaps state_cache memory$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, True, out=buf),
        lambda cache: cache[1, :21],
    ),
    Rejection(
        "select (raw-prefix): out is the slot's own prefix",
        StateArgumentError,
        r"^out overlaps state_cache memory$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, True, out=buf),
        lambda cache: cache[1, :29],
        RAW,
    ),
    Rejection(
        "select: a one-byte out in another slot",
        StateArgumentError,
        r"^out overlaps state_cache memory$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, True, out=buf),
        lambda cache: cache[2, :1],
        ONE_BYTE,
    ),
    Rejection(
        "load: tensor one byte long",
        StateArgumentError,
        r"^tensor has 9 bytes; expected 8$",
        lambda rt, cache, buf: rt.load(cache, 1, buf, 4, "on"),
        lambda cache: _garbage(9, 6),
    ),
    Rejection(
        "load: a 2-D tensor",
        StateArgumentError,
        r"^tensor must be a contiguous 1-D array, got shape \(1, 8\)$",
        lambda rt, cache, buf: rt.load(cache, 1, buf, 4, "on"),
        lambda cache: _garbage((1, 8), 6),
    ),
    Rejection(
        "load: an int16 tensor",
        StateArgumentType,
        r"^tensor must be uint8, not int16$",
        lambda rt, cache, buf: rt.load(cache, 1, buf, 4, "on"),
        lambda cache: _garbage(8, 6).astype(np.int16),
    ),
    Rejection(
        "load: tensor in another slot",
        StateArgumentError,
        r"^tensor overlaps state_cache memory$",
        lambda rt, cache, buf: rt.load(cache, 1, buf, 4, "on"),
        lambda cache: cache[2, :8],
    ),
    Rejection(
        "load: tensor is the slot's own prefix (ring-view)",
        StateArgumentError,
        r"^tensor overlaps state_cache memory$",
        lambda rt, cache, buf: rt.load(cache, 1, buf, 4, "on"),
        lambda cache: cache[1, :8],
    ),
    Rejection(
        "load (raw-prefix): tensor one byte into its own slot",
        StateArgumentError,
        r"^tensor overlaps state_cache memory$",
        lambda rt, cache, buf: rt.load(cache, 1, buf, 4, "on"),
        lambda cache: cache[1, 1:13],
        RAW,
    ),
    Rejection(
        "load (raw-prefix): tensor in another slot",
        StateArgumentError,
        r"^tensor overlaps state_cache memory$",
        lambda rt, cache, buf: rt.load(cache, 1, buf, 4, "on"),
        lambda cache: cache[0, :12],
        RAW,
    ),
    Rejection(
        "load: a one-byte tensor in another slot",
        StateArgumentError,
        r"^tensor overlaps state_cache memory$",
        lambda rt, cache, buf: rt.load(cache, 1, buf, 0, "on"),
        lambda cache: cache[2, :1],
        ONE_BYTE,
    ),
    Rejection(
        "select: a torch out for a numpy cache",
        StateArgumentType,
        r"^out is Tensor but state_cache is a numpy array$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, True, out=buf),
        lambda cache: _torch().from_numpy(_garbage(21, 6)),
    ),
    Rejection(
        "load: a torch tensor for a numpy cache",
        StateArgumentType,
        r"^tensor is Tensor but state_cache is a numpy array$",
        lambda rt, cache, buf: rt.load(cache, 1, buf, 4, "on"),
        lambda cache: _torch().from_numpy(_garbage(8, 6)),
    ),
    Rejection(
        "select (torch): out on another device",
        StateArgumentType,
        r"^out is on meta but state_cache is on cpu$",
        lambda rt, cache, buf: rt.select(cache, 1, 4, True, out=buf),
        lambda cache: _meta(_torch(), 21),
        lib="torch",
    ),
    Rejection(
        "load (torch): tensor on another device",
        StateArgumentType,
        r"^tensor is on meta but state_cache is on cpu$",
        lambda rt, cache, buf: rt.load(cache, 1, buf, 4, "on"),
        lambda cache: _meta(_torch(), 8),
        lib="torch",
    ),
)


@pytest.mark.parametrize("case", REJECTIONS, ids=lambda r: r.name)
def test_each_rejection_raises_its_type_with_its_exact_message_and_changes_nothing(case):
    """Every argument check raises its own error type, with a message that names the argument and the value,
    before any write: the cache and the destination or tensor stay byte for byte as they were."""
    host = _garbage((3, 32))
    cache = _torch().from_numpy(host) if case.lib == "torch" else host  # the tensor shares host's memory
    buf = case.buffer(cache)
    cache_before, buf_before = host.copy(), _snapshot(buf)
    with pytest.raises(case.error, match=case.message) as raised:
        case.call(RoundTrip(case.layout), cache, buf)
    assert type(raised.value) is case.error
    assert np.array_equal(host, cache_before), "the rejected call changed the cache"
    if buf_before is not None:
        assert np.array_equal(_snapshot(buf), buf_before), "the rejected call changed its buffer"


@pytest.mark.parametrize("layout", [LAYOUT, RAW], ids=["ring-view", "raw-prefix"])
def test_read_only_inputs_are_accepted_where_the_round_trip_only_reads_them(layout):
    """select reads its cache and load reads its tensor: both may be read-only (a numpy array with
    ``writeable = False``; a torch tensor cannot be read-only) and give the spec's result."""
    host = _garbage((3, 32))
    model = tuple(bytes(r) for r in host)
    rt = RoundTrip(layout)
    for to_ce in (False, True):
        out = rt.select(_read_only(host), 1, 4, to_ce, out=np.zeros(S.transfer_size(layout, to_ce), np.uint8))
        want = S.select(layout, model, 1, 4, to_ce)
        assert want is not None and S.take(bytes(out), want.specified) == S.take(want.data, want.specified)
    tensor = _garbage(S.sizes(layout).state_size_to_disk, 6)
    rt.load(host, 1, _read_only(tensor), 4, "on")
    assert tuple(bytes(r) for r in host) == S.load(layout, model, 1, bytes(tensor), 4, "on")


def test_overlap_holds_exactly_when_two_half_open_byte_ranges_share_a_byte():
    """``_overlap((a0, a1), (b0, b1))``: ranges ``[a0, a1)`` that touch do not overlap and an empty range overlaps nothing."""
    ranges = [(a, b) for a in range(5) for b in range(a, 6)]
    for x in ranges:
        for y in ranges:
            assert _overlap(x, y) == bool(set(range(*x)) & set(range(*y))), (x, y)


def test_a_buffer_touching_the_cache_is_accepted_and_one_a_byte_into_it_refused():
    """The cache's memory is the half-open ``[start, start + nbytes)``: a destination or tensor that ends where the
    cache starts, or starts where it ends, is accepted and works; one byte further in, either side, is refused
    and nothing changes."""
    total, disk, n = 21, 8, 3 * 32
    arena = _garbage(total + n + total)
    cache = arena[total : total + n].reshape(3, 32)
    rt = RoundTrip(LAYOUT)
    for out in (arena[:total], arena[total + n :]):
        model = tuple(bytes(r) for r in cache)
        rt.select(cache, 1, 4, True, out=out)
        want = S.select(LAYOUT, model, 1, 4, True)
        assert want is not None and S.take(bytes(out), want.specified) == S.take(want.data, want.specified)
        assert tuple(bytes(r) for r in cache) == model
    for tensor in (arena[total - disk : total], arena[total + n : total + n + disk]):
        model = tuple(bytes(r) for r in cache)
        rt.load(cache, 1, tensor, 4, "on")
        assert tuple(bytes(r) for r in cache) == S.load(LAYOUT, model, 1, bytes(tensor), 4, "on")
    # ending on the cache's first byte; starting on its last byte
    for out_at, tensor_at in ((1, total + 1 - disk), (total + n - 1, total + n - 1)):
        before = arena.copy()
        with pytest.raises(StateArgumentError, match=r"^out overlaps state_cache memory$"):
            rt.select(cache, 1, 4, True, out=arena[out_at : out_at + total])
        with pytest.raises(StateArgumentError, match=r"^tensor overlaps state_cache memory$"):
            rt.load(cache, 1, arena[tensor_at : tensor_at + disk], 4, "on")
        assert np.array_equal(arena, before)


def test_an_empty_destination_inside_the_cache_overlaps_nothing():
    """A zero-size ring-view handoff into an empty slice of the cache is accepted: an empty range holds no byte."""
    layout = S.StateLayout((S.Ring("a", 3, 0, 2),))
    cache = _garbage((3, 8))
    before = cache.copy()
    out = RoundTrip(layout).select(cache, 1, 4, True, out=cache[1, 2:2])
    assert out.shape == (0,) and np.array_equal(cache, before)


def test_raw_prefix_load_may_pass_the_slots_own_prefix_and_changes_nothing():
    """raw-prefix: the stored tensor *is* ``cache[sid, :disk]`` (select's alias); loading it back is allowed and
    leaves the cache as it was. Any other overlap, even one byte off, is refused (see the rejections)."""
    cache = _garbage((3, 32))
    before = cache.copy()
    rt = RoundTrip(RAW)
    rt.load(cache, 1, rt.select(cache, 1, 4, False), 4, "on")
    assert np.array_equal(cache, before)


def test_numpy_integers_act_as_ints_for_state_ids_and_positions():
    """A state id or position given as a numpy integer selects and loads exactly as the same Python int."""
    host = _garbage((3, 32))
    model = tuple(bytes(r) for r in host)
    rt = RoundTrip(LAYOUT)
    out = rt.select(host, np.uint8(1), np.int32(4), True, out=np.zeros(21, np.uint8))
    want = S.select(LAYOUT, model, 1, 4, True)
    assert want is not None and S.take(bytes(out), want.specified) == S.take(want.data, want.specified)
    tensor = _garbage(8, 6)
    rt.load(host, np.int64(2), tensor, np.int64(4), "on")
    assert tuple(bytes(r) for r in host) == S.load(LAYOUT, model, 2, bytes(tensor), 4, "on")


def test_raw_prefix_load_writes_a_one_byte_stored_region():
    """raw-prefix load skips only a stored region of zero bytes; a one-byte region is written."""
    layout = replace(ONE_BYTE, mode="raw-prefix")
    host = _garbage((3, 4))
    model = tuple(bytes(r) for r in host)
    RoundTrip(layout).load(host, 1, np.zeros(1, np.uint8), 0, "on")
    assert tuple(bytes(r) for r in host) == S.load(layout, model, 1, b"\x00", 0, "on")
    assert host[1, 0] == 0


# ----------------------------------------------------------------------------- the plan and the backends


def test_ring_groups_skip_raws_and_empty_rings_without_ending_and_raw_placements_keep_the_nonempty_raws():
    """The plan walks every placement: a raw or a zero-byte window before a ring does not end the ring groups,
    and the raw placements are the raws holding at least one byte, in order."""
    layout = S.StateLayout(
        (
            S.Raw("lead", 4, dropped=False),
            S.Ring("empty", 3, 0, 2),
            S.Ring("a", 4, 2, 1),
            S.Ring("b", 4, 2, 1),
            S.Raw("none", 0, dropped=False),
            S.Raw("tail", 3, dropped=False),
        )
    )
    groups = ring_groups(S.carved(layout, True))
    assert [(g.ring.name, g.count, g.cache_offset, g.cache_stride, g.tensor_offset, g.tensor_stride) for g in groups] == [
        ("a", 2, 10, 4, 4, 2)
    ]
    assert [p.segment.name for p in raw_placements(S.placements(layout))] == ["lead", "tail"]
    assert [g.ring.name for g in ring_groups(S.carved(ONE_BYTE, True))] == ["a"]  # a window of one byte is a window


def test_raw_nbytes_counts_a_raw_and_refuses_a_ring_naming_it():
    placed = S.placements(LAYOUT)
    assert raw_nbytes(placed[2]) == 5
    with pytest.raises(AssertionError, match=r"^a raw placement of a Ring(\n|$)"):
        raw_nbytes(placed[0])


def test_each_backend_names_the_device_its_arrays_live_on():
    """numpy arrays live on "host"; a torch tensor on its own device."""
    array = np.zeros(2, np.uint8)
    assert backend_for(array).device(array) == "host"
    torch = _torch()
    for tensor in (torch.zeros(2, dtype=torch.uint8), _meta(torch, 2)):
        assert backend_for(tensor).device(tensor) == tensor.device


def test_select_allocates_its_destination_on_the_cache_device():
    """Without ``out``, ring-view select allocates on the cache's own device. torch's meta device (no data,
    present on every machine) stands in for a second device where there is no GPU."""
    torch = _torch()
    cache = torch.empty((3, 32), dtype=torch.uint8, device="meta")
    out = RoundTrip(LAYOUT).select(cache, 1, 4, True)
    assert (out.device, out.dtype, tuple(out.shape)) == (cache.device, torch.uint8, (21,))


def test_a_round_trip_keeps_its_layout():
    """``RoundTrip.layout`` is the layout it was made for (the rule-step variants of ``mutants.py`` read it)."""
    assert RoundTrip(LAYOUT).layout is LAYOUT


@pytest.mark.parametrize("layout", [LAYOUT, RAW], ids=["ring-view", "raw-prefix"])
def test_the_module_functions_are_the_round_trip_of_their_layout(layout):
    """``select`` and ``load`` (the functional API, as DeepInfer's ``select_state_slice`` and its load are called) do
    exactly what ``RoundTrip(layout)`` does: the same specified bytes of the tensor (its padding is left unwritten,
    so only the bytes the spec specifies are compared), in an ``out`` buffer too, and the same bytes loaded."""
    from kvproof.impl.state_roundtrip import load, select

    cache = _garbage((3, 32))
    model = tuple(bytes(row) for row in cache)
    for to_ce, copy in ((True, False), (False, True)):
        specified = S.select(layout, model, 1, 4, to_ce).specified
        mine = select(layout, cache, 1, 4, to_ce, copy=True) if copy else select(layout, cache, 1, 4, to_ce)  # no copy by default
        theirs = RoundTrip(layout).select(cache, 1, 4, to_ce, copy=copy)
        assert S.take(bytes(mine), specified) == S.take(bytes(theirs), specified)
        # raw-prefix hands out the slot's own prefix unless asked for a copy; ring-view always builds a tensor
        assert np.shares_memory(mine, cache) == (layout.mode == "raw-prefix" and not copy)
    tensor = RoundTrip(layout).select(cache, 1, 4, True)
    out = np.zeros(len(tensor), np.uint8)
    specified = S.select(layout, model, 1, 4, True).specified
    assert select(layout, cache, 1, 4, True, out) is out and S.take(bytes(out), specified) == S.take(bytes(tensor), specified)
    stored = select(layout, cache, 1, 4, False, copy=True)
    mine, theirs = _garbage((3, 32), 7), _garbage((3, 32), 7)
    load(layout, mine, 2, stored, 4, "on")
    RoundTrip(layout).load(theirs, 2, stored, 4, "on")
    assert np.array_equal(mine, theirs) and not np.array_equal(mine, _garbage((3, 32), 7))


class _CupyDevice:
    """cupy's ``Device``: an ``id`` and a context manager that makes it current (here: recorded)."""

    current: ClassVar[list[int]] = []

    def __init__(self, id: int):
        self.id = id

    def __enter__(self):
        _CupyDevice.current.append(self.id)

    def __exit__(self, *exc):
        _CupyDevice.current.pop()


class _CupyArray:
    """The attributes of ``cupy.ndarray`` the cupy backend reads, as cupy documents them: ``device.id``,
    ``data.ptr``, ``dtype``, ``flags.c_contiguous``, ``nbytes``, ``copy()``."""

    def __init__(self, nbytes: int, device: int = 3, ptr: int = 4096, dtype: Any = np.uint8, contiguous: bool = True):
        self.nbytes, self.dtype = nbytes, np.dtype(dtype)
        self.device = _CupyDevice(device)
        self.data = type("MemoryPointer", (), {"ptr": ptr})()
        self.flags = type("Flags", (), {"c_contiguous": contiguous})()

    def copy(self):
        return _CupyArray(self.nbytes, self.device.id, self.data.ptr + (1 << 20), self.dtype)


def _fake_cupy():
    import types

    module = types.ModuleType("cupy")
    module.ndarray = _CupyArray
    module.uint8 = np.uint8

    def empty(nbytes, dtype):
        assert np.dtype(dtype) == np.uint8
        return _CupyArray(nbytes, _CupyDevice.current[-1] if _CupyDevice.current else 0, ptr=1 << 30)

    module.empty = empty
    return module


def test_the_cupy_backend_owns_cupy_arrays_and_reads_them_through_cupys_own_attributes(monkeypatch):
    """Where cupy is absent (no GPU here), a stand-in ``cupy`` module holding an ``ndarray`` type with cupy's
    documented attributes checks the adapter: a cupy array is dispatched to the cupy backend exactly when a
    ``cupy`` module is loaded and the array is its ``ndarray``; the device is ``("cuda", device.id)``; dtype,
    C-contiguity and the address come from ``dtype``, ``flags.c_contiguous`` and ``data.ptr``; a buffer is
    allocated with the like array's device current; a copy is a distinct array."""
    import sys

    from kvproof.impl.state_roundtrip import byte_range

    stand_in = _CupyArray(64)
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    with pytest.raises(StateArgumentType, match="not a numpy array, torch tensor or cupy array: _CupyArray"):
        backend_for(stand_in)
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    cupy_backend = backend_for(stand_in)
    assert cupy_backend.name == "cupy"
    assert backend_for(np.zeros(2, np.uint8)).name == "numpy"
    assert cupy_backend.device(stand_in) == ("cuda", 3)
    assert cupy_backend.is_uint8(stand_in) and not cupy_backend.is_uint8(_CupyArray(64, dtype=np.float32))
    assert cupy_backend.is_contiguous(stand_in) and not cupy_backend.is_contiguous(_CupyArray(64, contiguous=False))
    assert cupy_backend.data_ptr(stand_in) == 4096
    assert byte_range(cupy_backend, stand_in) == (4096, 4160)
    made = cupy_backend.empty(21, _CupyArray(8, device=5))
    assert (made.nbytes, made.device.id, _CupyDevice.current) == (21, 5, [])
    twin = cupy_backend.copy(stand_in)
    assert twin is not stand_in and twin.nbytes == 64 and twin.data.ptr != stand_in.data.ptr

"""spec.state_layout: sizes, the ring primitives on hand-worked examples, the spec's own round-trip laws."""

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvproof.spec import state_layout as S
from kvproof.spec.deepinfer_errors import LayoutError, StateArgumentError, StateArgumentType, TruncationGuardError
from kvproof.spec.state_layout import Raw, Ring, StateLayout


def test_book_layout_sizes():
    """Two stored rings and one dropped ring of R = 134 rows, S = 128, 4-byte rows, align 64, 24 bytes of compression."""
    s = S.sizes(S.book_layout())
    ring_cache, ring_tensor = S.pad(134 * 4, 64), S.pad(128 * 4, 64)
    assert (ring_cache, ring_tensor) == (576, 512)
    assert s.state_size_to_disk == 2 * 512 and s.total_bytes_inference == 3 * 512 + 24
    assert s.swa_drop_total_bytes_inference_pad == 512 and s.dropped_compress_bytes == 24
    assert s.dropped_bytes_inference == s.swa_drop_total_bytes_inference_pad + s.dropped_compress_bytes
    assert s.swa_drop_num_layer == 1 and s.cache_row_bytes == 3 * 576 + 24
    assert (s.dropped_cache_offset, s.dropped_tensor_offset) == (3 * 576, 3 * 512)


def test_raw_prefix_tensor_is_the_cache_prefix():
    s = S.sizes(S.book_layout(mode="raw-prefix"))
    assert s.state_size_to_disk == 2 * 576 and s.total_bytes_inference == s.cache_row_bytes


def test_compress_first_order_puts_the_raw_state_first_in_the_dropped_region():
    layout = StateLayout(
        (Ring("a", 4, 2, 1), Ring("d", 4, 2, 1, dropped=True), Raw("c", 3)), dropped_order="compress-first"
    )
    names = [p.segment.name for p in S.placements(layout)]
    assert names == ["a", "c", "d"]
    assert S.sizes(layout).dropped_tensor_offset == 2


def test_book_window_and_slots():
    """H1: hit 768 -> lhp 767 -> window [640, 768) -> slots 104..133 then 0..97."""
    lhp = S.last_hit_position(768)
    assert lhp == 767 and S.last_hit_position(768, "exclusive") == 768
    assert S.window_positions(S.WINDOW, lhp) == range(640, 768)
    assert [S.slot_of(p, S.DEFAULT_RING) for p in S.window_positions(128, 767)] == list(range(104, 134)) + list(
        range(98)
    )


def _ring_from_history(rows: int, row_bytes: int, positions: int) -> bytes:
    ring = bytes([0xEE]) * (rows * row_bytes)
    for p in range(positions):
        ring = S.ring_write(ring, rows, row_bytes, p, bytes([p % 251 + 1]) * row_bytes)
    return ring


def test_select_state_slice_by_hand():
    """R = 5, S = 3, positions 0..6 written: the window at lhp 6 is positions 4, 5, 6 = slots 4, 0, 1."""
    ring = _ring_from_history(5, 1, 7)
    assert ring == bytes([6, 7, 3, 4, 5])  # slot s holds the last position p with p mod 5 == s, plus 1
    assert S.select_state_slice(ring, 5, 3, 1, 6) == bytes([5, 6, 7])
    assert S.select_state_slice(ring, 5, 3, 1, 0) == bytes([0, 0, 6])  # negative positions are zero rows


def test_load_state_to_cache_by_hand():
    ring = bytes([9] * 5)
    assert S.load_state_to_cache(ring, bytes([1, 2, 3]), 5, 3, 1, 6) == bytes([2, 3, 9, 9, 1])
    assert S.load_state_to_cache(ring, bytes([1, 2, 3]), 5, 3, 1, 0) == bytes([3, 9, 9, 9, 9])


@given(rows=st.integers(1, 12), data=st.data())
def test_spec_select_returns_the_history(rows, data):
    """R2 on the spec itself: replay a history through the writer; the window is the last S positions."""
    transfer = data.draw(st.integers(0, rows))
    lhp = data.draw(st.integers(-1, 40))
    upto = lhp + 1 + data.draw(st.integers(0, rows - transfer))
    ring = _ring_from_history(rows, 2, upto)
    got = S.select_state_slice(ring, rows, transfer, 2, lhp)
    want = b"".join(bytes([p % 251 + 1]) * 2 if p >= 0 else b"\0\0" for p in S.window_positions(transfer, lhp))
    assert got == want


@given(rows=st.integers(1, 12), data=st.data())
def test_spec_load_then_select_is_the_identity_on_live_rows(rows, data):
    transfer = data.draw(st.integers(0, rows))
    lhp = data.draw(st.integers(-1, 40))
    ring = bytes(data.draw(st.lists(st.integers(1, 255), min_size=rows, max_size=rows)))
    window = bytes(data.draw(st.lists(st.integers(1, 255), min_size=transfer, max_size=transfer)))
    loaded = S.load_state_to_cache(ring, window, rows, transfer, 1, lhp)
    back = S.select_state_slice(loaded, rows, transfer, 1, lhp)
    live = [j for j, p in enumerate(S.window_positions(transfer, lhp)) if p >= 0]
    assert [back[j] for j in live] == [window[j] for j in live]
    touched = {S.slot_of(p, rows) for p in S.window_positions(transfer, lhp) if p >= 0}
    assert all(loaded[s] == ring[s] for s in range(rows) if s not in touched)


def _cache(layout, n=3):
    width = S.sizes(layout).cache_row_bytes
    return tuple(bytes((i * 37 + k * 11) % 255 + 1 for k in range(width)) for i in range(n))


def test_select_and_load_round_trip_in_both_modes():
    for mode in ("ring-view", "raw-prefix"):
        layout = S.book_layout(mode=mode)
        cache = _cache(layout)
        stored = S.select(layout, cache, 1, 767, False)
        assert S.load(layout, cache, 1, stored.data, 767, "on") == cache  # T1
        handoff = S.select(layout, cache, 1, 767, True)
        assert S.take(handoff.data, stored.specified) == S.take(stored.data, stored.specified)  # S2


def test_raw_prefix_selection_names_its_alias():
    layout = S.book_layout(mode="raw-prefix")
    sel = S.select(layout, _cache(layout), 2, 767, True)
    assert sel.aliases == (2, 0, S.sizes(layout).total_bytes_inference)
    assert S.select(S.book_layout(), _cache(S.book_layout()), 2, 767, True).aliases is None


def test_load_footprint_is_the_window_slots_and_never_the_dropped_region():
    layout = S.book_layout()
    footprint = S.load_footprint(layout, 767)
    assert sum(b - a for a, b in footprint) == 2 * 128 * 4
    dropped = S.dropped_cache_ranges(layout)
    assert not any(a < d and c < b for a, b in footprint for c, d in dropped)


def test_guard_and_zero_sizes():
    layout = S.book_layout()
    cache = _cache(layout)
    with pytest.raises(TruncationGuardError):
        S.load(layout, cache, 0, bytes(1024), 767, "off")
    S.load(S.book_layout(dropped_layers=0), _cache(S.book_layout(dropped_layers=0)), 0, bytes(1024), 767, "off")
    nothing = StateLayout((Raw("c", 8),), mode="raw-prefix")
    assert S.select(nothing, _cache(nothing), 0, 5, False) is None
    assert S.select(replace(nothing, mode="ring-view"), _cache(nothing), 0, 5, False).data == b""


@pytest.mark.parametrize(
    "segments, kwargs",
    [
        ((Ring("a", 4, 5, 1),), {}),
        ((Ring("a", 0, 0, 1),), {}),
        ((Ring("a", 4, 2, 0),), {}),
        ((Raw("a", -1),), {}),
        ((Ring("a", 4, 2, 1), Raw("a", 3)), {}),
        ((Ring("a", 4, 2, 1),), {"align": 0}),
        ((Ring("a", 4, 2, 1),), {"mode": "other"}),
        ((Ring("a", 4, 2.0, 1),), {}),  # type: ignore[arg-type]  # a float row count, deliberately
    ],
)
def test_bad_layouts_are_rejected(segments, kwargs):
    with pytest.raises(LayoutError):
        StateLayout(segments, **kwargs).check()


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda L, c: S.select(L, c, 3, 767, True), StateArgumentError),
        (lambda L, c: S.select(L, c, True, 767, True), StateArgumentType),
        (lambda L, c: S.select(L, c, 0, -2, True), StateArgumentError),
        (lambda L, c: S.select(L, c, 0, 7.0, True), StateArgumentType),  # type: ignore[arg-type]  # float position, deliberately
        (lambda L, c: S.select(L, c, 0, 7, 1), StateArgumentType),  # type: ignore[arg-type]  # int to_ce, deliberately
        (lambda L, c: S.load(L, c, 0, bytes(5), 767, "on"), StateArgumentError),
        (lambda L, c: S.load(L, c, 0, bytearray(1024), 767, "on"), StateArgumentType),  # type: ignore[arg-type]  # bytearray tensor, deliberately
        (lambda L, c: S.load(L, c, 0, bytes(1024), 767, None), StateArgumentType),  # type: ignore[arg-type]  # None mode, deliberately
        (lambda L, c: S.select(L, c[:1] + (b"short",), 0, 767, True), StateArgumentError),
    ],
)
def test_bad_arguments_are_typed_errors(call, error):
    layout = S.book_layout()
    with pytest.raises(error):
        call(layout, _cache(layout))

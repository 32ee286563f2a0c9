"""spec.state_layout: sizes, the ring primitives on hand-worked examples, the spec's own round-trip laws.

Laws (hand-worked numbers in each docstring):

- validation: every malformed layout or argument raises its own type with an exact message naming the field;
  the boundary values (R = 1, S = R, S = 0, nbytes = 0, align = 1, last_hit_position -1) are accepted;
- ``book_layout`` is the book's slot (§11.4: R = 134, S = 128, stored and dropped rings, a compression run);
- placements per mode: ring-view tensors hold the padded window, raw-prefix tensors the cache row's prefix
  (a ring's tensor bytes equal its cache bytes, its payload the raw ring);
- region order: stored segments first as given, then dropped rings and raws grouped per ``dropped_order``;
  ``dropped_*_offset`` with no dropped raw is where one would go;
- select (R1, C1, Listings 11.4-11.6): ring-view carves every window and copies the raws, raw-prefix is the prefix;
- load (Listing 11.7, I1, I2, G2): writes exactly ``load_footprint``, a zero-size raw-prefix load is a no-op;
- ``merge`` and ``take`` by hand.
- ``live_window_ranges`` (T2's valid rows): the book's slot by hand, and every lhp, tensor and filter against a
  byte-by-byte oracle (a window row is live when its position is >= 0).
"""

from dataclasses import replace
from itertools import pairwise
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvproof.spec import state_layout as S
from kvproof.spec.deepinfer_errors import (
    InvalidQuantity,
    LayoutError,
    StateArgumentError,
    StateArgumentType,
    TruncationGuardError,
)
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
    layout = StateLayout((Ring("a", 4, 2, 1), Ring("d", 4, 2, 1, dropped=True), Raw("c", 3)), dropped_order="compress-first")
    names = [p.segment.name for p in S.placements(layout)]
    assert names == ["a", "c", "d"]
    assert S.sizes(layout).dropped_tensor_offset == 2


def test_book_window_and_slots():
    """H1: hit 768 -> lhp 767 -> window [640, 768) -> slots 104..133 then 0..97."""
    lhp = S.last_hit_position(768)
    assert lhp == 767 and S.last_hit_position(768, "exclusive") == 768
    assert S.window_positions(S.WINDOW, lhp) == range(640, 768)
    assert [S.slot_of(p, S.DEFAULT_RING) for p in S.window_positions(128, 767)] == list(range(104, 134)) + list(range(98))


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


_BOOK = S.book_layout()
_BOOK_CACHE = _cache(_BOOK)  # three slots of 3 * 576 + 24 = 1752 bytes
_RING = Ring("a", 4, 2, 1)

REJECTIONS = [
    # StateLayout.check: every field it rejects, named in the message (as_count's own text for a count)
    ("segments as a list", LayoutError, r"^segments must be a tuple$", lambda: StateLayout([_RING]).check()),  # type: ignore[arg-type]  # a list, deliberately
    (
        "duplicate names",
        LayoutError,
        r"^duplicate segment names in \['a', 'a'\]$",
        lambda: StateLayout((_RING, Raw("a", 3))).check(),
    ),
    ("unknown mode", LayoutError, r"^unknown mode 'other'$", lambda: StateLayout((_RING,), mode="other").check()),  # type: ignore[arg-type]  # an unknown mode, deliberately
    (
        "unknown dropped order",
        LayoutError,
        r"^unknown dropped order 'rings-last'$",
        lambda: StateLayout((_RING,), dropped_order="rings-last").check(),  # type: ignore[arg-type]  # an unknown order, deliberately
    ),
    ("align 0", LayoutError, r"^align must be >= 1, got 0$", lambda: StateLayout((_RING,), align=0).check()),
    ("float align", LayoutError, r"^align must be an integer, not float 1\.0$", lambda: StateLayout((_RING,), align=1.0).check()),  # type: ignore[arg-type]  # a float, deliberately
    ("R = 0", LayoutError, r"^a\.rows must be >= 1, got 0$", lambda: StateLayout((Ring("a", 0, 0, 1),)).check()),
    ("S = -1", LayoutError, r"^a\.transfer_rows must be >= 0, got -1$", lambda: StateLayout((Ring("a", 4, -1, 1),)).check()),
    (
        "float S",
        LayoutError,
        r"^a\.transfer_rows must be an integer, not float 2\.0$",
        lambda: StateLayout((Ring("a", 4, 2.0, 1),)).check(),  # type: ignore[arg-type]  # a float row count, deliberately
    ),
    ("row_bytes 0", LayoutError, r"^a\.row_bytes must be >= 1, got 0$", lambda: StateLayout((Ring("a", 4, 2, 0),)).check()),
    ("S > R", LayoutError, r"^a: S=5 > R=4; window rows would share slots$", lambda: StateLayout((Ring("a", 4, 5, 1),)).check()),
    ("nbytes -1", LayoutError, r"^c\.nbytes must be >= 0, got -1$", lambda: StateLayout((Raw("c", -1),)).check()),
    (
        "not a segment",
        LayoutError,
        r"^unknown segment namespace\(name='x'\)$",
        lambda: StateLayout((SimpleNamespace(name="x"),)).check(),  # type: ignore[arg-type]  # not a segment, deliberately
    ),
    # the ring primitives
    ("hit -1", InvalidQuantity, r"^hit must be >= 0, got -1$", lambda: S.last_hit_position(-1)),
    ("unknown convention", StateArgumentError, r"^unknown convention 'half-open'$", lambda: S.last_hit_position(5, "half-open")),  # type: ignore[arg-type]  # an unknown convention, deliberately
    (
        "ring_write: short row",
        StateArgumentError,
        r"^row of 1 bytes at position 3$",
        lambda: S.ring_write(bytes(8), 4, 2, 3, b"x"),
    ),
    (
        "ring_write: position -1",
        StateArgumentError,
        r"^row of 2 bytes at position -1$",
        lambda: S.ring_write(bytes(8), 4, 2, -1, b"xy"),
    ),
    # select and load
    ("state_id 3 of 3", StateArgumentError, r"^state_id 3 outside \[0, 3\)$", lambda: S.select(_BOOK, _BOOK_CACHE, 3, 767, True)),
    (
        "bool state_id",
        StateArgumentType,
        r"^state_id must be an int, not bool$",
        lambda: S.select(_BOOK, _BOOK_CACHE, True, 767, True),
    ),
    ("position -2", StateArgumentError, r"^last_hit_position -2 < -1$", lambda: S.select(_BOOK, _BOOK_CACHE, 0, -2, True)),
    (
        "float position",
        StateArgumentType,
        r"^last_hit_position must be an int, not float$",
        lambda: S.select(_BOOK, _BOOK_CACHE, 0, 7.0, True),  # type: ignore[arg-type]  # float position, deliberately
    ),
    ("int to_ce", StateArgumentType, r"^to_ce must be a bool, not int$", lambda: S.select(_BOOK, _BOOK_CACHE, 0, 7, 1)),  # type: ignore[arg-type]  # int to_ce, deliberately
    (
        "bytearray cache slot",
        StateArgumentType,
        r"^cache slot 1 is bytearray, not bytes$",
        lambda: S.select(_BOOK, _BOOK_CACHE[:1] + (bytearray(1752),), 0, 767, True),
    ),  # a bytearray slot, deliberately
    (
        "short cache slot",
        StateArgumentError,
        r"^cache slot 1 has 5 bytes; the layout needs 1752$",
        lambda: S.select(_BOOK, _BOOK_CACHE[:1] + (b"short",), 0, 767, True),
    ),
    (
        "tensor of 5 bytes",
        StateArgumentError,
        r"^tensor has 5 bytes; state_size_to_disk is 1024$",
        lambda: S.load(_BOOK, _BOOK_CACHE, 0, bytes(5), 767, "on"),
    ),
    (
        "bytearray tensor",
        StateArgumentType,
        r"^tensor must be bytes, not bytearray$",
        lambda: S.load(_BOOK, _BOOK_CACHE, 0, bytearray(1024), 767, "on"),  # type: ignore[arg-type]  # bytearray tensor, deliberately
    ),
    (
        "None truncation mode",
        StateArgumentType,
        r"^truncation_mode must be a str, not NoneType$",
        lambda: S.load(_BOOK, _BOOK_CACHE, 0, bytes(1024), 767, None),  # type: ignore[arg-type]  # None mode, deliberately
    ),
    (
        "int truncation mode",
        StateArgumentType,
        r"^truncation_mode must be a str, not int$",
        lambda: S.load(_BOOK, _BOOK_CACHE, 0, bytes(1024), 767, 0),  # type: ignore[arg-type]  # int mode, deliberately
    ),
    (
        "guard",
        TruncationGuardError,
        r"^1 SWA layers are dropped but YOCO prefill truncation is 'off'$",
        lambda: S.load(_BOOK, _BOOK_CACHE, 0, bytes(1024), 767, "off"),
    ),
    (
        "ring-view: tensor for a zero size",
        StateArgumentError,
        r"^tensor has 1 bytes; state_size_to_disk is 0$",
        lambda: S.load(StateLayout((Raw("c", 8),)), (bytes(8),), 0, b"x", 5, "on"),
    ),
]


@pytest.mark.parametrize("error, message, call", [pytest.param(*r[1:], id=r[0]) for r in REJECTIONS])
def test_each_malformed_layout_or_argument_raises_its_type_with_its_exact_message(error, message, call):
    """``StateLayout.check`` (R >= 1, 0 <= S <= R, row_bytes >= 1, nbytes >= 0, align >= 1, unique names, a known
    mode and order), the ring primitives and the select/load argument checks: each rejection has its own type and a
    message that names the field and the value. ``hit`` is a count, so its error is the quantities' own."""
    with pytest.raises(error, match=message) as raised:
        call()
    assert type(raised.value) is error


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: StateLayout((Ring("a", 1, 1, 1),)).check(), id="R = 1 and S = R"),
        pytest.param(lambda: StateLayout((Ring("a", 134, 134, 1), Ring("b", 3, 0, 1))).check(), id="S = R = 134, S = 0"),
        pytest.param(
            lambda: StateLayout((Raw("c", 0),), align=1, dropped_order="compress-first").check(), id="nbytes 0, align 1"
        ),
        pytest.param(lambda: StateLayout((), mode="raw-prefix").check(), id="no segments"),
        pytest.param(lambda: S.book_layout(stored_layers=0, dropped_layers=3).check(), id="three dropped book rings"),
        pytest.param(lambda: S.select(_BOOK, _BOOK_CACHE, 2, -1, True), id="select at position -1"),
        pytest.param(lambda: S.select(_BOOK, _BOOK_CACHE, 2, 0, False), id="select at position 0"),
        pytest.param(lambda: S.load(_BOOK, _BOOK_CACHE, 2, bytes(1024), -1, "on"), id="load at position -1"),
        pytest.param(lambda: S.ring_write(bytes(8), 4, 2, 0, b"xy"), id="ring_write at position 0"),
        pytest.param(lambda: S.last_hit_position(0), id="hit 0"),
    ],
)
def test_the_boundary_values_the_rules_allow_are_accepted(call):
    """The edge of every domain above is inside it: S = R (the window's rows still get distinct slots), R = 1,
    S = 0, nbytes = 0, align = 1, an empty layout, and ``last_hit_position`` -1 (a hit of zero tokens, A1)."""
    call()


def test_book_layout_is_the_books_configuration():
    """``book_layout()`` is §11.4's slot: stored rings ``swa0``, ``swa1`` and dropped ``consumer_swa0`` of
    R = 134, S = 128, then the dropped compression run ``compress``; ring-view, align 64, swa-first."""
    rings = [Ring("swa0", 134, 128, 4), Ring("swa1", 134, 128, 4), Ring("consumer_swa0", 134, 128, 4, dropped=True)]
    assert S.book_layout() == StateLayout((*rings, Raw("compress", 24, dropped=True)), align=64)
    two = S.book_layout(stored_layers=1, dropped_layers=2, compress_bytes=0, mode="raw-prefix")
    assert [s.name for s in two.segments] == ["swa0", "consumer_swa0", "consumer_swa1"]
    assert S.sizes(two).swa_drop_num_layer == 2


def _table(layout):
    return [
        (p.segment.name, p.cache_offset, p.cache_nbytes, p.tensor_offset, p.tensor_nbytes, p.payload_nbytes)
        for p in S.placements(layout)
    ]


@pytest.mark.parametrize(
    "mode, table, disk, total",
    [
        (
            "ring-view",
            [
                ("swa0", 0, 576, 0, 512, 512),
                ("swa1", 576, 576, 512, 512, 512),
                ("consumer_swa0", 1152, 576, 1024, 512, 512),
                ("compress", 1728, 24, 1536, 24, 24),
            ],
            1024,
            1560,
        ),
        (
            "raw-prefix",
            [
                ("swa0", 0, 576, 0, 576, 536),
                ("swa1", 576, 576, 576, 576, 536),
                ("consumer_swa0", 1152, 576, 1152, 576, 536),
                ("compress", 1728, 24, 1728, 24, 24),
            ],
            1152,
            1752,
        ),
    ],
)
def test_placements_of_the_book_layout_in_each_mode(mode, table, disk, total):
    """Rows (name, cache offset, cache bytes, tensor offset, tensor bytes, payload bytes). A ring takes
    pad(134 * 4, 64) = pad(536, 64) = 576 cache bytes. ring-view: the tensor holds the window,
    pad(128 * 4, 64) = 512 bytes, all payload. raw-prefix: the tensor *is* the cache row's prefix, so each ring
    takes its 576 cache bytes there too and its payload is the raw ring, 134 * 4 = 536 (the other 40 are
    padding); the tensor offsets equal the cache offsets. The 24-byte raw run is 24 in both. Sizes:
    disk = 2 * 512 = 1024 and total = 3 * 512 + 24 = 1560 (ring-view); 2 * 576 = 1152 and 3 * 576 + 24 = 1752,
    the whole cache row (raw-prefix)."""
    layout = S.book_layout(mode=mode)
    assert _table(layout) == table
    s = S.sizes(layout)
    assert (s.state_size_to_disk, s.total_bytes_inference, s.cache_row_bytes) == (disk, total, 1752)
    assert (s.swa_drop_total_bytes_inference_pad, s.dropped_compress_bytes) == (total - disk - 24, 24)
    live = ((0, total),) if mode == "ring-view" else ((0, 536), (576, 1112), (1152, 1688), (1728, 1752))
    assert S.live_window_ranges(layout, 767, True) == live  # raw-prefix: every ring's 536 payload bytes, not its padding


# the interleaved layout of the order law: dropped raws and rings given in mixed order, stored rings a and b
_INTERLEAVED = (
    Raw("c0", 3),
    Ring("a", 4, 2, 1),
    Ring("d0", 4, 2, 1, dropped=True),
    Raw("c1", 5),
    Ring("d1", 4, 1, 2, dropped=True),
    Ring("b", 3, 3, 1),
)


@pytest.mark.parametrize(
    "order, table, dropped_offsets",
    [
        (
            "swa-first",
            [
                ("a", 0, 4, 0, 4, 2),
                ("b", 4, 4, 4, 4, 3),
                ("d0", 8, 4, 8, 4, 2),
                ("d1", 12, 8, 12, 4, 2),
                ("c0", 20, 3, 16, 3, 3),
                ("c1", 23, 5, 19, 5, 5),
            ],
            (20, 16),
        ),
        (
            "compress-first",
            [
                ("a", 0, 4, 0, 4, 2),
                ("b", 4, 4, 4, 4, 3),
                ("c0", 8, 3, 8, 3, 3),
                ("c1", 11, 5, 11, 5, 5),
                ("d0", 16, 4, 16, 4, 2),
                ("d1", 20, 8, 20, 4, 2),
            ],
            (8, 8),
        ),
    ],
)
def test_region_order_is_stored_then_the_dropped_rings_and_raws_grouped_in_the_stated_order(order, table, dropped_offsets):
    """Segments c0 (raw 3), a (R 4, S 2), d0 (dropped, R 4, S 2), c1 (raw 5), d1 (dropped, R 4, S 1, 2-byte rows),
    b (R 3, S 3), align 4, ring-view. Rings: a, b and d0 take pad(4, 4) = 4 cache bytes (b: pad(3, 4) = 4) and
    pad(2, 4) = 4 / pad(3, 4) = 4 tensor bytes; d1 takes pad(8, 4) = 8 cache and pad(2, 4) = 4 tensor bytes.
    The stored rings come first as given (a, b: [0, 8) in both), so no dropped segment lies in the stored tensor
    [0, state_size_to_disk = 8). Then swa-first: d0, d1, c0, c1 (the raws from cache 20 / tensor 16); compress-first:
    c0, c1, d0, d1 (the raws right after the stored region, at 8 / 8). Either way cache row 28, total 24, and
    the dropped raws are contiguous: 8 bytes from the ``dropped_*_offset``s."""
    layout = StateLayout(_INTERLEAVED, align=4, dropped_order=order)
    assert _table(layout) == table
    s = S.sizes(layout)
    assert (s.dropped_cache_offset, s.dropped_tensor_offset) == dropped_offsets
    assert (s.cache_row_bytes, s.state_size_to_disk, s.total_bytes_inference, s.dropped_bytes_inference) == (28, 8, 24, 16)
    assert (s.swa_drop_total_bytes_inference_pad, s.dropped_compress_bytes, s.swa_drop_num_layer) == (8, 8, 2)
    assert S.dropped_cache_ranges(layout) == ((8, 28),)


@pytest.mark.parametrize(
    "order, cache_offset, tensor_offset",
    [("swa-first", 45, 29), ("compress-first", 21, 13)],
)
def test_with_no_dropped_raw_the_dropped_offsets_are_where_the_first_one_would_go(order, cache_offset, tensor_offset):
    """a (R 4, S 2, 3-byte rows), s (a stored raw of 5, A5), d (dropped, R 6, S 3, 3-byte rows), align 8, ring-view.
    a: pad(12, 8) = 16 cache, pad(6, 8) = 8 tensor; s: 5 and 5; d: pad(18, 8) = 24 cache, pad(9, 8) = 16 tensor.
    Region order a, s, d: cache row 16 + 5 + 24 = 45, disk 8 + 5 = 13, total 13 + 16 = 29. A dropped raw would
    follow the dropped rings (swa-first: the row's end, 45 / 29) or precede them (compress-first: right after
    the stored region, 16 + 5 = 21 / 13)."""
    layout = StateLayout(
        (Ring("a", 4, 2, 3), Ring("d", 6, 3, 3, dropped=True), Raw("s", 5, dropped=False)), align=8, dropped_order=order
    )
    assert S.sizes(layout) == S.Sizes(
        cache_row_bytes=45,
        state_size_to_disk=13,
        total_bytes_inference=29,
        dropped_bytes_inference=16,
        swa_drop_total_bytes_inference_pad=16,
        dropped_compress_bytes=0,
        swa_drop_num_layer=1,
        dropped_cache_offset=cache_offset,
        dropped_tensor_offset=tensor_offset,
    )


def _mixed(mode="ring-view"):
    """a (R 3, S 2, 2-byte rows), s (a stored raw of 3, A5), d (dropped, R 2, S 2, 1-byte rows), c (dropped raw of 2),
    align 4. Cache: a [0, 8) (6 bytes of rows, 2 of padding), s [8, 11), d [11, 15) (2 + 2), c [15, 17).
    ring-view tensor: a [0, 4), s [4, 7), d [7, 11) (2 + 2), c [11, 13); raw-prefix tensor: the cache offsets."""
    return StateLayout(
        (Ring("a", 3, 2, 2), Raw("s", 3, dropped=False), Ring("d", 2, 2, 1, dropped=True), Raw("c", 2)), align=4, mode=mode
    )


_ROW = bytes(
    range(1, 18)
)  # byte k holds k + 1: a's slots 0, 1, 2 are (1, 2), (3, 4), (5, 6); s is 9, 10, 11; d's are 12, 13; c is 16, 17
_MIXED_CACHE = (bytes([0xEE]) * 17, _ROW, bytes([0xDD]) * 17)


@pytest.mark.parametrize(
    "lhp, stored, handoff",
    [
        (4, [1, 2, 3, 4, 9, 10, 11], [1, 2, 3, 4, 9, 10, 11, 13, 12, 16, 17]),  # a: positions 3, 4 = slots 0, 1; d: slots 1, 0
        (0, [0, 0, 1, 2, 9, 10, 11], [0, 0, 1, 2, 9, 10, 11, 0, 12, 16, 17]),  # position -1 is a zero row (A3)
        (-1, [0, 0, 0, 0, 9, 10, 11], [0, 0, 0, 0, 9, 10, 11, 0, 0, 16, 17]),
    ],
)
def test_ring_view_select_carves_every_window_and_copies_the_raws(lhp, stored, handoff):
    """R1 and C1 on _mixed: the stored form (7 bytes: a's window, s verbatim) fully specified as [0, 7); the CE
    handoff (13 bytes) adds d's window at 7 and the dropped raw c at 11 = ``dropped_tensor_offset``; d's two
    padding bytes [9, 11) are the only unspecified ones (A6)."""
    layout = _mixed()
    got = S.select(layout, _MIXED_CACHE, 1, lhp, False)
    assert (len(got.data), got.specified, S.take(got.data, got.specified), got.aliases) == (7, ((0, 7),), bytes(stored), None)
    got = S.select(layout, _MIXED_CACHE, 1, lhp, True)
    assert (len(got.data), got.specified, S.take(got.data, got.specified)) == (13, ((0, 9), (11, 13)), bytes(handoff))


def test_raw_prefix_select_is_the_cache_rows_prefix():
    """Listing 11.4 on _mixed in raw-prefix mode: the stored form is cache[1, :8 + 3] (a's raw ring with its
    padding, then s), the handoff the whole 17-byte row; both fully specified, both aliasing the cache."""
    layout = _mixed("raw-prefix")
    assert S.select(layout, _MIXED_CACHE, 1, 4, False) == S.Selection(_ROW[:11], ((0, 11),), (1, 0, 11))
    assert S.select(layout, _MIXED_CACHE, 1, 4, True) == S.Selection(_ROW, ((0, 17),), (1, 0, 17))


@pytest.mark.parametrize(
    "mode, lhp, row, footprint",
    [
        # a's window rows go to slots 0, 1 (positions 3, 4); s takes 105..107; d, c and the padding keep their bytes
        ("ring-view", 4, [101, 102, 103, 104, 5, 6, 7, 8, 105, 106, 107, 12, 13, 14, 15, 16, 17], ((0, 4), (8, 11))),
        # position -1 is skipped, position 0 (tensor row 1) goes to slot 0
        ("ring-view", 0, [103, 104, 3, 4, 5, 6, 7, 8, 105, 106, 107, 12, 13, 14, 15, 16, 17], ((0, 2), (8, 11))),
        ("ring-view", -1, [1, 2, 3, 4, 5, 6, 7, 8, 105, 106, 107, 12, 13, 14, 15, 16, 17], ((8, 11),)),
        # the tensor is the row's first state_size_to_disk = 11 bytes
        ("raw-prefix", 4, [*range(101, 112), 12, 13, 14, 15, 16, 17], ((0, 11),)),
    ],
)
def test_load_writes_exactly_its_footprint(mode, lhp, row, footprint):
    """Listing 11.7 and I2 on _mixed, with a tensor whose byte j is 101 + j (7 bytes ring-view, 11 raw-prefix):
    the loaded row by hand; ``load_footprint`` names exactly the bytes that may change, and the other slots
    stay as they were (I1)."""
    layout = _mixed(mode)
    tensor = bytes(range(101, 101 + S.sizes(layout).state_size_to_disk))
    got = S.load(layout, _MIXED_CACHE, 1, tensor, lhp, "on")
    assert got == (_MIXED_CACHE[0], bytes(row), _MIXED_CACHE[2])
    assert S.load_footprint(layout, lhp) == footprint


def test_a_second_rings_footprint_starts_at_its_own_offset():
    """Two stored rings (R 3, S 2, 1-byte rows, align 1): b is at cache [3, 6). At lhp 4 (positions 3, 4 = slots
    0, 1) the footprint is a's [0, 2) and b's [3, 5)."""
    layout = StateLayout((Ring("a", 3, 2, 1), Ring("b", 3, 2, 1)))
    assert S.load_footprint(layout, 4) == ((0, 2), (3, 5))


def test_a_one_byte_stored_region_is_loaded_and_a_zero_size_one_is_a_no_op():
    """raw-prefix, R = S = 1 with 1-byte rows: state_size_to_disk = 1 and load writes that byte alone (the dropped
    raw after it is kept). G2: with nothing stored (state_size_to_disk = 0) load returns before it reads the
    tensor (Listing 11.7), so the cache is unchanged whatever the tensor holds."""
    one = StateLayout((Ring("r", 1, 1, 1), Raw("c", 2)), mode="raw-prefix")
    assert S.load(one, (b"\x05\x06\x07",), 0, b"c", 0, "on") == (b"c\x06\x07",)
    nothing = StateLayout((Raw("c", 8),), mode="raw-prefix")
    cache = _cache(nothing)
    assert S.load(nothing, cache, 1, b"ignored", 5, "on") == cache
    assert S.load(replace(nothing, mode="ring-view"), cache, 1, b"", 5, "on") == cache


def test_merge_and_take_by_hand():
    """merge drops empty ranges and joins adjacent and overlapping ones; take concatenates the bytes in the ranges."""
    assert S.merge([(5, 5), (2, 4), (0, 2), (7, 9), (8, 8), (8, 10)]) == ((0, 4), (7, 10))
    assert S.merge([(3, 3)]) == ()
    assert S.take(b"abcdef", [(0, 2), (4, 6)]) == b"abef"


@pytest.mark.parametrize(
    "lhp, to_ce, stored_only, live",
    [
        (0, True, False, ((508, 512), (1020, 1024), (1532, 1560))),
        (0, False, False, ((508, 512), (1020, 1024))),
        (0, True, True, ((508, 512), (1020, 1024))),
        (-1, True, False, ((1536, 1560),)),
        (-1, False, False, ()),
        (126, True, False, ((4, 512), (516, 1024), (1028, 1560))),
        (127, True, False, ((0, 1560),)),
        (127, False, True, ((0, 1024),)),
        (900, True, False, ((0, 1560),)),
    ],
)
def test_live_window_ranges_of_the_book_layout_in_ring_view(lhp, to_ce, stored_only, live):
    """T2's valid rows, by hand: a window of S = 128 rows of 4 bytes holds positions lhp - 127 .. lhp, so at
    lhp 0 only its last row (bytes 508..512 of each 512-byte ring) is live, at lhp 126 all but the first, from
    lhp 127 on all of it; lhp -1 leaves only the 24-byte raw run at 1536. The CE handoff (to_ce) reaches the
    dropped ring at 1024 and the raw run; the disk tensor (1024 bytes) ends before them; ``stored_only`` keeps
    the stored rings alone. Adjacent live bytes merge (the dropped ring's last row and the raw run)."""
    assert S.live_window_ranges(S.book_layout(), lhp, to_ce, stored_only) == live


def _live_bytes_row_by_row(layout, lhp, to_ce, stored_only):
    """The oracle, one byte at a time: every placement that fits in the transfer tensor (and, with
    ``stored_only``, is a stored ring); a ring-view window's row i holds position lhp - S + 1 + i and is live
    when that is >= 0; anything else is live for its payload bytes."""
    size = S.transfer_size(layout, to_ce)
    live = set()
    for p in S.placements(layout):
        seg = p.segment
        if p.tensor_offset + p.tensor_nbytes > size or (stored_only and (seg.dropped or isinstance(seg, Raw))):
            continue
        if isinstance(seg, Ring) and layout.mode == "ring-view":
            for i in range(seg.transfer_rows):
                if lhp - seg.transfer_rows + 1 + i >= 0:
                    live.update(range(p.tensor_offset + i * seg.row_bytes, p.tensor_offset + (i + 1) * seg.row_bytes))
        else:
            live.update(range(p.tensor_offset, p.tensor_offset + p.payload_nbytes))
    return live


_STORED_RAW_FIRST = (Raw("s", 3, dropped=False), Ring("a", 4, 2, 1), Ring("d", 3, 3, 2, dropped=True), Raw("c", 2))


@pytest.mark.parametrize("mode", ["ring-view", "raw-prefix"])
@pytest.mark.parametrize("align", [1, 8])
@pytest.mark.parametrize("segments", [_INTERLEAVED, _STORED_RAW_FIRST], ids=["interleaved", "stored-raw-first"])
def test_live_window_ranges_are_the_merged_live_bytes_row_by_row(segments, align, mode):
    """The law over every lhp from -2 to past the widest window, both tensors and both filters: the ranges are
    exactly the oracle's live bytes, merged (sorted, disjoint, not touching). The stored raw placed before a
    ring checks that a placement left out does not end the scan."""
    layout = StateLayout(segments, align=align, mode=mode)
    for lhp in range(-2, 6):
        for to_ce in (False, True):
            for stored_only in (False, True):
                ranges = S.live_window_ranges(layout, lhp, to_ce, stored_only)
                got = {b for a, z in ranges for b in range(a, z)}
                assert got == _live_bytes_row_by_row(layout, lhp, to_ce, stored_only), (lhp, to_ce, stored_only)
                assert all(z < a2 for (_, z), (a2, _) in pairwise(ranges)), ranges
                assert all(a < z for a, z in ranges), ranges

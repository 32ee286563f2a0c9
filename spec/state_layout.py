"""The per-request state layout and its round trip: ``select`` (cache -> transfer tensor) and ``load``.

Notation
--------
A state slot (one row of ``state_cache``, indexed ``[state_id, byte]``) holds a request's SWA
rings and its live compression state. The layout is an ordered list of *segments*:

- ``Ring(name, rows=R, transfer_rows=S, row_bytes)``: one layer's SWA. The cache keeps R ring
  rows; absolute position p lives in slot ``p mod R`` (the writer's rule, ``ring_write``).
  A transfer carries S <= R position-ordered rows: the *window* ending at the last hit position.
- ``Raw(name, nbytes)``: compression state, copied verbatim.

Each segment is *stored* (part of a prefix-cache entry) or *dropped* (consumer state a
future prefix hit does not need; a live PE->CE handoff still carries it). Region order, in the
cache row and in the transfer tensor alike: the stored segments in their given order, then the
dropped region, grouped: dropped rings, then dropped raws (``dropped_order="swa-first"``, the
default; ``"compress-first"`` is the other reading of the offsets' names, A4).

A ring occupies ``pad(R * row_bytes, align)`` in the cache (per-layer alignment padding).
In the transfer tensor it occupies the same in **raw-prefix** mode and ``pad(S * row_bytes,
align)`` in **ring-view** mode. A raw segment occupies ``nbytes`` in both.

The two modes (``DEEPINFER_PREFILL_STORE_EXTRA_STATE``):

- **raw-prefix** (off; Listings 11.4 and 11.7 first branch): the tensor *is* the prefix of the
  cache row. ``select`` returns ``cache[sid, :size]`` (aliasing the cache when no destination is
  given) and ``load`` writes ``cache[sid, :state_size_to_disk] = tensor``. The stored form is the
  raw ring, not a position-ordered window.
- **ring-view** (on; Listings 11.5, 11.6 and 11.7 second branch): ``select`` rearranges each
  carved ring into its position-ordered window (``select_state_slice``); for a CE handoff it also
  rearranges the dropped rings and copies the dropped compression state raw. ``load`` writes each
  stored window back to its slots (``load_state_to_cache``) and nothing else.

Entries made in one mode cannot be loaded in the other.

Sizes, by the book's names: ``state_size_to_disk`` (tensor bytes of the stored region),
``total_bytes_inference`` (all of it, the live CE handoff), ``dropped_bytes_inference`` (their
difference), ``swa_drop_total_bytes_inference_pad`` (padded dropped rings),
``dropped_compress_bytes`` (= dropped - swa_drop = the dropped raws), ``swa_drop_num_layer``.

Readings chosen where the chapter is ambiguous (docs/sources.md#state-roundtrip-6), all named here:

- A1 ``last_hit_position`` is inclusive: the window of S rows is ``[lhp - S + 1, lhp]`` and
  ``last_hit_position(hit)`` = hit - 1 is the one converter (``convention="exclusive"`` gives hit).
- A2 S and R are separate parameters (the book's window 128 and default ring 134), S <= R.
- A3 window positions below 0 select as zero rows and are skipped by load.
- A4 dropped region order: rings then raws by default; a parameter.
- A5 the stored region holds rings only by default; a stored ``Raw(dropped=False)`` is an
  opt-in extension (copied raw by select and load).
- A6 ring-view padding bytes in a selected tensor are unspecified (``Selection.specified``).
- A7 load writes only the window's slots; it does not clear other ring rows.
- A8 only load has the truncation guard; it runs before both branches and before any write.
- A9 in ring-view mode the sizes are transfer-tensor bytes.
- A13 a zero size: raw-prefix ``select`` returns None (Listing 11.4); ring-view ``select``
  returns an empty tensor, as Listing 11.5 allocates ``torch.empty(0)`` with no early return.

Everything here is a pure function of frozen data and ``bytes``; ``StateCache`` is a tuple of
one ``bytes`` per state id.

Source: docs/sources.md#deepinfer-11-3-1 (Listings 11.4-11.8 (docs/sources.md#deepinfer-listings)),
docs/sources.md#deepinfer-11-4 (128 / 134 / 140), docs/sources.md#deepinfer-11-8-1 (a slot holds SWA and live
compression state); docs/sources.md#state-roundtrip-1 "State layout helpers", docs/sources.md#state-roundtrip-3 (slot
= p mod R in DeepSeek-V4's ring writer), docs/sources.md#state-roundtrip-5 (5.1) to docs/sources.md#state-roundtrip-5
(5.3), docs/sources.md#state-roundtrip-6.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .arith import PY, Arith
from .deepinfer_errors import LayoutError, StateArgumentError, StateArgumentType, TruncationGuardError
from .primitives import is_int, is_uint
from .quantities import as_count

Mode = Literal["raw-prefix", "ring-view"]
DroppedOrder = Literal["swa-first", "compress-first"]
ByteRange = tuple[int, int]  # [start, stop)
StateCache = tuple[bytes, ...]

WINDOW = 128
"""The SWA window and the transfer rows S of the book's configuration."""

DEFAULT_RING = 134
"""The default SWA ring rows R (also the hit reserve of ``hit_length``)."""


# ----------------------------------------------------------------------------- layout


@dataclass(frozen=True, slots=True)
class Ring:
    """One layer's SWA ring: R cache rows of ``row_bytes`` each, S position-ordered transfer rows."""

    name: str
    rows: int
    transfer_rows: int
    row_bytes: int
    dropped: bool = False


@dataclass(frozen=True, slots=True)
class Raw:
    """A run of compression-state bytes, copied verbatim (dropped, i.e. handoff-only, by default)."""

    name: str
    nbytes: int
    dropped: bool = True


Segment = Ring | Raw


@dataclass(frozen=True, slots=True)
class StateLayout:
    """The segments of one state slot, the per-layer alignment, the mode and the dropped-region order."""

    segments: tuple[Segment, ...]
    align: int = 1
    mode: Mode = "ring-view"
    dropped_order: DroppedOrder = "swa-first"

    def check(self) -> None:
        """Raise ``LayoutError`` unless: names are unique; R >= 1; 0 <= S <= R; row_bytes >= 1;
        nbytes >= 0; align >= 1; the mode and order are known."""
        if not isinstance(self.segments, tuple):
            raise LayoutError("segments must be a tuple")
        names = [s.name for s in self.segments]
        if len(set(names)) != len(names):
            raise LayoutError(f"duplicate segment names in {names}")
        if self.mode not in ("raw-prefix", "ring-view"):
            raise LayoutError(f"unknown mode {self.mode!r}")
        if self.dropped_order not in ("swa-first", "compress-first"):
            raise LayoutError(f"unknown dropped order {self.dropped_order!r}")
        try:
            as_count("align", self.align, minimum=1)
            for s in self.segments:
                if isinstance(s, Ring):
                    as_count(f"{s.name}.rows", s.rows, minimum=1)
                    as_count(f"{s.name}.transfer_rows", s.transfer_rows)
                    as_count(f"{s.name}.row_bytes", s.row_bytes, minimum=1)
                    if s.transfer_rows > s.rows:
                        raise LayoutError(f"{s.name}: S={s.transfer_rows} > R={s.rows}; window rows would share slots")
                elif isinstance(s, Raw):
                    as_count(f"{s.name}.nbytes", s.nbytes)
                else:
                    raise LayoutError(f"unknown segment {s!r}")
        except (ValueError, TypeError) as exc:
            if isinstance(exc, LayoutError):
                raise
            raise LayoutError(str(exc)) from None


def pad(n: Any, align: Any, ops: Arith = PY) -> Any:
    """Return ``n >= 0`` rounded up to a multiple of ``align >= 1`` (a kernel ``proofs/`` proves)."""
    return ops.floordiv(n + align - 1, align) * align


def region_sizes(tensor_nbytes: Sequence[Any], dropped: Sequence[Any], ops: Arith = PY) -> tuple[Any, Any]:
    """Return ``(stored size, handoff size)``: the stored form holds the segments not dropped, the CE
    handoff holds them all (the kernel of ``sizes``; ``proofs/`` proves stored <= handoff, with
    equality exactly when no dropped segment holds a byte).

    Source: Listings 11.4-11.5 (docs/sources.md#deepinfer-listings) (``state_size_to_disk`` vs
    ``total_bytes_inference``).
    """
    stored = handoff = 0
    for n, gone in zip(tensor_nbytes, dropped):
        stored = stored + ops.ite(gone, 0, n)
        handoff = handoff + n
    return stored, handoff


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one segment lies: in the cache row and in the transfer tensor (offsets and padded sizes),
    and how many of its tensor bytes are payload (the rest is alignment padding)."""

    segment: Segment
    cache_offset: int
    cache_nbytes: int
    tensor_offset: int
    tensor_nbytes: int
    payload_nbytes: int


def ordered_segments(layout: StateLayout) -> tuple[Segment, ...]:
    """Return the segments in region order: stored ones as given, then the dropped region, grouped.

    Source: docs/sources.md#state-roundtrip-5 (5.1) "Region order"; docs/sources.md#state-roundtrip-6 A4.
    """
    stored = tuple(s for s in layout.segments if not s.dropped)
    rings = tuple(s for s in layout.segments if s.dropped and isinstance(s, Ring))
    raws = tuple(s for s in layout.segments if s.dropped and isinstance(s, Raw))
    return stored + (rings + raws if layout.dropped_order == "swa-first" else raws + rings)


def placements(layout: StateLayout) -> tuple[Placement, ...]:
    """Return every segment's placement, in region order (checks the layout first)."""
    layout.check()
    result = []
    cache_at = tensor_at = 0
    for s in ordered_segments(layout):
        if isinstance(s, Ring):
            cache_n = pad(s.rows * s.row_bytes, layout.align)
            payload = s.rows * s.row_bytes if layout.mode == "raw-prefix" else s.transfer_rows * s.row_bytes
            tensor_n = cache_n if layout.mode == "raw-prefix" else pad(payload, layout.align)
        else:
            cache_n = tensor_n = payload = s.nbytes
        result.append(Placement(s, cache_at, cache_n, tensor_at, tensor_n, payload))
        cache_at += cache_n
        tensor_at += tensor_n
    return tuple(result)


@dataclass(frozen=True, slots=True)
class Sizes:
    """The layout's sizes and offsets, by the names the book's helper uses."""

    cache_row_bytes: int
    state_size_to_disk: int
    total_bytes_inference: int
    dropped_bytes_inference: int
    swa_drop_total_bytes_inference_pad: int
    dropped_compress_bytes: int
    swa_drop_num_layer: int
    dropped_cache_offset: int
    dropped_tensor_offset: int


def sizes(layout: StateLayout) -> Sizes:
    """Return the layout's sizes; ``dropped_*_offset`` locate the first dropped raw byte (the dropped raws
    are contiguous), or where it would be when there is none.

    Source: Listings 11.4-11.7 (docs/sources.md#deepinfer-listings) (names); docs/sources.md#state-roundtrip-5 (5.1)
    "Derived quantities".
    """
    ps = placements(layout)
    stored = [p for p in ps if not p.segment.dropped]
    dropped = [p for p in ps if p.segment.dropped]
    dropped_rings = [p for p in dropped if isinstance(p.segment, Ring)]
    dropped_raws = [p for p in dropped if isinstance(p.segment, Raw)]
    disk, total = region_sizes([p.tensor_nbytes for p in ps], [p.segment.dropped for p in ps])
    cache_row = sum(p.cache_nbytes for p in ps)
    if dropped_raws:
        cache_off, tensor_off = dropped_raws[0].cache_offset, dropped_raws[0].tensor_offset
    elif layout.dropped_order == "swa-first":
        cache_off, tensor_off = cache_row, total
    else:
        cache_off, tensor_off = sum(p.cache_nbytes for p in stored), disk
    return Sizes(
        cache_row_bytes=cache_row,
        state_size_to_disk=disk,
        total_bytes_inference=total,
        dropped_bytes_inference=total - disk,
        swa_drop_total_bytes_inference_pad=sum(p.tensor_nbytes for p in dropped_rings),
        dropped_compress_bytes=sum(p.tensor_nbytes for p in dropped_raws),
        swa_drop_num_layer=len(dropped_rings),
        dropped_cache_offset=cache_off,
        dropped_tensor_offset=tensor_off,
    )


def transfer_size(layout: StateLayout, to_ce: bool) -> int:
    """Return the size select produces: ``total_bytes_inference`` for a CE handoff, else ``state_size_to_disk``.

    Source: Listing 11.4 (docs/sources.md#deepinfer-listings) line 790 / Listing 11.5 line 801.
    """
    s = sizes(layout)
    return s.total_bytes_inference if to_ce else s.state_size_to_disk


def carved(layout: StateLayout, to_ce: bool) -> tuple[Placement, ...]:
    """Return the placements a ring-view select carves: the stored segments, and the dropped rings when
    ``to_ce`` (the dropped raws are copied separately, as one span)."""
    return tuple(p for p in placements(layout) if not p.segment.dropped or (to_ce and isinstance(p.segment, Ring)))


# ----------------------------------------------------------------------------- ring primitives


def last_hit_position(hit: int, convention: Literal["inclusive", "exclusive"] = "inclusive") -> int:
    """Return the ``last_hit_position`` a hit of ``hit`` tokens passes to the ring helpers.

    Inclusive (the default, A1): the last position that hit, ``hit - 1``; a hit of 0 gives -1,
    an all-negative window. ``"exclusive"`` returns ``hit`` itself. This is the one place the
    convention lives.

    Source: docs/sources.md#state-roundtrip-6 A1.
    """
    hit = as_count("hit", hit)
    if convention == "inclusive":
        return hit - 1
    if convention == "exclusive":
        return hit
    raise StateArgumentError(f"unknown convention {convention!r}")


def slot_of(position: int, rows: int) -> int:
    """Return the ring slot of absolute position ``position``: ``position mod R``.

    Source: docs/sources.md#state-roundtrip-3 item 1 (DeepSeek-V4's window cache: decode writes slot ``start_pos %
    win``; prefill's wrap equals p mod win for every written position).
    """
    return position % rows


def window_positions(transfer_rows: int, lhp: int) -> range:
    """Return the positions of the S transfer rows, oldest first: ``[lhp - S + 1, lhp]`` (inclusive, A1)."""
    return range(lhp - transfer_rows + 1, lhp + 1)


def ring_write(ring: bytes, rows: int, row_bytes: int, position: int, row: bytes) -> bytes:
    """Return ``ring`` after the engine writes position ``position``'s row: slot p mod R, later writes win.

    This is the writer the ground-truth law replays a position history through.
    """
    if len(row) != row_bytes or position < 0:
        raise StateArgumentError(f"row of {len(row)} bytes at position {position}")
    at = slot_of(position, rows) * row_bytes
    return ring[:at] + row + ring[at + row_bytes :]


def select_state_slice(ring: bytes, rows: int, transfer_rows: int, row_bytes: int, lhp: int) -> bytes:
    """Return the window's rows in position order: row j holds slot ``p_j mod R`` of ``ring``, where
    ``p_j = lhp - S + 1 + j``; rows with ``p_j < 0`` are zero (A3).

    Source: Listing 11.5 (docs/sources.md#deepinfer-listings) (``select_state_slice(tensor_view, cache_view,
    last_hit_position)``); docs/sources.md#state-roundtrip-5 (5.2).
    """
    out = bytearray(transfer_rows * row_bytes)
    for j, p in enumerate(window_positions(transfer_rows, lhp)):
        if p >= 0:
            at = slot_of(p, rows) * row_bytes
            out[j * row_bytes : (j + 1) * row_bytes] = ring[at : at + row_bytes]
    return bytes(out)


def load_state_to_cache(ring: bytes, window: bytes, rows: int, transfer_rows: int, row_bytes: int, lhp: int) -> bytes:
    """Return ``ring`` with each window row j (``p_j >= 0``) written to slot ``p_j mod R``; no other byte changes.

    Source: Listing 11.7 (docs/sources.md#deepinfer-listings) (``load_state_to_cache(tensor_view, cache_view,
    last_hit_position)``); docs/sources.md#state-roundtrip-5 (5.2), docs/sources.md#state-roundtrip-6 A7.
    """
    out = bytearray(ring)
    for j, p in enumerate(window_positions(transfer_rows, lhp)):
        if p >= 0:
            at = slot_of(p, rows) * row_bytes
            out[at : at + row_bytes] = window[j * row_bytes : (j + 1) * row_bytes]
    return bytes(out)


# ----------------------------------------------------------------------------- select and load


@dataclass(frozen=True, slots=True)
class Selection:
    """What select produces.

    ``data``: the tensor's bytes (bytes the rule leaves unspecified are zero here);
    ``specified``: the byte ranges of ``data`` the rule determines (in ring-view mode, padding is
    not among them: an implementation may leave whatever its destination held);
    ``aliases``: ``(state_id, start, stop)`` when, with no destination, the result must be the
    cache's own memory ``cache[state_id, start:stop]`` (raw-prefix mode), else None.
    """

    data: bytes
    specified: tuple[ByteRange, ...]
    aliases: tuple[int, int, int] | None


def check_state_id(cache: StateCache, state_id: object) -> int:
    """Return ``state_id`` if it names a slot of ``cache``; else a typed error."""
    if not is_uint(state_id, len(cache) - 1):
        if not is_int(state_id):
            raise StateArgumentType(f"state_id must be an int, not {type(state_id).__name__}")
        raise StateArgumentError(f"state_id {state_id} outside [0, {len(cache)})")
    return state_id


def check_position(lhp: object) -> int:
    """Return ``lhp`` if it is an int >= -1 (a hit of zero tokens); else a typed error."""
    if not is_int(lhp):
        raise StateArgumentType(f"last_hit_position must be an int, not {type(lhp).__name__}")
    if lhp < -1:
        raise StateArgumentError(f"last_hit_position {lhp} < -1")
    return lhp


def check_cache(layout: StateLayout, cache: StateCache) -> None:
    """Raise unless every slot of ``cache`` is ``bytes`` of at least the layout's row size."""
    need = sizes(layout).cache_row_bytes
    for sid, row in enumerate(cache):
        if not isinstance(row, bytes):
            raise StateArgumentType(f"cache slot {sid} is {type(row).__name__}, not bytes")
        if len(row) < need:
            raise StateArgumentError(f"cache slot {sid} has {len(row)} bytes; the layout needs {need}")


def merge(ranges: Iterable[ByteRange]) -> tuple[ByteRange, ...]:
    """Return ``ranges`` sorted, without empty ranges, adjacent and overlapping ones merged."""
    out: list[list[int]] = []
    for a, b in sorted(r for r in ranges if r[1] > r[0]):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


def select(layout: StateLayout, cache: StateCache, state_id: int, lhp: int, to_ce: bool) -> Selection | None:
    """Return what ``select`` hands over for slot ``state_id`` at ``last_hit_position`` ``lhp``.

    raw-prefix: None when the size is 0; else ``cache[state_id, :size]``, aliasing the cache when
    no destination is given. ring-view: every carved ring's window via ``select_state_slice``
    and, when ``to_ce``, the dropped raw span copied verbatim; padding unspecified. select has no
    truncation guard (A8) and never changes the cache.

    Source: Listings 11.4 (docs/sources.md#deepinfer-listings), 11.5, 11.6.
    """
    check_cache(layout, cache)
    state_id = check_state_id(cache, state_id)
    lhp = check_position(lhp)
    if not isinstance(to_ce, bool):
        raise StateArgumentType(f"to_ce must be a bool, not {type(to_ce).__name__}")
    size = transfer_size(layout, to_ce)
    row = cache[state_id]
    if layout.mode == "raw-prefix":
        if size == 0:
            return None
        return Selection(row[:size], ((0, size),), (state_id, 0, size))
    data = bytearray(size)
    specified: list[ByteRange] = []
    for p in carved(layout, to_ce):
        seg = p.segment
        if isinstance(seg, Ring):
            ring = row[p.cache_offset : p.cache_offset + seg.rows * seg.row_bytes]
            window = select_state_slice(ring, seg.rows, seg.transfer_rows, seg.row_bytes, lhp)
        else:
            window = row[p.cache_offset : p.cache_offset + seg.nbytes]
        data[p.tensor_offset : p.tensor_offset + len(window)] = window
        specified.append((p.tensor_offset, p.tensor_offset + len(window)))
    if to_ce:
        s = sizes(layout)
        n = s.dropped_compress_bytes
        data[s.dropped_tensor_offset : s.dropped_tensor_offset + n] = row[s.dropped_cache_offset : s.dropped_cache_offset + n]
        specified.append((s.dropped_tensor_offset, s.dropped_tensor_offset + n))
    return Selection(bytes(data), merge(specified), None)


def check_truncation_guard(layout: StateLayout, truncation_mode: object) -> None:
    """Raise ``TruncationGuardError`` when the layout drops SWA layers and truncation is ``"off"``.

    Source: Listing 11.7 (docs/sources.md#deepinfer-listings) lines 836-837; docs/sources.md#state-roundtrip-5 (5.3),
    docs/sources.md#state-roundtrip-6 A8.
    """
    truncation_guard(sizes(layout).swa_drop_num_layer, truncation_mode)


def truncation_guard(swa_drop_num_layer: int, truncation_mode: object) -> None:
    """Raise ``TruncationGuardError`` if ``swa_drop_num_layer > 0`` and ``truncation_mode == "off"``; a
    non-string mode is a ``StateArgumentType``. Any other string is accepted (the chapter names only "off")."""
    if not isinstance(truncation_mode, str):
        raise StateArgumentType(f"truncation_mode must be a str, not {type(truncation_mode).__name__}")
    if swa_drop_num_layer > 0 and truncation_mode == "off":
        raise TruncationGuardError(f"{swa_drop_num_layer} SWA layers are dropped but YOCO prefill truncation is 'off'")


def load(layout: StateLayout, cache: StateCache, state_id: int, tensor: bytes, lhp: int, truncation_mode: str) -> StateCache:
    """Return ``cache`` after restoring the stored ``tensor`` into slot ``state_id``.

    The guard and every argument check come first, so a rejection changes nothing. raw-prefix:
    nothing when ``state_size_to_disk`` is 0, else ``cache[state_id, :state_size_to_disk] = tensor``.
    ring-view: each stored ring's window to its slots via ``load_state_to_cache``, each stored raw
    verbatim; nothing else. load never writes the dropped region and never rebuilds it.
    ``tensor`` must have exactly ``state_size_to_disk`` bytes.

    Source: Listing 11.7 (docs/sources.md#deepinfer-listings); docs/sources.md#state-roundtrip-5 (5.3).
    """
    check_truncation_guard(layout, truncation_mode)
    check_cache(layout, cache)
    state_id = check_state_id(cache, state_id)
    lhp = check_position(lhp)
    if not isinstance(tensor, bytes):
        raise StateArgumentType(f"tensor must be bytes, not {type(tensor).__name__}")
    disk = sizes(layout).state_size_to_disk
    if layout.mode == "raw-prefix" and disk == 0:
        return cache
    if len(tensor) != disk:
        raise StateArgumentError(f"tensor has {len(tensor)} bytes; state_size_to_disk is {disk}")
    row = cache[state_id]
    if layout.mode == "raw-prefix":
        new_row = tensor + row[disk:]
    else:
        buf = bytearray(row)
        for p in carved(layout, to_ce=False):
            seg = p.segment
            if isinstance(seg, Ring):
                n = seg.rows * seg.row_bytes
                ring = bytes(buf[p.cache_offset : p.cache_offset + n])
                window = tensor[p.tensor_offset : p.tensor_offset + p.payload_nbytes]
                buf[p.cache_offset : p.cache_offset + n] = load_state_to_cache(
                    ring, window, seg.rows, seg.transfer_rows, seg.row_bytes, lhp
                )
            else:
                buf[p.cache_offset : p.cache_offset + seg.nbytes] = tensor[p.tensor_offset : p.tensor_offset + seg.nbytes]
        new_row = bytes(buf)
    return cache[:state_id] + (new_row,) + cache[state_id + 1 :]


# ----------------------------------------------------------------------------- footprints and payloads


def load_footprint(layout: StateLayout, lhp: int) -> tuple[ByteRange, ...]:
    """Return the cache-row byte ranges ``load`` may write at ``lhp``: raw-prefix ``[0, disk)``;
    ring-view the slots of the window's non-negative positions in every stored ring, and every
    stored raw. Never the dropped region (I2, I3).

    Source: docs/sources.md#state-roundtrip-5 (5.4) I2, I3.
    """
    if layout.mode == "raw-prefix":
        return merge([(0, sizes(layout).state_size_to_disk)])
    ranges = []
    for p in carved(layout, to_ce=False):
        seg = p.segment
        if isinstance(seg, Ring):
            for q in window_positions(seg.transfer_rows, lhp):
                if q >= 0:
                    at = p.cache_offset + slot_of(q, seg.rows) * seg.row_bytes
                    ranges.append((at, at + seg.row_bytes))
        else:
            ranges.append((p.cache_offset, p.cache_offset + seg.nbytes))
    return merge(ranges)


def dropped_cache_ranges(layout: StateLayout) -> tuple[ByteRange, ...]:
    """Return the cache-row byte ranges of the dropped region (padding included)."""
    return merge((p.cache_offset, p.cache_offset + p.cache_nbytes) for p in placements(layout) if p.segment.dropped)


def take(data: bytes, ranges: Sequence[ByteRange]) -> bytes:
    """Return the bytes of ``data`` inside ``ranges``, concatenated."""
    return b"".join(data[a:b] for a, b in ranges)


def book_layout(
    stored_layers: int = 2,
    dropped_layers: int = 1,
    row_bytes: int = 4,
    compress_bytes: int = 24,
    align: int = 64,
    mode: Mode = "ring-view",
) -> StateLayout:
    """Return a layout at the book's numbers: rings of R = 134 rows, windows of S = 128, some dropped
    layers and a dropped compression-state run.

    Source: docs/sources.md#deepinfer-11-4 (128 window, 134 default ring); docs/sources.md#state-roundtrip-5 (5.4) H1.
    """
    segments: list[Segment] = [Ring(f"swa{i}", DEFAULT_RING, WINDOW, row_bytes) for i in range(stored_layers)]
    segments += [Ring(f"consumer_swa{i}", DEFAULT_RING, WINDOW, row_bytes, dropped=True) for i in range(dropped_layers)]
    if compress_bytes:
        segments.append(Raw("compress", compress_bytes, dropped=True))
    return StateLayout(tuple(segments), align=align, mode=mode)


def live_window_ranges(layout: StateLayout, lhp: int, to_ce: bool, stored_only: bool = False) -> tuple[ByteRange, ...]:
    """Return the tensor byte ranges that hold real state at ``lhp``: ring-view rows whose position is
    >= 0 and raw segments; in raw-prefix mode every payload byte. ``stored_only`` keeps the stored
    rings alone (the book comparator's ``_stored_swa``).

    Source: docs/sources.md#state-roundtrip-5 (5.4) T2 ("Otherwise compare valid rows only").
    """
    size = transfer_size(layout, to_ce)
    ranges = []
    for p in placements(layout):
        if p.tensor_offset + p.tensor_nbytes > size or (stored_only and (p.segment.dropped or isinstance(p.segment, Raw))):
            continue
        seg = p.segment
        if isinstance(seg, Ring) and layout.mode == "ring-view":
            negative = min(seg.transfer_rows, max(0, -(lhp - seg.transfer_rows + 1)))
            ranges.append((p.tensor_offset + negative * seg.row_bytes, p.tensor_offset + p.payload_nbytes))
        else:
            ranges.append((p.tensor_offset, p.tensor_offset + p.payload_nbytes))
    return merge(ranges)

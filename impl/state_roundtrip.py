"""Vectorized ``select`` and ``load`` of the DeepInfer state layout on numpy, torch and cupy arrays.

The rules are ``kvproof.spec.state_layout``'s; this module applies them to a real
``state_cache`` (a 2-D ``uint8`` array, one row per state id) without a per-row Python loop.
Because a window of S <= R consecutive positions maps to at most two contiguous runs of ring
slots (``p mod R`` wraps at most once), a ring moves as at most two slice copies plus one zero
fill for negative positions. Consecutive rings of one shape (the usual case: every layer's SWA
alike) form a ``RingGroup`` and move together through 2-D ``[rings, bytes]`` views, so a whole
group costs the same three slice operations as one ring. Raw segments move as one slice copy each.

The backend is chosen by the cache's type:

- ``numpy.ndarray``: host memory;
- ``torch.Tensor``: on its own device (CPU or CUDA);
- ``cupy.ndarray``: on its own GPU.

Every copy is a slice assignment on the cache's own library and device, and a destination
is allocated with that library's ``empty`` on that device, so nothing on the GPU path goes
through host memory and nothing synchronises (argument checks read only metadata: dtype,
shape, contiguity, device, data pointers). Arrays of different libraries or devices are
rejected rather than silently copied (numpy would happily pull a torch tensor through the
host).

Argument checks and the truncation guard all run before the first write: a rejected call
leaves the cache exactly as it was. A destination or transfer tensor that partly overlaps
the cache is rejected; ring-view loads reject any overlap.

``RoundTrip`` keeps its rule steps as small overridable methods (window start, ring length,
negative-row zero fill, the per-ring load) so that the deliberately broken variants in
``stateful_tests/deepinfer/mutants.py`` differ from it in one step each.

Source: docs/sources.md#deepinfer-11 Listings 11.4-11.7 (docs/sources.md#deepinfer-listings);
docs/sources.md#state-roundtrip-5 (5.2) to docs/sources.md#state-roundtrip-5 (5.3).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..spec.deepinfer_errors import StateArgumentError, StateArgumentType
from ..spec.primitives import is_int, is_uint
from ..spec.state_layout import (
    Placement,
    Raw,
    Ring,
    Sizes,
    StateLayout,
    carved,
    check_position,
    sizes,
    truncation_guard,
)

# ----------------------------------------------------------------------------- backends


class Backend:
    """The few library-specific operations: recognise, check, allocate, locate memory, device."""

    name = "?"

    def owns(self, array: Any) -> bool:
        raise NotImplementedError

    def device(self, array: Any) -> Any:
        raise NotImplementedError

    def is_uint8(self, array: Any) -> bool:
        raise NotImplementedError

    def is_contiguous(self, array: Any) -> bool:
        raise NotImplementedError

    def is_writable(self, array: Any) -> bool:
        return True

    def data_ptr(self, array: Any) -> int:
        raise NotImplementedError

    def empty(self, nbytes: int, like: Any) -> Any:
        raise NotImplementedError

    def copy(self, array: Any) -> Any:
        raise NotImplementedError


class NumpyBackend(Backend):
    name = "numpy"

    def owns(self, array):
        return isinstance(array, np.ndarray)

    def device(self, array):
        return "host"

    def is_uint8(self, array):
        return array.dtype == np.uint8

    def is_contiguous(self, array):
        return bool(array.flags.c_contiguous)

    def is_writable(self, array):
        return bool(array.flags.writeable)

    def data_ptr(self, array):
        return int(array.__array_interface__["data"][0])

    def empty(self, nbytes, like):
        return np.empty(nbytes, dtype=np.uint8)

    def copy(self, array):
        return array.copy()


class TorchBackend(Backend):
    name = "torch"

    def owns(self, array):
        torch = sys.modules.get("torch")
        return torch is not None and isinstance(array, torch.Tensor)

    def device(self, array):
        return array.device

    def is_uint8(self, array):
        import torch

        return array.dtype == torch.uint8

    def is_contiguous(self, array):
        return bool(array.is_contiguous())

    def data_ptr(self, array):
        return int(array.data_ptr())

    def empty(self, nbytes, like):
        import torch

        return torch.empty(nbytes, dtype=torch.uint8, device=like.device)

    def copy(self, array):
        return array.clone()


class CupyBackend(Backend):
    name = "cupy"

    def owns(self, array):
        cupy = sys.modules.get("cupy")
        return cupy is not None and isinstance(array, cupy.ndarray)

    def device(self, array):
        return ("cuda", int(array.device.id))

    def is_uint8(self, array):
        return array.dtype == np.uint8

    def is_contiguous(self, array):
        return bool(array.flags.c_contiguous)

    def data_ptr(self, array):
        return int(array.data.ptr)

    def empty(self, nbytes, like):
        import cupy

        with like.device:
            return cupy.empty(nbytes, dtype=cupy.uint8)

    def copy(self, array):
        return array.copy()


BACKENDS: tuple[Backend, ...] = (NumpyBackend(), TorchBackend(), CupyBackend())


def backend_for(array: Any) -> Backend:
    """Return the backend of ``array`` by its type; a typed error for anything else."""
    for backend in BACKENDS:
        if backend.owns(array):
            return backend
    raise StateArgumentType(f"not a numpy array, torch tensor or cupy array: {type(array).__name__}")


def byte_range(backend: Backend, array: Any) -> tuple[int, int]:
    """Return ``[start, stop)`` of a contiguous array's memory on its device."""
    start = backend.data_ptr(array)
    return start, start + int(array.nbytes)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[1] > a[0] and b[1] > b[0]


# ----------------------------------------------------------------------------- the round trip


@dataclass(frozen=True)
class Run:
    """A contiguous run of window rows: tensor rows ``[row, row + n)`` <-> ring slots ``[slot, slot + n)``."""

    row: int
    slot: int
    n: int


@dataclass(frozen=True)
class RingGroup:
    """``count`` rings of one shape laid end to end in the cache and in the tensor, all stored or all
    dropped: they move together as 2-D views ``[count, stride]``, so a whole group costs the same few
    slice copies as one ring."""

    ring: Ring
    count: int
    dropped: bool
    cache_offset: int
    cache_stride: int
    tensor_offset: int
    tensor_stride: int

    def cache_rows(self, row: Any) -> Any:
        """Return the group's rings in a cache row as a ``[count, cache_stride]`` view."""
        return row[self.cache_offset : self.cache_offset + self.count * self.cache_stride].reshape(self.count, self.cache_stride)

    def tensor_rows(self, tensor: Any) -> Any:
        """Return the group's windows in a tensor as a ``[count, tensor_stride]`` view."""
        return tensor[self.tensor_offset : self.tensor_offset + self.count * self.tensor_stride].reshape(
            self.count, self.tensor_stride
        )


def ring_groups(placed: tuple[Placement, ...]) -> tuple[RingGroup, ...]:
    """Return the rings of ``placed`` (in order) merged into groups of consecutive, equally shaped rings."""
    groups: list[RingGroup] = []
    for p in placed:
        if not isinstance(p.segment, Ring) or p.payload_nbytes == 0:
            continue
        shape = (p.segment.rows, p.segment.transfer_rows, p.segment.row_bytes)
        last = groups[-1] if groups else None
        if (
            last is not None
            and (last.ring.rows, last.ring.transfer_rows, last.ring.row_bytes) == shape
            and last.dropped == p.segment.dropped
            and last.cache_stride == p.cache_nbytes
            and last.tensor_stride == p.tensor_nbytes
            and last.cache_offset + last.count * last.cache_stride == p.cache_offset
            and last.tensor_offset + last.count * last.tensor_stride == p.tensor_offset
        ):
            groups[-1] = RingGroup(
                last.ring,
                last.count + 1,
                last.dropped,
                last.cache_offset,
                last.cache_stride,
                last.tensor_offset,
                last.tensor_stride,
            )
        else:
            groups.append(
                RingGroup(p.segment, 1, p.segment.dropped, p.cache_offset, p.cache_nbytes, p.tensor_offset, p.tensor_nbytes)
            )
    return tuple(groups)


def raw_placements(placed: tuple[Placement, ...]) -> tuple[Placement, ...]:
    """Return the non-empty raw segments of ``placed``."""
    return tuple(p for p in placed if isinstance(p.segment, Raw) and p.segment.nbytes)


@lru_cache(maxsize=512)
def layout_plan(layout: StateLayout) -> tuple[Sizes, dict[bool, tuple[tuple[RingGroup, ...], tuple[Placement, ...]]]]:
    """Return the layout's sizes and, per direction, its ring groups and raw placements (checks the layout first).

    Cached per layout here, in the implementation: the spec recomputes its placements on
    every call and keeps no caches.
    """
    layout.check()
    plans = {to_ce: (ring_groups(carved(layout, to_ce)), raw_placements(carved(layout, to_ce))) for to_ce in (False, True)}
    return sizes(layout), plans


def raw_nbytes(placement: Placement) -> int:
    """The byte count of a raw placement's segment (a raw run is copied verbatim, without its padding)."""
    segment = placement.segment
    assert isinstance(segment, Raw), f"a raw placement of a {type(segment).__name__}"
    return segment.nbytes


class RoundTrip:
    """``select`` and ``load`` for one layout, on any supported array type.

    ``alloc_fill``: when not None, destinations that ``select`` allocates are filled with this
    byte first. It emulates ``torch.empty``'s arbitrary contents so that tests of the
    ``out=None`` path cannot pass by relying on freshly zeroed memory; leave it None in use.
    """

    def __init__(self, layout: StateLayout, alloc_fill: int | None = None) -> None:
        self.sizes, self._plans = layout_plan(layout)
        self.layout = layout
        self.raw_prefix = layout.mode == "raw-prefix"
        self.alloc_fill = alloc_fill

    # -- rule steps (one per mutant)

    def window_start(self, ring: Ring, lhp: int) -> int:
        """Return the first window position: ``lhp - S + 1`` (inclusive reading, A1)."""
        return lhp - ring.transfer_rows + 1

    def ring_length(self, ring: Ring) -> int:
        """Return the modulus of the slot rule: R."""
        return ring.rows

    def runs(self, ring: Ring, lhp: int) -> tuple[int, list[Run]]:
        """Return how many leading window rows have negative positions, and the runs of the others."""
        first = self.window_start(ring, lhp)
        negative = min(ring.transfer_rows, max(0, -first))
        modulus = self.ring_length(ring)
        row, position, remaining, runs = negative, first + negative, ring.transfer_rows - negative, []
        while remaining > 0:
            slot = position % modulus
            n = min(remaining, modulus - slot)
            runs.append(Run(row, slot, n))
            row, position, remaining = row + n, position + n, remaining - n
        return negative, runs

    def zero_negative_rows(self, out_rows: Any, start: int, stop: int) -> None:
        """Zero the tensor bytes ``[start, stop)`` of every window in the group: rows with negative positions (A3)."""
        if stop > start:
            out_rows[:, start:stop] = 0

    def select_ring(self, cache_rows: Any, out_rows: Any, group: RingGroup, lhp: int) -> None:
        """Write the windows of a ring group into ``out_rows`` (``select_state_slice``, one group at a time)."""
        rb = group.ring.row_bytes
        negative, runs = self.runs(group.ring, lhp)
        self.zero_negative_rows(out_rows, 0, negative * rb)
        for r in runs:
            out_rows[:, r.row * rb : (r.row + r.n) * rb] = cache_rows[:, r.slot * rb : (r.slot + r.n) * rb]

    def load_ring(self, cache_rows: Any, tensor_rows: Any, group: RingGroup, lhp: int) -> None:
        """Write a ring group's windows from ``tensor_rows`` to their slots (``load_state_to_cache``); nothing else."""
        rb = group.ring.row_bytes
        _, runs = self.runs(group.ring, lhp)
        for r in runs:
            cache_rows[:, r.slot * rb : (r.slot + r.n) * rb] = tensor_rows[:, r.row * rb : (r.row + r.n) * rb]

    def copy_dropped_raw(self, cache_row: Any, out: Any) -> None:
        """Copy the dropped compression state verbatim into a CE handoff (Listing 11.6)."""
        s = self.sizes
        n = s.dropped_compress_bytes
        if n:
            out[s.dropped_tensor_offset : s.dropped_tensor_offset + n] = cache_row[
                s.dropped_cache_offset : s.dropped_cache_offset + n
            ]

    def guard(self, truncation_mode: object) -> None:
        """Run the truncation guard (before any write)."""
        truncation_guard(self.sizes.swa_drop_num_layer, truncation_mode)

    # -- argument checks (metadata only)

    def _check_cache(self, cache: Any, writing: bool) -> Backend:
        backend = backend_for(cache)
        if not backend.is_uint8(cache):
            raise StateArgumentType(f"state_cache must be uint8 (view it as bytes), not {cache.dtype}")
        if cache.ndim != 2 or not backend.is_contiguous(cache):
            raise StateArgumentError(f"state_cache must be a C-contiguous 2-D array, got shape {tuple(cache.shape)}")
        if cache.shape[1] < self.sizes.cache_row_bytes:
            raise StateArgumentError(
                f"state_cache rows have {cache.shape[1]} bytes; the layout needs {self.sizes.cache_row_bytes}"
            )
        if writing and not backend.is_writable(cache):
            raise StateArgumentError("state_cache is read-only")
        return backend

    def _check_state_id(self, cache: Any, state_id: object) -> int:
        if isinstance(state_id, np.integer):
            state_id = int(state_id)
        if is_uint(state_id, cache.shape[0] - 1):
            return state_id
        if not is_int(state_id):
            raise StateArgumentType(f"state_id must be an int, not {type(state_id).__name__}")
        raise StateArgumentError(f"state_id {state_id} outside [0, {cache.shape[0]})")

    def _check_position(self, lhp: object) -> int:
        if isinstance(lhp, np.integer):
            lhp = int(lhp)
        return check_position(lhp)

    def _check_buffer(self, backend: Backend, cache: Any, array: Any, what: str, nbytes: int, writing: bool) -> None:
        if not backend.owns(array):
            raise StateArgumentType(f"{what} is {type(array).__name__} but state_cache is a {backend.name} array")
        if backend.device(array) != backend.device(cache):
            raise StateArgumentType(f"{what} is on {backend.device(array)} but state_cache is on {backend.device(cache)}")
        if not backend.is_uint8(array):
            raise StateArgumentType(f"{what} must be uint8, not {array.dtype}")
        if array.ndim != 1 or not backend.is_contiguous(array):
            raise StateArgumentError(f"{what} must be a contiguous 1-D array, got shape {tuple(array.shape)}")
        if array.shape[0] != nbytes:
            raise StateArgumentError(f"{what} has {array.shape[0]} bytes; expected {nbytes}")
        if writing and not backend.is_writable(array):
            raise StateArgumentError(f"{what} is read-only")

    def _check_no_overlap(self, backend: Backend, cache: Any, state_id: int, array: Any, what: str, identical_ok: bool) -> None:
        if array.shape[0] == 0:
            return
        row = cache[state_id]
        mine, theirs = byte_range(backend, row), byte_range(backend, array)
        if identical_ok and theirs == (mine[0], mine[0] + array.shape[0]):
            return
        whole = byte_range(backend, cache)
        if _overlap(theirs, whole):
            raise StateArgumentError(f"{what} overlaps state_cache memory")

    # -- the two operations

    def select(self, cache: Any, state_id: int, last_hit_position: int, to_ce: bool, out: Any = None, copy: bool = False) -> Any:
        """Return the handoff (``to_ce``) or stored state of slot ``state_id``, as the spec's ``select``.

        raw-prefix: None when the size is 0; without ``out`` the slice ``cache[state_id, :size]``
        itself (it aliases the cache: keep the cache slot alive and unchanged until the transfer
        finishes), or a fresh copy with ``copy=True``; with ``out``, a copy into ``out``.
        ring-view: into ``out`` or a freshly allocated array on the cache's device; padding bytes
        are left as they were.
        """
        backend = self._check_cache(cache, writing=False)
        state_id = self._check_state_id(cache, state_id)
        lhp = self._check_position(last_hit_position)
        if not isinstance(to_ce, bool):
            raise StateArgumentType(f"to_ce must be a bool, not {type(to_ce).__name__}")
        size = self.sizes.total_bytes_inference if to_ce else self.sizes.state_size_to_disk
        if self.raw_prefix and size == 0:
            return None
        if out is not None:
            self._check_buffer(backend, cache, out, "out", size, writing=True)
            self._check_no_overlap(backend, cache, state_id, out, "out", identical_ok=False)
        row = cache[state_id]
        if self.raw_prefix:
            src = row[:size]
            if out is None:
                return backend.copy(src) if copy else src
            out[:] = src
            return out
        if out is None:
            out = backend.empty(size, cache)
            if self.alloc_fill is not None:
                out[:] = self.alloc_fill
        groups, raws = self._plans[to_ce]
        for group in groups:
            self.select_ring(group.cache_rows(row), group.tensor_rows(out), group, lhp)
        for p in raws:
            n = raw_nbytes(p)
            out[p.tensor_offset : p.tensor_offset + n] = row[p.cache_offset : p.cache_offset + n]
        if to_ce:
            self.copy_dropped_raw(row, out)
        return out

    def load(self, cache: Any, state_id: int, tensor: Any, last_hit_position: int, truncation_mode: str) -> None:
        """Restore the stored ``tensor`` into slot ``state_id``, as the spec's ``load``; writes nothing else.

        The truncation guard and every check run before the first write.
        """
        self.guard(truncation_mode)
        backend = self._check_cache(cache, writing=True)
        state_id = self._check_state_id(cache, state_id)
        lhp = self._check_position(last_hit_position)
        disk = self.sizes.state_size_to_disk
        if self.raw_prefix and disk == 0:
            backend_for(tensor)  # still a typed error for a non-array
            return
        self._check_buffer(backend, cache, tensor, "tensor", disk, writing=False)
        self._check_no_overlap(backend, cache, state_id, tensor, "tensor", identical_ok=self.raw_prefix)
        row = cache[state_id]
        if self.raw_prefix:
            row[:disk] = tensor
            return
        groups, raws = self._plans[False]
        for group in groups:
            self.load_ring(group.cache_rows(row), group.tensor_rows(tensor), group, lhp)
        for p in raws:
            n = raw_nbytes(p)
            row[p.cache_offset : p.cache_offset + n] = tensor[p.tensor_offset : p.tensor_offset + n]


def select(
    layout: StateLayout,
    cache: Any,
    state_id: int,
    last_hit_position: int,
    to_ce: bool,
    out: Any = None,
    copy: bool = False,
) -> Any:
    """Return ``RoundTrip(layout).select(...)``."""
    return RoundTrip(layout).select(cache, state_id, last_hit_position, to_ce, out, copy)


def load(layout: StateLayout, cache: Any, state_id: int, tensor: Any, last_hit_position: int, truncation_mode: str) -> None:
    """Run ``RoundTrip(layout).load(...)``."""
    RoundTrip(layout).load(cache, state_id, tensor, last_hit_position, truncation_mode)

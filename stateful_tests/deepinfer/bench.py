"""``kvproof bench roundtrip``: select and load throughput against a plain contiguous copy.

For each available backend (numpy, torch CPU, torch CUDA, cupy) and each operation, the same
run times the operation and a plain contiguous copy of the same number of bytes on the same
device (``dst[:] = src``, from the same cache slot into the same destination), interleaved
repeat by repeat; the table reports the median of each as GB/s and their ratio. The ratio is
the figure to read: it is what the ring rearrangement costs over moving the bytes at all.
GB/s counts the bytes of the transfer tensor (decimal GB), once.

Operations (layout ``bench_layout``: 40 stored SWA rings and 20 dropped ones of R = 134 rows,
S = 128 transfer rows, ``row_bytes`` each, 512-byte alignment, a dropped compression-state run;
last hit position 767, so every window wraps):

- ``select ring-view stored``: position-ordered stored windows (``to_ce=False``) into a buffer;
- ``select ring-view handoff``: the CE handoff (``to_ce=True``) into a buffer;
- ``load ring-view``: the stored windows back to their slots;
- ``select raw-prefix``: the stored prefix copied into a buffer;
- ``load raw-prefix``: the stored prefix written back.

This is a benchmark, never a test: nothing here asserts a speed.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ...spec.state_layout import Mode, Segment, StateLayout

BACKENDS = ("numpy", "torch", "cuda", "cupy")


def bench_layout(row_bytes: int = 1024, stored: int = 40, dropped: int = 20, mode: Mode = "ring-view") -> StateLayout:
    """Return the benchmark's layout (see the module docstring)."""
    from ...spec.state_layout import DEFAULT_RING, WINDOW, Raw, Ring, StateLayout

    segments: list[Segment] = [Ring(f"swa{i}", DEFAULT_RING, WINDOW, row_bytes) for i in range(stored)]
    segments += [Ring(f"consumer{i}", DEFAULT_RING, WINDOW, row_bytes, dropped=True) for i in range(dropped)]
    segments.append(Raw("compress", 512 * row_bytes // 2, dropped=True))
    return StateLayout(tuple(segments), align=512, mode=mode)


@dataclass
class RoundTripBenchRow:
    backend: str
    operation: str
    megabytes: float
    op_gbps: float | None
    copy_gbps: float | None
    ratio: float | None
    repeats: int
    note: str = ""


class _Timer:
    """Times a callable on one backend: wall clock on the host, device events on a GPU."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._sync: Callable[[], None] | None  # None: time on the host clock
        self._event: Callable[[], Any]  # a device timing event (set with _sync)
        if name == "cuda":
            import torch

            self._sync = torch.cuda.synchronize
            self._event = lambda: torch.cuda.Event(enable_timing=True)
        elif name == "cupy":
            import cupy

            self._sync = lambda: cupy.cuda.Device().synchronize()
            self._event = cupy.cuda.Event
        else:
            self._sync = None

    def __call__(self, fn: Callable[[], Any]) -> float:
        if self._sync is None:
            started = time.perf_counter()
            fn()
            return time.perf_counter() - started
        start, stop = self._event(), self._event()
        self._sync()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        if self.name == "cuda":
            return start.elapsed_time(stop) / 1e3
        import cupy

        return cupy.cuda.get_elapsed_time(start, stop) / 1e3


def _side_by_side(
    timer: _Timer, op: Callable[[], Any], copy: Callable[[], Any], repeats: int, warmup: int
) -> tuple[float, float]:
    for _ in range(warmup):
        op()
        copy()
    op_times, copy_times = [], []
    for i in range(repeats):
        if i % 2:  # alternate the order so neither always runs on a warm cache left by the other
            copy_times.append(timer(copy))
            op_times.append(timer(op))
        else:
            op_times.append(timer(op))
            copy_times.append(timer(copy))
    return statistics.median(op_times), statistics.median(copy_times)


def _bench_backend(name: str, row_bytes: int, stored: int, dropped: int, repeats: int, warmup: int) -> list[RoundTripBenchRow]:
    from ...impl.state_roundtrip import RoundTrip
    from ...spec.state_layout import sizes
    from .backends import backend

    be = backend(name)
    if not be.available:
        return [RoundTripBenchRow(name, "(all)", 0.0, None, None, None, 0, f"SKIP: {be.reason}")]
    rows = []
    lhp, sid, n_states = 767, 1, 4
    modes: tuple[Mode, ...] = ("ring-view", "raw-prefix")
    for mode in modes:
        layout = bench_layout(row_bytes, stored, dropped, mode)
        s = sizes(layout)
        rt = RoundTrip(layout)
        host = np.random.default_rng(5).integers(0, 256, size=(n_states, s.cache_row_bytes), dtype=np.uint8)
        cache = be.from_numpy(host)
        ops: list[tuple[str, int, Callable[[Any], Callable[[], Any]]]] = []
        if mode == "ring-view":
            ops += [
                (
                    "select ring-view stored",
                    s.state_size_to_disk,
                    lambda out: lambda: rt.select(cache, sid, lhp, False, out=out),
                ),
                (
                    "select ring-view handoff",
                    s.total_bytes_inference,
                    lambda out: lambda: rt.select(cache, sid, lhp, True, out=out),
                ),
                ("load ring-view", s.state_size_to_disk, lambda t: lambda: rt.load(cache, sid, t, lhp, "on")),
            ]
        else:
            ops += [
                (
                    "select raw-prefix",
                    s.state_size_to_disk,
                    lambda out: lambda: rt.select(cache, sid, lhp, False, out=out),
                ),
                ("load raw-prefix", s.state_size_to_disk, lambda t: lambda: rt.load(cache, sid, t, lhp, "on")),
            ]
        for op_name, nbytes, make in ops:
            buf = be.from_numpy(np.random.default_rng(6).integers(0, 256, size=nbytes, dtype=np.uint8))
            if op_name.startswith("load"):
                buf = rt.select(cache, sid, lhp, False, out=buf)  # a real stored tensor: the load is an identity
                src_row, dst = buf, cache[sid, :nbytes]
            else:
                src_row, dst = cache[sid, :nbytes], buf

            def plain_copy(dst=dst, src=src_row):
                dst[:] = src

            op_t, copy_t = _side_by_side(_Timer(name), make(buf), plain_copy, repeats, warmup)
            op_gbps, copy_gbps = nbytes / op_t / 1e9, nbytes / copy_t / 1e9
            rows.append(
                RoundTripBenchRow(
                    name,
                    op_name,
                    round(nbytes / 1e6, 3),
                    significant(op_gbps),
                    significant(copy_gbps),
                    significant(op_gbps / copy_gbps),
                    repeats,
                )
            )
    return rows


def significant(x: float, digits: int = 4) -> float:
    """Round to ``digits`` significant digits: a tiny smoke run's GB/s or ratio stays positive, where rounding to
    a fixed number of decimals turned a 1e-5 ratio (a first call paying a library's lazy start) into 0.0."""
    return float(f"{x:.{digits}g}")


def machine() -> dict:
    """Return what the figures depend on: CPU count, library versions, torch threads, GPU name."""
    info = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
    }
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name()
    except ImportError:
        pass
    return info


HEADERS = ("backend", "operation", "MB", "op GB/s", "copy GB/s", "ratio")


def table_rows(rows: list[RoundTripBenchRow]) -> list[tuple[str, ...]]:
    """The rows of the table the README quotes (a skipped backend shows its reason)."""
    return [
        (r.backend, r.note, "", "", "", "")
        if r.op_gbps is None or r.copy_gbps is None or r.ratio is None
        else (r.backend, r.operation, f"{r.megabytes:.2f}", f"{r.op_gbps:.2f}", f"{r.copy_gbps:.2f}", f"{r.ratio:.2f}")
        for r in rows
    ]


@dataclass
class RoundTripBench:
    """``kvproof bench roundtrip``: select/load GB/s against a plain copy, per backend, and the machine it ran on."""

    command: str
    machine: dict
    rows: list[RoundTripBenchRow]
    kind = "bench-roundtrip"
    ok = True  # a benchmark measures; it never fails
    skipped = ""

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        say(f"$ {self.command}")
        table(HEADERS, table_rows(self.rows), numeric=(2, 3, 4, 5))

    def summary_line(self) -> str:
        return "machine: " + ", ".join(f"{k}={v}" for k, v in self.machine.items())

    def to_json(self) -> dict:
        return {"command": self.command, "machine": self.machine, "rows": [asdict(r) for r in self.rows]}


def run_bench_roundtrip(
    names: list[str],
    repeats: int = 41,
    warmup: int = 3,
    row_bytes: int = 1024,
    stored: int = 40,
    dropped: int = 20,
    threads: int = 1,
) -> RoundTripBench:
    """Run the round-trip benchmark on the backends ``names`` (a skipped backend is a row with its reason).

    ``threads``: torch intra-op threads on CPU (1 by default: on a shared 2-core machine torch's
    parallel copy collapses to under 1 GB/s; 0 keeps torch's default).
    """
    unknown = [b for b in names if b not in BACKENDS]
    if unknown:
        raise ValueError(f"unknown backend(s) {unknown}; choose from {', '.join(BACKENDS)}")
    from .backends import backend

    if threads and any(n in ("torch", "cuda") for n in names) and backend("torch").available:
        import torch

        torch.set_num_threads(threads)
    rows: list[RoundTripBenchRow] = []
    for name in names:
        rows += _bench_backend(name, row_bytes, stored, dropped, repeats, warmup)
    command = (
        "kvproof bench roundtrip" + "".join(f" --backend {name}" for name in names) + f" --repeats {repeats} --warmup {warmup} "
        f"--row-bytes {row_bytes} --stored-layers {stored} --dropped-layers {dropped} --torch-threads {threads}"
    )
    return RoundTripBench(command, machine(), rows)

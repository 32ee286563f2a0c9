"""Plots of a trace replay, drawn with matplotlib when it is installed (the ``plot`` extra).

``plot_load`` draws each rank's active requests over the trace's time axis: above, the
time-weighted mean of each rank in ``bins`` equal slices of the trace (an hour of raw steps is
unreadable); below, the most loaded rank's mean in each slice and the spread (most minus least loaded),
which is what an unbalanced router shows first. Without matplotlib it draws nothing and says why, so a command that offers a plot never
fails for the lack of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

Series = dict[tuple[int, int], tuple[list[float], list[int]]]


def step_series(samples: Iterable[tuple[float, tuple[int, int], int]]) -> Series:
    """Each rank's ``(times, active)`` steps, starting idle at 0 s."""
    series: Series = {}
    for t, rank, active in samples:
        xs, ys = series.setdefault(rank, ([0.0], [0]))
        xs.append(t)
        ys.append(active)
    return series


def binned_means(xs: list[float], ys: list[int], end: float, bins: int) -> list[float]:
    """The time-weighted mean of a step function (value ``ys[i]`` from ``xs[i]`` to ``xs[i + 1]``) over ``bins`` slices of [0, end]."""
    width = end / bins if end > 0 else 1.0
    sums = [0.0] * bins
    for i, y in enumerate(ys):
        start, stop = xs[i], xs[i + 1] if i + 1 < len(xs) else end
        first, last = min(int(start / width), bins - 1), min(int(stop / width), bins - 1)
        for b in range(first, last + 1):  # the slices the step overlaps, each by its share of the step
            low, high = max(start, b * width), stop if b == bins - 1 else min(stop, (b + 1) * width)
            sums[b] += y * max(0.0, high - low)
    return [v / width for v in sums]


def plot_load(samples: Iterable[tuple[float, tuple[int, int], int]], path: str | Path, title: str = "", bins: int = 120) -> str:
    """Write the plot of ``(seconds, rank, active requests)`` samples to ``path``; return "" or why it was skipped."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display: write the file only
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return f"matplotlib is not installed ({exc}); install the [plot] extra"
    series = step_series(samples)
    end = max((xs[-1] for xs, _ in series.values()), default=0.0)
    width = end / bins if end > 0 else 1.0
    centres = [(b + 0.5) * width for b in range(bins)]
    means = {rank: binned_means(xs, ys, end, bins) for rank, (xs, ys) in sorted(series.items())}
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True, height_ratios=(3, 1))
    try:
        for rank, ys in means.items():
            top.plot(centres, ys, linewidth=0.9, label=f"worker {rank[0]} dp {rank[1]}")
        top.set_ylabel(f"active requests\n(mean per {width:.0f} s)")
        top.set_title(title or "active requests per rank")
        if means:
            top.legend(loc="upper left", fontsize="small", ncol=4)
            columns = list(zip(*means.values()))
            bottom.plot(centres, [max(c) for c in columns], linewidth=0.9, label="most loaded rank")
            bottom.plot(centres, [max(c) - min(c) for c in columns], linewidth=0.9, label="spread (most - least)")
            bottom.legend(loc="upper left", fontsize="small", ncol=2)
        bottom.set_xlabel("trace time (s)")
        bottom.set_ylabel("requests")
        figure.tight_layout()
        figure.savefig(path, dpi=110)
    except (OSError, ValueError) as exc:
        return f"cannot write {path}: {exc}"
    finally:
        plt.close(figure)
    return ""

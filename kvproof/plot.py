"""Plots of a trace replay, drawn with matplotlib when it is installed (the ``plot`` extra).

``plot_load`` draws each rank's active requests over the trace's time axis as a step line.
Without matplotlib it draws nothing and says why, so a command that offers a plot never
fails for the lack of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def plot_load(samples: Iterable[tuple[float, tuple[int, int], int]], path: str | Path, title: str = "") -> str:
    """Write the plot of ``(seconds, rank, active requests)`` samples to ``path``; return "" or why it was skipped."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display: write the file only
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return f"matplotlib is not installed ({exc}); install the [plot] extra"
    series: dict[tuple[int, int], tuple[list[float], list[int]]] = {}
    for t, rank, active in samples:
        xs, ys = series.setdefault(rank, ([0.0], [0]))
        xs.append(t)
        ys.append(active)
    figure, axes = plt.subplots(figsize=(11, 5))
    try:
        for rank in sorted(series):
            xs, ys = series[rank]
            axes.step(xs, ys, where="post", linewidth=0.8, label=f"worker {rank[0]} dp {rank[1]}")
        axes.set_xlabel("trace time (s)")
        axes.set_ylabel("active requests")
        axes.set_title(title or "active requests per rank")
        if series:
            axes.legend(loc="upper left", fontsize="small", ncol=4)
        figure.tight_layout()
        figure.savefig(path, dpi=110)
    except (OSError, ValueError) as exc:
        return f"cannot write {path}: {exc}"
    finally:
        plt.close(figure)
    return ""

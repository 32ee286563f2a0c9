"""The site's pictures, computed by running the rules and drawn with matplotlib at build time.

Each picture is two functions: a ``*_data`` function that runs the real spec, reference or
implementation functions on the page's worked example and returns plain values (who holds
which block, which node a lookup entry names, what the tracker reads at each instant), and a
drawing function that turns those values into a figure and knows nothing of the rules. The
tests check the data against the rules (and that a broken rule changes it); no coordinate of
an outcome is written by hand, so a picture cannot go stale while the code changes.

``FIGURES`` names each picture for the ``kvproof-figure`` directive (``kvproof/docs_site/ext.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..spec.primitives import Block, FrozenSet, Rank

# One palette for every picture: full holders, partial holders, stale, empty.
FULL, PARTIAL, STALE, EMPTY, ACCENT = "#2b6cb0", "#90cdf4", "#e53e3e", "#edf2f7", "#dd6b20"


def blocks(n: int, start: int = 0) -> tuple[Block, ...]:
    """The worked examples' blocks: local hash ``i``, external hash ``100 * i`` (Dynamo's test convention)."""
    return tuple(Block(i, 100 * i) for i in range(start, start + n))


# ----------------------------------------------------------------------------- the split


SPLIT_RANKS = (Rank(0), Rank(300), Rank(1), Rank(2), Rank(3), Rank(301))
"""The ranks of the split example (crtc.md §3.5): full {0, 300}, cutoffs {1: 1, 2: 3, 3: 5, 301: 4}."""


@dataclass(frozen=True)
class Holding:
    """One node's edge and, per rank, how many of its leading blocks the rank holds and whether it is full."""

    title: str
    edge: tuple[Block, ...]
    held: dict[Rank, int]
    full: frozenset[Rank]


def split_example_state() -> Any:
    """The edge state of the split example: ``[b0..b5]``, full {0, 300}, cutoffs {1: 1, 2: 3, 3: 5, 301: 4}."""
    from ..spec.coverage import EdgeState
    from ..spec.primitives import FrozenMap

    cutoffs = FrozenMap({Rank(1): 1, Rank(2): 3, Rank(3): 5, Rank(301): 4})
    return EdgeState(blocks(6), FrozenSet({Rank(0), Rank(300)}), cutoffs)


def holding(title: str, state: Any, ranks: tuple[Rank, ...]) -> Holding:
    """What ``state`` says each rank holds, read through ``spec.coverage.current_cutoff``."""
    from ..spec.coverage import current_cutoff

    return Holding(title, state.edge, {r: current_cutoff(state, r) for r in ranks}, frozenset(state.full_edge_workers))


def split_data(p: int = 3) -> list[Holding]:
    """The node before the split and the two nodes ``spec.shape.split_at`` makes of it at ``p``."""
    from ..spec.shape import split_at

    before = split_example_state()
    prefix, suffix = split_at(before, p)
    return [
        holding("before: one node", before, SPLIT_RANKS),
        holding(f"after split_at(p={p}): prefix", prefix, SPLIT_RANKS),
        holding("suffix (child of the prefix)", suffix, SPLIT_RANKS),
    ]


def _holding_axes(ax: Any, h: Holding, ranks: tuple[Rank, ...], x0: float = 0.0, labels: bool = True) -> None:
    from matplotlib.patches import Rectangle

    for row, rank in enumerate(ranks):
        y = len(ranks) - 1 - row
        for k, block in enumerate(h.edge):
            held = k < h.held.get(rank, 0)
            color = (FULL if rank in h.full else PARTIAL) if held else EMPTY
            ax.add_patch(Rectangle((x0 + k, y), 0.92, 0.85, color=color))
            if held:
                ax.text(
                    x0 + k + 0.46,
                    y + 0.42,
                    f"b{block.local}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if rank in h.full else "#1a365d",
                )
        if labels:
            ax.text(x0 - 0.2, y + 0.42, repr(rank), ha="right", va="center", fontsize=8)
        count = h.held.get(rank, 0)
        note = "full" if rank in h.full else (f"cutoff {count}" if count else "-")
        ax.text(x0 + len(h.edge) + 0.1, y + 0.42, note, ha="left", va="center", fontsize=7, color="#4a5568")
    ax.text(x0, len(ranks) + 0.15, h.title, fontsize=9, weight="bold")


def draw_split(data: list[Holding]) -> Any:
    """Draw the node before a split (left) and its prefix and suffix after it (right), rank by rank."""
    from matplotlib.figure import Figure

    before, prefix, suffix = data
    fig = Figure(figsize=(10, 3.2))
    ax = fig.add_axes((0.07, 0.02, 0.92, 0.86))
    _holding_axes(ax, before, SPLIT_RANKS)
    x_prefix = len(before.edge) + 3.2
    _holding_axes(ax, prefix, SPLIT_RANKS, x0=x_prefix, labels=False)
    x_suffix = x_prefix + len(prefix.edge) + 2.6
    _holding_axes(ax, suffix, SPLIT_RANKS, x0=x_suffix, labels=False)
    ax.annotate("", xy=(x_prefix - 0.4, 3), xytext=(len(before.edge) + 1.6, 3), arrowprops={"arrowstyle": "->", "lw": 1.5})
    ax.set_xlim(-1.6, x_suffix + len(suffix.edge) + 1.8)
    ax.set_ylim(-0.2, len(SPLIT_RANKS) + 0.8)
    ax.set_axis_off()
    fig.text(
        0.07,
        0.93,
        "dark: the rank holds the whole edge (full_edge_workers); light: a prefix (worker_cutoffs)",
        fontsize=8,
        color="#4a5568",
    )
    return fig


# ----------------------------------------------------------------------------- lazy repair


@dataclass(frozen=True)
class LookupRow:
    """One lane's lookup for one rank at one moment: per external hash, the edge of the node it names and whether that node holds it."""

    title: str
    entries: list[
        tuple[int, tuple[int, ...], bool]
    ]  # (external hash, named node's edge as local hashes, the node holds the hash)


def _lookup_row(title: str, lane: Any, rank: Rank) -> LookupRow:
    entries = []
    for ext, node in sorted(lane.lookups.get(rank, {}).items()):
        entries.append((ext, tuple(b.local for b in node.view.state.edge), ext in node.view.index))
    return LookupRow(title, entries)


def repair_data() -> tuple[list[LookupRow], int]:
    """Lane 0's lookup for rank (1, 0) on a two-lane ``impl.radix_tree.ConcurrentRadixTree``, and the repairs made.

    Rank (1, 0) stores [1 2 3 4] on lane 0; rank (2, 0) stores [1 2 5] on lane 1, which splits
    the node at 2 (lane 0 is not told); then (1, 0) stores block 6 under block 4 on lane 0: the
    parent check finds the entry stale and repairs it toward the tail.
    """
    from ..impl.radix_tree import ConcurrentRadixTree
    from ..spec.events import KvCacheEvent, Stored

    def stored(parent: int | None, *locals_: int) -> KvCacheEvent:
        return KvCacheEvent(0, Stored(parent, tuple(Block(x, 100 * x) for x in locals_)))

    tree = ConcurrentRadixTree(lanes=2)
    rank = Rank(1)
    tree.lane(0).apply_event(1, stored(None, 1, 2, 3, 4))
    rows = [_lookup_row("after (1, 0) stores [1 2 3 4] on lane 0", tree.lanes[0], rank)]
    tree.lane(1).apply_event(2, stored(None, 1, 2, 5))
    rows.append(_lookup_row("after (2, 0) stores [1 2 5] on lane 1: the node splits at 2", tree.lanes[0], rank))
    tree.lane(0).apply_event(1, stored(400, 6))
    rows.append(_lookup_row("after (1, 0) stores [6] under block 4 on lane 0: repaired", tree.lanes[0], rank))
    return rows, tree.statistics().repairs


def draw_repair(data: tuple[list[LookupRow], int]) -> Any:
    """Draw each moment's lookup entries: one cell per external hash, naming the node it points to; red when stale."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    rows, repairs = data
    hashes = sorted({ext for row in rows for ext, _, _ in row.entries})
    fig = Figure(figsize=(10, 2.9))
    ax = fig.add_axes((0.01, 0.02, 0.98, 0.84))
    for i, row in enumerate(rows):
        y = (len(rows) - 1 - i) * 1.5
        ax.text(0, y + 1.0, row.title, fontsize=8.5, weight="bold")
        named = {ext: (edge, ok) for ext, edge, ok in row.entries}
        for k, ext in enumerate(hashes):
            x = k * 1.9
            if ext not in named:
                ax.add_patch(Rectangle((x, y), 1.8, 0.8, color=EMPTY))
                ax.text(x + 0.9, y + 0.4, f"{ext}: -", ha="center", va="center", fontsize=7)
                continue
            edge, ok = named[ext]
            ax.add_patch(Rectangle((x, y), 1.8, 0.8, color=FULL if ok else STALE))
            ax.text(
                x + 0.9, y + 0.4, f"{ext} -> [{' '.join(map(str, edge))}]", ha="center", va="center", fontsize=7, color="white"
            )
    ax.set_xlim(-0.1, len(hashes) * 1.9 + 0.1)
    ax.set_ylim(-0.2, len(rows) * 1.5 + 0.1)
    ax.set_axis_off()
    fig.text(
        0.01,
        0.92,
        f"lane 0's lookup of rank (1, 0): hash -> the edge of the node the entry names; red: that node no "
        f"longer holds the hash (stale); repairs made: {repairs}",
        fontsize=8,
        color="#4a5568",
    )
    return fig


# ----------------------------------------------------------------------------- the prefill timeline


S = 1_000_000_000  # nanoseconds per second


@dataclass(frozen=True)
class Timeline:
    """What the spec tracker reads for one worker, sampled over time, and the events that shaped it."""

    title: str
    times: list[float]  # seconds
    remaining_ms: list[int]
    tokens: list[int]
    anchor_since: list[float | None]  # seconds
    events: list[tuple[float, str]]


def _timeline(title: str, events: list[tuple[float, str, Callable[[Any, int], Any]]], end: float, step: float = 0.25) -> Timeline:
    """Apply ``events`` (time, label, handler) to one worker's ``spec.prefill.PrefillState`` and read it every ``step`` s up to ``end``.

    The reads are the spec's own: ``modeled_remaining_prefill_ms`` and ``token_load.active_prefill_tokens``
    over ``prefill_load_snapshot`` of the state at each instant.
    """
    from ..spec.prefill import EMPTY_PREFILL, modeled_remaining_prefill_ms, prefill_load_snapshot
    from ..spec.token_load import active_prefill_tokens

    state = EMPTY_PREFILL
    pending = sorted(events, key=lambda e: e[0])
    times: list[float] = []
    ms: list[int] = []
    tokens: list[int] = []
    since: list[float | None] = []
    for i in range(round(end / step) + 1):
        t = i * step
        while pending and pending[0][0] <= t:
            at, _, handler = pending.pop(0)
            state = handler(state, int(at * S))
        snapshot = prefill_load_snapshot(state)
        times.append(t)
        ms.append(modeled_remaining_prefill_ms(snapshot, int(t * S)))
        tokens.append(active_prefill_tokens(snapshot, int(t * S)))
        since.append(None if state.anchor_since is None else state.anchor_since / S)
    return Timeline(title, times, ms, tokens, since, [(at, label) for at, label, _ in sorted(events, key=lambda e: e[0])])


def _add(request_id: str, tokens: int, seconds: float) -> Callable[[Any, int], Any]:
    from ..spec.prefill import PrefillEntry, on_prefill_insert

    return lambda state, now: on_prefill_insert(state, PrefillEntry(request_id, tokens, int(seconds * S)), now)


def _done(request_id: str) -> Callable[[Any, int], Any]:
    from ..spec.prefill import on_prefill_remove

    return lambda state, now: on_prefill_remove(state, request_id, now)


def prefill_data() -> list[Timeline]:
    """The 10 s / 6 s spillover, and a credit capped at the removal time, as the spec tracker reads them."""
    spill = _timeline(
        "spillover: r1 (100 tokens, 10 s) at 0 s, r2 (60 tokens, 6 s) at 2 s",
        [
            (0.0, "r1 added: anchor", _add("r1", 100, 10)),
            (2.0, "r2 added", _add("r2", 60, 6)),
        ],
        end=18,
    )
    capped = _timeline(
        "credit capped: A (100 tokens, 10 s), B (40 tokens, 4 s) at 0 s; B completes at 2 s",
        [
            (0.0, "A added: anchor", _add("A", 100, 10)),
            (0.0, "B added", _add("B", 40, 4)),
            (2.0, "B completes: anchor to min(0 + 4, 2) = 2 s", _done("B")),
        ],
        end=14,
    )
    return [spill, capped]


def draw_prefill(data: list[Timeline]) -> Any:
    """Draw each timeline: modeled remaining ms and active tokens over time, the anchor's effective time, the events."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 6.2), layout="constrained")
    axes = fig.subplots(len(data), 1)
    for ax, line in zip(axes, data):
        (ms,) = ax.step(line.times, line.remaining_ms, where="post", color=FULL, lw=2, label="modeled remaining prefill (ms)")
        ax.set_ylabel("remaining (ms)", color=FULL, fontsize=8)
        ax.set_ylim(0, max(line.remaining_ms) * 1.35 + 1)
        ax.set_title(line.title, fontsize=9, loc="left")
        ax.grid(alpha=0.3)
        right = ax.twinx()
        (tok,) = right.step(line.times, line.tokens, where="post", color=ACCENT, lw=1.5, ls="--", label="active prefill tokens")
        right.set_ylabel("tokens", color=ACCENT, fontsize=8)
        right.set_ylim(
            0, max(line.tokens) * 2.2 + 1
        )  # below the time line, so the two do not overlap where they are proportional
        for a in sorted({a for a in line.anchor_since if a is not None}):
            ax.axvline(a, color="#718096", lw=1, ls=":")
        top = ax.get_ylim()[1]
        for i, (at, label) in enumerate(line.events):
            ax.text(at + 0.1, top * (0.95 - 0.08 * i), label, fontsize=7, color="#2d3748", va="top")
        ax.legend(handles=[ms, tok], loc="center right", fontsize=7)
        ax.tick_params(labelsize=7)
        right.tick_params(labelsize=7)
    axes[-1].set_xlabel("time (s); dotted: the anchor's effective time (anchor_since)", fontsize=8)
    return fig


# ----------------------------------------------------------------------------- the state ring


@dataclass(frozen=True)
class RingPicture:
    """A ring of R slots after positions 0..last were written, the S-row window select takes, and a round trip's result."""

    rows: int
    transfer_rows: int
    lhp: int
    slots: list[int]  # the position each slot holds after the writes
    window: list[int]  # the positions of the transfer rows, oldest first (selected from the ring)
    reloaded: list[int | None]  # the position each slot of an empty ring holds after load (None: untouched)
    round_trip_equal: bool


def ring_data(rows: int = 6, transfer_rows: int = 4, written: int = 9) -> RingPicture:
    """Write positions 0..written-1 into an R-slot ring, select the S-row window at the last position, load it back.

    Every row's byte is its own position, so the bytes say which position each slot and row
    hold; ``spec.state_layout.ring_write``, ``select_state_slice`` and ``load_state_to_cache``
    do all the work.
    """
    from ..spec.state_layout import load_state_to_cache, ring_write, select_state_slice

    ring = bytes(rows)
    for p in range(written):
        ring = ring_write(ring, rows, 1, p, bytes([p]))
    lhp = written - 1
    window = select_state_slice(ring, rows, transfer_rows, 1, lhp)
    empty = bytes([255]) * rows
    reloaded = load_state_to_cache(empty, window, rows, transfer_rows, 1, lhp)
    again = select_state_slice(reloaded, rows, transfer_rows, 1, lhp)
    return RingPicture(
        rows, transfer_rows, lhp, list(ring), list(window), [None if b == 255 else b for b in reloaded], again == window
    )


def draw_ring(data: RingPicture) -> Any:
    """Draw the ring's slots (position p in slot p mod R), the window in position order, and the reloaded ring."""
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch, Rectangle

    fig = Figure(figsize=(10, 3.4))
    ax = fig.add_axes((0.01, 0.02, 0.98, 0.86))
    lanes: list[tuple[str, list[int] | list[int | None], float, str]] = [
        ("cache ring (slot s holds position p, p mod R = s)", data.slots, 3.2, "slot"),
        ("transfer window (S rows, oldest first)", data.window, 1.6, "row"),
        ("ring after load into an empty ring", data.reloaded, 0.0, "slot"),
    ]
    in_window = set(data.window)
    for title, values, y, what in lanes:
        ax.text(0, y + 1.0, title, fontsize=8.5, weight="bold")
        for i, value in enumerate(values):
            color = EMPTY if value is None else (FULL if value in in_window else PARTIAL)
            ax.add_patch(Rectangle((i * 1.2, y), 1.1, 0.75, color=color))
            ax.text(
                i * 1.2 + 0.55,
                y + 0.5,
                "-" if value is None else f"p{value}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if color == FULL else "#1a365d",
            )
            ax.text(
                i * 1.2 + 0.55,
                y + 0.12,
                f"{what} {i}",
                ha="center",
                va="center",
                fontsize=6,
                color="white" if color == FULL else "#4a5568",
            )
    for j, p in enumerate(data.window):
        s = p % data.rows
        ax.add_patch(FancyArrowPatch((s * 1.2 + 0.55, 3.2), (j * 1.2 + 0.55, 2.35), arrowstyle="->", color="#718096", lw=0.8))
    ax.set_xlim(-0.1, max(data.rows, data.transfer_rows) * 1.2 + 0.1)
    ax.set_ylim(-0.1, 4.5)
    ax.set_axis_off()
    fig.text(
        0.01,
        0.93,
        f"R = {data.rows} slots, S = {data.transfer_rows} rows, last hit position {data.lhp}; "
        f"select after load returns the same window: {data.round_trip_equal}",
        fontsize=8,
        color="#4a5568",
    )
    return fig


FIGURES: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    "split": (split_data, draw_split),
    "lazy-repair": (repair_data, draw_repair),
    "prefill-timeline": (prefill_data, draw_prefill),
    "state-ring": (ring_data, draw_ring),
}
"""Each picture by name: the function that runs the rules, and the one that draws what it returned."""


def figure(name: str) -> Any:
    """Run the rules behind picture ``name`` and return its matplotlib figure."""
    data, draw = FIGURES[name]
    return draw(data())

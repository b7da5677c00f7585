"""Chapter 1's figures: one training step on a per-rank timeline, its compute/communication split, and
throughput and scaling efficiency against node count.

Each function has the package's one shape (``figures.common``): the data first, the axes or figure
to draw on keyword-only (else a new pyplot-free figure), and the figure returned, so a widget panel
can redraw into one Output without leaking figures (important on a 2 GB Binder). Left out: running
the step (``netlab.dataparallel.step``); the colours are ``common.COLORS``.
"""
from __future__ import annotations

from matplotlib.collections import PolyCollection
from matplotlib.patches import Rectangle

from ..runtime.trace import Trace
from .common import COLORS, axes_or_new, below, figure_or_new, time_unit


def timeline(trace: Trace, *, ax=None, title: str | None = None, span_s: float | None = None,
             step: tuple[float, float] | None = None):
    """One row per rank: compute (blue), sending (orange, upper half), receiving (green, lower half).

    span_s: the time axis runs from 0 to span_s (seconds) in the unit it suggests, so a breakdown
    drawn with the same span lines up with it (default: the trace's makespan).
    step: (compute_s, comm_s) of the whole step, drawn as a first row "step" above the ranks, with
    each part's share written in it: the breakdown and the timeline on one time axis.

    Drawing again into the same axes replaces what the last call drew (a panel keeps its axes: making
    an axes and its ticks was a sixth of a chapter 1 change)."""
    own = ax is None                              # a caller's axes: the caller lays the figure out once
    fig, ax = axes_or_new(ax, (9, 0.45 * trace.world_size + 1.2))
    for artist in getattr(ax, "_netlab_timeline", ()):
        artist.remove()
    drawn = ax._netlab_timeline = []
    span_s = span_s or trace.makespan or 1.0
    factor, unit = time_unit(span_s)
    ax.set_xlim(0, span_s * factor)
    # One collection per kind for all ranks, added without autoscaling (limits are set here): a panel
    # redraws this on every change, and a broken_barh call per rank and kind was a third of its time.
    boxes = {"idle": [], "compute": [], "send": [], "recv": []}
    for r in range(trace.world_size):
        boxes["idle"].append((0, trace.clocks[r] * factor, r - 0.4, 0.8))
        for e in trace.of(r):
            if e.kind in ("compute", "send", "recv"):
                lo, h = {"compute": (r - 0.4, 0.8), "send": (r - 0.4, 0.4), "recv": (r, 0.4)}[e.kind]
                boxes[e.kind].append((e.start * factor, (e.end - e.start) * factor, lo, h))
    for z, kind in enumerate(("idle", "compute", "send", "recv")):
        if boxes[kind]:
            edge = {"edgecolor": "white", "linewidth": 0.3} if kind in ("send", "recv") else {"linewidth": 0}
            drawn.append(ax.add_collection(PolyCollection([((x, y), (x, y + h), (x + w, y + h), (x + w, y))
                                              for x, w, y, h in boxes[kind]], facecolor=COLORS[kind],
                                             zorder=min(z, 2), **edge), autolim=False))
    ax.set_ylim(trace.world_size - 0.5, -0.5)
    ticks, labels = list(range(trace.world_size)), [f"rank {r}" for r in range(trace.world_size)]
    if step is not None:
        compute_s, comm_s = step
        total, y = compute_s + comm_s, -1.3
        for start, length, colour, name in ((0, compute_s, COLORS["compute"], "compute"),
                                             (compute_s, comm_s, COLORS["comm"], "communication")):
            drawn.append(ax.add_patch(Rectangle((start * factor, y - 0.45), length * factor, 0.9,
                                                    color=colour, zorder=1)))
            if total and length / (span_s or total) > 0.12:          # room for the words
                drawn.append(ax.text((start + length / 2) * factor, y, f"{name} {length / total:.0%}",
                                     ha="center", va="center", color="white", fontsize=9, fontweight="bold",
                                     zorder=3))
        drawn.append(ax.axhline(-0.7, color="#888888", linewidth=0.6))
        ticks, labels = [y] + ticks, ["step"] + labels
        ax.set_ylim(trace.world_size - 0.5, y - 0.6)
    ax.set_yticks(ticks, labels)
    ax.set_xlabel(f"{'virtual' if trace.virtual else 'wall'} time ({unit})")
    if ax.get_legend() is None:
        handles = [Rectangle((0, 0), 1, 1, color=COLORS[k]) for k in ("compute", "send", "recv", "idle")]
        ax.legend(handles, ["compute", "sending", "receiving", "waiting"], loc="upper center",
                  bbox_to_anchor=(0.5, -below(ax, 0.42)), ncol=4, frameon=False)
    ax.set_title(title or "per-rank timeline")
    if own:
        fig.tight_layout()
    return fig


def breakdown(compute_s: float, comm_s: float, *, ax=None, title: str = "one training step",
              span_s: float | None = None):
    """A single horizontal bar: compute then communication, with the share of each (span_s: as timeline's)."""
    own = ax is None
    fig, ax = axes_or_new(ax, (9, 1.6))
    total = compute_s + comm_s
    span_s = span_s or total or 1.0
    factor, unit = time_unit(span_s)
    ax.set_xlim(0, span_s * factor)
    ax.barh([0], [compute_s * factor], color=COLORS["compute"], label=f"compute {compute_s / total:.0%}" if total else "compute")
    ax.barh([0], [comm_s * factor], left=[compute_s * factor], color=COLORS["comm"],
            label=f"communication {comm_s / total:.0%}" if total else "communication")
    ax.set_yticks([])
    ax.set_xlabel(f"time ({unit})")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -below(ax, 0.42)), ncol=2, frameon=False)
    ax.set_title(title)
    if own:
        fig.tight_layout()
    return fig


def throughput_scaling(rows: list[dict], *, fig=None):
    """Throughput and scaling efficiency against node count, one line per bandwidth."""
    fig = figure_or_new(fig, (10, 3.6))
    axes = fig.subplots(1, 2)
    for bw in dict.fromkeys(r["bandwidth"] for r in rows):
        sub = [r for r in rows if r["bandwidth"] == bw]
        ranks = [r["ranks"] for r in sub]
        axes[0].plot(ranks, [r["samples_per_s"] for r in sub], "o-", label=bw)
        axes[1].plot(ranks, [r["efficiency"] for r in sub], "o-", label=bw)
    ranks = sorted({r["ranks"] for r in rows})
    base = [r for r in rows if r["ranks"] == ranks[0]]
    if base:
        ideal = base[0]["samples_per_s"] / ranks[0]
        axes[0].plot(ranks, [ideal * p for p in ranks], "k:", label="linear")
    axes[0].set(xlabel="nodes (ranks)", ylabel="samples / s", title="throughput")
    axes[1].set(xlabel="nodes (ranks)", ylabel="efficiency", title="scaling efficiency", ylim=(0, 1.05))
    for ax in axes:
        ax.set_xticks(ranks)
        ax.legend(frameon=False)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig

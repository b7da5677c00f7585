"""Matplotlib figures the chapters share: per-rank timelines, step breakdowns, scaling curves.

Every function draws into a given Axes (or a new figure) and returns the figure, so a widget
panel can redraw into one Output without leaking figures (important on a 2 GB Binder).
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from .trace import Trace

COLORS = {"compute": "#4c72b0", "send": "#dd8452", "recv": "#55a868", "idle": "#dddddd"}


def _axes(ax, figsize):
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize)
    return fig, ax


def _scale(seconds: float) -> tuple[float, str]:
    for factor, unit in ((1, "s"), (1e3, "ms"), (1e6, "us")):
        if seconds * factor >= 1:
            return factor, unit
    return 1e9, "ns"


def timeline(trace: Trace, ax=None, title: str | None = None):
    """One row per rank: compute (blue), sending (orange, upper half), receiving (green, lower half)."""
    fig, ax = _axes(ax, (9, 0.45 * trace.world_size + 1.2))
    factor, unit = _scale(trace.makespan or 1.0)
    for r in range(trace.world_size):
        ax.broken_barh([(0, trace.clocks[r] * factor)], (r - 0.4, 0.8), color=COLORS["idle"], zorder=0)
        for e in trace.of(r):
            if e.kind == "compute":
                ax.broken_barh([(e.start * factor, (e.end - e.start) * factor)], (r - 0.4, 0.8),
                               color=COLORS["compute"], zorder=1)
            elif e.kind in ("send", "recv"):
                lo = r - 0.4 if e.kind == "send" else r
                ax.broken_barh([(e.start * factor, (e.end - e.start) * factor)], (lo, 0.4),
                               color=COLORS[e.kind], zorder=2, edgecolor="white", linewidth=0.3)
    ax.set_yticks(range(trace.world_size), [f"rank {r}" for r in range(trace.world_size)])
    ax.invert_yaxis()
    ax.set_xlabel(f"{'virtual' if trace.virtual else 'wall'} time ({unit})")
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[k]) for k in ("compute", "send", "recv", "idle")]
    ax.legend(handles, ["compute", "sending", "receiving", "waiting"], loc="upper center",
              bbox_to_anchor=(0.5, -0.25 if trace.world_size < 6 else -0.12), ncol=4, frameon=False)
    ax.set_title(title or "per-rank timeline")
    fig.tight_layout()
    return fig


def breakdown(compute_s: float, comm_s: float, ax=None, title: str = "one training step"):
    """A single horizontal bar: compute then communication, with the share of each."""
    fig, ax = _axes(ax, (9, 1.6))
    total = compute_s + comm_s
    factor, unit = _scale(total or 1.0)
    ax.barh([0], [compute_s * factor], color=COLORS["compute"], label=f"compute {compute_s / total:.0%}" if total else "compute")
    ax.barh([0], [comm_s * factor], left=[compute_s * factor], color=COLORS["send"],
            label=f"communication {comm_s / total:.0%}" if total else "communication")
    ax.set_yticks([])
    ax.set_xlabel(f"time ({unit})")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=2, frameon=False)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def scaling(rows: list[dict], axes=None):
    """Throughput and scaling efficiency against node count, one line per bandwidth."""
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    else:
        fig = axes[0].figure
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


def contributions(grid, ax=None, title: str = ""):
    """A ranks x chunks grid: which ranks' data each rank holds in each chunk (chapter 2's ring).

    `grid[r][c]` is a bitmask of contributing ranks (rank i put 2**i into every element).
    """
    import numpy as np
    grid = np.asarray(grid, dtype=np.int64)
    p, chunks = grid.shape
    fig, ax = _axes(ax, (1.1 * chunks + 2, 0.55 * p + 1.2))
    counts = np.vectorize(lambda m: bin(int(m)).count("1"))(grid)
    ax.imshow(counts, cmap="Blues", vmin=0, vmax=p, aspect="auto")
    for r in range(p):
        for c in range(chunks):
            members = [str(i) for i in range(p) if grid[r, c] >> i & 1]
            label = "all" if len(members) == p else "+".join(members)
            ax.text(c, r, label, ha="center", va="center", fontsize=9,
                    color="white" if counts[r, c] > 0.6 * p else "black")
    ax.set_xticks(range(chunks), [f"chunk {c}" for c in range(chunks)])
    ax.set_yticks(range(p), [f"rank {r}" for r in range(p)])
    ax.set_title(title)
    fig.tight_layout()
    return fig


def time_vs_size(rows: list[dict], ax=None, crossovers: dict | None = None):
    """Collective time against message size, one colour per algorithm: markers measured, lines formula."""
    fig, ax = _axes(ax, (7.5, 4.2))
    for i, algo in enumerate(dict.fromkeys(r["algo"] for r in rows)):
        sub = [r for r in rows if r["algo"] == algo]
        color = f"C{i}"
        ax.plot([r["bytes"] for r in sub], [r["predicted_s"] for r in sub], "-", color=color, alpha=0.6)
        ax.plot([r["bytes"] for r in sub], [r["time_s"] for r in sub], "o", color=color, ms=4, label=algo)
    for label, nbytes in (crossovers or {}).items():
        if nbytes:
            ax.axvline(nbytes, color="grey", ls=":", lw=1.2, label=f"{label}: {nbytes / 1e6:.2g} MB")
    ax.set(xscale="log", yscale="log", xlabel="message size S (bytes)", ylabel="time (s)",
           title="measured (dots) and formula (lines)")
    ax.legend(frameon=False, fontsize=9)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def time_vs_ranks(rows: list[dict], ax=None, title: str = "a small all-reduce on more and more ranks"):
    """Collective time against world size, one line per algorithm (markers measured, lines formula)."""
    fig, ax = _axes(ax, (7, 3.8))
    for i, algo in enumerate(dict.fromkeys(r["algo"] for r in rows)):
        sub = [r for r in rows if r["algo"] == algo]
        ax.plot([r["ranks"] for r in sub], [r["predicted_s"] * 1e6 for r in sub], "-", color=f"C{i}", alpha=0.6)
        ax.plot([r["ranks"] for r in sub], [r["time_s"] * 1e6 for r in sub], "o", color=f"C{i}", label=algo)
    ax.set(xlabel="ranks p", ylabel="time (us)", title=title)
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig

"""Chapter 1's figures: throughput and scaling efficiency against node count (one step's per-rank
timeline and its compute/communication split are the lab's one ``figures.timeline``).

Each function has the package's one shape (``figures.common``): the data first, the axes or figure
to draw on keyword-only (else a new pyplot-free figure), and the figure returned, so a widget panel
can redraw into one Output without leaking figures (important on a 2 GB Binder). Left out: running
the step (``netlab.dataparallel.step``).
"""
from __future__ import annotations

from .common import figure_or_new


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

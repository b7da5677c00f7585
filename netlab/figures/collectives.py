"""Chapter 2's figures: the ring's chunks rank by rank, and collective time against message size and
against world size (markers measured, lines formula), one style per algorithm (``common.ALGORITHMS``).

Each function has the package's one shape (``figures.common``): the rows first, the axes keyword-only
(else a new pyplot-free figure), the figure returned. Left out: the runs
that measure the rows (``netlab.collectives.experiments``).
"""
from __future__ import annotations

from .common import algorithm_style, axes_or_new, label_lines, log_grid, margins


def contributions(grid, *, ax=None, title: str = ""):
    """A ranks x chunks grid: which ranks' data each rank holds in each chunk (chapter 2's ring).

    `grid[r][c]` is a bitmask of contributing ranks (rank i put 2**i into every element).
    """
    import numpy as np
    grid = np.asarray(grid, dtype=np.int64)
    p, chunks = grid.shape
    fig, ax = axes_or_new(ax, (1.1 * chunks + 2, 0.55 * p + 1.2))
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


def time_vs_size(rows: list[dict], *, ax=None, crossovers: dict | None = None):
    """Collective time against message size: markers measured, lines formula, labelled at their ends.

    Algorithms whose costs coincide (ring and naive on 2 ranks; tree and halving-doubling at some
    sizes) stay visible: each has its own colour, marker and line style, and markers are offset a
    little along x (drawn at S * 1.06^i, the formula lines at S).
    """
    fig, ax = axes_or_new(ax, (8.5, 4.4))
    algos = list(dict.fromkeys(r["algo"] for r in rows))
    ends = {}
    for i, algo in enumerate(algos):
        sub = [r for r in rows if r["algo"] == algo]
        st = algorithm_style(algo)
        xs = [r["bytes"] for r in sub]
        ax.plot(xs, [r["predicted_s"] for r in sub], linestyle=st["linestyle"], color=st["color"], lw=1.4, alpha=0.8)
        shift = 1.06 ** (i - (len(algos) - 1) / 2)
        ax.plot([x * shift for x in xs], [r["time_s"] for r in sub], st["marker"], color=st["color"], ms=5,
                mfc="white" if i % 2 else st["color"], label=algo)
        ends[algo] = (xs, [r["predicted_s"] for r in sub], st["color"])
    for label, nbytes in (crossovers or {}).items():
        if nbytes:
            ax.axvline(nbytes, color="grey", ls=":", lw=1.2)
            ax.annotate(f"{label}\n{nbytes / 1e6:.2g} MB", xy=(nbytes, 0.98), xycoords=("data", "axes fraction"),
                        fontsize=8, color="grey", va="top", ha="right")
    ax.set(xscale="log", yscale="log", xlabel="message size S (bytes)", ylabel="time (s)",
           title="all-reduce time: measured (markers), formula (lines)")
    log_grid(ax)
    label_lines(ax, ends)
    # margins in inches for the tick labels, the title and the line names at the right: tight_layout's
    # measuring pass over the log axes' tick labels was half this figure's time in chapter 2's panel
    margins(fig, (0.8, 1.3, 0.6, 0.4))
    return fig


def time_vs_ranks(rows: list[dict], *, ax=None, title: str = "a small all-reduce on more and more ranks"):
    """Collective time against world size, one line per algorithm (markers measured, lines formula)."""
    fig, ax = axes_or_new(ax, (8, 3.8))
    ends = {}
    for algo in dict.fromkeys(r["algo"] for r in rows):
        sub = [r for r in rows if r["algo"] == algo]
        st = algorithm_style(algo)
        xs, ys = [r["ranks"] for r in sub], [r["predicted_s"] * 1e6 for r in sub]
        ax.plot(xs, ys, linestyle=st["linestyle"], color=st["color"], alpha=0.8)
        ax.plot(xs, [r["time_s"] * 1e6 for r in sub], st["marker"], color=st["color"], label=algo)
        ends[algo] = (xs, ys, st["color"])
    ax.set(xlabel="ranks p", ylabel="time (us)", title=title)
    ax.grid(alpha=0.3)
    label_lines(ax, ends)
    fig.tight_layout()
    return fig


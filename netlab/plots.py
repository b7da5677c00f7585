"""Matplotlib figures the chapters share, and the lab's one visual language.

Every function draws into a given Axes (or a new figure) and returns the figure, so a widget
panel can redraw into one Output without leaking figures (important on a 2 GB Binder).

The visual language, kept across chapters: one colour, marker and line style per collective
algorithm (``ALGORITHMS``) and per compression method (``METHODS``: a hue per family -- blues for
quantizers, greens for sparsifiers, purples for low rank -- and the fp32 baseline always black,
dashed); lines labelled at their right end (``label_lines``) or small multiples instead of long
legends; titles short enough to fit; a unit on every axis.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.collections import PolyCollection

from .runtime.trace import Trace

COLORS = {"compute": "#4c72b0", "send": "#dd8452", "recv": "#55a868", "idle": "#dddddd"}

# collective algorithms: (colour, marker, line style); algorithms with equal costs never look alike
ALGORITHMS = {
    "naive": ("#7f7f7f", "s", (0, (1, 1))), "ring": ("#1f77b4", "o", "-"), "tree": ("#2ca02c", "^", "--"),
    "recursive_doubling": ("#d62728", "D", "-."), "halving_doubling": ("#9467bd", "v", (0, (5, 1, 1, 1, 1, 1))),
    "hierarchical": ("#ff7f0e", "P", "--"), "hierarchical_rail": ("#8c564b", "X", "-"),
    "scatter_allgather": ("#17becf", "h", ":"), "torch": ("#bcbd22", "*", ":"),
}
# compression methods: a hue per family; fp32 ("none") black and dashed everywhere
METHODS = {
    "none": ("black", "", "--"), "fp16": ("#08519c", "o", "-"), "bf16": ("#6baed6", "s", ":"),
    "int8": ("#2171b5", "^", "-"), "qsgd": ("#4292c6", "v", "-."), "terngrad": ("#5a8fc0", "D", "--"),
    "sign": ("#d94801", "o", "-"), "majority": ("#fd8d3c", "s", "--"),
    "topk": ("#006d2c", "o", "-"), "randomk": ("#41ab5d", "^", "--"), "threshold": ("#74c476", "v", "-."),
    "dgc": ("#00441b", "D", ":"), "powersgd": ("#6a51a3", "P", "-"),
}


def algorithm_style(algo: str) -> dict:
    """plot() keywords for a collective algorithm: the same look in every chapter."""
    colour, marker, line = ALGORITHMS.get(algo, ("#333333", "o", "-"))
    return {"color": colour, "marker": marker, "linestyle": line}


def method_style(label: str) -> dict:
    """plot() keywords for a compression method or its label ('topk (ratio=0.01)'); rank 2 a lighter line."""
    name = label.split(" ")[0]
    colour, marker, line = METHODS.get(name, ("#333333", "o", "-"))
    style = {"color": colour, "marker": marker or None, "linestyle": line}
    if "rank=2" in label:
        style.update(color="#9e9ac8", linestyle="--")
    return style


def label_lines(ax, lines: dict, fontsize: float = 8, min_gap: float = 0.045):
    """Write each line's name at its right end instead of a legend; nudge labels apart (axes fraction).

    lines: name -> (xs, ys, colour). Works on log or linear axes (positions in display space).
    """
    ax.get_xlim(), ax.get_ylim()          # bring autoscaled limits up to date: transData is stale until then
    ends = []
    for name, (xs, ys, colour) in lines.items():
        if len(xs):
            x, y = ax.transData.transform((xs[-1], ys[-1]))
            ends.append([ax.transAxes.inverted().transform((x, y))[1], name, colour])
    ends.sort()
    for i in range(1, len(ends)):                                   # keep labels min_gap apart, bottom up
        ends[i][0] = max(ends[i][0], ends[i - 1][0] + min_gap)
    for y, name, colour in ends:
        ax.annotate(name, xy=(1.01, y), xycoords="axes fraction", color=colour, fontsize=fontsize, va="center")


def log_grid(ax, x: bool = True, y: bool = True) -> None:
    """Log scales with a grid at each decade and light lines at 2x and 5x (not 2..9: on a figure of
    twelve log-log panels, matplotlib's default minor ticks were 900 tick objects and half its time)."""
    from matplotlib.ticker import LogLocator, NullFormatter, NullLocator
    for on, axis, scale in ((x, ax.xaxis, ax.set_xscale), (y, ax.yaxis, ax.set_yscale)):
        if on:
            if axis.get_scale() != "log":
                scale("log")
            base = axis.get_transform().base                   # base 2 (rank counts): every tick is major
            axis.set_minor_locator(LogLocator(base=base, subs=(2.0, 5.0)) if base == 10 else NullLocator())
            axis.set_minor_formatter(NullFormatter())
    ax.grid(alpha=0.3, which="major")
    ax.grid(alpha=0.12, which="minor")


def margins(fig, left: float, right: float, bottom: float, top: float, **spacing) -> None:
    """Subplot margins in inches (whatever the figure's size): a fixed layout instead of tight_layout,
    whose measuring pass costs a whole draw. `spacing`: wspace/hspace, as subplots_adjust takes them."""
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=left / w, right=1 - right / w, bottom=bottom / h, top=1 - top / h, **spacing)


def _axes(ax, figsize):
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize)
    return fig, ax


def _below(ax, inches: float) -> float:
    """`inches` below the axes, in axes fraction (a legend under the x label, whatever the axes' height)."""
    return inches / max(ax.get_position().height * ax.figure.get_figheight(), 1e-3)


def _scale(seconds: float) -> tuple[float, str]:
    for factor, unit in ((1, "s"), (1e3, "ms"), (1e6, "us")):
        if seconds * factor >= 1:
            return factor, unit
    return 1e9, "ns"


def timeline(trace: Trace, ax=None, title: str | None = None, span_s: float | None = None,
             step: tuple[float, float] | None = None):
    """One row per rank: compute (blue), sending (orange, upper half), receiving (green, lower half).

    span_s: the time axis runs from 0 to span_s (seconds) in the unit it suggests, so a breakdown
    drawn with the same span lines up with it (default: the trace's makespan).
    step: (compute_s, comm_s) of the whole step, drawn as a first row "step" above the ranks, with
    each part's share written in it: the breakdown and the timeline on one time axis.

    Drawing again into the same axes replaces what the last call drew (a panel keeps its axes: making
    an axes and its ticks was a sixth of a chapter 1 change)."""
    own = ax is None                              # a caller's axes: the caller lays the figure out once
    fig, ax = _axes(ax, (9, 0.45 * trace.world_size + 1.2))
    for artist in getattr(ax, "_netlab_timeline", ()):
        artist.remove()
    drawn = ax._netlab_timeline = []
    span_s = span_s or trace.makespan or 1.0
    factor, unit = _scale(span_s)
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
                                             (compute_s, comm_s, COLORS["send"], "communication")):
            drawn.append(ax.add_patch(plt.Rectangle((start * factor, y - 0.45), length * factor, 0.9,
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
        handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[k]) for k in ("compute", "send", "recv", "idle")]
        ax.legend(handles, ["compute", "sending", "receiving", "waiting"], loc="upper center",
                  bbox_to_anchor=(0.5, -_below(ax, 0.42)), ncol=4, frameon=False)
    ax.set_title(title or "per-rank timeline")
    if own:
        fig.tight_layout()
    return fig


def breakdown(compute_s: float, comm_s: float, ax=None, title: str = "one training step",
              span_s: float | None = None):
    """A single horizontal bar: compute then communication, with the share of each (span_s: as timeline's)."""
    own = ax is None
    fig, ax = _axes(ax, (9, 1.6))
    total = compute_s + comm_s
    span_s = span_s or total or 1.0
    factor, unit = _scale(span_s)
    ax.set_xlim(0, span_s * factor)
    ax.barh([0], [compute_s * factor], color=COLORS["compute"], label=f"compute {compute_s / total:.0%}" if total else "compute")
    ax.barh([0], [comm_s * factor], left=[compute_s * factor], color=COLORS["send"],
            label=f"communication {comm_s / total:.0%}" if total else "communication")
    ax.set_yticks([])
    ax.set_xlabel(f"time ({unit})")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -_below(ax, 0.42)), ncol=2, frameon=False)
    ax.set_title(title)
    if own:
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
    """Collective time against message size: markers measured, lines formula, labelled at their ends.

    Algorithms whose costs coincide (ring and naive on 2 ranks; tree and halving-doubling at some
    sizes) stay visible: each has its own colour, marker and line style, and markers are offset a
    little along x (drawn at S * 1.06^i, the formula lines at S).
    """
    fig, ax = _axes(ax, (8.5, 4.4))
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
    fig.tight_layout()
    return fig


def time_vs_ranks(rows: list[dict], ax=None, title: str = "a small all-reduce on more and more ranks"):
    """Collective time against world size, one line per algorithm (markers measured, lines formula)."""
    fig, ax = _axes(ax, (8, 3.8))
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

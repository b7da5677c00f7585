"""Chapter 8's co-design figures: in-network aggregation against the ring over world size (lines
from ``netlab.collectives.cost``, markers measured on real ranks), a job's all-reduce packed vs scattered, and
a ring all-reduce against an all-to-all on a fat-tree at two oversubscription ratios, and the
chapter's panel (``oversubscribed_patterns``: both patterns against a spine-leaf's oversubscription).

Each function has the package's one shape (``figures.common``): the data first, the figure keyword-only
(else a new pyplot-free one), the figure returned. The ring
keeps its look from chapter 2 (``common.ALGORITHMS``). Left out: the runs behind the markers and
bars (``netlab.codesign.ina.measure``, ``netlab.sim.placement.compare``, ``netlab.sim.alltoall.bisection``).
"""
from __future__ import annotations

import math

from matplotlib.ticker import ScalarFormatter

from ..collectives import cost
from ..units import fmt_bytes
from .common import PATTERNS, algorithm_style, figure_or_new, label_lines, log_grid, margins, time_unit

INA_STYLE = {"color": "#e377c2", "marker": "s", "linestyle": "-"}


def ina_time_vs_p(nbytes: float, link, *, fig=None, chunks: int = 1, capacity: float = math.inf, ranks=None,
                  measured: dict | None = None):
    """Time and busbw of one all-reduce of `nbytes` against p: ring and in-network aggregation.

    measured: {"ring" | "ina": [(p, seconds), ...]} from real ranks, drawn as markers on the lines.
    """
    fig = figure_or_new(fig, (9, 3))
    ps = list(ranks or [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64])
    lines = {"ring": [cost.ring_allreduce(p, nbytes, link) for p in ps],
             "in-network": [cost.ina_allreduce(p, nbytes, link, chunks=chunks, capacity=capacity) for p in ps]}
    styles = {"ring": algorithm_style("ring"), "in-network": INA_STYLE}
    keys = {"ring": "ring", "in-network": "ina"}
    scale, unit = time_unit(max(max(v) for v in lines.values()))
    ax_t, ax_b = fig.subplots(1, 2)
    ends_t, ends_b = {}, {}
    for name, times in lines.items():
        style = dict(styles[name])
        bus = [cost.busbw("allreduce", p, nbytes, t) / 1e9 for p, t in zip(ps, times)]
        ax_t.plot(ps, [t * scale for t in times], color=style["color"], linestyle=style["linestyle"])
        ax_b.plot(ps, bus, color=style["color"], linestyle=style["linestyle"])
        ends_t[name] = (ps, [t * scale for t in times], style["color"])
        ends_b[name] = (ps, bus, style["color"])
        points = (measured or {}).get(keys[name], [])
        if points:
            mp, mt = zip(*points)
            ax_t.plot(mp, [t * scale for t in mt], linestyle="none", marker=style["marker"], color=style["color"],
                      markerfacecolor="none", markersize=8)
            ax_b.plot(mp, [cost.busbw("allreduce", p, nbytes, t) / 1e9 for p, t in points], linestyle="none",
                      marker=style["marker"], color=style["color"], markerfacecolor="none", markersize=8)
    for ax in (ax_t, ax_b):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workers p")
        log_grid(ax, y=False)
        ax.xaxis.set_major_formatter(ScalarFormatter())
    ax_t.set_ylabel(f"all-reduce time ({unit})")
    ax_b.set_ylabel("busbw (GB/s)")
    ax_b.axhline(link.bandwidth / 1e9, color="#999999", linewidth=0.8, linestyle=":")
    ax_t.set_ylim(bottom=0)
    ax_b.set_ylim(bottom=0)
    label_lines(ax_t, ends_t)
    label_lines(ax_b, ends_b)
    ax_t.set_title(f"S = {fmt_bytes(nbytes)}, {chunks} chunk{'s' if chunks > 1 else ''} (markers: real ranks)",
                   fontsize=9)
    ax_b.set_title("dotted: the port's bandwidth B", fontsize=9)
    margins(fig, (0.7, 0.95, 0.5, 0.3), wspace=0.45)
    return fig


def placement_bars(result: dict, *, fig=None):
    """All-reduce time of one job packed and scattered (``netlab.sim.placement.compare``'s result)."""
    fig = figure_or_new(fig, (8, 1.6))
    ax = fig.subplots()
    names = list(result)
    times = [result[n]["allreduce_s"] for n in names]
    scale, unit = time_unit(max(times))
    bars = ax.barh(names, [t * scale for t in times], color=["#2ca02c", "#d62728"][:len(names)])
    for bar, n in zip(bars, names):
        ax.annotate(f" {result[n]['leaves']} leaves, bottleneck {result[n]['bottleneck']}",
                    xy=(bar.get_width(), bar.get_y() + bar.get_height() / 2), va="center", fontsize=8)
    ax.set_xlabel(f"ring all-reduce time ({unit}, flow simulator)")
    ax.set_xlim(0, max(times) * scale * 1.9)
    ax.invert_yaxis()
    margins(fig, (0.9, 0.2, 0.5, 0.15))
    return fig


BISECTION_STYLE = PATTERNS


def bisection_bars(rows: list[dict], *, fig=None):
    """Time of each pattern at each oversubscription ratio (``netlab.sim.alltoall.bisection``'s rows):
    bars from the flow simulator, a black tick at the closed form, the slowdown against the first ratio."""
    fig = figure_or_new(fig, (7, 3.4))
    ax = fig.subplots()
    patterns = list(dict.fromkeys(r["pattern"] for r in rows))
    ratios = list(dict.fromkeys(r["ratio"] for r in rows))
    scale, unit = time_unit(max(r["time_s"] for r in rows))
    width = 0.8 / len(ratios)
    for j, ratio in enumerate(ratios):
        for i, pattern in enumerate(patterns):
            r = next(x for x in rows if x["pattern"] == pattern and x["ratio"] == ratio)
            x = i + (j - (len(ratios) - 1) / 2) * width
            ax.bar(x, r["time_s"] * scale, width * 0.92, color=BISECTION_STYLE.get(pattern, "#777777"),
                   alpha=1.0 if j else 0.45, edgecolor="black", linewidth=0.5)
            ax.plot([x - width * 0.4, x + width * 0.4], [r["formula_s"] * scale] * 2, color="black", linewidth=1.5)
            ax.annotate(f"{ratio:g}:1\n{r['slowdown']:.2f}x", xy=(x, r["time_s"] * scale), ha="center",
                        va="bottom", fontsize=8)
    ax.set_xticks(range(len(patterns)), patterns)
    ax.set_ylabel(f"time ({unit}), flow simulator")
    ax.set_ylim(0, max(r["time_s"] for r in rows) * scale * 1.25)
    ax.set_title(f"{rows[0]['ranks']} hosts, S = {fmt_bytes(rows[0]['bytes'])} per rank; pale 1:1, dark "
                 f"{ratios[-1]:g}:1 at the edge; black tick: closed form", fontsize=9)
    margins(fig, (0.8, 0.2, 0.45, 0.35))
    return fig


OVERSUBSCRIPTION_STYLE = {"all-to-all": {"color": PATTERNS["all-to-all"], "marker": "s"},
                          "ring all-reduce": {"color": PATTERNS["ring all-reduce"], "marker": "o"}}


def oversubscribed_patterns(result: dict, *, fig=None, ratios=(1, 2, 4, 8)):
    """Chapter 8's panel (``netlab.sim.placement_grid.grid``'s result): each pattern's time against the
    uplinks' oversubscription, packed and scattered, the setting ringed (left); the share of its bytes
    that cross the spine (right)."""
    fig = figure_or_new(fig, (12, 3.9))
    style, ratios = OVERSUBSCRIPTION_STYLE, list(ratios)
    patterns = list(dict.fromkeys(pat for pat, _, _ in result["grid"]))
    s, grid = result["setting"], result["grid"]
    ax, bx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.5, 1]})
    scale = 1e3
    for pat in patterns:
        for how in ("packed", "scattered"):
            times = [grid[pat, how, r]["time_s"] * scale for r in ratios]
            ax.plot(ratios, times, linestyle="-" if how == s["placement"] else ":",
                    alpha=1.0 if how == s["placement"] else 0.55, label=f"{pat}, {how}", **style[pat])
    here = grid[s["pattern"], s["placement"], s["ratio"]]["time_s"] * scale
    ax.plot([s["ratio"]], [here], "o", markersize=14, markerfacecolor="none", markeredgecolor="black",
            markeredgewidth=2, label="this setting")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ratios, [f"{r}:1" for r in ratios])
    ax.set_xlabel("leaf uplink oversubscription (flow simulator)")
    ax.set_ylabel("time (ms)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(f"{s['hosts']} ranks, S = {s['size']} per rank, NICs {s['bandwidth']}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    names = list(patterns)
    shares = [grid[pat, s["placement"], s["ratio"]]["spine_share"] * 100 for pat in names]
    bars = bx.barh(names, shares, color=[style[n]["color"] for n in names])
    for bar, v in zip(bars, shares):
        bx.annotate(f" {v:.0f} %", xy=(bar.get_width(), bar.get_y() + bar.get_height() / 2), va="center",
                    fontsize=9)
    bx.set_xlim(0, 115)
    bx.set_xlabel("share of the bytes sent that cross the spine (%)")
    bx.set_title(f"{s['placement']}, {s['ratio']}:1", fontsize=10)
    bx.invert_yaxis()
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.16, top=0.9, wspace=0.45)
    return fig

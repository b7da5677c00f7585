"""Chapter 5's figures: a Topology with each link coloured by its load and its bottleneck link marked
(``draw``), and busbw against scale for several fabric designs (``busbw_scaling``), in the package's one
shape (``figures.common``: the data first, the axes keyword-only, else a new pyplot-free figure).

    draw(topo)                                  # structure only
    draw(topo, load=result.utilization, highlight=result.bottleneck_link)

Nodes sit where the builders put them (``pos``): hosts at the bottom, leaves, then spines or
aggregation and core switches; a ring on a circle, a torus on its grid. A full-duplex link is one
line coloured by the busier of its two directions. Switches the builder marks ``empty`` (a fat-tree's
pods that no host reaches) are left out, and the title says how many. Above ``max_endpoints`` accelerators only the
switches and the links between them are drawn (a 1,024-host fat-tree would be a grey smear); a
leaf's host links then show as the colour of the leaf's marker (their busiest one). Left out: building
fabrics (``netlab.net.fabrics``) and simulating on them (``netlab.sim``).
"""
from __future__ import annotations

import textwrap

import matplotlib
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import Normalize

from ..net.topology import KINDS, Topology
from .common import COLORS, figure_or_new, label_lines, log_grid

STYLE = {"switch": ("s", 46, "#4c4c4c"), "host": ("D", 14, "#8c8c8c"), "nic": ("v", 12, "#8c8c8c"),
         "accelerator": ("o", 18, "#1f77b4")}


def draw(topo: Topology, load: np.ndarray | None = None, *, ax=None, highlight: int | None = None,
         title: str | None = None, max_endpoints: int = 256, cmap: str = "plasma", vmax: float | None = None):
    """Draw `topo`; `load` (E,) per directed link (utilization 0..1 by default); returns the figure."""
    if ax is None:
        ax = figure_or_new(None, (10, 4.2 if not topo.direct else 6)).subplots()
    fig = ax.figure
    nodes = topo.graph.nodes
    pos = np.array([nodes[v]["pos"] for v in range(topo.graph.number_of_nodes())])     # (V, 2)
    kind = np.array([nodes[v]["kind"] for v in range(len(pos))])
    compact = topo.size > max_endpoints and not topo.direct
    shown = (kind == "switch") if compact else np.ones(len(pos), dtype=bool)
    empty = np.array([bool(nodes[v].get("empty", False)) for v in range(len(pos))])
    shown &= ~empty                                     # switches with no host below them (idle pods)
    links = np.flatnonzero(shown[topo.link_src] & shown[topo.link_dst])
    a = np.minimum(topo.link_src[links], topo.link_dst[links])
    b = np.maximum(topo.link_src[links], topo.link_dst[links])
    pair, first = np.unique(a * len(pos) + b, return_index=True)                        # one line per link
    value = None
    if load is not None:
        value = np.zeros(pair.size)
        np.maximum.at(value, np.searchsorted(pair, a * len(pos) + b), load[links])
    segments = np.stack([pos[a[first]], pos[b[first]]], axis=1)                     # (links, 2, 2)
    kinds = topo.link_kind[links[first]]
    if topo.direct:                 # a torus's wrap-around links: two stubs leaving the grid, not a long line
        span = segments[:, 1] - segments[:, 0]
        wrap = np.linalg.norm(span, axis=1) > 1.5
        out = -0.35 * span[wrap] / np.linalg.norm(span[wrap], axis=1, keepdims=True)
        stubs = np.concatenate([np.stack([segments[wrap, 0], segments[wrap, 0] + out], axis=1),
                                np.stack([segments[wrap, 1], segments[wrap, 1] - out], axis=1)])
        segments = np.concatenate([segments[~wrap], stubs])
        kinds = np.concatenate([kinds[~wrap], kinds[wrap], kinds[wrap]])
        if value is not None:
            value = np.concatenate([value[~wrap], value[wrap], value[wrap]])
    norm = Normalize(0.0, vmax if vmax is not None else (1.0 if value is None else max(1.0, value.max())))
    widths = np.where(kinds == KINDS.index("intra"), 0.6, 1.2 if len(segments) < 2000 else 0.5)
    if value is None:
        lc = LineCollection(segments, colors="#b0b0b0", linewidths=widths, zorder=1)
    else:
        lc = LineCollection(segments, cmap=cmap, norm=norm, linewidths=widths + 1.2 * value / max(norm.vmax, 1e-12),
                            zorder=1)
        lc.set_array(value)
    ax.add_collection(lc)
    for k, (marker, size, colour) in STYLE.items():
        sel = shown & (kind == k)
        if not sel.any():
            continue
        c = colour
        if compact and k == "switch" and load is not None:     # hidden host links: colour the leaf
            host_load = np.zeros(len(pos))
            hidden = np.flatnonzero(~(shown[topo.link_src] & shown[topo.link_dst]))
            np.maximum.at(host_load, topo.link_src[hidden], load[hidden])
            np.maximum.at(host_load, topo.link_dst[hidden], load[hidden])
            c = matplotlib.colormaps[cmap](norm(host_load[sel]))
        ax.scatter(pos[sel, 0], pos[sel, 1], marker=marker, s=size if len(pos) < 1500 else size / 3, c=c,
                   zorder=2, edgecolors="none")
    if highlight is not None and highlight >= 0:
        u, v = topo.link_src[highlight], topo.link_dst[highlight]
        ends = pos[[u, v]]
        if topo.direct and np.linalg.norm(ends[1] - ends[0]) > 1.5:          # a wrap-around link: its stubs
            out = -0.35 * (ends[1] - ends[0]) / np.linalg.norm(ends[1] - ends[0])
            for p0, d in ((ends[0], out), (ends[1], -out)):
                ax.plot(*np.stack([p0, p0 + d]).T, color=COLORS["bottleneck"], linewidth=3.5, zorder=3)
        elif shown[u] and shown[v]:
            ax.plot(*ends.T, color=COLORS["bottleneck"], linewidth=3.5, zorder=3, solid_capstyle="round")
        ax.annotate(f"bottleneck: {topo.link_label(highlight)}", xy=pos[[u, v]].mean(axis=0), xytext=(0.0, -0.02),
                    textcoords="axes fraction", va="top", color=COLORS["bottleneck"], fontsize=9,
                    arrowprops={"arrowstyle": "->", "color": COLORS["bottleneck"], "lw": 0.8} if shown[u] and shown[v] else None)
    if value is not None:
        fig.colorbar(lc, ax=ax, fraction=0.03, pad=0.01, label="link utilization (busier direction)")
    note = f" (switches only; {topo.size} accelerators not drawn)" if compact else ""
    if empty.any():
        note += f"; {int(empty.sum())} switches with no host below them not drawn"
    width_in = ax.get_position().width * fig.get_figwidth()            # this axes' width, inches
    chars = max(30, int(width_in * 72 / (9 * 0.6)))                     # 9 pt text: about 5.4 pt per character
    ax.set_title(textwrap.fill((title or topo.description or topo.name) + note, chars), fontsize=9)
    ax.autoscale()
    ax.margins(0.03)
    ax.set_axis_off()
    return fig


def busbw_scaling(rows: list[dict], *, ax=None, title: str = "busbw against scale"):
    """busbw (log) against ranks (log 2), one small panel per design (rows from ``experiments.scaling``):
    rank order solid with filled markers, 'shuffled' placement dotted with open markers, so neither
    hides the other where they coincide. With `ax`, every design on that one axes, labelled at its end."""
    designs = list(dict.fromkeys(r["design"] for r in rows))
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]

    def pts(name, placement):
        return sorted((r["ranks"], r["busbw_GBps"]) for r in rows
                      if r["design"] == name and r.get("placement", "ordered") == placement)
    if ax is None:
        fig = figure_or_new(None, (3.3 * len(designs), 3.3))
        axes = list(fig.subplots(1, len(designs), sharey=True, squeeze=False).flat)
    else:
        fig, axes = ax.figure, [ax] * len(designs)
    ends = {}
    for i, (a, name) in enumerate(zip(axes, designs)):
        colour = colours[i % len(colours)]
        for placement, line, face in (("ordered", "-", colour), ("shuffled", ":", "white")):
            p = pts(name, placement)
            if p:
                a.plot(*zip(*p), ls=line, marker="o", ms=5, color=colour, mfc=face, lw=1.6)
                if placement == "ordered":
                    ends[name] = (*zip(*p), colour)
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        log_grid(a)
        scales = sorted({r["ranks"] for r in rows})
        a.set_xticks(scales, [f"{n:,}" for n in scales], fontsize=8, rotation=40, ha="right")   # the counts run, not 2^k
        a.set_xticks([], minor=True)
        a.set_xlabel("ranks")
        if len(set(map(id, axes))) > 1:
            a.set_title(textwrap.fill(name, 34), fontsize=9.5, color="black")
    axes[0].set_ylabel("busbw (GB/s, GB = 1e9 B)")
    if len(set(map(id, axes))) == 1:
        label_lines(axes[0], ends, fontsize=7)
        axes[0].set_title(title, fontsize=10)
    else:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def side_by_side(topos: list, *, fig=None, titles: list | None = None):
    """Several fabrics drawn structure-only, one axes each, left to right (``titles``: one per fabric)."""
    fig = figure_or_new(fig, (6.5 * len(topos), 3.6))
    axes = fig.subplots(1, len(topos), squeeze=False)[0]
    for i, (ax, topo) in enumerate(zip(axes, topos)):
        draw(topo, ax=ax, title=titles[i] if titles else None)
    return fig

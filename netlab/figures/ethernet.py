"""Chapter 9's figures, in the package's one shape (``figures.common``: the runs first, the axes or figure
keyword-only, else a new pyplot-free figure; the figure returned): the load
on every switch-to-switch link, a port's queue over time, the bytes delivered over time around a failure,
planes against one link, what the headers cost at each MTU, and the panel's three views in one.
Left out: running the experiments (``netlab.fabric.ethernet``)."""
from __future__ import annotations

import numpy as np

from .common import COLORS, axes_or_new, figure_or_new

SCHEMES = {"ecmp": "#7f7f7f", "spray": "#1f77b4", "reps": "#2ca02c"}
TRANSPORTS = {"reno": "#d62728", "dctcp": "#ff7f0e", "dcqcn": "#9467bd", "ideal": "#333333", "cubic": "#8c564b",
              "nscc": "#1f77b4", "rccc": "#2ca02c"}


def _colour(name: str, i: int) -> str:
    for key, colour in {**SCHEMES, **TRANSPORTS}.items():
        if key in name.lower():
            return colour
    return f"C{i}"


def link_load(run, *, ax=None, title: str = "", unit: float | None = None, kind: str = "fabric"):
    """Bars: bytes each switch-to-switch link carried (``kind='nic'``: each host link, both directions),
    busiest first, in blocks (one flow's bytes)."""
    fig, ax = axes_or_new(ax, (5, 2.8))
    carried = run.path_bytes() if kind == "fabric" else run.network.link_bytes(kind)
    loads = np.array(sorted(carried.values(), reverse=True), dtype=float)
    unit = unit or (run.payload / max(len(run.flows), 1))
    ax.bar(np.arange(len(loads)), loads / unit, width=1.0, color=_colour(title, 0), lw=0)
    ax.set_xlim(-0.5, len(loads) - 0.5)
    ax.set_xticks([])
    ax.set_xlabel(f"{len(loads)} switch links, busiest first" if kind == "fabric" else
                  f"{len(loads)} host links (one switch), busiest first")
    if len(loads):
        ax.set_title(f"{title}: busiest {loads[0] / unit:.2f}, mean {loads.mean() / unit:.2f}", fontsize=9)
    return fig


def link_loads(runs: dict, *, fig=None):
    """Small multiples of ``link_load``, one per run, on one y scale (a flow's bytes = 1)."""
    fig = figure_or_new(fig, (10, 2.8))
    axes = fig.subplots(1, len(runs), sharey=True, squeeze=False)[0]
    for ax, (name, run) in zip(axes, runs.items()):
        link_load(run, ax=ax, title=name)
    axes[0].set_ylabel("bytes carried / one flow's")
    return fig


def _queue(ax, runs: dict, port: str | None = None) -> None:
    for i, (name, run) in enumerate(runs.items()):
        t, q = run.queue(port)
        ax.step(t * 1e3, q / 1e3, where="post", lw=0.9, label=name, color=_colour(name, i))
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("queue (KB)")
    ax.legend(fontsize=7, loc="upper right")


def queue_over_time(runs: dict, *, ax=None, title: str = ""):
    """The bottleneck's queue over time for each run; the first run's buffer dashed."""
    fig, ax = axes_or_new(ax, (9, 2.8))
    _queue(ax, runs)
    first = next(iter(runs.values()))
    if first.port.buffer:
        ax.axhline(first.port.buffer / 1e3, ls="--", color="k", lw=0.7)
        ax.annotate("buffer", (ax.get_xlim()[1], first.port.buffer / 1e3), fontsize=7, ha="right", va="bottom")
    ax.set_title(title, fontsize=9)
    return fig


def delivered(run, bins: int = 200):
    """(times s, bytes/s) delivered in order, summed over the run's flows, in `bins` equal intervals."""
    end = run.time_s if np.isfinite(run.time_s) else run.engine.now
    edges = np.linspace(0.0, end, bins + 1)
    total = np.zeros_like(edges)
    for f in run.flows:
        total += np.interp(edges, np.asarray(f.rx_t), np.asarray(f.rx_bytes))
    return (edges[:-1] + edges[1:]) / 2, np.diff(total) / np.diff(edges)


def delivery_over_time(runs: dict, *, ax=None, line_rate: float, at: float | None = None, title: str = ""):
    """What every flow together delivered over time, as a fraction of `line_rate`; `at`: a failure."""
    fig, ax = axes_or_new(ax, (9, 2.8))
    for i, (name, run) in enumerate(runs.items()):
        t, r = delivered(run)
        ax.plot(t * 1e3, r / line_rate, lw=1.0, label=f"{name} (ends {run.time_s * 1e3:.1f} ms)",
                color=_colour(name, i))
    if at is not None:
        ax.axvline(at * 1e3, color="k", ls=":", lw=0.8)
        ax.annotate("link fails", (at * 1e3, 0.02), fontsize=7, rotation=90, ha="right")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("delivered / the links' rate")
    ax.set_ylim(0, 1.1)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title, fontsize=9)
    return fig


def plane_bars(rows: dict, *, ax=None):
    """Horizontal bars: each setup's busbw as a fraction of the NIC's whole rate."""
    fig, ax = axes_or_new(ax, (8, 2.4))
    names = list(rows)
    values = [rows[n] for n in names]
    ax.barh(np.arange(len(names)), values, color=[_colour(n, i) for i, n in enumerate(names)])
    for i, v in enumerate(values):
        ax.annotate(f"{v:.0%}" if v > 0 else "cut off", (max(v, 0) + 0.01, i), va="center", fontsize=8)
    ax.set_yticks(np.arange(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.15)
    ax.set_xlabel("ring step's goodput / the NIC's rate")
    return fig


def framing_efficiency(table: dict, *, ax=None):
    """Payload / wire bytes per full packet against the MTU, one line per stack: {stack: (mtus, efficiency)}."""
    fig, ax = axes_or_new(ax, (6, 2.6))
    for i, (stack, (mtus, eff)) in enumerate(table.items()):
        ax.plot(mtus, np.asarray(eff) * 100, marker="o", lw=1, label=stack, color=f"C{i}")
    ax.set_xscale("log")
    ax.set_xticks([1500, 4096, 9000], ["1500", "4096", "9000"])
    ax.set_xlabel("MTU (bytes)")
    ax.set_ylabel("payload / wire (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def fabric_run(run, *, fig=None, title: str = ""):
    """Chapter 9's panel: per-link load (left; on one switch, its host links'), the bottleneck's queue and the
    delivered rate (right)."""
    fig = figure_or_new(fig, (10, 4.4))
    grid = fig.add_gridspec(2, 2, width_ratios=[1, 1.3])
    ax_load = fig.add_subplot(grid[:, 0])
    link_load(run, ax=ax_load, title="per-link load", kind="fabric" if run.path_bytes() else "nic")   # one switch: its ports
    ax_load.set_ylabel("bytes carried / one flow's")
    ax_q = fig.add_subplot(grid[0, 1])
    t, q = run.queue()
    ax_q.step(t * 1e3, q / 1e3, where="post", lw=0.9, color=COLORS["queue"])
    if run.port.buffer:
        ax_q.axhline(run.port.buffer / 1e3, ls="--", color="k", lw=0.7)
    ax_q.set_ylabel("queue (KB)")
    ax_q.set_title(f"busiest port: {run.bottleneck}", fontsize=8)
    ax_r = fig.add_subplot(grid[1, 1], sharex=ax_q)
    tt, r = delivered(run, 100)
    ax_r.plot(tt * 1e3, r / run.port.rate, lw=1.0, color=COLORS["rate"])
    ax_r.set_ylim(0, None)
    ax_r.set_ylabel("delivered / one link")
    ax_r.set_xlabel("time (ms)")
    fig.suptitle(title, fontsize=9)
    return fig

"""Chapter 3's figures: bytes through each parameter server (the hotspot), the staleness of updates,
and accuracy against virtual time for several runs.

Each function has the package's one shape (``figures.common``): the data first, the axes keyword-only
(else a new pyplot-free figure), the figure returned. Left out: the runs (``netlab.ps``,
``netlab.ps.baseline``, ``netlab.ps.sparse``).
"""
from __future__ import annotations

from .common import COLORS, axes_or_new, figure_or_new


def server_load(result, *, ax=None, title="per-server load"):
    """Bars: bytes through each server's NIC; the label: how busy its incoming port was."""
    fig, ax = axes_or_new(ax, (4, 3))
    nbytes = result.server_bytes
    share = [b / sum(nbytes) for b in nbytes]
    bars = ax.bar(range(len(nbytes)), [b / 1e6 for b in nbytes], color=COLORS["comm"])
    hot = max(range(len(nbytes)), key=nbytes.__getitem__)
    bars[hot].set_color(COLORS["hot"])
    for i, (bar, s, u) in enumerate(zip(bars, share, result.server_util)):
        ax.annotate(f"{s:.0%}\nbusy {u:.0%}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=8)
    ax.set(xlabel="server", ylabel="MB in + out (1 MB = 1e6 B)", title=title)
    ax.set_xticks(range(len(nbytes)))
    ax.margins(y=0.3)
    return fig


def staleness_bars(histograms: dict, *, ax=None, title="staleness of updates"):
    """One bar series per run: how many updates were applied `x` versions after their read."""
    fig, ax = axes_or_new(ax, (4, 3))
    n = max(len(histograms), 1)
    for j, (label, hist) in enumerate(histograms.items()):
        total = sum(hist.values()) or 1
        xs = sorted(hist)
        ax.bar([x + (j - (n - 1) / 2) * 0.8 / n for x in xs], [hist[x] / total for x in xs], width=0.8 / n,
               label=label)
    ax.set(xlabel="staleness (updates between read and apply)", ylabel="fraction of updates", title=title)
    ax.legend(frameon=False, fontsize=8)
    return fig


def accuracy_vs_time(curves: dict, *, ax=None, title="accuracy vs time"):
    """curves: label -> history dict with time_s and accuracy (virtual seconds)."""
    fig, ax = axes_or_new(ax, (4, 3))
    longest = max((h["time_s"][-1] for h in curves.values() if h["time_s"]), default=1.0)
    factor, unit = (1e3, "ms") if longest < 1 else (1.0, "s")
    for label, hist in curves.items():
        ax.plot([t * factor for t in hist["time_s"]], hist["accuracy"], "o-", ms=3, label=label)
    ax.set(xlabel=f"virtual time ({unit})", ylabel="test accuracy", title=title, ylim=(0, 1))
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    return fig


def ps_vs_ring(result, baseline: dict, *, fig=None, mode: str = "bsp", steps_note: str = ""):
    """Chapter 3's panel: the PS run's per-server load, its staleness and accuracy against the ring's
    (``baseline``: ``ps.baseline.run_allreduce``'s dict); ``steps_note``: the accuracy title's, for a first answer."""
    fig = figure_or_new(fig, (13, 3.4))
    axes = fig.subplots(1, 3)
    server_load(result, ax=axes[0])
    staleness_bars({mode: result.staleness}, ax=axes[1])
    accuracy_vs_time({f"PS {mode}": result.history, "ring all-reduce": baseline["history"]}, ax=axes[2],
             **({"title": steps_note} if steps_note else {}))
    fig.subplots_adjust(left=0.05, right=0.99, bottom=0.16, top=0.9, wspace=0.3)   # one draw less than tight
    return fig


def servers_vs_ring(ks, ps_formula, measured, ring_s, *, ax=None, title: str = ""):
    """Push/pull time per step against the number of servers k: the formula (dotted), the runs (dots)
    and the ring all-reduce's time (a line). ks, ps_formula: the formula's curve; measured: [(k, seconds)]."""
    fig, ax = axes_or_new(ax, (6.5, 3.4))
    ax.plot(ks, [t * 1e3 for t in ps_formula], "k:", label="PS formula")
    ax.plot([k for k, _ in measured], [t * 1e3 for _, t in measured], "o", ms=8, label="PS measured (8 workers)")
    ax.axhline(ring_s * 1e3, color=COLORS["recv"], label="ring all-reduce measured")
    ax.set(xlabel="servers k", ylabel="push/pull per step (ms)", yscale="log", title=title)
    ax.set_yticks([10, 20, 40, 80], ["10", "20", "40", "80"])      # plain milliseconds on the log axis
    ax.set_yticks([], minor=True)
    ax.legend(frameon=False)
    return fig


def embedding_load(runs: dict, *, fig=None, servers: int = 4):
    """Bytes through each server's NIC, one panel per embedding placement (``ps.sparse.run_sparse``'s dicts);
    the hottest server red."""
    fig = figure_or_new(fig, (12, 3))
    axes = fig.subplots(1, len(runs), sharey=True, squeeze=False)[0]
    for ax, (placement, r) in zip(axes, runs.items()):
        top = max(r["server_bytes"])
        ax.bar(range(servers), [b / 1e6 for b in r["server_bytes"]],
               color=[COLORS["hot"] if b == top else COLORS["comm"] for b in r["server_bytes"]])
        ax.set(title=placement, xlabel="server", ylabel="MB through the NIC")
    return fig


def runs_compared(runs: dict, baseline: dict, *, fig=None):
    """Accuracy against time of several PS runs and the ring (left) and their staleness (right)."""
    fig = figure_or_new(fig, (12, 3.6))
    axes = fig.subplots(1, 2)
    accuracy_vs_time({**{k: r.history for k, r in runs.items()}, "ring all-reduce": baseline["history"]}, ax=axes[0])
    staleness_bars({k: r.staleness for k, r in runs.items()}, ax=axes[1])
    return fig

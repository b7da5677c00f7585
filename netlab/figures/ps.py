"""Chapter 3's figures: bytes through each parameter server (the hotspot), the staleness of updates,
and accuracy against virtual time for several runs.

Each function draws into a given Axes (or a new figure) and returns the axes. Left out: the runs
(``netlab.ps``, ``netlab.ps.baseline``).
"""
from __future__ import annotations

import matplotlib.pyplot as plt


def plot_servers(result, ax=None, title="per-server load"):
    """Bars: bytes through each server's NIC; the label: how busy its incoming port was."""
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3))
    nbytes = result.server_bytes
    share = [b / sum(nbytes) for b in nbytes]
    bars = ax.bar(range(len(nbytes)), [b / 1e6 for b in nbytes], color="#dd8452")
    hot = max(range(len(nbytes)), key=nbytes.__getitem__)
    bars[hot].set_color("#c44e52")
    for i, (bar, s, u) in enumerate(zip(bars, share, result.server_util)):
        ax.annotate(f"{s:.0%}\nbusy {u:.0%}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=8)
    ax.set(xlabel="server", ylabel="MB in + out (1 MB = 1e6 B)", title=title)
    ax.set_xticks(range(len(nbytes)))
    ax.margins(y=0.3)
    return ax


def plot_staleness(histograms: dict, ax=None, title="staleness of updates"):
    """One bar series per run: how many updates were applied `x` versions after their read."""
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3))
    n = max(len(histograms), 1)
    for j, (label, hist) in enumerate(histograms.items()):
        total = sum(hist.values()) or 1
        xs = sorted(hist)
        ax.bar([x + (j - (n - 1) / 2) * 0.8 / n for x in xs], [hist[x] / total for x in xs], width=0.8 / n,
               label=label)
    ax.set(xlabel="staleness (updates between read and apply)", ylabel="fraction of updates", title=title)
    ax.legend(frameon=False, fontsize=8)
    return ax


def plot_accuracy(curves: dict, ax=None, title="accuracy vs time"):
    """curves: label -> history dict with time_s and accuracy (virtual seconds)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3))
    longest = max((h["time_s"][-1] for h in curves.values() if h["time_s"]), default=1.0)
    factor, unit = (1e3, "ms") if longest < 1 else (1.0, "s")
    for label, hist in curves.items():
        ax.plot([t * factor for t in hist["time_s"]], hist["accuracy"], "o-", ms=3, label=label)
    ax.set(xlabel=f"virtual time ({unit})", ylabel="test accuracy", title=title, ylim=(0, 1))
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    return ax

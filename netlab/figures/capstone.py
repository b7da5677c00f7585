"""The capstone's figure, in the package's one shape (``figures.common``: the curves first, the axes
keyword-only, else a new pyplot-free figure; the figure returned).

``predicted_efficiency``: predicted scaling efficiency against the number of devices, one line per set of choices,
each with its own colour, marker and line style (the first in the ring's look of ``figures.common``), with
published results as stars. Left out: error bars (the prediction is a closed form; its assumptions are
stated in ``netlab.codesign.capstone``).
"""
from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import ScalarFormatter

from .common import algorithm_style, axes_or_new, log_grid

# one look per curve: colour, marker and line all differ, so two curves never share a legend entry's look
STYLES = (algorithm_style("ring"), {"color": "#7f7f7f", "marker": "s", "linestyle": "--"},
          {"color": "#2ca02c", "marker": "^", "linestyle": ":"}, {"color": "#9467bd", "marker": "D", "linestyle": "-."})


def predicted_efficiency(curves: dict, published: list[tuple[int, float, str]] = (), *, ax=None,
                         title: str = "predicted scaling efficiency") -> Figure:
    """`curves`: {label: ([devices], [efficiency])}; `published`: [(devices, efficiency, label)]."""
    fig, ax = axes_or_new(ax, (6, 3.4))
    for k, (label, (devices, eff)) in enumerate(curves.items()):
        ax.plot(devices, [e * 100 for e in eff], label=label, **STYLES[k % len(STYLES)])
    for devices, eff, label in published:
        ax.plot([devices], [eff * 100], "*", color="crimson", markersize=14, label=label)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(ScalarFormatter())           # 512, not 2^9
    ax.set_xlabel("devices (GPUs)")
    ax.set_ylabel("scaling efficiency (%)")
    ax.set_ylim(0, 105)
    log_grid(ax, y=False)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    return fig

"""The lab's one visual language, shared by every chapter's figures (the figures themselves live in
this package's other modules, one per subject).

Kept across chapters: one colour, marker and line style per collective algorithm (``ALGORITHMS``)
and per compression method (``METHODS``: a hue per family -- blues for quantizers, greens for
sparsifiers, purples for low rank -- and the fp32 baseline always black, dashed); compute, sending,
receiving and waiting in the same colours on every timeline and bar (``COLORS``: one colour for one
meaning in every chapter); lines labelled at their right end (``label_lines``) or small multiples
instead of long legends; log axes gridded alike (``log_grid``); margins in inches (``margins``); a unit
on every axis. Left out: any figure, and pyplot: a figure is a ``matplotlib.figure.Figure`` with its
own Agg canvas (``figure``), never registered with pyplot, so a notebook or a panel's thread leaks none.

Every figure function of this package has one shape::

    noun(data, *, ax=None, **options) -> Figure     # draws one axes
    noun(data, *, fig=None, **options) -> Figure    # lays out several axes (a Figure or a SubFigure)

``data`` is what an experiment returned (a result, its rows, a trace; at most two positional
arguments); the target is keyword-only and, when omitted, a new figure (``axes_or_new``,
``figure_or_new``); every option is keyword-only; the figure drawn on is returned and never shown.
"""
from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# One colour per meaning on every timeline, split and bar of the lab (chapters 1, 3, 7, the challenge):
# communication is orange whether a rank sends, pushes or all-reduces; receiving green; waiting grey.
COLORS = {"compute": "#4c72b0", "comm": "#dd8452", "send": "#dd8452", "recv": "#55a868", "idle": "#dddddd",
          "hot": "#c44e52", "compression": "#8172b2", "pcie": "#937860",
          # a switch port's queue (chapters 6 and 9), a rate delivered over time, a topology's bottleneck link
          "queue": "#d62728", "rate": "#1f77b4", "bottleneck": "#d62728"}
# traffic patterns (chapter 8): the ring in its chapter 2 colour (ALGORITHMS), the all-to-all red
PATTERNS = {"ring all-reduce": "#1f77b4", "all-to-all": "#d62728", "all-to-all, pairwise": "#ff9896"}

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


def margins(fig, box: tuple[float, float, float, float], **spacing) -> None:
    """Subplot margins in inches (whatever the figure's size), box = (left, right, bottom, top): a fixed
    layout instead of tight_layout, whose measuring pass costs a whole draw. `spacing`: wspace/hspace,
    as subplots_adjust takes them."""
    left, right, bottom, top = box
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=left / w, right=1 - right / w, bottom=bottom / h, top=1 - top / h, **spacing)


def figure(width: float, height: float) -> Figure:
    """A figure outside pyplot (safe on any thread, never kept by pyplot), with its own Agg canvas."""
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def figure_or_new(fig, figsize):
    """The given Figure or SubFigure, or a new pyplot-free figure of `figsize` inches."""
    return figure(*figsize) if fig is None else fig


def axes_or_new(ax, figsize):
    """(figure, axes): the given axes and its figure, or a new pyplot-free figure of `figsize` inches."""
    if ax is not None:
        return ax.figure, ax
    fig = figure(*figsize)
    return fig, fig.subplots()


def below(ax, inches: float) -> float:
    """`inches` below the axes, in axes fraction (a legend under the x label, whatever the axes' height)."""
    return inches / max(ax.get_position().height * ax.figure.get_figheight(), 1e-3)


def time_unit(seconds: float) -> tuple[float, str]:
    """(factor, unit) to show `seconds` in: the largest of s, ms, us, ns that makes it at least 1."""
    for factor, unit in ((1, "s"), (1e3, "ms"), (1e6, "us")):
        if seconds * factor >= 1:
            return factor, unit
    return 1e9, "ns"

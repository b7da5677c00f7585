"""Chapter 4's figures: accuracy against steps and virtual time, step time against bandwidth, and
one small panel per compression method.

Each function has the package's one shape (``figures.common``): the runs or rows first, the axes or
figure keyword-only (else a new pyplot-free figure), the figure returned, so a widget panel can
redraw into one Output without leaking figures. Left out: the runs and the tables of numbers
(``netlab.compress.pays``, ``netlab.compress.table``).
"""
from __future__ import annotations

import re

from matplotlib.lines import Line2D

from .. import validate
from ..compress.pays import bandwidth_label, crossover
from .common import figure_or_new, label_lines, log_grid, margins, method_style


def _short(label: str) -> str:
    """A method's label without DGC's warm-up length (a detail of the run, not of the method)."""
    return re.sub(r", warmup_steps=\d+", "", label)


def _name(r) -> str:
    from ..compress.pays import label
    return label(r.method, r.options) + (" + EF" if r.error_feedback and r.method != "none" else "")


def accuracy_curves(results, baseline=None, *, fig=None):
    """Test accuracy against steps (left) and against the virtual clock (right); lines labelled at their ends."""
    fig = figure_or_new(fig, (11, 3.6))
    _accuracy(fig.subplots(1, 2), results, baseline)
    if hasattr(fig, "tight_layout"):                       # a SubFigure lays out with its parent
        fig.tight_layout()
    return fig


def _accuracy(axes, results, baseline):
    runs = ([baseline] if baseline is not None else []) + list(results)
    ends = [{}, {}]
    for r in runs:
        name = "fp32" if r is baseline else _name(r)
        if r.diverged is not None:
            name += f" (diverged, step {r.diverged})"
        style = method_style("none" if r is baseline else r.method)
        if r is not baseline and r.error_feedback:
            style["linestyle"] = "-"
        elif r is not baseline:
            style["linestyle"] = ":"
        style["marker"] = None
        for i, xs in enumerate((r.steps, [t * 1e3 for t in r.time_s])):
            axes[i].plot(xs, r.accuracy, lw=1.8, **style)
            ends[i][name] = (xs, r.accuracy, style["color"])
    axes[0].set(xlabel="step", ylabel="test accuracy", title="accuracy vs steps", ylim=(0, 1))
    axes[1].set(xlabel="virtual time (ms)", ylabel="test accuracy", title="accuracy vs time", ylim=(0, 1))
    for ax, lines in zip(axes, ends):
        ax.grid(alpha=0.3)
        label_lines(ax, lines, fontsize=7.5, min_gap=0.07)


def _crossover_line(ax, rows, lab, baseline_label, *, color, label=True):
    """The crossover as a dotted line; its label at the foot of the line, on its left, where neither curve
    runs (left of the crossover both curves lie above the faster one's low end)."""
    cross = crossover(rows, lab, baseline_label)
    if cross is not None:
        ax.axvline(cross * 8 / 1e9, color=color, lw=1, ls=":")
        if label:
            ax.annotate(f"pays below\n{bandwidth_label(cross)}", xy=(cross * 8 / 1e9, 0.04),
                        xycoords=("data", "axes fraction"), xytext=(-3, 0), textcoords="offset points",
                        fontsize=7.5, color="black", va="bottom", ha="right",
                        bbox={"fc": "white", "ec": "none", "alpha": 0.9, "pad": 1})


def step_time_vs_bandwidth(rows, *, ax=None, baseline_label: str = "none", mark: float | None = None,
                           columns: int = 4):
    """Step time of each method against bandwidth (log-log) beside the fp32 baseline (black, dashed).

    Without `ax`: a new figure of small multiples, one panel per method, each with its crossover
    labelled. With `ax` (a panel's single axes): every method on it, labelled at the line's end.
    """
    from ..compress.codec_cost import describe_codec
    labels = [lab for lab in dict.fromkeys(r["label"] for r in rows) if lab != baseline_label]

    def points(lab):
        return zip(*sorted((r["bandwidth_Bps"] * 8 / 1e9, r["step_s"] * 1e3) for r in rows if r["label"] == lab))

    base = list(points(baseline_label))
    if ax is None:
        n_rows = max(1, -(-len(labels) // columns))
        fig = figure_or_new(None, (3.2 * columns, 2.4 * n_rows + 0.6))
        axes = fig.subplots(n_rows, columns, sharex=True, sharey=True, squeeze=False)
        for a, lab in zip(axes.flat, labels):
            style = method_style(lab)
            if base:
                a.plot(*base, color="black", ls="--", lw=1.5)
            a.plot(*points(lab), color=style["color"], marker=style["marker"], ls="-", ms=3, lw=1.5)
            _crossover_line(a, rows, lab, baseline_label, color=style["color"])
            a.set_title(_short(lab.replace("ratio=", "")), fontsize=9.5, color="black")
            log_grid(a)
        for a in list(axes.flat)[len(labels):]:
            a.axis("off")
        for a in axes[-1]:
            a.set_xlabel("bandwidth (Gbit/s)")
        for a in axes[:, 0]:
            a.set_ylabel("step (ms, virtual)")
        dense = rows[0].get("dense_bytes")
        size = f"{dense / 1e3:,.0f} KB" if dense and dense < 1e6 else f"{dense / 1e6:.1f} MB" if dense else ""
        what = f"a {size} fp32 gradient on {rows[0]['ranks']} ranks; " if dense and "ranks" in rows[0] else ""
        fig.suptitle(f"step time against bandwidth, {what}black dashed: fp32 all-reduce; "
                     f"{describe_codec(rows[0].get('codec', 'model'))}", fontsize=10.5)
        margins(fig, (0.75, 0.15, 0.55, 0.6), wspace=0.12, hspace=0.3)   # tight_layout: a third of its time
        return fig
    fig = ax.figure
    ends = {}
    if base:
        ax.plot(*base, color="black", ls="--", lw=2)
        ends["fp32"] = (*base, "black")
    for lab in labels:
        style = method_style(lab)
        xs, ys = points(lab)
        ax.plot(xs, ys, color=style["color"], marker=style["marker"], ls="-", ms=3)
        ends[lab] = (xs, ys, style["color"])
        _crossover_line(ax, rows, lab, baseline_label, color=style["color"], label=len(labels) == 1)
    if mark is not None:
        ax.axvline(mark * 8 / 1e9, color="grey", lw=6, alpha=0.2)
        ax.annotate("your link", xy=(mark * 8 / 1e9, 0.03), xycoords=("data", "axes fraction"), fontsize=8,
                    color="grey", ha="center")
    ax.set(xscale="log", yscale="log", xlabel="bandwidth (Gbit/s, 1e9 bit/s)", ylabel="step time (ms, virtual)",
           title=f"when compression pays ({describe_codec(rows[0].get('codec', 'model'))})")
    log_grid(ax)
    label_lines(ax, ends)
    if hasattr(fig, "tight_layout"):                       # a SubFigure lays out with its parent
        fig.tight_layout()
    return fig


def method_grid(rows, baseline, *, fig=None, x: str = "step", columns: int = 4):
    """Small multiples, one per method of ``table.method_table``: accuracy without EF, with EF, fp32.

    x: "step" (against steps) or "time" (against virtual time, ms).
    """
    validate.choice(x, "x", ("step", "time"))
    rows = [r for r in rows if r["method"] != "none"]
    n_rows = max(1, -(-len(rows) // columns))
    fig = figure_or_new(fig, (3 * columns, 2.3 * n_rows))
    axes = fig.subplots(n_rows, columns, squeeze=False, sharey=True)

    def xs(run):
        return run.steps if x == "step" else [t * 1e3 for t in run.time_s]
    for ax, row in zip(axes.flat, rows):
        plain, ef = row["runs"]
        ax.plot(xs(baseline), baseline.accuracy, "k--", lw=1)
        colour = method_style(row["method"])["color"]
        ax.plot(xs(plain), plain.accuracy, color=colour, ls=":", lw=1.5)
        if ef is not plain:
            ax.plot(xs(ef), ef.accuracy, color=colour, lw=1.8)
        diverged = [name for name, run in (("no EF", plain), ("EF", ef)) if run.diverged is not None]
        if diverged:
            ax.text(0.03, 0.9, f"{' and '.join(diverged)} diverged", transform=ax.transAxes, fontsize=7,
                    color="#b00000", va="top")
        ax.set_title(_short(row["method"]), fontsize=9.5, color="black")    # the curves carry the colour
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(rows):]:
        ax.axis("off")
    for column in range(columns):                        # under the lowest panel in use in each column
        used = [ax for i, ax in enumerate(axes[:, column]) if i * columns + column < len(rows)]
        if used:
            used[-1].set_xlabel("step" if x == "step" else "virtual time (ms)")
    for ax in axes[:, 0]:
        ax.set_ylabel("test accuracy")
    # one key for every panel (the same three kinds of line in each) and margins in inches: twelve
    # legends and tight_layout's measuring pass were most of this figure's time
    grey = "#555555"
    fig.legend([Line2D([], [], color="black", ls="--"), Line2D([], [], color=grey, ls=":", lw=1.5),
                Line2D([], [], color=grey, lw=1.8)],
               ["fp32 all-reduce", "compressed, no error feedback", "compressed, with error feedback"],
               loc="upper center", ncol=3, frameon=False, fontsize=9, bbox_to_anchor=(0.5, 1.0))
    margins(fig, (0.7, 0.15, 0.55, 0.45), wspace=0.1, hspace=0.45)
    return fig


def compression_pays(results, baseline, *, fig=None, rows=None, mark: float | None = None):
    """Chapter 4's panel: accuracy against steps and time (top), and step time against bandwidth of the
    method and fp32 with `mark` (bytes/s) shaded (bottom; `rows` None: not measured yet, and it says so)."""
    fig = figure_or_new(fig, (10, 7))
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.1])
    axes = [fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])]
    _accuracy(axes, results, baseline)
    fig.tight_layout()
    bottom = fig.add_subplot(grid[1, :])
    if rows is not None:
        step_time_vs_bandwidth(rows, ax=bottom, mark=mark)
    else:
        bottom.set_axis_off()
        bottom.text(0.5, 0.5, "step time over bandwidths: measured with the full answer", ha="center",
                    va="center", fontsize=10, color="#777", transform=bottom.transAxes)
    return fig

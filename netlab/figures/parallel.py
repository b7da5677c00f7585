"""Chapter 8's model-parallelism figure, in the package's one shape (``figures.common``: the runs first,
the figure keyword-only, else a new pyplot-free one; the figure returned).

``modes_vs_bandwidth``: one step of data, tensor and pipeline parallelism against the network's
bandwidth (left, every point a run) and the bytes each sends per step (right). Left out: running
the steps (``netlab.codesign.parallel.measure``).
"""
from __future__ import annotations

from matplotlib.figure import Figure

from .common import figure_or_new, label_lines, log_grid, margins

STYLE = {"dp": ("data parallel", "#1f77b4", "o", "-"), "tp": ("tensor parallel", "#d62728", "s", "--"),
         "pp": ("pipeline parallel", "#2ca02c", "^", "-.")}


def modes_vs_bandwidth(runs: dict, *, fig=None) -> Figure:
    """runs: mode ("dp", "tp", "pp") -> its ``ParallelResult``s at several bandwidths (same model, batch, ranks)."""
    fig = figure_or_new(fig, (10, 3.4))
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    lines = {}
    for mode, results in runs.items():
        name, colour, marker, style = STYLE[mode]
        pts = sorted((r.setup["bandwidth_Bps"] * 8 / 1e9, r.step_s * 1e3) for r in results)
        xs, ys = [x for x, _ in pts], [y for _, y in pts]
        left.plot(xs, ys, color=colour, marker=marker, linestyle=style)
        lines[name] = (xs, ys, colour)
    log_grid(left, y=False)
    left.set_ylim(bottom=0)
    left.set_xlabel("bandwidth per direction (Gbit/s)")
    left.set_ylabel("step time (ms)")
    left.set_title("one step on real ranks")
    label_lines(left, lines)
    modes = list(runs)
    sent = [runs[m][0].bytes_per_step / 1e6 for m in modes]
    bars = right.bar(range(len(modes)), sent, color=[STYLE[m][1] for m in modes])
    right.bar_label(bars, [f"{v:.2f}" for v in sent], fontsize=8)
    right.set_ylim(0, 1.15 * max(sent))
    right.set_xticks(range(len(modes)), [STYLE[m][0].replace(" ", "\n") for m in modes], fontsize=8)
    right.set_ylabel("bytes sent per step, all ranks (MB)")
    right.set_title("traffic (any bandwidth)")
    right.grid(alpha=0.3, axis="y")
    margins(fig, (0.7, 0.2, 0.6, 0.35), wspace=0.75)
    return fig

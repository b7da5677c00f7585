"""Chapter 7's figures, in the package's one shape (``figures.common``: data first, the axes or figure
keyword-only, else a new pyplot-free figure; the figure returned).

* ``kernel_timeline``: per rank, a compute lane and a communication lane (the collectives, one per
  bucket, read by ``kernels``), drawn by the lab's one ``timeline`` (chapter 1's colours), with the
  breakdown from ``netlab.observe.analysis`` printed beside each rank;
* ``bucket_curve``: step time against bucket capacity, overlapped and not (the U-shaped curve), with
  the measured steps and the current setting when given (the chapter's panel);
* ``peer_matrix``: sender x receiver, each pair's bandwidth and bytes (``analysis.peer_links``): a
  slow NIC is a dark row and column, a spine a block pattern, a hot shard one bright column of bytes;
* ``step_view`` and ``scenario_view``: the panel's two figures, a timeline beside the bucket curve, and a
  scenario's timeline above its pair maps.
"""
from __future__ import annotations

from matplotlib.figure import Figure

from ..observe import analysis
from ..runtime.trace import Trace
from .common import axes_or_new, figure_or_new
from .timeline import SPLIT, timeline


def kernels(trace: Trace) -> list[tuple]:
    """A trace's intervals as chapter 7 reads them: each rank's compute and its collectives (else its
    messages), as ``(rank, start_s, end_s, "compute" | "comm")`` (``analysis.kernels``)."""
    out = []
    for r in range(trace.world_size):
        for kind, spans in zip(("compute", "comm"), analysis.kernels(trace, r)):
            out += [(r, s, e, kind) for s, e in spans]
    return out


def kernel_timeline(trace: Trace, *, ax=None, title: str = "") -> Figure:
    """Compute (blue) and collectives (orange) per rank, in ms, with each rank's breakdown as text:
    the lab's one ``timeline`` with chapter 7's lanes (``timeline.SPLIT``)."""
    fig, ax = axes_or_new(ax, (9, max(2.6, 0.45 * trace.world_size + 1.7)))
    notes = [f"exposed {row['exposed_comm_s'] * 1e3:.2f} ms\noverlap {row['overlap_frac']:.0%}"
             for row in analysis.breakdown(trace)]
    spans = kernels(trace)
    last = max((end for _, _, end, _ in spans), default=0.0)     # 5 % past it: the last kernel's edge shows
    timeline(spans, ax=ax, ranks=trace.world_size, lanes=SPLIT, span_s=1.05 * last, unit="ms", notes=notes,
             legend=False, outline=True,
             title=title or "per-rank timeline: compute (blue) and all-reduce buckets (orange)")
    fig.subplots_adjust(right=0.8)
    return fig


def bucket_curve(caps: list[int], overlapped: list[float], after: list[float], *, ax=None, prefix: str = "",
                 measured: tuple[str, str, dict] | None = None, current: tuple[float, float] | None = None,
                 title: str | None = None) -> Figure:
    """Step time (ms) against bucket capacity (bytes, log scale), with buckets during the backward pass
    and after it (each line's label begins with `prefix`). measured: (label, marker, {cap: seconds}), the
    steps run, as black dots; current: (cap, seconds) of the setting shown, ringed in red."""
    fig, ax = axes_or_new(ax, (6, 3.2))
    ax.plot(caps, [t * 1e3 for t in overlapped], "o-", label=f"{prefix}buckets during backward (overlap)")
    ax.plot(caps, [t * 1e3 for t in after], "s--", label=f"{prefix}same buckets after backward")
    if measured is not None:
        label, marker, seen = measured
        ax.plot(list(seen), [t * 1e3 for t in seen.values()], marker, color="black", markersize=4, label=label)
    if current is not None:
        ax.plot([current[0]], [current[1] * 1e3], "o", markersize=13, markerfacecolor="none", markeredgecolor="red",
                markeredgewidth=2, label="this setting")
    ax.set_xscale("log")
    ax.set_xlabel("bucket capacity (bytes)")
    ax.set_ylabel("step time (ms)")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7 if measured is not None or current is not None else None)
    return fig


def peer_matrix(trace: Trace, *, fig=None, latency: float | None = None, bandwidth: float | None = None):
    """Two sender x receiver maps: each pair's bandwidth (as a fraction of `bandwidth`, the stated NIC
    speed, when given) and the bytes it carried. Pairs that exchanged nothing stay blank."""
    import numpy as np
    fig = figure_or_new(fig, (9, 3.4))
    links = analysis.peer_links(trace, latency)
    p = trace.world_size
    speed, volume = np.full((p, p), np.nan), np.full((p, p), np.nan)
    for row in links:
        bw = row["bandwidth_Bps"] if row["bandwidth_Bps"] is not None else row["rate_Bps"]
        speed[row["src"], row["dst"]] = bw / bandwidth if bandwidth else bw / 1e9
        volume[row["src"], row["dst"]] = row["bytes"] / 1e3
    axes = fig.subplots(1, 2)
    scale = (0, 1) if bandwidth else (None, None)
    for ax, data, title, cmap, (lo, hi), fmt in (
            (axes[0], speed, "bandwidth" + (" / stated" if bandwidth else " (GB/s)"), "RdYlGn", scale, "{:.2g}"),
            (axes[1], volume, "bytes sent (KB)", "viridis", (0, None), "{:.0f}")):
        image = ax.imshow(data, cmap=cmap, vmin=lo, vmax=hi)
        ax.set_xticks(range(p))
        ax.set_yticks(range(p))
        ax.set_xlabel("receiver rank")
        ax.set_ylabel("sender rank")
        ax.set_title(title)
        fig.colorbar(image, ax=ax, shrink=0.8)
        for (i, j), v in np.ndenumerate(data):
            if not np.isnan(v):
                ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=7)
    return fig


def step_view(trace: Trace, curve: tuple, *, fig=None, **marks) -> Figure:
    """Chapter 7's panel: the step's kernel timeline (left) beside step time against bucket size (right).
    curve: (caps, overlapped, after), the predicted lines; marks: ``bucket_curve``'s measured dots and current ring."""
    fig = figure_or_new(fig, (12, 1.6 + 0.45 * trace.world_size + 1.2))
    left, right = fig.subfigures(1, 2, width_ratios=[1.55, 1])
    kernel_timeline(trace, ax=left.subplots(), title="per-rank timeline: compute (blue), bucket all-reduces (orange)")
    bucket_curve(*curve, ax=right.subplots(), prefix="predicted, ", title="step time against bucket size", **marks)
    right.subplots_adjust(left=0.2, bottom=0.2)
    return fig


def scenario_view(trace: Trace, *, fig=None, latency: float | None = None, bandwidth: float | None = None,
                  title: str = "per-rank timeline: compute (blue), communication (orange)") -> Figure:
    """A scenario as a student sees it: the kernel timeline above the sender x receiver maps."""
    p = trace.world_size
    fig = figure_or_new(fig, (12, 2.4 + 0.45 * p + 3.4))
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.6 + 0.45 * p, 3.4])
    kernel_timeline(trace, ax=top.subplots(), title=title)
    peer_matrix(trace, fig=bottom, latency=latency, bandwidth=bandwidth)
    return fig

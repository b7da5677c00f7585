"""Chapter 7's figures, each drawn on a ``matplotlib.figure.Figure`` it is given (no pyplot state).

* ``timeline``: per rank, a compute lane and a communication lane (the collectives, one per bucket),
  with the breakdown from ``netlab.observe.analysis`` printed beside each rank;
* ``bucket_curve``: step time against bucket capacity, overlapped and not (the U-shaped curve);
* ``peer_matrix``: sender x receiver, each pair's bandwidth and bytes (``analysis.peer_links``): a
  slow NIC is a dark row and column, a spine a block pattern, a hot shard one bright column of bytes.
"""
from __future__ import annotations

from matplotlib.figure import Figure

from ..observe import analysis
from ..runtime.trace import Trace


def timeline(fig: Figure, trace: Trace, title: str = "") -> Figure:
    """Compute (blue) and collectives (orange) per rank, in ms, with each rank's breakdown as text."""
    ax = fig.add_subplot(1, 1, 1)
    rows = {r["rank"]: r for r in analysis.breakdown(trace)}
    for r in range(trace.world_size):
        y = trace.world_size - 1 - r
        comp, comm = analysis.kernels(trace, r)
        ax.broken_barh([(s * 1e3, (e - s) * 1e3) for s, e in comp], (y + 0.05, 0.4), color="tab:blue")
        ax.broken_barh([(s * 1e3, (e - s) * 1e3) for s, e in comm], (y - 0.45, 0.4), color="tab:orange")
        row = rows[r]
        ax.text(1.01, (y + 0.5) / trace.world_size, f"exposed {row['exposed_comm_s'] * 1e3:.2f} ms\n"
                f"overlap {row['overlap_frac']:.0%}", transform=ax.transAxes, fontsize=8, va="center")
    ax.set_yticks(range(trace.world_size), [f"rank {r}" for r in reversed(range(trace.world_size))])
    ax.set_xlabel("time (ms)")
    ax.set_title(title or "per-rank timeline: compute (blue) and all-reduce buckets (orange)")
    fig.subplots_adjust(right=0.8)
    return fig


def bucket_curve(fig: Figure, caps: list[int], overlapped: list[float], after: list[float]) -> Figure:
    """Step time (ms) against bucket capacity (bytes, log scale)."""
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(caps, [t * 1e3 for t in overlapped], "o-", label="buckets during backward (overlap)")
    ax.plot(caps, [t * 1e3 for t in after], "s--", label="same buckets after backward")
    ax.set_xscale("log")
    ax.set_xlabel("bucket capacity (bytes)")
    ax.set_ylabel("step time (ms)")
    ax.legend()
    return fig


def peer_matrix(fig: Figure, trace: Trace, latency: float | None = None, bandwidth: float | None = None) -> Figure:
    """Two sender x receiver maps: each pair's bandwidth (as a fraction of `bandwidth`, the stated NIC
    speed, when given) and the bytes it carried. Pairs that exchanged nothing stay blank."""
    import numpy as np
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

"""Chapter 6's figures, in the package's one shape (``figures.common``: the run first, the axes or figure
keyword-only, else a new pyplot-free figure, so a widget callback may draw them on any thread; the
figure returned): an incast run (per-flow rates, the queue, drops,
marks and pauses), step-time distributions, the PFC victim, DCTCP's sawtooth and DCQCN's stability.
Left out: running the scenarios (``netlab.fabric``)."""
from __future__ import annotations

import numpy as np

from ..fabric.experiments import rates
from .common import COLORS, axes_or_new, figure_or_new

GBIT = 1e9 / 8


def incast_run(run, *, fig=None, title: str = "", bins: int = 80, max_flows: int = 16):
    """Top: each flow's delivered rate over time; bottom: the bottleneck's queue (KB)."""
    fig = figure_or_new(fig, (10, 4.6))
    ax_rate, ax_q = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    end = run.engine.now
    link = run.port.rate
    for flow in run.flows[:max_flows]:
        t, r = rates(flow, flow.start, flow.done_at or end, bins)
        ax_rate.plot(t * 1e3, r / link, lw=0.8)
    ax_rate.set_ylabel("flow rate / link")
    ax_rate.set_ylim(0, 1.05)
    t, q = run.queue()
    ax_q.step(t * 1e3, q / 1e3, where="post", lw=0.8, color=COLORS["queue"])
    if run.port.buffer:
        ax_q.axhline(run.port.buffer / 1e3, ls="--", color="k", lw=0.7, label="buffer")
    if run.port.ecn is not None:
        ax_q.axhline(run.port.ecn.kmin / 1e3, ls=":", color="C2", lw=0.9, label="ECN K (Kmin)")
    ax_q.set_ylabel("queue (KB)")
    ax_q.set_xlabel("time (ms)")
    ax_q.legend(fontsize=7, loc="upper right")
    s = run.fabric
    ax_rate.set_title(f"{title}  drops {s['drops']}, marks {s['marks']}, timeouts {s['timeouts']}, "
                      f"PFC pause {s['pause_s'] * 1e3:.2f} ms", fontsize=9)
    return fig


def step_time_cdf(results: dict, *, ax=None):
    """The distribution (CDF) of round times per transport, log time axis, with p50/p99 marked."""
    fig, ax = axes_or_new(ax, (9, 3.2))
    for i, (name, r) in enumerate(results.items()):
        times = np.sort(r["times"]) * 1e3
        ax.step(times, np.arange(1, len(times) + 1) / len(times), where="post", color=f"C{i}",
                label=f"{name}: p50 {r['p50'] * 1e3:.1f} ms, p99 {r['p99'] * 1e3:.1f} ms")
    ideal = next(iter(results.values()))["ideal"] * 1e3
    ax.axvline(ideal, ls="--", color="k", lw=0.7, label=f"lossless, unshared: {ideal:.1f} ms")
    ax.set_xscale("log")
    ax.set_xlabel("step (round) time, ms")
    ax.set_ylabel("fraction of steps")
    ax.legend(fontsize=7)
    return fig


def victim_rate(runs: dict, *, ax=None, flow: int = 0):
    """F1's rate over time in each run (e.g. {'PFC on': run, 'PFC off': run}), with the incast shaded
    from its first flow's start to its last byte's arrival (or the run's end, if it is still draining)."""
    fig, ax = axes_or_new(ax, (9, 3))
    for i, (name, run) in enumerate(runs.items()):
        f = run.flows[flow]
        t, r = rates(f, 0, run.engine.now, 120)
        ax.plot(t * 1e3, r * 8 / 1e9, color=f"C{i}", label=f"{f.name}, {name}")
    first = runs[next(iter(runs))]
    burst = first.flows[2:]
    if burst:
        done = [f.done_at for f in burst]
        end = max(done) if all(d is not None for d in done) else first.engine.now
        still = "" if all(d is not None for d in done) else ", still draining at the end"
        ax.axvspan(min(f.start for f in burst) * 1e3, end * 1e3, color="0.9",
                   label=f"the incast to R2 ({len(burst)} hosts{still})")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("Gbit/s")
    ax.legend(fontsize=7, loc="center right")
    return fig


def sawtooth(run, ref: dict, *, ax=None, start: float = 0.005):
    """DCTCP's queue (packets) with the analysis' Q_min, Q_max and K."""
    fig, ax = axes_or_new(ax, (9, 3))
    t, q = run.queue()
    keep = t >= start
    ax.step(t[keep] * 1e3, q[keep] / 1500, where="post", lw=0.7)
    for value, label, style in ((ref["q_max"], "Q_max = K + N", "--"), (ref["q_min"], "Q_min = K + N - A", ":")):
        ax.axhline(value, ls=style, color="k", lw=0.8, label=f"{label} = {value:.1f}")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("queue (packets)")
    ax.legend(fontsize=7)
    return fig


def fluid_queues(runs: dict, *, fig=None, steady: float | None = None):
    """DCQCN fluid runs: queue (KB) over time, one line per label. With ``steady`` (s), a second panel
    shows the runs from that time on with its own y axis, so an oscillation of tens of KB is not
    flattened by the start-up transient's thousands."""
    fig = figure_or_new(fig, (10, 3.2))
    axes = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.4]}) if steady is not None else [fig.subplots()]
    for ax in axes:
        for i, (name, run) in enumerate(runs.items()):
            t, q = run.queue()
            keep = t >= (steady if ax is not axes[0] else 0.0)
            ax.plot(t[keep] * 1e3, q[keep] / 1e3, lw=0.8, color=f"C{i}", label=name)
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("queue (KB)")
    axes[0].set_title("from the start (line-rate start-up)", fontsize=9)
    if steady is not None:
        axes[1].set_title(f"after {steady * 1e3:g} ms, its own scale", fontsize=9)
    axes[-1].legend(fontsize=7)
    return fig


def goodput_vs_senders(rows, *, ax=None):
    """Goodput against the number of senders, one line per RTOmin: rows of (senders, rto_min s, summary)."""
    fig, ax = axes_or_new(ax, (7, 3))
    senders = list(dict.fromkeys(n for n, _, _ in rows))
    for rto, style in zip(dict.fromkeys(r for _, r, _ in rows), ("-o", "-s", "-^", "-v")):
        ax.plot(senders, [s["goodput_Bps"] * 8 / 1e6 for _, r, s in rows if r == rto], style,
                label=f"RTOmin {rto * 1e3:g} ms")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("senders N")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.legend()
    return fig

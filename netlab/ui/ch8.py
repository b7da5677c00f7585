"""Chapter 8's panel: which traffic feels an oversubscribed fabric, and what placement does about it.

One spine-leaf (4 leaves of 8 host ports, 2 spines; ``fabrics.spine_leaf``) whose leaf uplinks are
oversubscribed ratio : 1 (带宽收敛比), a job of `hosts` ranks placed packed (as few leaves as
possible, topology-aware: 拓扑感知) or scattered (round-robin over the leaves), and two traffic
patterns of S bytes per rank: data parallelism's ring all-reduce and expert parallelism's
all-to-all (``collectives.alltoall``, all blocks at once). Every number is the flow simulator's
(``netlab.sim``: the lab's own schedules, max-min sharing, ``spray`` routing), for all four ratios
and both placements at once, so the figure shows the whole trade-off and the text the setting chosen.
Beside each time the closed form (``predicted``): the ring's flows that leave a leaf share its
uplinks, and the all-to-all's bytes that leave a leaf, n (p - n)/p S from the n job ranks there,
go through D B / R of uplink.

Left out: ECMP's hash collisions (chapter 5's panel has them), other jobs on the same uplinks, and
packets (chapter 6).
"""
from __future__ import annotations

import functools

import numpy as np

from ..collectives import cost
from .. import sim, validate
from ..net import fabrics
from ..net.network import Link
from ..sim.placement import leaf_of, place
from ..units import fmt_bytes, fmt_time, parse_bandwidth, parse_bytes
from .panel import Panel, choice, toggle

PATTERNS = {"all-to-all": ("alltoall", "concurrent"), "ring all-reduce": ("allreduce", "ring")}
RATIOS = [1, 2, 4, 8]
HOSTS = [8, 16, 24, 32]
SIZES = ["1M", "16M", "64M", "256M"]
BANDWIDTHS = ["25Gbit/s", "100Gbit/s", "400Gbit/s"]
LEAVES, SPINES, PORTS = 4, 2, 8
LATENCY = 5e-6
STYLE = {"all-to-all": {"color": "#d62728", "marker": "s"}, "ring all-reduce": {"color": "#1f77b4", "marker": "o"}}


def fabric(ratio: float, bandwidth: str):
    return fabrics.spine_leaf(LEAVES, SPINES, ratio, PORTS, nic=Link(parse_bandwidth(bandwidth, "bandwidth"), LATENCY))


def predicted(pattern: str, ratio: float, placement: str, hosts: int, nbytes: int, bandwidth: str) -> float:
    """The closed form for one setting: time of the pattern with its leaf-crossing bytes through D B / R."""
    topo = fabric(ratio, bandwidth)
    slots = place(topo, hosts, placement)
    leaf = leaf_of(topo)[slots]
    B, p = topo.nic.bandwidth, hosts
    collective, _ = PATTERNS[pattern]
    _, _, s = sim.collectives.counts(collective, nbytes, p)
    uplink = PORTS * B / ratio                                       # one leaf's uplinks in all
    if collective == "alltoall":
        n = np.unique(leaf, return_counts=True)[1]
        crossing = max(float((n * (p - n)).max()) / p * s / uplink, 0.0)
        return (p - 1) * LATENCY + max((p - 1) / p * s / B, crossing)
    out = np.bincount(np.unique(leaf, return_inverse=True)[1][leaf != np.roll(leaf, -1)], minlength=1)
    f = max(1.0, float(out.max()) * B / uplink) if out.size else 1.0   # ring flows leaving the busiest leaf
    return cost.ring_allreduce(p, s, Link(B / f, LATENCY))


@functools.lru_cache(maxsize=64)
def simulated(pattern: str, ratio: float, placement: str, hosts: int, nbytes: int, bandwidth: str) -> dict:
    """One simulator run (cached: the figure redraws every ratio and placement on each change)."""
    topo = fabric(ratio, bandwidth)
    collective, algo = PATTERNS[pattern]
    slots = place(topo, hosts, placement)
    r = sim.simulate(sim.Simulator(topo, hosts, placement=slots, routing="spray"), collective, algo, nbytes)
    up = (topo.link_kind == 1) & np.isin(topo.link_src, np.unique(leaf_of(topo)))   # leaf -> spine
    sent = r.link_bytes[topo.link_kind == 0].sum() / 2                             # every byte leaves one NIC
    return {"time_s": r.time_s, "busbw_GBps": r.busbw_GBps, "bottleneck": r.bottleneck_label,
            "spine_share": float(r.link_bytes[up].sum() / sent) if sent else 0.0,
            "leaves": int(np.unique(leaf_of(topo)[slots]).size), "bytes": r.nbytes}


class Ch8Panel(Panel):
    """All four ratios and both placements per change; ``last`` keeps the chosen setting's numbers."""

    min_height = "520px"
    figsize = (12, 3.9)
    tight = False                 # the figure lays itself out (subplots_adjust): one draw less per change

    def __init__(self, *, pattern: str = "all-to-all", ratio: int = 4, placement: str = "packed", hosts: int = 32,
                 size: str = "64M", bandwidth: str = "100Gbit/s"):
        validate.choice(pattern, "pattern", PATTERNS)
        validate.choice(ratio, "ratio", RATIOS)
        validate.choice(placement, "placement", ("packed", "scattered"))
        validate.choice(hosts, "hosts", HOSTS)
        validate.choice(size, "size", SIZES)
        validate.choice(bandwidth, "bandwidth", BANDWIDTHS)
        super().__init__({
            "pattern": toggle(list(PATTERNS), pattern, "traffic"),
            "ratio": choice(RATIOS, ratio, "oversubscription :1"),
            "placement": toggle(["packed", "scattered"], placement, "placement"),
            "hosts": choice(HOSTS, hosts, "job ranks"),
            "size": choice(SIZES, size, "S per rank"),
            "bandwidth": choice(BANDWIDTHS, bandwidth, "NIC bandwidth"),
        })

    def greyed(self, values):
        """A packed job inside one leaf never touches the uplinks: the ratio means nothing to it."""
        return {"ratio": values["placement"] == "packed" and values["hosts"] <= PORTS}

    def run(self, pattern, ratio, placement, hosts, size, bandwidth):
        nbytes = parse_bytes(size, "size")
        grid = {(pat, how, r): simulated(pat, float(r), how, hosts, nbytes, bandwidth)
                for pat in PATTERNS for how in ("packed", "scattered") for r in RATIOS}
        chosen = dict(grid[pattern, placement, ratio],
                      formula_s=predicted(pattern, float(ratio), placement, hosts, nbytes, bandwidth))
        return {"setting": dict(pattern=pattern, ratio=ratio, placement=placement, hosts=hosts, size=size,
                                bandwidth=bandwidth), "grid": grid, "chosen": chosen}

    def describe(self, result) -> str:
        s, c, grid = result["setting"], result["chosen"], result["grid"]
        other = "ring all-reduce" if s["pattern"] == "all-to-all" else "all-to-all"
        base = grid[s["pattern"], s["placement"], 1]["time_s"]
        o, o1 = grid[other, s["placement"], s["ratio"]], grid[other, s["placement"], 1]
        return (f"{s['pattern']} of S = {fmt_bytes(c['bytes'])} per rank, {s['hosts']} ranks {s['placement']} in "
                f"{c['leaves']} of {LEAVES} leaves, uplinks {s['ratio']}:1, NICs {s['bandwidth']}:\n"
                f"  time {fmt_time(c['time_s'])} (closed form {fmt_time(c['formula_s'])}), "
                f"{c['time_s'] / base:.2f}x its time at 1:1; busbw {c['busbw_GBps']:.2f} GB/s; "
                f"bottleneck {c['bottleneck']}\n"
                f"  {c['spine_share']:.0%} of its bytes cross the spine; the {other} here: {fmt_time(o['time_s'])}, "
                f"{o['time_s'] / o1['time_s']:.2f}x its time at 1:1, {o['spine_share']:.0%} across the spine")

    def draw(self, fig, result):
        s, grid = result["setting"], result["grid"]
        ax, bx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.5, 1]})
        scale = 1e3
        for pat in PATTERNS:
            for how in ("packed", "scattered"):
                times = [grid[pat, how, r]["time_s"] * scale for r in RATIOS]
                ax.plot(RATIOS, times, linestyle="-" if how == s["placement"] else ":",
                        alpha=1.0 if how == s["placement"] else 0.55, label=f"{pat}, {how}", **STYLE[pat])
        here = grid[s["pattern"], s["placement"], s["ratio"]]["time_s"] * scale
        ax.plot([s["ratio"]], [here], "o", markersize=14, markerfacecolor="none", markeredgecolor="black",
                markeredgewidth=2, label="this setting")
        ax.set_xscale("log", base=2)
        ax.set_xticks(RATIOS, [f"{r}:1" for r in RATIOS])
        ax.set_xlabel("leaf uplink oversubscription (flow simulator)")
        ax.set_ylabel("time (ms)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.set_title(f"{s['hosts']} ranks, S = {s['size']} per rank, NICs {s['bandwidth']}", fontsize=10)
        ax.legend(fontsize=7, loc="upper left")
        names = list(PATTERNS)
        shares = [grid[pat, s["placement"], s["ratio"]]["spine_share"] * 100 for pat in names]
        bars = bx.barh(names, shares, color=[STYLE[n]["color"] for n in names])
        for bar, v in zip(bars, shares):
            bx.annotate(f" {v:.0f} %", xy=(bar.get_width(), bar.get_y() + bar.get_height() / 2), va="center",
                        fontsize=9)
        bx.set_xlim(0, 115)
        bx.set_xlabel("share of the bytes sent that cross the spine (%)")
        bx.set_title(f"{s['placement']}, {s['ratio']}:1", fontsize=10)
        bx.invert_yaxis()
        fig.subplots_adjust(left=0.06, right=0.98, bottom=0.16, top=0.9, wspace=0.45)

"""Which traffic feels an oversubscribed spine-leaf, and what placement does about it: chapter 8's grid.

One spine-leaf (4 leaves of 8 host ports, 2 spines; ``fabrics.spine_leaf``) whose leaf uplinks are
oversubscribed ratio : 1, a job of `hosts` ranks placed packed (as few leaves as possible) or
scattered (round-robin over the leaves), and two traffic patterns of S bytes per rank: data
parallelism's ring all-reduce and expert parallelism's all-to-all (all blocks at once).
``simulated`` is the flow simulator's run (``spray`` routing, cached: the chapter's panel redraws every
ratio and placement on each change); ``predicted`` the closed form: the ring's flows that leave a leaf
share its uplinks, and the all-to-all's bytes that leave a leaf, n (p - n)/p S from the n job ranks
there, go through D B / R of uplink. ``grid`` runs both patterns, placements and ratios at once.
Left out: ECMP's hash collisions, other jobs on the same uplinks, and packets (chapter 6).
"""
from __future__ import annotations

import functools

import numpy as np

from .. import collectives
from ..collectives import cost
from ..net import fabrics
from ..net.network import Link
from ..units import parse_bandwidth
from . import simulate
from .simulator import Simulator
from .placement import leaf_of, place

PATTERNS = {"all-to-all": ("alltoall", "concurrent"), "ring all-reduce": ("allreduce", "ring")}
RATIOS = [1, 2, 4, 8]
HOSTS = [8, 16, 24, 32]
SIZES = ["1M", "16M", "64M", "256M"]
BANDWIDTHS = ["25Gbit/s", "100Gbit/s", "400Gbit/s"]
LEAVES, SPINES, PORTS = 4, 2, 8
LATENCY = 5e-6


def fabric(ratio: float, bandwidth: str):
    return fabrics.spine_leaf(LEAVES, SPINES, ratio, PORTS, nic=Link(parse_bandwidth(bandwidth, "bandwidth"), LATENCY))


def predicted(pattern: str, ratio: float, placement: str, hosts: int, *, nbytes: int, bandwidth: str) -> float:
    """The closed form for one setting: time of the pattern with its leaf-crossing bytes through D B / R."""
    topo = fabric(ratio, bandwidth)
    slots = place(topo, hosts, placement)
    leaf = leaf_of(topo)[slots]
    B, p = topo.nic.bandwidth, hosts
    collective, _ = PATTERNS[pattern]
    _, _, s = collectives.counts(collective, nbytes, p)
    uplink = PORTS * B / ratio                                       # one leaf's uplinks in all
    if collective == "alltoall":
        n = np.unique(leaf, return_counts=True)[1]
        crossing = max(float((n * (p - n)).max()) / p * s / uplink, 0.0)
        return (p - 1) * LATENCY + max((p - 1) / p * s / B, crossing)
    out = np.bincount(np.unique(leaf, return_inverse=True)[1][leaf != np.roll(leaf, -1)], minlength=1)
    f = max(1.0, float(out.max()) * B / uplink) if out.size else 1.0   # ring flows leaving the busiest leaf
    return cost.ring_allreduce(p, s, Link(B / f, LATENCY))


@functools.lru_cache(maxsize=64)
def simulated(pattern: str, ratio: float, placement: str, hosts: int, *, nbytes: int, bandwidth: str) -> dict:
    """One simulator run (cached: the figure redraws every ratio and placement on each change)."""
    topo = fabric(ratio, bandwidth)
    collective, algo = PATTERNS[pattern]
    slots = place(topo, hosts, placement)
    r = simulate(Simulator(topo, hosts, placement=slots, routing="spray"), collective, algo, nbytes)
    up = (topo.link_kind == 1) & np.isin(topo.link_src, np.unique(leaf_of(topo)))   # leaf -> spine
    sent = r.link_bytes[topo.link_kind == 0].sum() / 2                             # every byte leaves one NIC
    return {"time_s": r.time_s, "busbw_GBps": r.busbw_GBps, "bottleneck": r.bottleneck_label,
            "spine_share": float(r.link_bytes[up].sum() / sent) if sent else 0.0,
            "leaves": int(np.unique(leaf_of(topo)[slots]).size), "bytes": r.nbytes}


def grid(setting, *, nbytes: int) -> dict:
    """Every pattern, placement and ratio for the setting's hosts, S and bandwidth, with the chosen
    setting's closed form: {"setting", "grid": {(pattern, placement, ratio): run}, "chosen"}."""
    s = setting
    runs = {(pat, how, r): simulated(pat, float(r), how, s["hosts"], nbytes=nbytes, bandwidth=s["bandwidth"])
            for pat in PATTERNS for how in ("packed", "scattered") for r in RATIOS}
    chosen = dict(runs[s["pattern"], s["placement"], s["ratio"]],
                  formula_s=predicted(s["pattern"], float(s["ratio"]), s["placement"], s["hosts"], nbytes=nbytes,
                                      bandwidth=s["bandwidth"]))
    return {"setting": dict(s), "grid": runs, "chosen": chosen}

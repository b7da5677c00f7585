"""Topology-aware placement: a job packed into as few leaves as possible, or scattered across them.

A cluster scheduler that knows the fabric puts a job's N hosts under as few leaf switches as it
can (Slurm's topology/tree plugin, Kubernetes' topology-aware scheduling); one that does not takes
free hosts wherever they are, which on an idle cluster is round-robin over the leaves. On a
spine-leaf whose leaves are oversubscribed R : 1 (``fabrics.spine_leaf``: D host ports of B,
uplinks D*B/R in all), the ring's traffic between consecutive ranks stays inside a leaf when the
job is packed and crosses the spine when it is scattered. Scattered over L leaves, each leaf
sends N/L ring flows up through D*B/R of uplinks, so each flow gets B / f with
f = max(1, R*N/(D*L)) (``uplink_factor``), and the ring's bandwidth term grows by f. Packed, at
most one ring flow leaves each leaf (two where the ring wraps around): the fabric is not in the way
unless D/R < 2. The times come from the flow simulator (the lab's own ring schedule, max-min
sharing, ``spray`` routing so that ECMP hash collisions do not blur the comparison; chapter 5
shows them).

Left out: other jobs' traffic on the same uplinks, a partly busy cluster (free hosts are all
hosts here), and the rank order inside a placement (ranks follow the placement's order).
"""
from __future__ import annotations

import numpy as np

from .. import validate
from ..net.topology import Topology
from . import Simulator, simulate

HOW = ("packed", "scattered")


def leaf_of(topology: Topology) -> np.ndarray:
    """(endpoints,) the leaf switch (node id) each endpoint slot's NIC is wired to."""
    g, out = topology.graph, []
    for v in topology.endpoints:
        near = [u for u in g.successors(int(v)) if g.nodes[u]["kind"] == "switch"]
        if not near:                                         # shared NIC: one hop further
            near = [w for u in g.successors(int(v)) if g.nodes[u]["kind"] == "nic"
                    for w in g.successors(u) if g.nodes[w]["kind"] == "switch"]
        if not near:
            raise ValueError(f"topology: {topology.name} has endpoints without a leaf switch")
        out.append(min(near))
    return np.array(out, dtype=np.int64)


def place(topology: Topology, hosts: int, how: str = "packed") -> np.ndarray:
    """Endpoint slots for a job of `hosts` ranks: 'packed' fills the fullest leaves first (as few
    leaves as possible), 'scattered' deals the ranks round-robin over every leaf."""
    validate.choice(how, "how", HOW)
    validate.whole(hosts, "hosts", 1, topology.size, int_only=True)
    leaves = leaf_of(topology)
    ids, counts = np.unique(leaves, return_counts=True)
    by_leaf = [np.flatnonzero(leaves == leaf) for leaf in ids]
    if how == "packed":
        order = np.argsort(-counts, kind="stable")
        slots = np.concatenate([by_leaf[i] for i in order])
    else:
        deal = max(counts)
        slots = np.array([s[i] for i in range(deal) for s in by_leaf if i < len(s)], dtype=np.int64)
    return slots[:hosts]


def uplink_factor(ranks: int, leaves_used: int, ports_per_leaf: int, ratio: float) -> float:
    """How much slower a ring's flows go when every consecutive pair crosses the spine: the N/L
    flows of a leaf share its D*B/R of uplinks, so f = max(1, R*N/(D*L))."""
    return max(1.0, ratio * ranks / (ports_per_leaf * leaves_used))


def compare(topology: Topology, hosts: int, nbytes: int = 64 << 20, *, algo: str = "ring",
            routing: str = "spray", compute_s: float = 0.0) -> dict:
    """Simulated all-reduce of `nbytes` (and a step: `compute_s` of compute, then the all-reduce)
    for the job packed and scattered: {how: {"slots", "leaves", "allreduce_s", "step_s"}}."""
    validate.number(compute_s, "compute_s", 0)
    leaves = leaf_of(topology)
    out = {}
    for how in HOW:
        slots = place(topology, hosts, how)
        r = simulate(Simulator(topology, hosts, placement=slots, routing=routing), "allreduce", algo, nbytes)
        out[how] = {"slots": slots, "leaves": int(np.unique(leaves[slots]).size), "allreduce_s": r.time_s,
                    "step_s": compute_s + r.time_s, "busbw_GBps": r.busbw_GBps,
                    "bottleneck": r.bottleneck_label}
    return out

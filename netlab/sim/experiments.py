"""Chapter 5's experiments as functions: each runs the simulator and returns rows of measured figures.

Every number comes from a simulation run (none is typed in); formulas appear beside them only as
predictions. Used by the chapter, the benchmarks (``benchmarks/sim_figures.py``) and the tests.

* ``ecmp_collisions``: a shuffled ring on a k-ary fat-tree under ECMP, over many seeds; the
  slowest flow's max-min rate as a fraction of line rate, beside a topology-ordered ring and
  the same shuffled ring with spraying or adaptive routing.
* ``oversubscription``: a spine-leaf at 1:1, 2:1, 4:1; rings inside one leaf and across leaves.
* ``hierarchy``: flat ring vs hierarchical all-reduce on servers with fast intra-host links,
  measured speedup beside the one the formulas predict.
* ``nic_designs``: one NIC per server vs one per accelerator, rail-optimized or not.
* ``ps_hotspot``: parameter-server push/pull on the same fabric; which link saturates.
* ``scaling``: busbw against the number of ranks, per design.
* ``panel_fabric``: the topology one setting of the chapter's fabric explorer describes (cached).
"""
from __future__ import annotations

import functools

import numpy as np

from .. import validate
from ..collectives import cost
from ..net import fabrics
from ..net.topology import Host
from . import Simulator, simulate, steps
from .traffic import parameter_server

MB64 = 64 << 20


def ecmp_collisions(k: int = 8, seeds: int = 20, nbytes: int = MB64, nic="100GbE",
                    *, modes=("ecmp", "adaptive", "spray")) -> list[dict]:
    """One row per (placement, routing, seed): slowest-flow rate / line rate and all-reduce time."""
    topo = fabrics.fat_tree(k, nic=nic)
    base = simulate(Simulator(topo, routing="ecmp"), "allreduce", "ring", nbytes)
    rows = []
    for placement in ("ordered", "shuffled"):
        for mode in modes:
            for seed in range(seeds if placement == "shuffled" else 1):
                r = simulate(Simulator(topo, placement=placement, routing=mode, seed=seed), "allreduce", "ring", nbytes)
                rows.append({"placement": placement, "routing": mode, "seed": seed, "slowest_flow": r.slowest_flow,
                             "time_s": r.time_s, "slowdown": r.time_s / base.time_s,
                             "bottleneck": r.summary()["bottleneck"]})
    return rows


def summarize(rows: list[dict], by=("placement", "routing"), value="slowest_flow") -> list[dict]:
    """Mean, min and max of `value` for each group of rows."""
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        groups.setdefault(tuple(row[b] for b in by), []).append(row[value])
    return [dict(zip(by, key), runs=len(v), mean=float(np.mean(v)), min=float(np.min(v)), max=float(np.max(v)))
            for key, v in groups.items()]


def oversubscription(ratios=(1, 2, 4), leaves: int = 8, spines: int = 4, ports_per_leaf: int = 16,
                     *, nbytes: int = MB64, seeds: int = 5, nic="100GbE", routing: str = "ecmp") -> list[dict]:
    """All-reduce time (ring) per ratio: inside one leaf, across all leaves ordered, and shuffled."""
    rows = []
    for ratio in ratios:
        topo = fabrics.spine_leaf(leaves, spines, ratio, ports_per_leaf, nic=nic)
        inside = simulate(Simulator(topo, ports_per_leaf, routing=routing), "allreduce", "ring", nbytes)
        ordered = simulate(Simulator(topo, routing=routing), "allreduce", "ring", nbytes)
        shuffled = [simulate(Simulator(topo, placement="shuffled", routing=routing, seed=s), "allreduce", "ring", nbytes)
                    for s in range(seeds)]
        rows.append({"ratio": ratio, "uplink_Gbps": float(topo.capacity[topo.link_kind == 1].max() * 8 / 1e9),
                     "inside_leaf_s": inside.time_s, "across_ordered_s": ordered.time_s,
                     "across_shuffled_s": float(np.mean([r.time_s for r in shuffled])),
                     "shuffled_bottleneck": shuffled[0].summary()["bottleneck"],
                     "shuffled_slowest_flow": float(np.mean([r.slowest_flow for r in shuffled]))})
    return rows


def hierarchy(hosts: int = 16, accelerators: int = 8, nbytes: int = MB64, nic="100GbE", *, intra="NVLink3",
              nics: int | None = None) -> list[dict]:
    """Flat ring vs hierarchical (leader, and rail when each accelerator has a NIC) on one switch."""
    nics = nics or accelerators
    topo = fabrics.star(hosts, nic, Host(accelerators, nics=nics, intra=intra))
    net = topo.network()
    p = topo.size
    algos = ["ring", "hierarchical"] + (["hierarchical_rail"] if nics == accelerators else [])
    rows = []
    for algo in algos:
        r = simulate(topo, "allreduce", algo, nbytes)
        rows.append({"algo": algo, "ranks": p, "time_s": r.time_s, "busbw_GBps": r.busbw_GBps,
                     "formula_s": cost.time("allreduce", algo, p, r.nbytes, network=net),
                     "bottleneck": r.summary()["bottleneck"]})
    flat = rows[0]
    for row in rows:
        row["speedup"] = flat["time_s"] / row["time_s"]
        row["formula_speedup"] = flat["formula_s"] / row["formula_s"]
    return rows


def nic_designs(k: int = 16, hosts: int = 16, accelerators: int = 8, nbytes: int = MB64, *, nic="100GbE",
                intra="NVLink3", seed: int = 0) -> list[dict]:
    """The same servers wired three ways on one fat-tree; the best hierarchical algorithm for each."""
    designs = [("1 NIC per server", Host(accelerators, nics=1, intra=intra), "hierarchical"),
               ("1 NIC per server", Host(accelerators, nics=1, intra=intra), "hierarchical_rail"),
               ("NIC per GPU, same ToR", Host(accelerators, nics=accelerators, rail=False, intra=intra),
                "hierarchical_rail"),
               ("NIC per GPU, rail-optimized", Host(accelerators, nics=accelerators, rail=True, intra=intra),
                "hierarchical_rail")]
    rows = []
    for name, host, algo in designs:
        topo = fabrics.fat_tree(k, nic, host, hosts=hosts)
        r = simulate(Simulator(topo, seed=seed), "allreduce", algo, nbytes)
        rows.append({"design": name, "algo": algo, "ranks": topo.size, "time_s": r.time_s,
                     "busbw_GBps": r.busbw_GBps, "slowest_flow": r.slowest_flow,
                     "bottleneck": r.summary()["bottleneck"], "bottleneck_kind": r.summary()["bottleneck_kind"]})
    return rows


def ps_hotspot(k: int = 4, servers=(1, 2, 4), nbytes: int = 16 << 20, nic="100GbE") -> list[dict]:
    """Parameter-server push and pull on a fat-tree (servers on the first hosts) beside a ring all-reduce."""
    topo = fabrics.fat_tree(k, nic)
    p = topo.size
    count = nbytes // 4
    rows = []
    for s in servers:
        sim = Simulator(topo, p)
        r = sim.run(parameter_server(p, count, s), 4, "allreduce", f"ps:{s}", nbytes=count * 4)
        rows.append({"pattern": f"parameter server, {s} server{'s' if s > 1 else ''}", "time_s": r.time_s,
                     "push_bottleneck": topo.link_label(r.step_bottleneck[0]),
                     "pull_bottleneck": topo.link_label(r.step_bottleneck[1]),
                     "bottleneck_util": float(r.utilization[r.bottleneck_link]), "result": r})
    ring = simulate(topo, "allreduce", "ring", count * 4)
    rows.append({"pattern": "ring all-reduce", "time_s": ring.time_s,
                 "push_bottleneck": ring.summary()["bottleneck"], "pull_bottleneck": "",
                 "bottleneck_util": float(ring.utilization[ring.bottleneck_link]), "result": ring})
    return rows


def scaling(designs: dict, scales=(8, 64, 512, 4096), algo: str = "ring", nbytes: int = MB64,
            *, placement: str = "ordered", routing: str = "ecmp", seed: int = 0) -> list[dict]:
    """busbw (GB/s) against ranks for each design: {name: (topology, algo or None)}; skips what does not fit."""
    rows = []
    for name, (topo, design_algo) in designs.items():
        for p in scales:
            if p > topo.size or p % topo.accelerators_per_host:
                continue
            r = simulate(Simulator(topo, p, placement=placement, routing=routing, seed=seed), "allreduce", design_algo or algo, nbytes)
            rows.append({"design": name, "ranks": p, "busbw_GBps": r.busbw_GBps, "time_s": r.time_s,
                         "wall_s": r.wall_s, "bottleneck": r.summary()["bottleneck"]})
    return rows


def step_count(collective: str, algo: str, ranks: int, ranks_per_host: int = 1) -> int:
    """Steps in a schedule (for the chapter's arithmetic: a ring on 1,024 ranks is 2,046 steps)."""
    return sum(1 for _ in steps(collective, algo, ranks, ranks * 4, ranks_per_host=ranks_per_host)[0])


@functools.lru_cache(maxsize=16)
def panel_fabric(*, fabric: str, k: int, ratio: float, gpus: int, nics: str, ranks: int, nic: str = "100GbE",
                 intra: str = "NVLink3"):
    """The topology a fabric-explorer setting describes, with just enough servers for `ranks` (cached:
    a panel rebuilds the same fabric on every change of the other controls).

    `nics`: "rail" (one NIC per GPU, rail-optimized), "tor" (one per GPU, same ToR) or "single" (one
    per server); `ratio` is a spine-leaf's oversubscription, `k` a fat-tree's radix.
    """
    validate.choice(fabric, "fabric", ("fat-tree", "spine-leaf"))
    host = Host(gpus, nics=1 if nics == "single" else gpus, rail=nics == "rail", intra=intra)
    if ranks % gpus:
        raise ValueError(f"ranks: {ranks} ranks do not fill servers of {gpus} GPUs")
    hosts = ranks // gpus
    if fabric == "fat-tree":
        most = k ** 3 // 4 // host.nics * gpus
        if ranks > most:
            raise ValueError(f"ranks: a k={k} fat-tree holds {most} GPUs with this server design; raise k")
        return fabrics.fat_tree(k, nic, host, hosts=hosts)
    return fabrics.parse(f"spineleaf:8:4:{ratio:g}", ranks, nic, host)          # "spine-leaf"

"""Chapter 5's figures, measured by the simulator: ECMP collisions over 20 seeds, oversubscription,
hierarchy, NIC designs, the parameter-server hotspot, and busbw against scale.

    .venv/bin/python benchmarks/sim_figures.py                 # tables on stdout, PNGs in sim_figures/
    .venv/bin/python benchmarks/sim_figures.py --out /tmp/figs --seeds 20

Every number is from a run of ``netlab.sim`` (see ``netlab/sim/experiments.py``); the formulas
printed beside them are the alpha-beta predictions for an uncontended network. S = 64 MiB,
100GbE NICs (12.5 GB/s, alpha 5 us), NVLink3 (300 GB/s, 2 us) inside servers; GB = 1e9 B.
"""
from __future__ import annotations

import argparse
import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from netlab.net import fabrics  # noqa: E402
from netlab.net.topology import Host  # noqa: E402
from netlab.sim import experiments as E  # noqa: E402
from netlab.figures.topology import busbw_scaling  # noqa: E402

from _harness import machine  # noqa: E402


def ecmp(out: str, seeds: int) -> None:
    t0 = time.perf_counter()
    rows = E.ecmp_collisions(k=8, seeds=seeds)
    print(f"\n## ECMP collisions: ring all-reduce, 128 ranks on a k=8 fat-tree, {seeds} seeds "
          f"({time.perf_counter() - t0:.1f} s)")
    print(f"  {'placement':9s} {'routing':9s} {'runs':>4s} {'slowest flow x line rate: mean (min-max)':>42s}"
          f" {'all-reduce time vs ordered: mean (min-max)':>44s}")
    slow = {(s["placement"], s["routing"]): s for s in E.summarize(rows, value="slowdown")}
    for s in E.summarize(rows):
        d = slow[(s["placement"], s["routing"])]
        print(f"  {s['placement']:9s} {s['routing']:9s} {s['runs']:4d} {s['mean']:22.3f}"
              f" ({s['min']:.3f}-{s['max']:.3f})"
              f" {d['mean']:28.2f}x ({d['min']:.2f}-{d['max']:.2f})")
    fig, ax = plt.subplots(figsize=(7, 3.2))
    rng = np.random.default_rng(0)
    for i, mode in enumerate(("ecmp", "adaptive", "spray")):
        values = np.array([r["slowest_flow"] for r in rows if r["placement"] == "shuffled" and r["routing"] == mode])
        ax.scatter(i + rng.uniform(-0.12, 0.12, values.size), values, alpha=0.5, s=18, label=f"shuffled, {mode}")
        ax.plot([i - 0.2, i + 0.2], [values.mean()] * 2, color="k", lw=1.5)
        ax.annotate(f"mean {values.mean():.2f}", (i + 0.22, values.mean()), fontsize=8, va="center")
        ordered = [r["slowest_flow"] for r in rows if r["placement"] == "ordered" and r["routing"] == mode]
        ax.scatter([i], ordered, marker="*", s=90, color="k", zorder=3, label="ordered ring" if i == 0 else None)
    ax.set_xticks(range(3), ["ECMP hash", "adaptive", "spray"])
    ax.set_ylabel("slowest flow / line rate")
    ax.set_ylim(0, 1.1)
    ax.set_title(f"Ring all-reduce, 128 ranks on a k=8 fat-tree: shuffled ranks, {seeds} seeds", fontsize=10)
    ax.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "ecmp_collisions.png"), dpi=110)
    plt.close(fig)


def oversubscription() -> None:
    rows = E.oversubscription(ratios=(1, 2, 4), seeds=5)
    print("\n## Oversubscription: spine-leaf, 8 leaves x 16 hosts, 4 spines; ring all-reduce of 64 MiB (ms)")
    print(f"  {'ratio':>5s} {'uplink':>10s} {'16 ranks in one leaf':>21s} {'128 ranks, ordered':>19s}"
          f" {'128 ranks, shuffled (5 seeds)':>30s} {'slowest flow':>12s}  shuffled bottleneck")
    for r in rows:
        print(f"  {r['ratio']:>4g}:1 {r['uplink_Gbps']:>5g} Gbit/s {r['inside_leaf_s'] * 1e3:21.3f}"
              f" {r['across_ordered_s'] * 1e3:19.3f} {r['across_shuffled_s'] * 1e3:30.3f}"
              f" {r['shuffled_slowest_flow']:12.2f}  {r['shuffled_bottleneck']}")


def hierarchy() -> None:
    print("\n## Hierarchical vs flat ring: 16 servers x 8 GPUs on one switch, a NIC per GPU")
    for intra in ("NVLink3", "PCIe3x16"):
        rows = E.hierarchy(hosts=16, accelerators=8, intra=intra)
        for r in rows:
            print(f"  intra {intra:9s} {r['algo']:18s} {r['time_s'] * 1e3:8.3f} ms  busbw {r['busbw_GBps']:6.2f} GB/s"
                  f"  speedup {r['speedup']:5.2f}x  formula {r['formula_speedup']:5.2f}x")


def designs() -> None:
    print("\n## NIC designs: 16 servers x 8 GPUs on a k=16 fat-tree, S = 64 MiB")
    for r in E.nic_designs():
        print(f"  {r['design']:29s} {r['algo']:18s} {r['time_s'] * 1e3:8.3f} ms  busbw {r['busbw_GBps']:6.2f} GB/s"
              f"  slowest flow {r['slowest_flow']:.2f}  bottleneck {r['bottleneck']}")


def ps() -> None:
    print("\n## Parameter server on a k=4 fat-tree (16 ranks), 16 MiB model: push and pull")
    for r in E.ps_hotspot():
        print(f"  {r['pattern']:30s} {r['time_s'] * 1e3:8.3f} ms  push bottleneck {r['push_bottleneck']:16s}"
              f" pull bottleneck {r['pull_bottleneck']:16s} utilization {r['bottleneck_util']:.0%}")


def scaling(out: str) -> None:
    designs = {"fat-tree k=16, ring": (fabrics.fat_tree(16), "ring"),
               "spine-leaf 4:1, ring": (fabrics.spine_leaf(8, 4, 4, 512), "ring"),
               "8-GPU servers, rail NICs, hierarchical": (fabrics.fat_tree(32, host=Host(8, nics=8), hosts=512),
                                                          "hierarchical_rail"),
               "8-GPU servers, 1 NIC, hierarchical": (fabrics.fat_tree(16, host=Host(8, nics=1), hosts=512),
                                                      "hierarchical")}
    t0 = time.perf_counter()
    rows = []
    for placement in ("ordered", "shuffled"):
        for r in E.scaling(designs, scales=(8, 64, 512, 1024, 4096), placement=placement, seed=1):
            r["placement"] = placement
            rows.append(r)
    print(f"\n## busbw (GB/s) against ranks, S = 64 MiB ({time.perf_counter() - t0:.1f} s)")
    for r in rows:
        print(f"  {r['design']:40s} {r['placement']:8s} {r['ranks']:5d} ranks  busbw {r['busbw_GBps']:6.2f}"
              f"  ({r['wall_s']:.2f} s to simulate)")
    fig = busbw_scaling(rows, title="busbw against scale, S = 64 MiB")   # the chapter's own figure
    fig.tight_layout()
    fig.savefig(os.path.join(out, "busbw_vs_scale.png"), dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="sim_figures", help="folder for the PNGs (default sim_figures/)")
    ap.add_argument("--seeds", type=int, default=20, help="seeds for the ECMP figure (default 20)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print(f"# {machine()} at the start", flush=True)
    ecmp(args.out, args.seeds)
    oversubscription()
    hierarchy()
    designs()
    ps()
    scaling(args.out)
    print(f"\nfigures written to {args.out}/; {machine()} at the end")


if __name__ == "__main__":
    main()

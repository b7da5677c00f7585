"""How fast the simulator runs the lab's own schedules at scale (targets: < 1 s and < 10 s on 2 cores).

    .venv/bin/python benchmarks/sim_speed.py            # every case, best of 3
    .venv/bin/python benchmarks/sim_speed.py --repeat 1

Cases (S = 64 MiB, 100GbE NICs, NVLink3 inside servers):
* one ring all-reduce on 1,024 ranks of a k=16 fat-tree, ranks in topology order and shuffled
  (ECMP collisions make the shuffled one re-solve max-min several times per step);
* hierarchical all-reduce on 4,096 ranks: 512 servers of 8 accelerators on a k=16 fat-tree with
  one NIC per server (leader scheme), on a k=32 fat-tree with a rail-optimized NIC per accelerator
  (rail scheme), and the flat ring on the same 4,096 ranks for scale. The slowest combination
  found is listed too: the rail scheme with shuffled servers behind one NIC each, where ECMP
  collisions give one step ~700 distinct completion times, each a new max-min solve (~6 ms).

Each line gives the wall time of the whole call (schedule generation, routing, max-min, per-step
accounting), measured in a fresh topology and simulator every repetition (nothing cached between
repetitions), the topology's build time separately, the steps simulated, and the simulated time.
For comparison (simulation-anchors.md): ASTRA-sim's analytical backend took 19-34 s for 1,024
ranks and 93 s for a 4,096-rank hierarchical case on the same kind of 2-core machine.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

from netlab import sim
from netlab.net import fabrics
from netlab.net.topology import Host

MB64 = 64 << 20
CASES = [  # (name, topology builder, algo, ranks, placement, target seconds)
    ("ring, 1,024 ranks, k=16 fat-tree, ordered", lambda: fabrics.fat_tree(16), "ring", 1024, "ordered", 1.0),
    ("ring, 1,024 ranks, k=16 fat-tree, shuffled", lambda: fabrics.fat_tree(16), "ring", 1024, "shuffled", 1.0),
    ("hierarchical (leader), 4,096 ranks, k=16, 1 NIC/server",
     lambda: fabrics.fat_tree(16, host=Host(8, nics=1), hosts=512), "hierarchical", 4096, "ordered", 10.0),
    ("hierarchical (rail), 4,096 ranks, k=32, rail NIC/GPU",
     lambda: fabrics.fat_tree(32, host=Host(8, nics=8, rail=True), hosts=512), "hierarchical_rail", 4096,
     "ordered", 10.0),
    ("hierarchical (rail), 4,096 ranks, k=32, shuffled servers",
     lambda: fabrics.fat_tree(32, host=Host(8, nics=8, rail=True), hosts=512), "hierarchical_rail", 4096,
     "shuffled", 10.0),
    ("hierarchical (rail), 4,096 ranks, k=16, 1 NIC/server, shuffled",   # the slowest case found: ~700
     lambda: fabrics.fat_tree(16, host=Host(8, nics=1), hosts=512), "hierarchical_rail", 4096,  # completion
     "shuffled", 10.0),                                                    # waves in the first rail step
    ("flat ring, 4,096 ranks, k=32, rail NIC/GPU",
     lambda: fabrics.fat_tree(32, host=Host(8, nics=8, rail=True), hosts=512), "ring", 4096, "ordered", None),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="repetitions per case; the best is reported")
    args = ap.parse_args()
    print(f"# netlab simulator speed; {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}; S = 64 MiB; best of {args.repeat}")
    print(f"# {'case':64s} {'build s':>8s} {'sim wall s':>10s} {'target':>7s} {'steps':>6s} {'sim time':>10s} "
          f"{'busbw GB/s':>10s}  bottleneck")
    for name, build, algo, ranks, placement, target in CASES:
        best, built = float("inf"), float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            topo = build()
            built = min(built, time.perf_counter() - start)
            start = time.perf_counter()
            r = sim.simulate(sim.Simulator(topo, ranks, placement=placement, seed=1), "allreduce", algo, MB64)
            best = min(best, time.perf_counter() - start)
        mark = "" if target is None else (f"< {target:g} s" if best < target else f"MISSED {target:g} s")
        print(f"  {name:64s} {built:8.3f} {best:10.3f} {mark:>7s} {r.step_times.size:6d} "
              f"{r.time_s * 1e3:8.3f} ms {r.busbw_GBps:10.2f}  {r.summary()['bottleneck']}")


if __name__ == "__main__":
    main()

"""Wall time of the fluid congestion model at 128 hosts and more: an incast hotspot plus background traffic.

    .venv/bin/python benchmarks/sim_congestion_speed.py            # k=8 fat-tree, 128 hosts
    .venv/bin/python benchmarks/sim_congestion_speed.py --k 16     # 1,024 hosts

Target: a k=8 fat-tree (128 hosts) with a 16-sender incast of 1 MB each and 48 background flows
of 2 MB, DCQCN, PFC on, resolves in under 10 s of wall time. Prints the load (virtual time,
steps, flows), the CPU time and the machine's load average beside the wall time, since the machine
may be shared: on a loaded machine the CPU time is the figure to compare with the target.
"""
import argparse
import os
import time

import numpy as np

from netlab.net import fabrics, routing
from netlab.sim import hotspot


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--senders", type=int, default=16)
    ap.add_argument("--background", type=int, default=48)
    ap.add_argument("--transport", default="dcqcn")
    a = ap.parse_args()
    topo = fabrics.fat_tree(a.k)
    t = time.perf_counter()
    routing.router(topo)
    route_s = time.perf_counter() - t
    print(f"{topo.description}; routing tables {route_s:.2f} s; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    for pfc in (True, False):
        t, cpu = time.perf_counter(), time.process_time()
        h = hotspot.incast_hotspot(k=a.k, senders=a.senders, background=a.background, transport=a.transport,
                                   pfc=pfc, topology=topo)
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
        r = h.run
        slow = h.run.fct[h.background]
        print(f"PFC {'on ' if pfc else 'off'}: {wall:6.2f} s wall ({cpu:.2f} s CPU) for {r.end_s * 1e3:.2f} ms virtual, "
              f"{r.steps} steps of 1 us ({wall / max(r.steps, 1) * 1e6:.0f} us/step), {r.fct.size} flows "
              f"({a.senders} x 1 MB incast + {a.background} x 2 MB background, {a.transport}); "
              f"incast done {h.incast_completion() * 1e3:.2f} ms, background p50/max "
              f"{np.median(slow) * 1e3:.2f}/{slow.max() * 1e3:.2f} ms, drops {r.drops.sum() / 1e6:.1f} MB, "
              f"pause {r.pause_s.sum() * 1e3:.1f} link-ms")
        print(f"  {'under' if wall < 10 else 'OVER'} the 10 s target")


if __name__ == "__main__":
    main()

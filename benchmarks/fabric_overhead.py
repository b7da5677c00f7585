"""What the congestion-aware fabric costs per message on real ranks (netlab/cosim/live.py).

    python benchmarks/fabric_overhead.py [--ranks 8] [--reps 5]

Runs the same ring all-reduces on real ranks three ways -- today's port model (no coordinator),
the coordinator with the ideal transport (same times, every message reported), and a Reno switch
fabric with a 64 KB buffer -- and prints the wall time per message of each and the overhead of the
coordinator over the port model. The virtual times are printed too: the first two are identical.
"""
import argparse
import statistics
import time

import torch

from _harness import machine

import netlab
from netlab import collectives
from netlab.fabric.congestion import Congestion


def rings(comm, n, times):
    x = torch.ones(n)
    for _ in range(times):
        collectives.allreduce(comm, x, algo="ring")
    return comm.now(), comm.messages_sent


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--times", type=int, default=10, help="all-reduces per run")
    args = ap.parse_args()
    n = 64 * 1024                                      # floats: 256 KB per all-reduce
    setups = {"port model": None, "coordinator, ideal": Congestion(),
              "coordinator, reno 64K": Congestion("reno", buffer="64K")}
    base = None
    print(f"# {machine()} at the start", flush=True)
    print(f"# {args.ranks} ranks, {args.times} ring all-reduces of {4 * n // 1024} KiB per run, "
          f"median of {args.reps} runs (wall clock)")
    for name, spec in setups.items():
        net = netlab.network("10Gbit/s", "10us", congestion=spec)
        netlab.run(rings, n, 1, ranks=args.ranks, network=net)          # warm the pool
        walls = []
        for _ in range(args.reps):
            t = time.perf_counter()
            res = netlab.run(rings, n, args.times, ranks=args.ranks, network=net)
            walls.append(time.perf_counter() - t)
        messages = sum(v[1] for v in res.values)
        per = statistics.median(walls) / messages
        base = per if base is None else base
        print(f"{name:24s} virtual {res.values[0][0] * 1e3:9.4f} ms   wall {statistics.median(walls):7.3f} s   "
              f"{per * 1e6:8.1f} us/message   x{per / base:.2f} of the port model")
    print(f"# {machine()} at the end")


if __name__ == "__main__":
    main()

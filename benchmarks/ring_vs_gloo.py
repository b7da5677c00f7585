"""netlab's ring all-reduce against torch's own gloo all_reduce, on real ranks, wall clock, no emulation.

    python benchmarks/ring_vs_gloo.py [--reps 9] [--iters 10]

For 4 and 8 ranks and 1 MB and 16 MB of float32, each repetition times `iters` calls of each,
back to back in the same run on the same ranks (so both see the same machine load), and the
ratio netlab/gloo is reported as the median over repetitions. Target: within 1.2x.
On a 2-core machine 8 ranks share 2 cores, so this measures CPU scheduling as much as the
transport; the ratio is what carries over, not the milliseconds.
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import netlab
from netlab import collectives

from _harness import machine


def both(comm, count, iters, reps):
    x = torch.ones(count)
    pairs = []

    def clock(fn):
        fn()                                             # warm-up (also builds netlab's plan)
        dist.barrier(group=comm.group)
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        dist.barrier(group=comm.group)
        return (time.perf_counter() - start) / iters

    for _ in range(reps):
        gloo = clock(lambda: dist.all_reduce(x, group=comm.group))
        ours = clock(lambda: collectives.allreduce(comm, x, algo="ring"))
        pairs.append((gloo, ours))
    return pairs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    print(f"# {machine()} at the start", flush=True)
    print("netlab ring all-reduce vs torch gloo all_reduce (wall clock, loopback, float32; MB = 1e6 B)")
    print(f"{'ranks':>5} {'size':>8} {'gloo ms':>9} {'netlab ms':>10} {'ratio':>7}  (medians of {args.reps} reps)")
    for ranks in (4, 8):
        for nbytes in (1_000_000, 16_000_000):
            res = netlab.run(both, nbytes // 4, args.iters, args.reps, ranks=ranks, timeout=600)
            pairs = res.values[0]                       # barriers make every rank's times the same
            ratio = statistics.median(o / g for g, o in pairs)
            gloo, ours = statistics.median(g for g, _ in pairs), statistics.median(o for _, o in pairs)
            print(f"{ranks:5d} {nbytes / 1e6:6.0f}MB {gloo * 1e3:9.2f} {ours * 1e3:10.2f} {ratio:7.2f}")
    print(f"# {machine()} at the end")


if __name__ == "__main__":
    main()

"""All-to-all on real ranks against its formula, and on a fat-tree at several oversubscription ratios.

    PYTHONPATH=. OMP_NUM_THREADS=1 .venv/bin/python benchmarks/alltoall.py            # k = 4 and 8
    PYTHONPATH=. OMP_NUM_THREADS=1 .venv/bin/python benchmarks/alltoall.py --k 8 --ratios 1,2,4,8

First table: ``netlab bench alltoall`` on 2-8 real ranks (virtual time, 100 Gbit/s, 5 us), real data
checked against torch's all_to_all_single at 64 KiB and size-only at 64 MiB, beside (p-1)(alpha + S/(pB))
and nccl-tests' busbw. Second: the flow simulator's ring all-reduce and all-to-all (both schedules) on a
k-ary fat-tree whose edge uplinks are oversubscribed R : 1, beside ``netlab.sim.alltoall.predicted``,
with each one's slowdown against 1:1 and the share of a rank's bytes that leaves its edge switch.
Every number is a run's; the formulas are printed beside them.
"""
import argparse
import time

from netlab.collectives.bench import bench
from netlab.net.network import network
from netlab.sim import alltoall

from _harness import machine


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", default="4,8", help="fat-tree radixes (default 4,8)")
    ap.add_argument("--ratios", default="1,4", help="edge oversubscription ratios (default 1,4)")
    ap.add_argument("--size", type=int, default=64 << 20, help="S per rank in bytes (default 64 MiB)")
    args = ap.parse_args()
    print(f"# {machine()} at the start", flush=True)
    net = network("100Gbit/s", "5us")
    print(f"# real ranks, {net.describe()}")
    print(f"# {'p':>2} {'algo':>10} {'S (B)':>10} {'time (us)':>11} {'formula (us)':>12} {'busbw GB/s':>10} check")
    for p in (2, 4, 8):
        for algo in ("pairwise", "concurrent"):
            for r in bench("alltoall", algo, p, [64 << 10], network=net, check=True) + bench("alltoall", algo, p, [64 << 20], network=net):
                print(f"  {p:>2} {algo:>10} {r['bytes']:>10} {r['time_s'] * 1e6:>11.2f} {r['predicted_s'] * 1e6:>12.2f} "
                      f"{r['busbw_GBps']:>10.3f} {r['check'] or 'size-only'}")
    ratios = [float(x) for x in args.ratios.split(",")]
    for k in (int(x) for x in args.k.split(",")):
        t0 = time.perf_counter()
        rows = alltoall.bisection(k=k, ratios=ratios, nbytes=args.size,
                                  patterns=("ring all-reduce", "all-to-all", "all-to-all, pairwise"))
        print(f"\n# flow simulator, k = {k} fat-tree ({rows[0]['ranks']} hosts, {k // 2} per edge switch), "
              f"S = {args.size} B per rank, spray routing ({time.perf_counter() - t0:.1f} s)")
        print(f"# {'pattern':>22} {'ratio':>6} {'time (ms)':>10} {'formula':>9} {'vs 1:1':>7} {'busbw':>7} "
              f"{'leaves edge':>11}  bottleneck")
        for r in rows:
            print(f"  {r['pattern']:>22} {r['ratio']:>4g}:1 {r['time_s'] * 1e3:>10.3f} {r['formula_s'] * 1e3:>9.3f} "
                  f"{r['slowdown']:>6.2f}x {r['busbw_GBps']:>7.2f} {r['crossing_share']:>11.0%}  {r['bottleneck']}")
    print(f"\n# {machine()} at the end")


if __name__ == "__main__":
    main()

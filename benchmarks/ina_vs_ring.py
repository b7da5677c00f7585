"""In-network aggregation against the ring on real ranks: virtual time and busbw for p = 2..8.

    python benchmarks/ina_vs_ring.py [--size 64M] [--chunks 16]

Each point is a size-only all-reduce in virtual time (deterministic: the machine's load does not
change it): the ring on p ranks, the in-network all-reduce on p workers and one switch rank
(p + 1 ranks, so p = 8 needs 9). Printed beside each: its closed form (``netlab.collectives.cost``) and the
ratio ring / in-network, which heads to 2(p-1)/p * k/(k+1) at large S. The wall time of the
whole sweep is printed last (it does depend on the load).
"""
import argparse
import time

import netlab
from netlab.collectives import cost
from netlab.codesign import ina
from netlab.units import parse_bytes

from _harness import machine


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="64M")
    ap.add_argument("--chunks", type=int, default=16)
    args = ap.parse_args()
    s = parse_bytes(args.size, "size") // 4 * 4
    net = netlab.network("100Gbit/s", "5us")
    print(f"# {machine()} at the start", flush=True)
    started = time.perf_counter()
    print(f"# S = {s} B, {args.chunks} chunks; {net.describe()}")
    print(f"# {'p':>2} {'ring ms':>9} {'formula':>9} {'busbw':>6}  {'ina ms':>9} {'formula':>9} {'busbw':>6}  ring/ina")
    for p in range(2, 9):
        ring_s = ina.measure(p, s, net, algo="ring")
        ina_s = ina.measure(p, s, net, chunks=args.chunks)
        bus = lambda t: cost.busbw("allreduce", p, s, t) / 1e9  # noqa: E731
        print(f"  {p:2d} {ring_s * 1e3:9.3f} {cost.ring_allreduce(p, s, net.nic) * 1e3:9.3f} {bus(ring_s):6.2f}  "
              f"{ina_s * 1e3:9.3f} {cost.ina_allreduce(p, s, net.nic, chunks=args.chunks) * 1e3:9.3f} "
              f"{bus(ina_s):6.2f}  {ring_s / ina_s:8.3f}")
    print(f"# wall {time.perf_counter() - started:.1f} s; {machine()} at the end")
    netlab.shutdown()


if __name__ == "__main__":
    main()

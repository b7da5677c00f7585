"""The figures quoted for chapter 3, measured on real ranks in virtual time (same numbers on any machine).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/ps_figures.py          # about a minute on 2 cores

1. One BSP training step of chapter 1's MLP (width 512, ~1.2 MB; width 128, ~104 KB) with 8 workers
   at 1 Gbit/s / 5 us: 1 parameter server vs 4, their ratio, and BytePS's formula max(M/B, pM/(kB))
   beside each. With few partitions per server (104 KB over 4 servers in 16 KB pieces) push and
   pull barely overlap and alpha per message shows: the ratio falls short of 4.
2. The Zipf(a=1) embedding (20,000 rows x 16 fp32, 512 lookups per worker per step, 8 workers,
   4 servers): the hottest server's share of the servers' bytes under range and hash placement,
   and with the 32 hottest rows replicated.
3. BytePS's hybrid (8 workers + 2 or 4 CPU servers) against a PS on the same CPU servers and a ring
   all-reduce, push/pull time of one step, with each formula.
Units: GB = 1e9 B, Gbit/s = 1e9 bit/s.
"""
from __future__ import annotations

import time

from netlab.collectives import cost
from netlab import network, ps
from netlab.ps import formulas, hybrid, sparse

from _harness import machine

BW, LAT = "1Gbit/s", "5us"
B = 1.25e8


def main() -> None:
    print(f"# {machine()} at the start", flush=True)
    started = time.perf_counter()
    print(f"1. BSP step, 8 workers, {BW}, {LAT} (virtual time)")
    for width, partition in ((512, 16_384), (128, 16_384), (128, 4096)):
        steps = {}
        for k in (1, 4):
            r = ps.run_ps(workers=8, servers=k, sharding="range", mode="bsp", steps=3, width=width,
                          bandwidth=BW, latency=LAT, eval_every=0, partition_bytes=partition)
            M = r.setup["model_bytes"]
            steps[k] = r.step_s
            print(f"   width {width:4d} ({M / 1e6:.3f} MB, {partition // 1024} KB partitions), {k} server(s): "
                  f"step {r.step_s * 1e3:8.3f} ms, "
                  f"push/pull {r.comm_s * 1e3:8.3f} ms, formula max(M/B, pM/(kB)) {formulas.ps_time(8, k, M, B) * 1e3:8.3f} ms")
        print(f"   -> 1 server / 4 servers = {steps[1] / steps[4]:.2f}x")
    print("\n2. Zipf(1.0) embedding, 8 workers, 4 servers: the hottest server's share of server bytes")
    for placement, hot in (("range", 0), ("hash", 0), ("replicate", 32)):
        r = sparse.run_sparse(workers=8, servers=4, placement=placement, hot=hot, steps=3, bandwidth=BW, latency=LAT)
        shares = ", ".join(f"{b / sum(r['server_bytes']):.0%}" for b in r["server_bytes"])
        print(f"   {placement:9s}: hottest {r['hottest_share']:.1%} (servers: {shares}), step {r['step_s'] * 1e3:.3f} ms")
    print("\n3. One push/pull of width 512, 8 workers, 16 KB partitions")
    net = network(BW, LAT)
    for k in (2, 4):
        mixed = hybrid.run_hybrid(workers=8, cpu_servers=k, bandwidth=BW, latency=LAT, width=512)
        M = mixed["model_bytes"]
        plain = ps.run_ps(workers=8, servers=k, sharding="range", steps=1, width=512, bandwidth=BW, latency=LAT,
                          eval_every=0)
        ring = cost.time("allreduce", "ring", 8, M, network=net)
        print(f"   k={k}: BytePS hybrid {mixed['comm_s'] * 1e3:7.3f} ms (optimum {formulas.byteps_time(8, k, M, B) * 1e3:.3f}), "
              f"PS on {k} servers {plain.comm_s * 1e3:7.3f} ms (formula {formulas.ps_time(8, k, M, B) * 1e3:.3f}), "
              f"ring all-reduce {ring * 1e3:7.3f} ms (closed form)")
    print(f"\n(measured in {time.perf_counter() - started:.0f} s of wall time; {machine()} at the end)")


if __name__ == "__main__":
    main()

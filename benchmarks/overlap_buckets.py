"""Step time against DDP bucket size, overlapped and not, on real ranks (the U-shaped curve of chapter 7).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/overlap_buckets.py [--ranks 4] [--latency 50us]

Prints, for each bucket capacity, the number of buckets, the step time with the buckets
all-reduced during the backward pass and after it, the exposed communication and the overlap
fraction read from the trace (``netlab.observe.analysis``), and the alpha-beta pipeline prediction.
"""
from __future__ import annotations

import argparse

import netlab
from netlab.observe import analysis
from netlab.dataparallel import buckets, overlap, train
from netlab.net.network import network
from netlab.net.presets import device
from netlab.units import fmt_bytes, fmt_time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--bandwidth", default="10Gbit/s")
    ap.add_argument("--latency", default="50us")
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=256)
    a = ap.parse_args()
    net, dev = network(a.bandwidth, a.latency), device("cpu-core")
    prof = buckets.backward_profile(a.width, a.layers, a.batch)
    size = dict(zip(prof.order, prof.nbytes))
    opt = dev.seconds(2 * train.parameter_count(a.width, a.layers))
    print(f"{a.ranks} ranks, {net.describe()}, MLP {a.width} x {a.layers}, batch {a.batch}, "
          f"gradients {fmt_bytes(sum(prof.nbytes))}, compute {fmt_time(dev.seconds(prof.total_flops))}")
    print(f"{'bucket':>10} {'buckets':>7} {'overlapped':>11} {'predicted':>10} {'after bwd':>10} "
          f"{'exposed':>10} {'overlap':>8}")
    for cap in (1, 20_000, 100_000, 300_000, 600_000, 10**12):
        plan = buckets.plan(prof, cap)
        runs = {ov: netlab.run(overlap.overlapped_step, ranks=a.ranks, network=net, device=dev, width=a.width,
                                layers=a.layers, batch=a.batch, bucket_bytes=cap, overlap=ov).trace
                for ov in (True, False)}
        row = max(analysis.breakdown(runs[True]), key=lambda r: r["exposed_comm_s"])
        want = overlap.pipeline_time([sum(size[i] for i in b) for b in plan],
                                     [dev.seconds(f) for f in buckets.bucket_ready_flops(prof, plan)],
                                     dev.seconds(prof.total_flops), a.ranks, link=net.nic, optimizer_s=opt)
        print(f"{fmt_bytes(cap):>10} {len(plan):>7} {fmt_time(runs[True].makespan):>11} "
              f"{fmt_time(want['total_s']):>10} {fmt_time(runs[False].makespan):>10} "
              f"{fmt_time(row['exposed_comm_s']):>10} {row['overlap_frac']:>8.0%}")


if __name__ == "__main__":
    main()

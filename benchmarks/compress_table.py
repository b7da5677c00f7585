"""Chapter 4's figures: the table of compression methods, and where each stops paying.

    python benchmarks/compress_table.py [--ranks 4] [--steps 300] [--width 128] [--device cpu-core]

1. Every method of ``netlab.compress.table.TABLE`` trains the chapter's MLP (64-128-128-10, plain SGD,
   lr 0.1, 32 samples per rank) on real gloo ranks for `steps` steps, without and with error
   feedback, next to the fp32 baseline: final test accuracy, payload bytes per rank per step, the
   compression ratio (fp32 bytes / payload bytes) and the bytes one rank really sent per step.
2. One real step of each method (with error feedback where it has it) at 10 bandwidths from
   100 Mbit/s to 400 Gbit/s, compress/decompress compute from the per-element codec model on the
   device preset (netlab/compress/codec_cost.py; --codec measured times it here instead): the
   bandwidth above which it stops beating the fp32 ring all-reduce.
Times are virtual (latency 5 us); with the default codec model nothing depends on the machine.
Units: B = bytes, Gbit/s = 1e9 bit/s.
"""
import argparse
import time

from netlab.compress import pays, table
from netlab.compress.codec_cost import describe_codec

from _harness import machine


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--device", default="cpu-core")
    ap.add_argument("--skip-training", action="store_true", help="only the crossover sweep")
    ap.add_argument("--codec", choices=["model", "measured", "free"], default="model")
    args = ap.parse_args()
    print(f"# {machine()} at the start", flush=True)
    start = time.perf_counter()
    if not args.skip_training:
        print(f"netlab compress: {args.ranks} ranks, {args.steps} steps, MLP width {args.width}, plain SGD lr 0.1, "
              f"1 Gbit/s / 5 us (accuracy does not depend on the network)")
        rows = table.method_table(table.TABLE, ranks=args.ranks, steps=args.steps, width=args.width, progress=True,
                                  codec=args.codec)
        print(table.format_table(rows))
        print(f"(DGC keeps momentum 0.9 in its memory; the others use plain SGD)   [{time.perf_counter() - start:.0f} s]\n")
    sweep = [(m, options, m not in ("none", "randomk")) for m, options in table.TABLE if m != "threshold"]
    rows = pays.step_times(sweep, ranks=args.ranks, width=args.width, device=args.device, progress=True,
                           codec=args.codec)
    print(f"when it pays: one real step per method and bandwidth, {args.ranks} ranks, width {args.width}, "
          f"device {args.device}, {describe_codec(args.codec)}")
    print(f"{'method':36s} {'payload B':>10s} {'codec Gbit/s':>12s} {'x at 100Mbit/s':>15s} {'x at 400Gbit/s':>15s}  pays below")
    base = {r["bandwidth"]: r["step_s"] for r in rows if r["method"] == "none"}
    for row in pays.crossover_table(rows):
        lab = row["method"]
        fast = next(r for r in rows if r["label"] == lab and r["bandwidth"] == "400Gbit/s")
        print(f"{lab:36s} {row['payload_bytes']:10.0f} {row['codec Gbit/s']:12.2f} "
              f"{row['speedup at 100Mbit/s']:14.2f}x {base['400Gbit/s'] / fast['step_s']:14.2f}x  {row['pays below']}")
    print(f"fp32 step: {base['100Mbit/s'] * 1e3:.3f} ms at 100 Mbit/s, {base['400Gbit/s'] * 1e3:.3f} ms at 400 Gbit/s "
          f"(virtual)   [{time.perf_counter() - start:.0f} s in all; {machine()} at the end]")


if __name__ == "__main__":
    main()

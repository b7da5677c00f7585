"""``netlab step``: one data-parallel training step on real ranks, timed on an emulated network.

    python -m netlab step --ranks 8 --bandwidth 10Gbit/s --latency 5us --json
    python -m netlab step --ranks 8 --preset 100GbE --width 2048
    python -m netlab step --ranks 8 --bucket 1M --overlap --json      # DDP buckets during backward
    torchrun --nproc-per-node 4 -m netlab step --wall         # a real cluster, wall clock
"""
from __future__ import annotations

import os

from ..net.presets import DEVICES, LINKS
from .. import validate
from ..units import fmt_bytes, fmt_time
from . import emit


def add_parser(p) -> None:
    p.add_argument("--ranks", type=int, default=None, help="data-parallel ranks, 1-16 (default 4; torchrun's under torchrun)")
    p.add_argument("--bandwidth", default=None, help="NIC bandwidth per direction, e.g. 10Gbit/s (default 10Gbit/s)")
    p.add_argument("--latency", default=None, help="one-way latency alpha, e.g. 5us (default 5us)")
    p.add_argument("--preset", choices=sorted(LINKS), default=None, help="a named link (bandwidth and latency)")
    p.add_argument("--width", type=int, default=512, help="hidden width of the MLP (gradient ~100 KB at 128, ~50 MB at 3500)")
    p.add_argument("--layers", type=int, default=2, help="hidden layers (default 2)")
    p.add_argument("--batch", type=int, default=32, help="samples per rank per step (default 32)")
    p.add_argument("--algo", default="ring", help="all-reduce algorithm (default ring)")
    p.add_argument("--device", choices=sorted(DEVICES), default="cpu-core", help="compute device preset (default cpu-core)")
    p.add_argument("--efficiency", type=float, default=0.5, help="fraction of the device's peak reached (default 0.5)")
    p.add_argument("--wall", action="store_true", help="no emulated network: time the real run with the wall clock")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome/Perfetto trace of the step to FILE")
    p.add_argument("--bucket", default=None, help="DDP gradient bucket capacity, e.g. 1M (bytes; default: one flat all-reduce)")
    p.add_argument("--overlap", action="store_true", help="all-reduce each bucket during the backward pass (DDP's overlap)")
    p.add_argument("--json", action="store_true", help="print JSON (seconds of the clock in use)")


def main(args) -> int:
    from ..dataparallel.step import measure_step
    ranks = args.ranks
    if ranks is None:
        ranks = int(os.environ["WORLD_SIZE"]) if "WORLD_SIZE" in os.environ else 4
    if args.preset is None:                              # '' is a value (refused), not "the default"
        args.bandwidth = "10Gbit/s" if args.bandwidth is None else args.bandwidth
        args.latency = "5us" if args.latency is None else args.latency
    if args.trace is not None:                           # before the run, not after it
        validate.writable_file(args.trace, "trace")
    r = measure_step(ranks=ranks, bandwidth=args.bandwidth, latency=args.latency, preset=args.preset,
                     width=args.width, layers=args.layers, batch=args.batch, algo=args.algo,
                     device=args.device, efficiency=args.efficiency, emulate=not args.wall,
                     bucket=args.bucket, overlap=args.overlap)
    if args.trace and int(os.environ.get("RANK", "0")) == 0:
        r.trace.save(args.trace)
    share = r.comm_s / r.total_s if r.total_s else 0.0
    text = "\n".join([
        f"netlab step: {r.ranks} ranks, MLP width {r.setup['width']} x {r.setup['layers']} layers, "
        f"{fmt_bytes(r.grad_bytes)} of gradients, {r.setup['algo']} all-reduce",
        f"  network  {r.setup['network']}",
        f"  device   {r.setup['device']} at {r.setup['efficiency']:.0%} of peak   clock: {r.clock}",
        f"  compute  {fmt_time(r.compute_s)}",
        f"  comm     {fmt_time(r.comm_s)}  ({share:.0%} of the step)",
        *([f"  buckets  {len(r.setup['buckets'])} ({'overlapped' if r.setup['overlap'] else 'after backward'}), "
           f"exposed comm {fmt_time(r.setup['exposed_comm_s'])}, overlap {r.setup['overlap_frac']:.0%}"]
          if "buckets" in r.setup else []),
        f"  total    {fmt_time(r.total_s)}",
        f"  loss     {r.loss:.4f}",
    ])
    emit(r.as_dict(), args.json, text)
    return 0

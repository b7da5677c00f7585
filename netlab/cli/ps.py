"""``netlab ps``: parameter-server training on real ranks: step time, per-server bytes, staleness, accuracy.

    python -m netlab ps --workers 8 --servers 2 --sharding hash --mode ssp --staleness 2 --json
    python -m netlab ps --workers 8 --servers 1 --bandwidth 1Gbit/s --steps 5      # the one-server hotspot
    python -m netlab ps --workers 8 --servers 2 --mode async --stragglers 2 --slowdown 4
"""
from __future__ import annotations

from .. import validate
from ..units import fmt_bytes, fmt_time
from . import emit


def add_parser(p) -> None:
    p.add_argument("--workers", type=int, default=8, help="worker ranks (default 8); workers + servers <= 16")
    p.add_argument("--servers", type=int, default=2, help="parameter-server ranks (default 2)")
    p.add_argument("--sharding", default="hash", help="range (ps-lite) or hash (BytePS) (default hash)")
    p.add_argument("--colocated", action="store_true",
                   help="every rank is a worker and a server (k = workers; BSP only): all-reduce's traffic")
    p.add_argument("--partition-bytes", type=int, default=None,
                   help="bytes per chunk (default 16384; 0 with range: one message per server)")
    p.add_argument("--mode", default="bsp", help="bsp, async or ssp (default bsp)")
    p.add_argument("--staleness", type=int, default=2, help="SSP bound s: at most s steps ahead of the slowest (default 2)")
    p.add_argument("--bandwidth", default="10Gbit/s", help="NIC bandwidth per direction (default 10Gbit/s)")
    p.add_argument("--latency", default="5us", help="one-way latency alpha (default 5us)")
    p.add_argument("--steps", type=int, default=100, help="steps per worker (default 100)")
    p.add_argument("--width", type=int, default=128, help="hidden width of chapter 1's MLP (default 128: ~105 KB)")
    p.add_argument("--batch", type=int, default=32, help="samples per worker per step (default 32)")
    p.add_argument("--lr", type=float, default=0.2, help="server-side SGD learning rate (default 0.2)")
    p.add_argument("--momentum", type=float, default=0.0, help="server-side momentum (default 0)")
    p.add_argument("--stragglers", type=int, default=0, help="workers slowed down in each step (default 0)")
    p.add_argument("--slowdown", type=float, default=1.0, help="their compute-time factor (default 1)")
    p.add_argument("--straggle", default="random", help="random (a new set each step) or fixed (the last workers)")
    p.add_argument("--eval-every", type=int, default=10, help="worker 0 evaluates every N steps (default 10)")
    p.add_argument("--seed", type=int, default=0, help="model, data order and stragglers (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON (virtual seconds, bytes)")


def main(args) -> int:
    from ..ps import run_ps
    validate.whole(args.eval_every, "eval-every", 1)     # the library's 0 (no evaluation) has no accuracy to print
    r = run_ps(workers=args.workers, servers=args.servers, sharding=args.sharding, mode=args.mode,
               staleness=args.staleness, bandwidth=args.bandwidth, latency=args.latency, steps=args.steps,
               width=args.width, batch=args.batch, lr=args.lr, momentum=args.momentum,
               stragglers=args.stragglers, slowdown=args.slowdown, straggle=args.straggle,
               partition_bytes=args.partition_bytes, eval_every=args.eval_every, seed=args.seed,
               colocated=args.colocated)
    total = sum(r.server_bytes)
    who = "ranks   " if r.setup.get("colocated") else "servers "
    lines = [
        f"netlab ps: {args.workers} workers, "
        + (f"each also a server" if r.setup.get("colocated") else f"{args.servers} servers")
        + f" ({r.setup['sharding']}, {fmt_bytes(r.setup['model_bytes'])} model), mode {r.setup['mode']}"
        + (f" s={args.staleness}" if r.setup["mode"] == "ssp" else ""),
        f"  network  {r.setup['network']}",
        f"  step     {fmt_time(r.step_s)}   (push/pull {fmt_time(r.comm_s)} on the slowest worker)",
        f"  {who} " + "   ".join(f"#{i}: {fmt_bytes(b)} ({b / total:.0%}), port busy {u:.0%}"
                                    for i, (b, u) in enumerate(zip(r.server_bytes, r.server_util))),
        f"  staleness {r.staleness}   (updates between read and apply: count)",
        f"  accuracy {r.accuracy:.3f} after {args.steps} steps",
    ]
    if r.setup["mode"] == "ssp":
        lines.insert(5, f"  ahead    at most {r.max_gap} step(s) ahead of the slowest (bound {args.staleness})")
    emit(r.as_dict(), args.json, "\n".join(lines))
    return 0

"""``netlab bench``: an nccl-tests-style table for any collective and algorithm on real ranks.

    python -m netlab bench allreduce --ranks 8 --algo ring --bandwidth 100Gbit/s --latency 5us --sizes 1K:256M
    python -m netlab bench allgather --ranks 6 --algo all --preset 25GbE --check
    python -m netlab bench allreduce --ranks 8 --algo ina --chunks 16 --bandwidth 100Gbit/s   # through a switch rank
    python -m netlab bench alltoall --ranks 8 --algo all --bandwidth 100Gbit/s --check      # expert parallelism
    python -m netlab bench allreduce --ranks 4 --algo ring --sizes 1M,16M          # wall clock, loopback
    torchrun --nnodes 2 --nproc-per-node 8 ... -m netlab bench allreduce --algo all  # a real cluster
"""
from __future__ import annotations

import sys

from ..net.presets import LINKS
from ..units import parse_size_range
from . import emit

COLLECTIVES = ["allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "alltoall"]
DEFAULT_ALGO = {"broadcast": "tree", "reduce": "tree", "alltoall": "pairwise"}     # others: ring


def add_parser(p) -> None:
    p.add_argument("collective", choices=COLLECTIVES, help="which collective")
    p.add_argument("--algo", default=None,
                   help="algorithm, 'all', 'torch' (torch's own, wall clock only), or 'ina' (all-reduce through a "
                        "switch rank, emulated network only); default: ring, tree for broadcast/reduce, "
                        "pairwise for alltoall")
    p.add_argument("--chunks", type=int, default=None,
                   help="--algo ina: chunks pipelined through the switch (default 16)")
    p.add_argument("--ranks", type=int, default=None, help="ranks, 1-16 (default 8; torchrun's under torchrun)")
    p.add_argument("--sizes", default="1K:64M", help="S from MIN:MAX (doubling) or a list a,b,c (default 1K:64M)")
    p.add_argument("--bandwidth", default=None, help="emulated NIC bandwidth, e.g. 100Gbit/s (omit all three: wall clock)")
    p.add_argument("--latency", default=None, help="emulated one-way latency, e.g. 5us")
    p.add_argument("--preset", choices=sorted(LINKS), default=None, help="a named link")
    p.add_argument("--ranks-per-host", type=int, default=1, help="ranks per host (hierarchical algorithms)")
    p.add_argument("--intra-preset", choices=sorted(LINKS), default=None, help="intra-host link (default NVLink3)")
    p.add_argument("--intra-bandwidth", default=None, help="intra-host bandwidth")
    p.add_argument("--intra-latency", default=None, help="intra-host latency")
    p.add_argument("--dtype", default="float", help="float, half, bfloat16, double, int32, int64 (default float)")
    p.add_argument("--check", action="store_true", help="move real data and compare with torch's own collective")
    p.add_argument("--iters", type=int, default=5, help="timed iterations on the wall clock (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed iterations first (default 1)")
    p.add_argument("--json", action="store_true", help="print a JSON list of rows")


def _table(rows, network_text: str) -> str:
    r0 = rows[0]
    head = [f"# netlab bench: {r0['collective']}, {r0['ranks']} ranks, {r0['clock']} clock; network: {network_text}",
            "# S = whole buffer (nccl-tests); algbw = S/t; busbw = algbw x nccl-tests' factor; GB = 1e9 B",
            f"# {'algo':>18} {'size(B)':>12} {'count':>11} {'type':>8} {'time(us)':>11} {'formula(us)':>11} "
            f"{'algbw(GB/s)':>11} {'busbw(GB/s)':>11} {'check':>6}"]
    formula = lambda r: f"{r['predicted_s'] * 1e6:11.2f}" if r["predicted_s"] is not None else f"{'-':>11}"  # noqa: E731
    body = [f"  {r['algo']:>18} {r['bytes']:12d} {r['count']:11d} {r['type']:>8} {r['time_s'] * 1e6:11.2f} "
            f"{formula(r)} "
            f"{r['algbw_GBps']:11.3f} {r['busbw_GBps']:11.3f} {r['check'] or '-':>6}" for r in rows]
    return "\n".join(head + body)


def _ina(args, ranks, sizes, net) -> int:
    """In-network aggregation: `ranks` workers and one switch rank (``netlab.codesign.ina``)."""
    from ..codesign import ina
    if args.algo != "ina":
        raise ValueError("chunks: only for --algo ina")
    if args.collective != "allreduce":
        raise ValueError(f"algo: 'ina' is an all-reduce, not a {args.collective}")
    if net is None:
        raise ValueError("algo: 'ina' runs on an emulated network: give --bandwidth, --latency or --preset")
    if args.dtype not in ("float", "float32"):
        raise ValueError("dtype: 'ina' benchmarks float32 only")
    chunks = 16 if args.chunks is None else args.chunks
    from .. import validate
    validate.whole(chunks, "chunks", 1, int_only=True)
    rows = ina.bench(ranks, sizes, net, chunks=chunks, check=args.check)
    emit(rows, args.json, _table(rows, f"{net.describe()}; a switch rank with a port per worker, "
                                       f"{chunks} chunks"))
    if args.check and any(r["check"] != "ok" for r in rows):
        print("netlab bench: error: some results differ from torch's own collective", file=sys.stderr)
        return 1
    return 0


def main(args) -> int:
    import os

    from .. import collectives
    from ..collectives.bench import Timing, bench, check_bench
    from ..net.network import intra_link, network
    ranks = args.ranks if args.ranks is not None else int(os.environ.get("WORLD_SIZE", 8))
    sizes = parse_size_range(args.sizes, "sizes")
    emulate = any(v is not None for v in (args.bandwidth, args.latency, args.preset))
    if not emulate:
        for flag in ("ranks_per_host", "intra_bandwidth", "intra_latency", "intra_preset"):
            if getattr(args, flag) not in (None, 1):
                raise ValueError(f"{flag}: describes an emulated network: give --bandwidth, --latency or --preset too")
    net = None
    if emulate:
        if args.preset is None:                          # '' is a value (refused), not "the default"
            args.bandwidth = "10Gbit/s" if args.bandwidth is None else args.bandwidth
            args.latency = "5us" if args.latency is None else args.latency
        given = (args.intra_bandwidth, args.intra_latency, args.intra_preset)
        intra = intra_link(*given) if args.ranks_per_host > 1 or any(v is not None for v in given) else None
        net = network(args.bandwidth, args.latency, args.preset, ranks_per_host=args.ranks_per_host, intra=intra)
    if args.algo == "ina" or args.chunks is not None:
        return _ina(args, ranks, sizes, net)
    default = DEFAULT_ALGO.get(args.collective, "ring")
    algos = [default if args.algo is None else args.algo]
    if algos == ["all"]:
        algos = [a for a in collectives.ALGORITHMS[args.collective]
                 if not (a.startswith("hierarchical") and ranks % args.ranks_per_host)]
    for algo in algos:                                   # every check before the first rank starts
        check_bench(args.collective, algo, ranks, sizes, network=net, dtype=args.dtype, check=args.check,
                    timing=Timing(iters=args.iters, warmup=args.warmup))
    rows = []
    for algo in algos:
        rows += bench(args.collective, algo, ranks, sizes, network=net, dtype=args.dtype, check=args.check,
                      timing=Timing(iters=args.iters, warmup=args.warmup))
    text = _table(rows, net.describe() if net else "none: wall clock on the real transport")
    emit(rows, args.json, text)
    if args.check and any(r["check"] != "ok" for r in rows):
        print("netlab bench: error: some results differ from torch's own collective", file=sys.stderr)
        return 1
    return 0

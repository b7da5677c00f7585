"""``netlab sim``: a collective (or a traffic pattern) on thousands of simulated ranks over a fabric.

    python -m netlab sim allreduce --topology fattree:16 --ranks 1024 --algo ring --size 64M --json
    python -m netlab sim allreduce --topology spineleaf:8:4:2 --ranks 128 --placement shuffled --seed 3
    python -m netlab sim allreduce --topology fattree:16 --gpus-per-host 8 --nics-per-host 8 --algo rail
    python -m netlab sim ps --topology fattree:8 --servers 4 --size 16M        # parameter-server push/pull

Prints the simulated time, algbw and busbw (nccl-tests' factors, GB = 1e9 B), the most utilized
link (the bottleneck) and its utilization, the slowest flow's share of its line rate, the
uncontended alpha-beta formula where one applies, and ``wall_s``: how long the simulation itself took.
"""
from __future__ import annotations

from .. import validate
from ..net.presets import LINKS
from ..units import fmt_bytes, fmt_time, parse_bytes, parse_time
from . import emit

MAX_SIM_RANKS = 16_384      # a ring all-reduce on p ranks is 2(p-1) rounds of p flows: 5e8 flows here
MAX_GPUS_PER_HOST = 64


def fabric_hosts(spec: str) -> int | None:
    """Hosts a topology spec asks for by itself (fattree:K, spineleaf:L:S:R, torus:XxY), before building it."""
    parts = str(spec).lower().replace("-", "").replace("_", "").split(":")
    try:
        if parts[0] == "fattree" and len(parts) == 2:
            return int(parts[1]) ** 3 // 4                       # k^3/4 hosts
        if parts[0] == "spineleaf" and len(parts) == 4:
            return int(parts[1]) * 16                            # 16 hosts per leaf by default
        if parts[0] == "torus" and len(parts) == 2:
            x, y = parts[1].split("x")
            return int(x) * int(y)
    except ValueError:
        return None                                              # fabrics.parse says what is wrong
    return None


def check_scale(args) -> None:
    """Refuse, with the estimate, a simulation too big for this machine (memory grows with ranks^2)."""
    if args.ranks is not None:
        validate.too_big("ranks", args.ranks, MAX_SIM_RANKS, "simulated ranks")
    hosts = fabric_hosts(args.topology)
    if hosts is not None:
        validate.too_big("topology", hosts * args.gpus_per_host, MAX_SIM_RANKS,
                         f"{args.topology} has {hosts} hosts x {args.gpus_per_host} accelerators = ranks")

COLLECTIVES = ["allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "ps", "alltoall"]


def add_parser(p) -> None:
    p.add_argument("collective", choices=COLLECTIVES, help="a collective (alltoall: expert parallelism's), or the "
                                                           "parameter server's traffic (ps)")
    p.add_argument("--topology", default="fattree:8",
                   help="fattree:K, spineleaf:LEAVES:SPINES:RATIO, star, ring, torus[:XxY] (default fattree:8)")
    p.add_argument("--ranks", type=int, default=None, help="simulated ranks (default: every accelerator)")
    p.add_argument("--algo", default=None, help="algorithm (default ring; tree for broadcast/reduce; concurrent, "
                                                "all blocks at once, for alltoall)")
    p.add_argument("--size", default="64M", help="S, the collective's buffer, e.g. 64M, 1GB (default 64M)")
    p.add_argument("--placement", default="ordered", help="ordered (topology-aware) or shuffled")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffled placement and of the ECMP hash")
    p.add_argument("--routing", default="ecmp", help="ecmp (hash), spray (per packet) or adaptive")
    p.add_argument("--link", choices=sorted(LINKS), default="100GbE", help="NIC and fabric link preset")
    p.add_argument("--bandwidth", default=None, help="NIC bandwidth instead of the preset's, e.g. 400Gbit/s")
    p.add_argument("--latency", default=None, help="NIC alpha instead of the preset's, e.g. 2us")
    p.add_argument("--hop-latency", default="0", help="latency added per switch passed (default 0)")
    p.add_argument("--gpus-per-host", type=int, default=1, help="accelerators per server (default 1)")
    p.add_argument("--nics-per-host", type=int, default=None, help="NICs per server (default: one per accelerator)")
    p.add_argument("--no-rail", action="store_true", help="wire a server's NICs to one ToR instead of rails")
    p.add_argument("--intra", choices=sorted(LINKS), default="NVLink3", help="intra-host link (default NVLink3)")
    p.add_argument("--servers", type=int, default=1, help="parameter servers for 'ps' (default 1)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _text(row: dict, description: str) -> str:
    lines = [f"# netlab sim: {row['collective']} ({row['algo']}) on {row['ranks']} simulated ranks; "
             f"{row['placement']} placement, {row['routing']} routing",
             f"# topology: {description}",
             f"  size (S)        {fmt_bytes(row['bytes'])}",
             f"  time            {fmt_time(row['time_s'])}" +
             (f"   (uncontended formula {fmt_time(row['formula_s'])})" if row.get("formula_s") else ""),
             f"  algbw / busbw   {row['algbw_GBps']:.3f} / {row['busbw_GBps']:.3f} GB/s  (GB = 1e9 B)",
             f"  bottleneck      {row['bottleneck']} ({row['bottleneck_kind']}), {row['bottleneck_util']:.0%} utilized"
             + (f", {row['links_as_busy']} links as busy" if row["links_as_busy"] > 1 else ""),
             f"  slowest flow    {row['slowest_flow_rate']:.2f} x line rate",
             f"  simulated in    {row['wall_s']:.3f} s ({row['steps']} steps)"]
    return "\n".join(lines)


def main(args) -> int:
    from .. import collectives, sim
    from ..collectives import cost
    from ..net import fabrics
    from ..net.network import Link
    from ..net.topology import Host
    from ..sim.traffic import parameter_server
    nbytes = parse_bytes(args.size, "size")
    if args.ranks is not None:
        validate.whole(args.ranks, "ranks", 1)
    validate.whole(args.servers, "servers", 1, MAX_SIM_RANKS)
    validate.whole(args.gpus_per_host, "gpus-per-host", 1, MAX_GPUS_PER_HOST)
    nics = args.gpus_per_host if args.nics_per_host is None else args.nics_per_host
    if nics < 1 or args.gpus_per_host % nics:
        raise ValueError(f"nics-per-host: must divide gpus-per-host ({args.gpus_per_host}), got {nics}")
    check_scale(args)
    nic = Link.of(args.bandwidth, args.latency, args.link)
    host = Host(args.gpus_per_host, nics=nics, rail=not args.no_rail, intra=args.intra)
    topo = fabrics.parse(args.topology, args.ranks, nic, host, hop_latency=parse_time(args.hop_latency, "hop-latency"))
    ranks = args.ranks or topo.size
    simulator = sim.Simulator(topo, ranks, args.placement, args.routing, seed=args.seed)
    formula = None
    if args.collective == "ps":
        validate.whole(args.servers, "servers", 1, ranks - 1 if ranks > 1 else 1)
        count = max(1, nbytes // 4)
        result = simulator.run(parameter_server(ranks, count, args.servers), 4, "allreduce", f"ps:{args.servers}",
                               nbytes=count * 4)
    else:
        default = {"broadcast": "tree", "reduce": "tree", "alltoall": "concurrent"}.get(args.collective, "ring")
        collective, algo = collectives.resolve(args.collective, default if args.algo is None else args.algo)
        result = sim.simulate(simulator, collective, algo, nbytes)
        one_per_host = collective != "alltoall" or topo.accelerators_per_host == 1   # its formula: one rank per host
        if (not algo.startswith("hierarchical") or ranks % topo.accelerators_per_host == 0) and one_per_host:
            formula = cost.time(collective, algo, ranks, result.nbytes, network=topo.network())
    row = result.summary()
    row["formula_s"] = formula
    row["description"] = topo.description
    emit(row, args.json, _text(row, topo.description))
    return 0

"""The same collective on real ranks and in the simulator, side by side.

Real ranks: ``netlab.run`` on an emulated ``Network`` (per-rank NIC ports, hosts with an
intra-host link), size-only messages, virtual time. Simulator: the topology that network
describes (``fabrics.from_network``: one non-blocking switch, a NIC per rank, the intra-host
link), the same schedule. Both report their time and every message sent; where the two models
overlap they must agree (a test holds them to 1 % and the identical message pattern).
``real_vs_sim`` prints the two side by side for several algorithms and sizes (chapter 5's table).
"""
from __future__ import annotations

from ..collectives import cost
from ..runtime import launch
from ..collectives import CALLS, counts, resolve
from ..net import fabrics
from ..net.network import Network
from ..units import fmt_bytes, fmt_time, parse_bytes
from . import Simulator, simulate


def _timed(comm, collective, algo, count):
    """Runs on every rank: one size-only collective; its virtual duration on this rank."""
    start = comm.now()
    CALLS[collective](comm, None, algo=algo, count=count)
    return comm.now() - start


def side_by_side(network: Network, ranks: int, collective: str = "allreduce", algo: str = "ring",
                 *, nbytes: int = 1 << 20, timeout: float = 60.0) -> dict:
    """Run one collective both ways; times in seconds, S in bytes (GB = 1e9 B)."""
    collective, algo = resolve(collective, algo)
    count, _, s = counts(collective, nbytes, ranks, 4)
    res = launch.run(_timed, collective, algo, count, ranks=ranks, network=network, timeout=timeout)
    real_s = max(res.values)
    topo = fabrics.from_network(network, ranks)
    r = simulate(Simulator(topo, ranks, gamma=network.gamma), collective, algo, s, ranks_per_host=network.ranks_per_host, record=True)
    real_pattern, sim_pattern = res.trace.message_pattern(), r.message_pattern()
    return {"collective": collective, "algo": algo, "ranks": ranks, "bytes": s,
            "real_s": real_s, "sim_s": r.time_s, "formula_s": cost.time(collective, algo, ranks, s, network=network),
            "error": r.time_s / real_s - 1 if real_s > 0 else 0.0,
            "messages": len(real_pattern), "same_pattern": real_pattern == sim_pattern,
            "real_wall_s": res.wall_s, "sim_wall_s": r.wall_s, "sim": r}


def real_vs_sim(network, ranks: int, algos, sizes) -> list[dict]:
    """The same all-reduces on real ranks and in the simulator; prints a table and returns its rows."""
    rows = []
    print(f"# {ranks} ranks; {network.describe()}")
    print(f"# {'algo':18s} {'S':>9s} {'real ranks':>11s} {'simulator':>11s} {'difference':>10s} {'messages':>8s}"
          f"  same messages?")
    for algo in algos:
        for size in sizes:
            d = side_by_side(network, ranks, "allreduce", algo, nbytes=parse_bytes(size, "size"))
            d.pop("sim")
            rows.append(d)
            print(f"  {algo:18s} {fmt_bytes(d['bytes']):>9s} {fmt_time(d['real_s']):>11s} {fmt_time(d['sim_s']):>11s}"
                  f" {d['error']:+10.3%} {d['messages']:8d}  {'yes' if d['same_pattern'] else 'NO'}")
    return rows

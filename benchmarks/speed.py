"""The speed set: each of the lab's speed targets, measured once here, in one table (``make bench``).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/speed.py

One row per target: what is timed, the figure measured now, the target, whether it was met, and the
script that measures it in full (more cases, repetitions, the breakdown). The targets are the ones
those scripts and the README state, for an idle 2-core machine; a loaded machine measures its load
too, so the load is printed before and after, and a missed target on a loaded machine says little.
About a minute on 2 idle cores.
"""
import contextlib
import io
import os
import signal
import statistics
import sys
import time

from _harness import machine, seconds, table, timed


def warm_run():
    import netlab
    netlab.run(lambda c: c.rank, ranks=8)                          # start the pool: not timed
    return statistics.median(seconds(lambda: netlab.run(lambda c: c.rank, ranks=8), 10))


def incast_round():
    from netlab.fabric import Congestion, Incast, incast
    return timed(lambda: incast(Incast(senders=16, block=256 * 1024, bandwidth=1e9 / 8,
                                       switch=Congestion("reno", buffer=64 * 1024))))[0]


def ch6_panel_change():
    from netlab.ui.ch6 import CongestionPanel
    with contextlib.redirect_stdout(io.StringIO()):
        panel = CongestionPanel(senders=16, block="256K", buffer="64K", transport="reno")
        walls = []
        for name, value in (("senders", 8), ("buffer", "32K"), ("transport", "dctcp"), ("transport", "dcqcn"),
                            ("pfc", True)):
            walls.append(timed(lambda: panel.set(**{name: value}))[0])
    return statistics.median(walls)


def sim_ring_1024():
    from netlab import sim
    from netlab.net import fabrics
    topo = fabrics.fat_tree(16)
    return timed(lambda: sim.simulate(sim.Simulator(topo, 1024, placement="shuffled", seed=1), "allreduce", "ring", 64 << 20))[0]


def sim_hierarchical_4096():
    from netlab import sim
    from netlab.net import fabrics
    from netlab.net.topology import Host
    topo = fabrics.fat_tree(16, host=Host(8, nics=1), hosts=512)
    return timed(lambda: sim.simulate(sim.Simulator(topo, 4096, seed=1), "allreduce", "hierarchical", 64 << 20))[0]


def _exit_rank_1(comm):
    import torch
    if comm.rank == 1:
        os._exit(3)
    comm.recv(torch.zeros(4), 1)


def _ignore_sigterm(comm):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(600)


def rank_died():
    import netlab
    netlab.run(lambda c: c.rank, ranks=4)                          # a warm pool: only the failure is timed
    start = time.perf_counter()
    try:
        netlab.run(_exit_rank_1, ranks=4, network=netlab.network("10Gbit/s", "5us"))
    except netlab.RankDied:
        return time.perf_counter() - start
    raise RuntimeError("the rank's exit was not reported as RankDied")


def teardown():
    import netlab
    netlab.run(lambda c: c.rank, ranks=4)
    start = time.perf_counter()
    try:
        netlab.run(_ignore_sigterm, ranks=4, timeout=1)
    except netlab.RankTimeout:
        return time.perf_counter() - start - 1
    raise RuntimeError("the run did not time out")


CASES = [  # (what, measure -> seconds, target seconds, the script that measures it in full)
    ("warm run, 8 ranks (median of 10)", warm_run, 1.0, "launch.py"),
    ("incast round, 16 x 256 KB into 1 Gbit/s, Reno", incast_round, 1.0, "congestion_speed.py"),
    ("chapter 6 panel, one change (median of 5)", ch6_panel_change, 1.0, "congestion_speed.py"),
    ("simulator: ring, 1,024 ranks, k=16, shuffled", sim_ring_1024, 1.0, "sim_speed.py"),
    ("simulator: hierarchical, 4,096 ranks, k=16", sim_hierarchical_4096, 10.0, "sim_speed.py"),
    ("a rank exits: RankDied raised after", rank_died, 1.0, "faults.py"),
    ("teardown of 4 ranks that ignore SIGTERM", teardown, 1.0, "faults.py"),
]


def main() -> int:
    import matplotlib
    matplotlib.use("Agg")
    print(f"netlab speed set; {machine()} at the start", flush=True)
    rows = []
    for what, measure, target, script in CASES:
        got = measure()
        rows.append({"what": what, "measured": f"{got:.3f} s", "target": f"< {target:g} s",
                     "": "met" if got < target else "MISSED", "full figures": f"benchmarks/{script}"})
        print(f"  {what}: {got:.3f} s", file=sys.stderr, flush=True)
    import netlab
    netlab.shutdown()
    print(table(rows, ["what", "measured", "target", "", "full figures"]))
    print(f"{machine()} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Collectives on thousands of simulated ranks over a modelled fabric (chapter 5).

    from netlab import sim
    from netlab.net import fabrics
    topo = fabrics.fat_tree(16)                                    # 1,024 accelerators
    r = sim.simulate(topo, "allreduce", "ring", nbytes=64 << 20)   # the lab's own ring schedule
    r.time_s, r.busbw_GBps, r.bottleneck_label, r.wall_s

The simulator runs the very schedules the real ranks run (``netlab.collectives.schedule``: one
definition of each algorithm), as arrays of sizes, on a ``Topology`` with routing (ECMP hash,
spraying, adaptive) and max-min fair link sharing. See ``simulator.py`` for the time model and what
it leaves out, ``maxmin.py`` for max-min, ``traffic.py`` for non-collective patterns (parameter
server, all-to-all), ``compare.py`` for the same run on real ranks beside it, ``experiments.py``
for chapter 5's measurements (ECMP collisions, oversubscription, hierarchy, NIC designs, scaling).
"""
from __future__ import annotations

from .. import collectives, validate
from ..net.topology import Topology
from .simulator import SimResult, Simulator
from .maxmin import max_min, max_min_rates


def steps(collective: str, algo: str, ranks: int, nbytes: int, *, ranks_per_host: int | None = None,
          element_size: int = 4, root: int = 0):
    """The schedule the real ranks would run, and S: (steps, S)."""
    collective, algo = collectives.resolve(collective, algo)
    _, count, s = collectives.counts(collective, nbytes, ranks, element_size)
    return collectives.schedule(collective, algo, ranks, count, ranks_per_host=ranks_per_host, root=root), s


def simulate(on: Topology | Simulator, collective: str = "allreduce", algo: str = "ring", nbytes: int = 64 << 20, *,
             ranks: int | None = None, ranks_per_host: int | None = None, element_size: int = 4,
             record: bool = False) -> SimResult:
    """Simulate one collective of S = `nbytes` on `ranks` ranks of a topology (default: all of it).

    `on`: the ``Topology``, or a ``Simulator`` of it: where the ranks sit and how flows are routed
    (``Simulator(topology, ranks, placement, routing, seed=..., gamma=...)``), whose routes are reused
    across sizes. Hierarchical algorithms group ranks by the topology's accelerators per host unless
    `ranks_per_host` says otherwise.
    """
    validate.whole(nbytes, "size", 1, int_only=True)                      # bytes
    if isinstance(on, Simulator):
        if ranks is not None:
            raise ValueError("ranks: a Simulator already has its ranks; give them to Simulator(topology, ranks)")
        sim = on
    else:
        sim = Simulator(on, ranks)
    topology = sim.topology
    collective, algo = collectives.resolve(collective, algo)
    g = ranks_per_host or topology.accelerators_per_host
    schedule, s = steps(collective, algo, sim.ranks, nbytes, ranks_per_host=g, element_size=element_size)
    return sim.run(schedule, element_size, collective, algo, nbytes=s, record=record)


def allreduce(on: Topology | Simulator, algo: str = "ring", nbytes: int = 64 << 20, **options):
    """``simulate(on, 'allreduce', algo, nbytes, ...)``."""
    return simulate(on, "allreduce", algo, nbytes, **options)


__all__ = ["Simulator", "SimResult", "simulate", "allreduce", "steps", "counts", "max_min", "max_min_rates"]

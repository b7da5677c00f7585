"""In-network aggregation in the flow simulator: workers stream chunks to a switch node and back.

The same all-reduce as ``netlab.codesign.ina`` (SwitchML, Sapio et al., NSDI'21; SHARP, Graham
et al., 2016), on a ``Topology``: the aggregating switch is one of the fabric's switch nodes, each
worker's chunks travel up its shortest path to it and the sums come back down the reverse path.
All workers stream at once, so the up flows share links by max-min fairness (``maxmin.max_min``),
and so do the down flows; up and down use opposite directions of full-duplex links and never
share. Each chunk of c bytes then takes alpha + c/rate up (alpha: the worker's port latency plus
``hop_latency`` per switch passed, as ``simulator.py`` charges it), c / capacity on the switch's one
aggregator, alpha + c/rate down; chunk j is summed once every worker's chunk j is in, and the
three stages pipeline as a flow shop. On a non-blocking fabric (one switch, ``fabrics.star``) this
is exactly ``netlab.collectives.cost.ina_allreduce`` (a test checks).

Left out: rates changing while the stream runs (a fast worker that finishes early does not give
its share to a slow one), SHARP's tree of aggregating switches (one switch sums everything here),
direct networks (no switch), packets and a limit on chunks in flight.

Returns a ``net.result.SimResult`` (model 'flow', no steps: the chunks pipeline) with an ``InaDetail``.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from ..collectives import cost
from .. import validate
from ..net.result import SimResult
from ..net.topology import KINDS, Topology
from .maxmin import max_min

PCIE = KINDS.index("pcie")


@dataclass(eq=False)
class InaDetail:
    """What an in-network all-reduce on the flow model observes, beside the ``SimResult`` fields every model
    has (``time_s``, ``wall_s``, ``topology``; ``net/result.py``). Read through the result: ``r.busbw_GBps``."""
    ranks: int
    nbytes: int
    chunks: int
    switch: str                   # label of the aggregating switch
    up_rate: np.ndarray           # (ranks,) bytes/s of each worker's stream to the switch
    down_rate: np.ndarray         # (ranks,) bytes/s of the sums back
    result: SimResult | None = field(default=None, repr=False)   # the run it belongs to (set by SimResult)

    @property
    def busbw_GBps(self) -> float:
        time_s = self.result.time_s
        return cost.busbw("allreduce", self.ranks, self.nbytes, time_s) / 1e9 if time_s > 0 else 0.0

    def summary(self) -> dict:
        r = self.result
        return {"topology": r.topology.name, "collective": "allreduce", "algo": "ina", "ranks": self.ranks,
                "bytes": int(self.nbytes), "chunks": self.chunks, "switch": self.switch, "time_s": r.time_s,
                "busbw_GBps": self.busbw_GBps, "wall_s": r.wall_s}


def nearest_switch(topology: Topology, nodes) -> int:
    """The switch node whose farthest worker is nearest (ties: the lowest node id)."""
    g = topology.graph
    switches = [v for v, d in g.nodes(data=True) if d["kind"] == "switch"]
    far = np.zeros(len(switches))
    for v in set(int(n) for n in nodes):
        dist = nx.single_source_shortest_path_length(g, v)
        far = np.maximum(far, [dist.get(s, math.inf) for s in switches])
    return switches[int(np.argmin(far))]


def _paths(topology: Topology, nodes, switch: int, up: bool):
    """(flow, link) pairs and alpha per worker, up to the switch or down from it."""
    g, flow, link, alpha = topology.graph, [], [], []
    for f, v in enumerate(nodes):
        path = nx.shortest_path(g, int(v), switch) if up else nx.shortest_path(g, switch, int(v))
        ids = [g.edges[a, b]["id"] for a, b in zip(path, path[1:])]
        ports = [i for i in ids if topology.link_kind[i] != PCIE]
        port = ports[0] if up else ports[-1]
        hops = sum(g.nodes[n]["kind"] == "switch" for n in path[1:-1])    # switches passed on the way
        alpha.append(topology.latency[port] + topology.hop_latency * hops)
        flow += [f] * len(ids)
        link += ids
    return np.array(flow, dtype=np.int64), np.array(link, dtype=np.int64), np.array(alpha)


def allreduce(topology: Topology, nbytes: int = 64 << 20, ranks: int | None = None, *, chunks: int = 1,
              capacity: float = math.inf, switch: str | None = None, placement="ordered",
              seed: int = 0) -> SimResult:
    """Simulate one in-network all-reduce of S = `nbytes` over `ranks` workers of `topology`.

    `switch`: the label of the aggregating switch (default: the one nearest all the workers);
    `capacity`: bytes/s its aggregator sums; `placement` as ``Topology.placement``.
    """
    started = time.perf_counter()
    validate.whole(nbytes, "size", 1, int_only=True)
    validate.whole(chunks, "chunks", 1, int_only=True)
    if capacity != math.inf:
        validate.positive(capacity, "capacity")
    if topology.direct:
        raise ValueError(f"topology: {topology.name} has no switch to aggregate in")
    ranks = topology.size if ranks is None else ranks
    nodes = topology.endpoints[topology.placement(ranks, placement, seed)]
    if switch is None:
        node = nearest_switch(topology, nodes)
    else:
        found = [v for v, d in topology.graph.nodes(data=True) if d["label"] == switch and d["kind"] == "switch"]
        if not found:
            raise ValueError(f"switch: {topology.name} has no switch labelled {switch!r}")
        node = found[0]
    if ranks == 1:
        detail = InaDetail(ranks=1, nbytes=int(nbytes), chunks=chunks, switch=topology.labels[node],
                           up_rate=np.full(1, np.inf), down_rate=np.full(1, np.inf))
        return SimResult(model="flow", time_s=0.0, wall_s=time.perf_counter() - started, topology=topology,
                         detail=detail)
    rates = {}
    for up in (True, False):
        flow, link, alpha = _paths(topology, nodes, node, up)
        rates[up] = (max_min(flow, link, np.ones(flow.size), topology.capacity, n_flows=ranks), alpha)
    (r_up, a_up), (r_down, a_down) = rates[True], rates[False]
    lengths = np.full(chunks, nbytes / chunks)                  # the closed form's c = S/k
    sent = np.zeros(ranks)                                      # each worker's uplink: chunks back to back
    back = np.zeros(ranks)                                      # each worker's downlink
    summed = 0.0                                                # the aggregator
    for c in lengths:
        sent += a_up + c / r_up
        summed = max(summed, sent.max()) + c / capacity
        back = np.maximum(back, summed) + a_down + c / r_down
    detail = InaDetail(ranks=ranks, nbytes=int(nbytes), chunks=chunks, switch=topology.labels[node], up_rate=r_up,
                       down_rate=r_down)
    return SimResult(model="flow", time_s=float(back.max()), wall_s=time.perf_counter() - started, topology=topology,
                     detail=detail)

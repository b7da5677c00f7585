"""Real ranks on a flow-level fabric: chapter 5's topologies, hosts of several accelerators, timed live.

``netlab.network(..., ranks_per_host=8, congestion=FlowFabric(topology))`` puts real ranks on the
accelerators of a ``netlab.net`` topology (a spine-leaf with oversubscribed uplinks, hosts of g
accelerators behind one shared NIC, ...). Tensors still move through gloo; the launcher's coordinator
(``live.py``, the same conservative simulation as the packet fabric) times every message on the
topology while the program runs:

* a message from rank a to rank b takes the path chapter 5's router gives it (``net.routing``: the
  intra-host link inside a host; PCIe, the host's NIC, the leaf, an ECMP-hashed spine, ... across);
* its alpha is paid where chapter 5's simulator pays it (``sim/simulator.py``): at its out-port (the first
  link of its path that is not PCIe: its intra-host port, or its host's NIC, shared by the host's
  accelerators) and at its in-port (the last such link), each port serving the alphas of its messages
  one after another, in the order they were posted (virtual time; ties in the canonical order
  start, sender, receiver, message). Its bytes start to flow once both ports have served its alpha,
  so a message alone takes alpha + n/B, a ring step alpha + (n/p)/B, and k messages through one port
  k * alpha more;
* its bytes are a fluid flow over every link of its path, sharing each link with the other flows on it
  max-min fairly (``sim.maxmin.FlowSet``); rates are solved again whenever a flow starts or ends;
* it is delivered when its last byte lands; a send completes then too.

Events are flow starts and ends, not packets: a 16 MiB message costs what a 16-byte one does, so the
fabric takes a collective's real sizes. Like the packet fabric it is exact and deterministic: the same
program gives the same times on any machine, idle or loaded.

Left out: packets, queues, drops and transports (chapter 6's and 9's packet fabric, one rank per
host); propagation delay beyond alpha; waiting for the first of several messages (``comm.wait_first``,
which needs a packet fabric's delivery order); a reduction's arithmetic (gamma).
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

import numpy as np

DONE_BYTES = 1e-3            # a flow with less than this left has arrived (float dust of its rate * time)


@dataclass(frozen=True)
class FlowFabric:
    """Where real ranks sit and how their messages are timed on a flow-level fabric.

    topology:  a ``netlab.net`` Topology (``net.fabrics.spine_leaf(...)``, ``fat_tree``, ...); rank r sits
               on accelerator ``placement[r]``.
    placement: 'ordered' (rank r on accelerator r: hosts filled in order), 'shuffled' (hosts in a seeded
               random order), or a sequence of accelerator slots, one per rank.
    routing:   'ecmp' (one hashed path per sender -> receiver pair, chapter 5's) or 'spray'.
    seed:      the ECMP hash's seed (and the shuffle's).
    causal:    refuse a send that starts before the sender's last reported time (its clock moved back):
               a judge's guarantee that a program cannot buy time by rewriting its own clock. Off by
               default, since code that keeps a second timeline (``netlab.dataparallel.overlap``) sets its clock back.
    """
    topology: object
    placement: object = "ordered"
    routing: str = "ecmp"
    seed: int = 0
    causal: bool = False
    # Not a field: a spec as the user writes it is on no launcher's line. The copy the ranks receive
    # for one run (``protocol.LaunchedFlowFabric``) carries the coordinator's address and key.
    address = ""

    ports_only = False          # never the port model: the coordinator always runs this fabric
    arrivals = False            # no "first of several to arrive" (a packet fabric's delivery order)
    switched = False

    def __post_init__(self):
        from .. import validate
        from ..net.topology import Topology
        validate.instance(self.topology, "topology", Topology, "a netlab.net Topology (e.g. net.fabrics.spine_leaf(...))")
        if self.topology.direct:
            raise ValueError(f"topology: a switched fabric, not the direct network {self.topology.name}")
        validate.choice(self.routing, "routing", ("ecmp", "spray"))
        validate.seed(self.seed)
        if isinstance(self.placement, str):
            validate.choice(self.placement, "placement", ("ordered", "shuffled"))
        else:
            object.__setattr__(self, "placement", tuple(int(s) for s in self.placement))

    def slots(self, ranks: int) -> np.ndarray:
        """The accelerator slot of each of `ranks` ranks."""
        kind = self.placement if isinstance(self.placement, str) else np.asarray(self.placement, dtype=np.int64)
        return self.topology.placement(ranks, kind, self.seed)

    def check(self, network) -> None:
        """The network's hosts must be the topology's (ranks_per_host = accelerators per host)."""
        g = self.topology.accelerators_per_host
        if network.ranks_per_host != g:
            raise ValueError(f"ranks_per_host: the topology {self.topology.name} has {g} accelerators per host, "
                             f"the network {network.ranks_per_host}")

    def describe(self) -> str:
        return (f"flow-level fabric: {self.topology.description or self.topology.name}; "
                f"{self.routing}, {self.placement if isinstance(self.placement, str) else 'custom'} placement")


class _Flow:
    __slots__ = ("key", "left", "rate", "links", "weights", "on_done", "size")

    def __init__(self, key, size, links, weights, on_done):
        self.key, self.size, self.left, self.rate = key, float(size), float(size), 0.0
        self.links, self.weights, self.on_done = links, weights, on_done


class FlowEngine:
    """The fabric the coordinator runs: an event heap of (time, order, fn, arg) like ``fabric.engine.Fabric``."""

    def __init__(self, spec: FlowFabric, ranks: int):
        from ..net import routing
        self.spec, self.topology = spec, spec.topology
        t = self.topology
        if ranks > t.size:
            raise ValueError(f"ranks: the topology {t.name} has {t.size} accelerators, the run has {ranks} ranks")
        self.nodes = t.endpoints[spec.slots(ranks)]                 # (ranks,) node id of each rank
        self._routing = routing
        self._heap: list = []
        self._order = itertools.count()
        self.now = 0.0
        self.events = 0
        self.flows = 0
        self.port_free = np.zeros(t.links)                           # when each port's alpha queue is free
        self.link_bytes = np.zeros(t.links)
        self.active: list[_Flow] = []
        self._routes: dict = {}
        self._version = 0
        self._last = 0.0                                             # when `left` was last brought up to date
        self.last_delivery = 0.0                                     # when the last message landed

    # -- the event heap ------------------------------------------------------------------------------
    def schedule(self, t: float, fn, arg=None) -> None:
        heapq.heappush(self._heap, (t, next(self._order), fn, arg))

    # -- routes ---------------------------------------------------------------------------------------
    def route(self, src: int, dst: int):
        """(links, weights, out-port, in-port, alpha) of a message from rank `src` to rank `dst`."""
        key = (src, dst)
        if key not in self._routes:
            t = self.topology
            r = self._routing.route(t, [self.nodes[src]], [self.nodes[dst]], self.spec.routing, seed=self.spec.seed)
            alpha = float(t.latency[r.out_port[0]] + t.hop_latency * r.hops[0])
            self._routes[key] = (r.link.astype(np.int64), r.weight.astype(float), int(r.out_port[0]),
                                 int(r.in_port[0]), alpha)
        return self._routes[key]

    # -- messages -------------------------------------------------------------------------------------
    def post(self, key: tuple, nbytes: int, start: float, on_done) -> None:
        """Message `key` ((src, dst, seq)) posted at virtual time `start`; ``on_done(end)`` once its last
        byte has landed."""
        self.schedule(start, self._posted, (key, key[0], key[1], nbytes, on_done))

    def _posted(self, arg) -> None:
        key, src, dst, nbytes, on_done = arg
        links, weights, out_port, in_port, alpha = self.route(src, dst)
        a = max(self.now, self.port_free[out_port])                 # the sender's port serves its alpha
        self.port_free[out_port] = a + alpha
        b = max(self.now, self.port_free[in_port])                  # and the receiver's port
        self.port_free[in_port] = b + alpha
        self.link_bytes[links] += weights * nbytes
        self.flows += 1
        self.schedule(max(a, b) + alpha, self._begin, _Flow(key=key, size=nbytes, links=links, weights=weights,
                                                            on_done=on_done))

    def _settle(self) -> None:
        """Bring every active flow's bytes left up to now, at the rates solved last."""
        dt = self.now - self._last
        if dt > 0:
            for f in self.active:
                f.left -= f.rate * dt
        self._last = self.now

    def _begin(self, flow: _Flow) -> None:
        self._settle()
        if flow.size <= 0:                                           # an empty message: its alpha only
            self.last_delivery = max(self.last_delivery, self.now)
            flow.on_done(self.now)
            return
        self.active.append(flow)
        self._solve()

    def _solve(self) -> None:
        """Max-min rates of the active flows; schedule the earliest completion (older ones go stale)."""
        from ..sim.maxmin import FlowSet
        self._version += 1
        if not self.active:
            return
        flows = self.active
        fl = np.concatenate([np.full(f.links.size, i, dtype=np.int64) for i, f in enumerate(flows)])
        links = np.concatenate([f.links for f in flows])
        weights = np.concatenate([f.weights for f in flows])
        rates = FlowSet(fl, links, weights, self.topology.capacity,
                        n_flows=len(flows)).solve(np.ones(len(flows), dtype=bool))
        soonest = np.inf
        for f, r in zip(flows, rates):
            f.rate = float(r)
            if r > 0:
                soonest = min(soonest, max(f.left, 0.0) / r)
        if soonest < np.inf:
            self.schedule(self.now + soonest, self._finish, self._version)

    def _finish(self, version: int) -> None:
        if version != self._version:                                 # rates changed since: not this one
            return
        self._settle()
        done = [f for f in self.active if f.left <= DONE_BYTES + 1e-12 * f.size]
        self.active = [f for f in self.active if f not in done]
        for f in done:
            f.left = 0.0
        self._solve()
        if done:
            self.last_delivery = max(self.last_delivery, self.now)
        for f in sorted(done, key=lambda f: f.key):
            f.on_done(self.now)

    # -- what it observed ----------------------------------------------------------------------------
    def summary(self) -> dict:
        return {"model": "flows", "flows": self.flows, "events": self.events, "last_delivery": self.last_delivery,
                "link_bytes": [float(b) for b in self.link_bytes]}

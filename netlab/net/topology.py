"""A cluster's network as a graph: accelerators, hosts, NICs, switches and the links between them.

A ``Topology`` is a networkx ``DiGraph`` (one directed edge per direction of every full-duplex
link) plus the same links compiled into numpy arrays for the simulator:

    node attributes   kind   'accelerator' | 'host' (the intra-host switch, NVSwitch-like) |
                             'nic' (a NIC shared by several accelerators) | 'switch'
                      label  e.g. 'core3', 'agg1.2', 'edge1.0', 'h17', 'h17.g3'
                      pos    (x, y) for drawing; host: the host index (-1 for switches)
    edge attributes   id (index into the arrays), capacity (bytes/s per direction),
                      latency (s), kind 'nic' | 'fabric' | 'intra' | 'pcie'

Endpoints are the accelerators in topology order (host by host, rack by rack): rank r sits on
endpoint ``placement[r]``. Messages between two accelerators of one host use the intra-host link
(as ``Network.link_class`` does for real ranks); everything else is routed over the other links
(``netlab.net.routing``). The builders (fat-tree, spine-leaf, ring, torus, ...) live in
``netlab.net.fabrics``.

A host (``Host``) has g accelerators behind an intra-host switch and m NICs; accelerator l uses
NIC l // (g/m). With m = g every accelerator has its own NIC (rail style, as in DGX machines);
with m < g the accelerators reach a shared NIC over PCIe. Rail-optimized wiring sends NIC j of
every host in a group to leaf j of that group, so ring traffic between equal local ranks ("a
rail") never shares a leaf uplink with another rail.

Left out on purpose: switch buffers, queues and packets (the simulator is flow-level), and
multi-homed NICs (each NIC has one link to one leaf).
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from .. import validate
from .network import Link, Network

KINDS = ("nic", "fabric", "intra", "pcie")


def as_link(spec, name: str = "link") -> Link:
    """A Link from a preset name ('100GbE'), a Link, or a (bandwidth, latency) pair in human units."""
    if isinstance(spec, Link):
        return spec
    if isinstance(spec, str):
        return Link.of(preset=spec)
    if isinstance(spec, tuple) and len(spec) == 2:
        return Link.of(*spec)
    raise ValueError(f"{name}: expected a preset name, a Link or (bandwidth, latency), got {spec!r}")


@dataclass(frozen=True)
class Host:
    """What one server holds: `accelerators` behind an intra-host link, `nics` NICs (dividing them)."""
    accelerators: int = 1
    nics: int = 1
    rail: bool = True                 # rail-optimized wiring (only matters with several NICs)
    intra: Link | str = "NVLink3"     # accelerator <-> intra-host switch, per direction
    pcie: Link | str = "PCIe5x16"     # accelerator -> shared NIC (only when nics < accelerators)

    def __post_init__(self):
        g, m = self.accelerators, self.nics
        validate.whole(g, "accelerators", 1, int_only=True)
        if validate.whole(m, "nics", 1, int_only=True) and g % m:
            raise ValueError(f"nics: must be a whole number >= 1 that divides accelerators ({g}), got {m!r}")

    def describe(self) -> str:
        if self.accelerators == 1:
            return "1 accelerator per host"
        wiring = ", rail-optimized" if self.nics > 1 and self.rail else ""
        return (f"{self.accelerators} accelerators per host over {as_link(self.intra, 'intra').name or 'intra'}, "
                f"{self.nics} NIC{'s' if self.nics > 1 else ''}{wiring}")


class Topology:
    """A built network: the graph, its links as arrays, and its endpoints (accelerators)."""

    def __init__(self, name: str, graph: nx.DiGraph, slots, *, host: Host | None = None, direct: bool = False,
                 hop_latency: float = 0.0, nic: Link | None = None, description: str = ""):
        """`slots`: (endpoints, host_of), the node of each endpoint slot and its host's index (``Builder.hosts``);
        `host`: what each host holds (its accelerators and the link between them; None: one accelerator)."""
        endpoints, host_of = slots
        accelerators_per_host = host.accelerators if host is not None else 1
        intra = as_link(host.intra) if host is not None and host.accelerators > 1 else None
        self.name, self.graph, self.direct = name, graph, direct
        self.endpoints = np.asarray(endpoints, dtype=np.int64)       # (P,) node id of endpoint slot i
        self.host_of = np.asarray(host_of, dtype=np.int64)           # (P,) host index of endpoint slot i
        self.accelerators_per_host = accelerators_per_host
        self.hop_latency = float(hop_latency)
        self.nic, self.intra, self.description = nic, intra, description
        edges = sorted(graph.edges(data=True), key=lambda e: e[2]["id"])
        self.link_src = np.array([u for u, _, _ in edges], dtype=np.int64)          # (E,)
        self.link_dst = np.array([v for _, v, _ in edges], dtype=np.int64)          # (E,)
        self.capacity = np.array([d["capacity"] for *_, d in edges], dtype=float)   # (E,) bytes/s
        self.latency = np.array([d["latency"] for *_, d in edges], dtype=float)     # (E,) s
        self.link_kind = np.array([KINDS.index(d["kind"]) for *_, d in edges], dtype=np.int8)
        self.labels = [graph.nodes[v]["label"] for v in range(graph.number_of_nodes())]
        self._router = None                           # netlab.net.routing.router(): built on first use

    # ---- sizes and names -------------------------------------------------------------
    @property
    def size(self) -> int:
        """Endpoints (accelerators): the most ranks this topology can hold."""
        return len(self.endpoints)

    @property
    def links(self) -> int:
        return len(self.link_src)

    def link_label(self, link: int) -> str:
        return f"{self.labels[self.link_src[link]]}->{self.labels[self.link_dst[link]]}"

    def kind_of(self, link: int) -> str:
        return KINDS[self.link_kind[link]]

    def __repr__(self) -> str:
        return f"Topology({self.name}: {self.size} accelerators, {self.links} links)"

    def network(self, ranks_per_host: int | None = None) -> Network:
        """The real-rank model of this topology's endpoints (per-rank NIC and intra ports), for cost.time."""
        g = ranks_per_host or self.accelerators_per_host
        nic = self.nic or Link(float(self.capacity[self.link_kind == 0].max()), 0.0)
        return Network(nic, g, self.intra if g > 1 else None)

    # ---- rank placement --------------------------------------------------------------
    def placement(self, ranks: int, kind="ordered", seed: int = 0) -> np.ndarray:
        """Endpoint slot of each rank: (ranks,) ints.

        'ordered': rank r on slot r, so ring neighbours share a host, then a rack (topology-aware).
        'shuffled': hosts in a random order (a scheduler that ignores the topology); the ranks of
        one host stay together, so hierarchical algorithms still find their hosts.
        A sequence of `ranks` distinct slots places rank r on slot kind[r].
        """
        validate.whole(ranks, "ranks", 1, int_only=True)
        if ranks > self.size:
            raise ValueError(f"ranks: this topology ({self.name}) has {self.size} accelerators, {ranks} asked for")
        if not isinstance(kind, str):
            slots = np.asarray(kind)
            if (slots.shape != (ranks,) or slots.dtype.kind not in "iu" or np.unique(slots).size != ranks
                    or slots.min() < 0 or slots.max() >= self.size):
                raise ValueError(f"placement: expected {ranks} distinct slots from 0 to {self.size - 1}")
            return slots.astype(np.int64)
        if validate.choice(kind, "placement", ("ordered", "shuffled")) == "ordered":
            return np.arange(ranks, dtype=np.int64)
        g = self.accelerators_per_host
        hosts = np.random.default_rng(seed).permutation(self.size // g)
        slots = (hosts[:, None] * g + np.arange(g)[None, :]).reshape(-1)
        return slots[:ranks].astype(np.int64)


class Builder:
    """Adds nodes and full-duplex links to a DiGraph, numbering links as it goes."""

    def __init__(self):
        self.g = nx.DiGraph()
        self.edges = 0                                 # networkx counts edges in O(V): keep our own

    def node(self, label: str, kind: str, pos, host: int = -1, *, empty: bool = False) -> int:
        """A node; `empty` marks a switch no host hangs below (a figure may leave it out)."""
        v = self.g.number_of_nodes()
        self.g.add_node(v, label=label, kind=kind, pos=(float(pos[0]), float(pos[1])), host=host, empty=empty)
        return v

    def link(self, a: int, b: int, link: Link, kind: str, *, capacity: float | None = None,
             latency: float | None = None) -> None:
        """Both directions of one full-duplex link (capacity per direction)."""
        cap = link.bandwidth if capacity is None else capacity
        lat = link.latency if latency is None else latency
        for u, v in ((a, b), (b, a)):
            self.g.add_edge(u, v, id=self.edges, capacity=float(cap), latency=float(lat), kind=kind)
            self.edges += 1

    def hosts(self, leaves: list[int], ports_per_leaf: int, hosts: int, host: Host, *, nic: Link,
              group_leaves: int | None = None, x_of=None, y: float = 0.0):
        """Attach `hosts` hosts to leaf switches; return (endpoints, host_of).

        Ports are filled leaf by leaf. Without rail wiring host h's NICs take consecutive ports (all
        on one leaf when the leaf's ports allow). With rail wiring, hosts come in groups of
        `ports_per_leaf`; group a uses leaves a*m .. a*m+m-1 and NIC j goes to leaf a*m + j.
        """
        g, m = host.accelerators, host.nics
        if hosts * m > len(leaves) * ports_per_leaf:
            raise ValueError(f"hosts: {hosts} hosts with {m} NICs need {hosts * m} ports; "
                             f"this fabric has {len(leaves) * ports_per_leaf}")
        rail = host.rail and m > 1
        if rail and (len(leaves) % m or (group_leaves and group_leaves % m)):
            raise ValueError(f"nics: rail wiring needs the leaves ({group_leaves or len(leaves)} per group) "
                             f"to be a multiple of the NICs per host ({m})")
        intra = as_link(host.intra, "intra")
        pcie = as_link(host.pcie, "pcie")
        endpoints, host_of = [], []
        for h in range(hosts):
            if rail:
                group, slot = divmod(h, ports_per_leaf)
                leaf_of = [leaves[group * m + j] for j in range(m)]
            else:
                leaf_of = [leaves[(h * m + j) // ports_per_leaf] for j in range(m)]
            x = x_of(h) if x_of else float(h)
            name = f"h{h}"
            if g == 1:                                    # the host is the accelerator
                v = self.node(name, "accelerator", (x, y), h)
                self.link(v, leaf_of[0], nic, "nic")
                endpoints.append(v)
                host_of.append(h)
                continue
            sw = self.node(f"{name}.sw", "host", (x, y - 0.45), h)          # drawn under its accelerators
            nic_nodes = leaf_of
            if m < g:                                     # shared NICs: accelerator -PCIe-> NIC -> leaf
                nic_nodes = []
                for j in range(m):
                    nn = self.node(f"{name}.nic{j}", "nic", (x + (j - (m - 1) / 2) * 0.6 / m, y + 0.5), h)
                    self.link(nn, leaf_of[j], nic, "nic")
                    nic_nodes.append(nn)
            for l in range(g):
                a = self.node(f"{name}.g{l}", "accelerator", (x + (l - (g - 1) / 2) * 0.8 / g, y), h)
                self.link(a, sw, intra, "intra")
                self.link(a, nic_nodes[l * m // g], pcie if m < g else nic, "pcie" if m < g else "nic")
                endpoints.append(a)
                host_of.append(h)
        return endpoints, host_of

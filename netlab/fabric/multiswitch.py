"""A ``netlab.net`` topology (spine-leaf, fat-tree, one switch) as the packet fabric's switches and ports.

Chapter 6's fabric is a star: every host's NIC feeds one switch (its experiments build it here too, with
only the ports their traffic crosses, ``ports``, and a token-bucket port where they ask for one,
``port_class``; and the PFC victim's two switches). Today's AI fabrics have many paths
between two hosts (k^2/4 in a k-ary fat-tree, one per spine in a spine-leaf), and ``SwitchedNetwork``
builds them from the same ``Topology`` chapter 5's flow simulator uses (``net/fabrics.py``): one
output port per direction of every link, a ``switch.Switch`` per switch node (its ports get the
buffer, ECN and PFC settings; ``trim`` makes them ``trimming.TrimmingPort``s), and a NIC port per
host. Link rates are the topology's; a host link's delay is half the NIC's alpha (so a one-switch
path has the alpha of the real-rank port model), a switch-to-switch link's is the topology's
``hop_latency``.

Paths: every shortest path between two hosts (``paths``), in a fixed order, each a list of Ports.
A flow gets all of them and a chooser (``multipath.py``: ECMP, spraying, REPS); ECMP's path is the
one chapter 5's router hashes the pair onto (``net.routing.route``), so the packet fabric and the
flow simulator put the same flows on the same links.

Planes (``planes=N``): N copies of the topology's switches and links, each at 1/N of its rate, and a
NIC per plane in every host (an 800G NIC as 8 x 100G planes): a flow's paths are the union of every
plane's, so a chooser that sprays spreads it over the planes, and one that hashes keeps it on one.
The host's NICs are seen by its senders as one (``HostNIC``: room when any plane's port has room;
a paced sender paces at their sum).

Failures (``fail``, ``failure.Failure``): the link's ports stop at its time; after the reroute delay
every chooser withdraws the paths through it.
Left out: hosts with several accelerators (one rank per host here), switch buffers shared across
planes, and hashing the entropy per hop (an entropy is a path's index).
"""
from __future__ import annotations

import numpy as np

from ..net import routing
from ..net.topology import KINDS
from . import multipath as mp
from . import transport as tp
from .congestion import Congestion
from .switch import NIC_QUEUE, Port
from .trimming import TrimmingPort

NIC_KIND = KINDS.index("nic")


class PlanePort(Port):
    """A host's NIC port on one plane: when it drains, senders waiting on the host's NICs may send."""
    host_nic = None

    def _start(self) -> None:
        super()._start()
        host = self.host_nic
        if host is not None and host.waiting and self.qbytes < NIC_QUEUE:
            waiting, host.waiting = host.waiting, []
            for sender in waiting:
                sender.send()


class HostNIC:
    """A host's plane NICs, as its senders see them: room when any live plane's port has room."""

    def __init__(self, name: str, ports: list):
        self.name, self.ports = name, ports
        self.rate = ports[0].rate                  # one plane's rate (a packet is serialized on one)
        self.delay = ports[0].delay
        self.waiting: list = []
        self.failed = False
        for p in ports:
            p.host_nic = self

    @property
    def qbytes(self) -> float:
        live = [p.qbytes for p in self.ports if not p.failed]
        return min(live) if live else 0


class SwitchedNetwork:
    """Ports, switches and paths of one topology (possibly in several planes) in a Fabric."""

    def __init__(self, fabric, topology, *, switch: Congestion = Congestion(), ecn=None, shared_buffer: bool = False,
                 framing=None, ports: dict | None = None, port_class: dict | None = None):
        """`switch`: the switches' buffer per port, PFC, trimming and planes (``Congestion``); `ecn`: their
        marking (resolved: an ``ECN`` or None); `shared_buffer`: each switch's buffer is one pool shared by its
        ports. ``framing``: a ``net.framing.Framing``: packets of its payload, its headers on the wire (None:
        MTU packets, no headers counted).

        ``ports``: {link label: port name}: only those links get a port, so named (chapter 6's star has a NIC
        per sender, 'h0.nic', and the one port toward its receiver, 'tor->rx'; its ACKs take no port);
        None: every link, named by its label. ``port_class``: {link label: a Port class (or a callable taking
        a switch port's arguments)} for that link's switch port instead of the plain one (chapter 6's
        token-bucket downlink, ``switch.TokenBucketPort``)."""
        from .switch import MTU
        buffer, pfc, trim, planes = switch.buffer, switch.pfc, switch.trim, switch.planes
        t = topology
        if t.accelerators_per_host != 1 or t.direct:
            raise ValueError("topology: the packet fabric takes switched fabrics with one accelerator per host "
                             f"(a fat-tree, a spine-leaf or one switch), not {t.name}")
        self.fabric, self.topology, self.planes = fabric, t, int(planes)
        overhead, mss = (0, MTU) if framing is None else (framing.overhead, framing.payload)
        self.trim, self.overhead, self.mss = trim, int(overhead), mss or MTU
        self.router = routing.router(t)
        kind = [t.graph.nodes[v]["kind"] for v in range(t.graph.number_of_nodes())]
        self.switches = [{} for _ in range(self.planes)]
        self.ports: list[list[Port | None]] = []   # [plane][link id]; None: a link given no port (``ports``)
        port_cls = TrimmingPort if trim else Port
        special = port_class or {}
        for plane in range(self.planes):
            prefix = f"p{plane}:" if self.planes > 1 else ""
            row = []
            for link in range(t.links):
                label = t.link_label(link)
                if ports is not None and label not in ports:
                    row.append(None)
                    continue
                u = int(t.link_src[link])
                rate = float(t.capacity[link]) / self.planes
                delay = float(t.latency[link]) / 2 if t.link_kind[link] == NIC_KIND else float(t.latency[link])
                name = prefix + (label if ports is None else ports[label])
                if kind[u] == "switch":
                    sw = self.switches[plane].get(u)
                    if sw is None:
                        sw = self.switches[plane][u] = fabric.switch(
                            prefix + t.labels[u], pfc=pfc, shared_buffer=buffer if shared_buffer else None)
                    cls = special.get(label, port_cls)
                    port = cls(fabric, name, rate, delay, buffer=None if shared_buffer else buffer, ecn=ecn, switch=sw)
                elif self.planes > 1:
                    port = PlanePort(fabric, name, rate, delay)
                else:
                    port = Port(fabric, name, rate, delay)
                fabric.ports[name] = port
                row.append(port)
            self.ports.append(row)
        self.host_nics = {}
        if self.planes > 1:
            for slot, node in enumerate(t.endpoints):
                out = [self.ports[p][self._nic_link(int(node))] for p in range(self.planes)]
                self.host_nics[int(node)] = HostNIC(t.labels[int(node)], out)
        self._paths: dict = {}
        self.choosers: list = []
        self.dead: set = set()
        self.failures: list = []

    def _built(self):
        """Every port this network built, plane by plane in link order."""
        return [p for row in self.ports for p in row if p is not None]

    # ---- structure --------------------------------------------------------------------------------
    def _nic_link(self, node: int) -> int:
        t = self.topology
        out = np.flatnonzero(t.link_src == node)
        return int(out[0])

    def link_ids(self, src: int, dst: int) -> list[list[int]]:
        """Every shortest path from endpoint node `src` to `dst`, as link ids, in a fixed order."""
        key = (src, dst)
        if key not in self._paths:
            router, out = self.router, []

            def walk(cur, links):
                cand, lk, good = router._candidates(np.array([cur]), np.array([dst]))
                for c, l in zip(cand[0][good[0]], lk[0][good[0]]):
                    if c == dst:
                        out.append(links + [int(l)])
                    else:
                        walk(int(c), links + [int(l)])
            walk(src, [])
            self._paths[key] = out
        return self._paths[key]

    def paths(self, src: int, dst: int) -> list[list[Port]]:
        """Every shortest path from `src` to `dst` in every plane, as Ports (plane 0's first)."""
        ids = self.link_ids(src, dst)
        return [[self.ports[p][l] for l in path] for p in range(self.planes) for path in ids]

    def ecmp_index(self, src: int, dst: int, seed: int) -> int:
        """Which of ``paths(src, dst)`` per-flow ECMP takes: chapter 5's hashed route (plane by hash)."""
        r = routing.route(self.topology, [src], [dst], "ecmp", seed=seed)
        chosen = r.path(0)
        ids = self.link_ids(src, dst)
        base = ids.index(chosen)
        plane = int(routing.flow_hash(src, dst, seed + 1, 0) % np.uint64(self.planes)) if self.planes > 1 else 0
        return plane * len(ids) + base

    def node(self, slot: int) -> int:
        return int(self.topology.endpoints[slot])

    def label_ports(self, label: str, plane: int = 0) -> list[Port]:
        """Both directions of the link named `label` ('a->b'), in `plane`."""
        t = self.topology
        a, _, b = label.partition("->")
        found = [l for l in range(t.links)
                 if (t.labels[int(t.link_src[l])], t.labels[int(t.link_dst[l])]) in ((a, b), (b, a))]
        if not found:
            names = sorted({t.link_label(l) for l in range(t.links) if t.link_kind[l] != NIC_KIND})[:6]
            raise ValueError(f"failure: no link {label!r} in {t.name} (links look like {', '.join(names)}, ...)")
        if not 0 <= plane < self.planes:
            raise ValueError(f"plane: this fabric has planes 0 to {self.planes - 1}, got {plane}")
        return [self.ports[plane][l] for l in found if self.ports[plane][l] is not None]

    # ---- flows -------------------------------------------------------------------------------------
    def chooser(self, src: int, dst: int, scheme: str, seed: int = 0, **options):
        paths = self.paths(src, dst)
        if len(paths) == 1:
            return None
        key = int(routing.flow_hash(src, dst, seed, 7))
        c = mp.make(scheme, paths, self.fabric, seed=int(key % (2**31)), ecmp_first=self.ecmp_index(src, dst, seed),
                    key=key, **options)
        if self.dead:
            c.reroute(self.dead)
        self.choosers.append(c)
        return c

    def flow(self, name: str, src_slot: int, dst_slot: int, size: int, *, start: float = 0.0, transport: str,
             chooser=None, on_done=None):
        """A flow of `size` bytes from endpoint slot `src_slot` to `dst_slot`, of `transport`'s kind (not yet
        added; its sender is ``transport.make(transport, flow, rto_min, ...)``, ``sender``)."""
        src, dst = self.node(src_slot), self.node(dst_slot)
        paths = self.paths(src, dst)
        template = paths[chooser.ev] if isinstance(chooser, mp.ECMP) else paths[0]
        if self.planes > 1:
            template = [self.host_nics[src]] + template[1:]
        cls = tp.flow_class(transport)
        f = cls(self.fabric, name, template, max(int(size), 1), start=start, mss=self.mss, on_done=on_done)
        f.overhead = self.overhead
        f.multipath = chooser
        f.line = template[0].rate * self.planes
        f.receiver, f.receiver_rate = dst, paths[0][-1].rate * self.planes
        return f

    @staticmethod
    def sender(transport: str, flow, rto_min: float, options: dict | None = None):
        """`flow`'s sender: ``transport.make`` with `options` (its further keywords)."""
        return tp.make(transport, flow, rto_min, **(options or {}))

    # ---- failures ----------------------------------------------------------------------------------
    def fail(self, failure) -> list[Port]:
        """Schedule `failure` (``failure.Failure``): the link's ports stop at its time, routing reroutes later."""
        from .failure import take_down
        ports = self.label_ports(failure.link, failure.plane)
        fab = self.fabric
        fab.schedule(failure.at, lambda _: take_down(fab, ports))
        if failure.reroute is not None:
            def reroute(_):
                self.dead.update(ports)
                for c in self.choosers:
                    c.reroute(self.dead)
            fab.schedule(failure.at + failure.reroute, reroute)
        self.failures.append((failure, ports))
        return ports

    # ---- what it observed --------------------------------------------------------------------------
    def link_bytes(self, kind: str = "fabric") -> dict[str, int]:
        """Bytes each switch-to-switch link (or 'nic' links) carried, by port name."""
        t, want = self.topology, KINDS.index(kind)
        return {self.ports[p][l].name: self.ports[p][l].tx_bytes for p in range(self.planes)
                for l in range(t.links) if t.link_kind[l] == want and self.ports[p][l] is not None}

    def totals(self) -> dict:
        ports = self._built()
        return {"drops": sum(p.drops for p in ports), "marks": sum(p.marks for p in ports),
                "trims": sum(getattr(p, "trims", 0) for p in ports),
                "lost_on_failed_links": sum(getattr(p, "lost", 0) for p in ports)}

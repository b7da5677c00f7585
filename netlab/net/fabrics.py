"""Builders of the fabrics of chapter 5: k-ary fat-tree, two-tier spine-leaf, one switch, ring, 2-D torus (and
chapter 6's two switches, ``dumbbell``).

    fat_tree(16)                                    # 1,024 hosts, 320 switches, 100GbE everywhere
    spine_leaf(leaves=8, spines=4, ratio=4, ports_per_leaf=16)      # 4:1 oversubscribed leaves
    fat_tree(16, host=Host(8, nics=8, rail=True))   # 128 servers of 8 accelerators, rail-optimized
    oversubscribed_fat_tree(8, ratio=4)             # edge uplinks at B/4: 4:1 at the top of the rack
    torus(8, 8)                                     # accelerators wired directly, 4 links each

* Fat-tree (Al-Fares, Loukissas & Vahdat, SIGCOMM 2008): k pods of k/2 edge and k/2 aggregation
  switches, (k/2)^2 core switches, k^3/4 host ports; every link the same speed, so the fabric has
  full bisection bandwidth and (k/2)^2 shortest paths between hosts in different pods.
* Spine-leaf: every leaf has one uplink to every spine. A leaf with D host ports of bandwidth B
  and oversubscription ratio R gets uplinks of D*B / (R*S) each (S spines): total down : up = R : 1.
* Star: one non-blocking switch, each accelerator with its own NIC port -- exactly the model the
  real ranks use (``Network``), which is how the simulator is checked against them. Chapter 6's
  packet experiments build theirs with named hosts ('h0'.., the receiver 'rx', the switch 'tor').
* Dumbbell: two switches joined by one trunk link (chapter 6's PFC victim).
* Ring and torus: direct networks; every accelerator forwards traffic for others.

Link speeds and latencies come from ``netlab.net.presets`` (a NIC preset's latency is its
end-to-end alpha; switch-to-switch links add ``hop_latency``, 0 by default). Left out: three-tier
oversubscription inside a fat-tree, multi-plane fabrics, failures.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .. import validate
from .network import Link, Network
from .topology import Builder, Host, Topology, as_link


def _even(k, name="k"):
    if validate.whole(k, name, 2, int_only=True) % 2:
        raise ValueError(f"{name}: must be an even whole number >= 2, got {k!r}")
    return k


def _count(n, name, low=1):
    return validate.whole(n, name, low, int_only=True)


def _hosts_of(hosts, ports, host: Host):
    most = ports // host.nics
    if hosts is None:
        return most
    _count(hosts, "hosts")
    return hosts


def fat_tree(k: int, nic="100GbE", host: Host | None = None, hosts: int | None = None,
             *, hop_latency: float = 0.0) -> Topology:
    """A k-ary fat-tree with `hosts` servers (default: as many as its k^3/4 ports hold)."""
    k, host, nic = _even(k), host or Host(), as_link(nic, "nic")
    half = k // 2
    if host.nics > 1 and host.rail and half % host.nics:
        raise ValueError(f"nics: rail wiring in a k={k} fat-tree needs the NICs per host to divide k/2 = {half}")
    n_hosts = _hosts_of(hosts, k ** 3 // 4, host)
    b = Builder()
    width = max(n_hosts, 1)
    # Drawing only: ports fill edge by edge, so the hosts sit under the first pods. Those pods share
    # the drawing's width, each host under its edge switch; pods with no host are marked ``empty``
    # (the figure leaves them out) and parked at the right edge.
    m = host.nics
    rail = host.rail and m > 1
    used_edges = -(-n_hosts // half) * m if rail else -(-n_hosts * m // half)
    pods_drawn = max(1, -(-used_edges // half))
    per_edge = width / (pods_drawn * half)                  # drawing units per edge switch

    def edge_x(e):
        return (min(e, pods_drawn * half - 1) + 0.5) * per_edge - 0.5

    def host_x(h):
        if rail:                                            # group a's hosts spread under its m edges
            group, slot = divmod(h, half)
            return (group * m + (slot + 0.5) / half * m) * per_edge - 0.5
        return (h * m + m / 2) / half * per_edge - 0.5      # the middle of its ports

    core = [b.node(f"core{i}", "switch", ((i + 0.5) * width / half ** 2 - 0.5, 3.5)) for i in range(half ** 2)]
    edges = []
    for pod in range(k):
        empty = pod >= pods_drawn
        aggs = [b.node(f"agg{pod}.{j}", "switch", (edge_x(pod * half + j), 2.5), empty=empty) for j in range(half)]
        for j, a in enumerate(aggs):
            for c in range(half):
                b.link(a, core[j * half + c], nic, "fabric", latency=hop_latency)
        for j in range(half):
            e = b.node(f"edge{pod}.{j}", "switch", (edge_x(pod * half + j), 1.5), empty=empty)
            for a in aggs:
                b.link(e, a, nic, "fabric", latency=hop_latency)
            edges.append(e)
    slots = b.hosts(edges, half, n_hosts, host, nic=nic, group_leaves=half, x_of=host_x)
    return Topology(f"fattree:{k}", b.g, slots, host=host, hop_latency=hop_latency, nic=nic,
                    description=f"k={k} fat-tree ({k ** 3 // 4} ports, {len(core) + k * k} switches), "
                                f"{n_hosts} hosts, {host.describe()}, links {nic.describe()}")


def oversubscribed_fat_tree(k: int, ratio: float, nic="100GbE", host: Host | None = None, *, hosts: int | None = None,
                            hop_latency: float = 0.0) -> Topology:
    """A k-ary fat-tree whose edge switches are oversubscribed `ratio` : 1 (带宽收敛比): each of an edge
    switch's k/2 uplinks to its pod's aggregation switches runs at B / ratio, so its k/2 host ports of
    B share (k/2) B / ratio of uplink. Aggregation-to-core links keep B. ``ratio=1`` is ``fat_tree(k)``.
    (The same edge capacity as k/2 uplinks of B under ratio * k/2 hosts; the k-ary shape keeps the
    paths of ``fat_tree``.)"""
    validate.positive(ratio, "ratio")                   # oversubscription ratio:1
    topo = fat_tree(k, nic, host, hosts, hop_latency=hop_latency)
    if ratio == 1:
        return topo
    labels = topo.labels
    up = np.array([(labels[a].startswith("edge") and labels[b].startswith("agg")) or
                   (labels[a].startswith("agg") and labels[b].startswith("edge"))
                   for a, b in zip(topo.link_src, topo.link_dst)])
    topo.capacity[up] /= ratio
    for a, b, data in topo.graph.edges(data=True):
        if up[data["id"]]:
            data["capacity"] = float(topo.capacity[data["id"]])
    topo.name = f"fattree:{k}:{ratio:g}"
    topo.description = topo.description.replace(f"k={k} fat-tree", f"k={k} fat-tree, edge {ratio:g}:1 oversubscribed",
                                                1)
    return topo


def spine_leaf(leaves: int, spines: int, ratio: float = 1.0, ports_per_leaf: int = 16, *, nic="100GbE",
               host: Host | None = None, hosts: int | None = None, hop_latency: float = 0.0) -> Topology:
    """Two tiers: `leaves` leaf switches with `ports_per_leaf` host ports each, every leaf wired to
    every one of `spines` spines; leaf uplinks sized for an oversubscription of `ratio` : 1."""
    _count(leaves, "leaves")
    _count(spines, "spines")
    _count(ports_per_leaf, "ports_per_leaf")
    validate.positive(ratio, "ratio")                   # oversubscription ratio:1
    host, nic = host or Host(), as_link(nic, "nic")
    n_hosts = _hosts_of(hosts, leaves * ports_per_leaf, host)
    uplink = Link(ports_per_leaf * nic.bandwidth / (ratio * spines), hop_latency, "uplink")
    b = Builder()
    width = max(n_hosts, 1)
    spine = [b.node(f"spine{i}", "switch", ((i + 0.5) * width / spines - 0.5, 2.5)) for i in range(spines)]
    leaf = []
    for i in range(leaves):
        v = b.node(f"leaf{i}", "switch", ((i + 0.5) * width / leaves - 0.5, 1.5))
        for s in spine:
            b.link(v, s, uplink, "fabric")
        leaf.append(v)
    slots = b.hosts(leaf, ports_per_leaf, n_hosts, host, nic=nic)
    return Topology(f"spineleaf:{leaves}:{spines}:{ratio:g}", b.g, slots, host=host, hop_latency=hop_latency, nic=nic,
                    description=f"spine-leaf, {leaves} leaves x {spines} spines, {ratio:g}:1 oversubscribed "
                                f"({ports_per_leaf} ports per leaf, uplinks {uplink.bandwidth * 8 / 1e9:g} Gbit/s), "
                                f"{n_hosts} hosts, {host.describe()}, NIC {nic.describe()}")


def star(hosts: int, nic="100GbE", host: Host | None = None, *, labels=None, switch: str = "switch") -> Topology:
    """One non-blocking switch: every NIC one port. With one NIC per accelerator this is ``Network``.
    `labels`: the hosts' names (default 'h0', 'h1', ...); `switch`: the switch's (chapter 6 calls it 'tor'
    and its receiver 'rx')."""
    _count(hosts, "hosts")
    host, nic = replace(host or Host(), rail=False), as_link(nic, "nic")     # one switch: nothing to wire by rail
    if labels is not None and len(labels) != hosts:
        raise ValueError(f"labels: expected {hosts} host names, got {len(labels)}")
    b = Builder()
    sw = b.node(switch, "switch", ((hosts - 1) / 2, 1.5))
    slots = b.hosts([sw], hosts * host.nics, hosts, host, nic=nic)
    if labels is not None:
        if host.accelerators > 1:
            raise ValueError("labels: name hosts of one accelerator only")
        for v, label in zip(slots[0], labels):
            b.g.nodes[v]["label"] = str(label)
    return Topology("star", b.g, slots, host=host, nic=nic,
                    description=f"one non-blocking switch, {hosts} hosts, {host.describe()}, NIC {nic.describe()}")


def dumbbell(left: int, right: int, nic="100GbE", *, trunk=None, labels=None,
             switches: tuple[str, str] = ("S1", "S2")) -> Topology:
    """Two switches joined by one `trunk` link (default: the NIC's link), `left` hosts on the first and `right`
    on the second: chapter 6's PFC victim (DCQCN's validation scenario: H1, H2 on S1; R1, R2 and the incast's
    hosts on S2). `labels`: the hosts' names, left ones first (default 'h0', 'h1', ...). Links are numbered
    the left hosts' first, then the trunk, then the right hosts'; the trunk is a 'fabric' link (its latency is
    its own, not halved as a host link's is)."""
    _count(left, "left")
    _count(right, "right")
    nic, trunk = as_link(nic, "nic"), as_link(trunk, "trunk") if trunk is not None else None
    trunk = trunk or nic
    hosts = left + right
    labels = [f"h{h}" for h in range(hosts)] if labels is None else list(labels)
    if len(labels) != hosts:
        raise ValueError(f"labels: expected {hosts} host names, got {len(labels)}")
    b = Builder()
    a = b.node(switches[0], "switch", ((left - 1) / 2, 1.5))
    z = b.node(switches[1], "switch", (left + (right - 1) / 2, 1.5))
    endpoints = []
    for h in range(hosts):
        if h == left:
            b.link(a, z, trunk, "fabric")
        v = b.node(labels[h], "accelerator", (float(h), 0.0), h)
        b.link(v, a if h < left else z, nic, "nic")
        endpoints.append(v)
    return Topology("dumbbell", b.g, (endpoints, range(hosts)), nic=nic,
                    description=f"two switches, {left} + {right} hosts, NIC {nic.describe()}, "
                                f"trunk {trunk.describe()}")


def from_network(net: Network, ranks: int) -> Topology:
    """The topology the real ranks' ``Network`` describes: hosts of ranks_per_host accelerators, each
    with its own NIC port on one non-blocking switch, and the intra-host link between them."""
    g = net.ranks_per_host
    if ranks % g:
        raise ValueError(f"ranks: {ranks} ranks do not fill hosts of {g}")
    host = Host(g, nics=g, intra=net.intra if g > 1 else "NVLink3")
    return star(ranks // g, nic=net.nic, host=host)


def ring(n: int, link="100GbE") -> Topology:
    """n accelerators in a cycle, each wired to its two neighbours (a direct network)."""
    _count(n, "n", low=2)
    link = as_link(link, "link")
    b = Builder()
    nodes = [b.node(f"a{i}", "accelerator", (math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n)), i)
             for i in range(n)]
    for i in range(n if n > 2 else 1):
        b.link(nodes[i], nodes[(i + 1) % n], link, "nic")
    return Topology(f"ring:{n}", b.g, (nodes, range(n)), direct=True, nic=link,
                    description=f"ring of {n} accelerators, links {link.describe()}")


def torus(x: int, y: int, link="100GbE") -> Topology:
    """An x-by-y 2-D torus: accelerator (i, j) wired to (i+-1, j) and (i, j+-1), wrapping around."""
    _count(x, "x", low=2)
    _count(y, "y", low=2)
    link = as_link(link, "link")
    b = Builder()
    nodes = [[b.node(f"a{i}.{j}", "accelerator", (i, j), i * y + j) for j in range(y)] for i in range(x)]
    for i in range(x):
        for j in range(y):
            if x > 2 or i == 0:
                b.link(nodes[i][j], nodes[(i + 1) % x][j], link, "nic")
            if y > 2 or j == 0:
                b.link(nodes[i][j], nodes[i][(j + 1) % y], link, "nic")
    flat = [v for row in nodes for v in row]
    return Topology(f"torus:{x}x{y}", b.g, (flat, range(x * y)), direct=True, nic=link,
                    description=f"{x}x{y} torus, links {link.describe()}")


def parse(spec: str, ranks: int | None = None, nic="100GbE", host: Host | None = None,
          *, hop_latency: float = 0.0) -> Topology:
    """A topology from a short spec: 'fattree:16', 'spineleaf:8:4:2' (leaves, spines, ratio), 'star',
    'ring', 'torus' or 'torus:8x8'. Spine-leaf, star, ring and torus are sized for `ranks` (default:
    16 hosts per leaf, 16 hosts, 16 accelerators); a fat-tree always has its k^3/4 ports."""
    host = host or Host()
    if ranks is not None:
        _count(ranks, "ranks")
    parts = str(spec).lower().split(":")
    kind, args = parts[0].replace("-", "").replace("_", ""), parts[1:]
    try:
        if kind == "fattree" and len(args) == 1:
            return fat_tree(int(args[0]), nic, host, hop_latency=hop_latency)
        if kind == "spineleaf" and len(args) == 3:
            leaves, spines, ratio = int(args[0]), int(args[1]), float(args[2])
            hosts = -(-ranks // host.accelerators) if ranks else max(leaves, 1) * 16 // host.nics
            per_leaf = -(-hosts * host.nics // max(leaves, 1))
            if host.nics > 1 and host.rail:               # rail groups: ports_per_leaf hosts per group
                per_leaf = -(-hosts // max(leaves // host.nics, 1))
            return spine_leaf(leaves, spines, ratio, max(per_leaf, 1), nic=nic, host=host, hosts=hosts, hop_latency=hop_latency)
        if kind == "star" and not args:
            return star(-(-(ranks or 16) // host.accelerators), nic, host)
        if kind == "ring" and not args:
            return ring(ranks or 16, nic)
        if kind == "torus" and len(args) <= 1:
            if args:
                x, y = (int(v) for v in args[0].split("x"))
            else:
                n = ranks or 16
                x = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
                y = n // x
            return torus(x, y, nic)
    except ValueError as exc:
        if str(exc).split(":")[0] in ("k", "leaves", "spines", "ratio", "ports_per_leaf", "hosts", "nics",
                                      "x", "y", "n"):
            raise ValueError(f"topology: {exc}") from None
        if "invalid literal" in str(exc) or "could not convert" in str(exc) or "unpack" in str(exc):
            raise ValueError(f"topology: cannot read {spec!r} (numbers expected, e.g. 'fattree:16', "
                             "'spineleaf:8:4:2', 'torus:8x8')") from None
        raise
    raise ValueError(f"topology: unknown {spec!r}; use fattree:K, spineleaf:LEAVES:SPINES:RATIO, star, ring, "
                     "torus or torus:XxY")

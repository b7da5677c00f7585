"""Routing flows over a Topology: shortest paths with ECMP by hash, per-packet spraying, adaptive.

Every mode uses only shortest paths (fewest links). At each switch the next hops that stay on a
shortest path form the ECMP set, and

* ``ecmp``: the switch picks one by a hash of the flow's endpoints, the switch and a seed, as a
  real switch hashes a packet's 5-tuple: a flow stays on one path, and two big flows can land on
  the same link while another link idles (a hash collision).
* ``spray``: the switch spreads the flow's bytes evenly over the whole ECMP set (per-packet
  spraying, taken as a fluid: no reordering cost, no per-packet imbalance). The best case.
* ``adaptive``: flows are placed one after another and each switch gives a new flow its least
  loaded eligible link (ties by hash), as flowlet/adaptive routing does with port counters.

Traffic between two accelerators of one host takes the intra-host link (as ``Network`` does for
real ranks). Distances come from one breadth-first search from all destinations at once, in
numpy over the forwarding nodes (switches, shared NICs, and the accelerators of a direct
network); a step's flows are then routed hop by hop together, so thousands of flows cost
milliseconds. ``networkx.all_shortest_paths`` gives the same paths (a test checks), but takes
seconds at this scale.

A route is a list of (flow, link, weight) triples: weight is the share of the flow's bytes on
that link (1 on a single path). Each flow also gets its ports (first and last link that is not
a PCIe hop: its NIC or intra-host port, where its alpha is paid) and its number of switch hops.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validate
from .topology import KINDS

INF = 1 << 20
NIC, FABRIC, INTRA, PCIE = (KINDS.index(k) for k in ("nic", "fabric", "intra", "pcie"))
MODES = ("ecmp", "spray", "adaptive")
_G, _M1, _M2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a well-mixed 64-bit hash of each element."""
    x = x + _G
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def flow_hash(src, dst, seed: int, node) -> np.ndarray:
    """The ECMP hash a switch computes for a flow: of (source, destination, seed, this switch)."""
    with np.errstate(over="ignore"):
        h = _mix(np.asarray(src, dtype=np.uint64))
        h = _mix(h ^ np.asarray(dst, dtype=np.uint64))
        h = _mix(h ^ np.uint64(seed & 0xFFFFFFFFFFFFFFFF))
        return _mix(h ^ np.asarray(node, dtype=np.uint64))


@dataclass
class Routes:
    flow: np.ndarray       # (T,) flow index of each (flow, link) pair
    link: np.ndarray       # (T,) link id
    weight: np.ndarray     # (T,) share of the flow's bytes on that link
    out_port: np.ndarray   # (F,) link where the sender pays alpha (its NIC or intra-host port)
    in_port: np.ndarray    # (F,) link where the receiver pays alpha
    hops: np.ndarray       # (F,) switches (or forwarding accelerators) passed

    def path(self, f: int) -> list[int]:
        """The links of flow f in hop order (single-path modes; the hop order is kept)."""
        return [int(l) for l in self.link[self.flow == f]]


class Router:
    """Distance tables and hop-by-hop routing for one topology."""

    def __init__(self, topo):
        self.topo = t = topo
        V = t.graph.number_of_nodes()
        kind = [t.graph.nodes[v]["kind"] for v in range(V)]
        self.node_kind = np.array([("accelerator", "host", "nic", "switch").index(k) for k in kind], dtype=np.int8)
        forwarding = np.isin(self.node_kind, (2, 3)) | (t.direct & (self.node_kind == 0))
        self.fwd_col = np.full(V, -1, dtype=np.int64)
        self.fwd_col[forwarding] = np.arange(forwarding.sum())
        self.slot_of = np.full(V, -1, dtype=np.int64)
        self.slot_of[t.endpoints] = np.arange(t.size)
        self.counts_hop = (self.node_kind == 3) | ((self.node_kind == 0) & t.direct)
        # out-neighbours over every link but the intra-host ones, padded: (V, deg)
        fab = np.flatnonzero(t.link_kind != INTRA)
        fab = fab[np.argsort(t.link_src[fab], kind="stable")]
        src = t.link_src[fab]
        deg = np.bincount(src, minlength=V)
        first = np.concatenate(([0], np.cumsum(deg)[:-1]))
        pos = np.arange(fab.size) - first[src]
        self.nb = np.full((V, max(int(deg.max()), 1)), -1, dtype=np.int64)
        self.lk = np.full_like(self.nb, -1)
        self.nb[src, pos] = t.link_dst[fab]
        self.lk[src, pos] = fab
        # intra-host links: accelerator -> its host switch and back
        intra = np.flatnonzero(t.link_kind == INTRA)
        self.up = np.full(V, -1, dtype=np.int64)
        self.down = np.full(V, -1, dtype=np.int64)
        to_host = self.node_kind[t.link_dst[intra]] == 1
        self.up[t.link_src[intra[to_host]]] = intra[to_host]
        self.down[t.link_dst[intra[~to_host]]] = intra[~to_host]
        self._targets(fab)
        self._distances(fab, forwarding)

    def _targets(self, fab):
        """Each endpoint's BFS target: itself in a direct network, else its one way in (leaf or NIC)."""
        t = self.topo
        if t.direct:
            self.target_node = t.endpoints.copy()
            self.target_off = np.zeros(t.size, dtype=np.int64)
        else:
            into = fab[self.slot_of[t.link_dst[fab]] >= 0]
            count = np.bincount(self.slot_of[t.link_dst[into]], minlength=t.size)
            if (count != 1).any():
                raise ValueError("topology: every accelerator needs exactly one link into it from the network")
            self.target_node = np.empty(t.size, dtype=np.int64)
            self.target_node[self.slot_of[t.link_dst[into]]] = t.link_src[into]
            self.target_off = np.ones(t.size, dtype=np.int64)
        nodes, self.target_row = np.unique(self.target_node, return_inverse=True)
        self._target_cols = self.fwd_col[nodes]

    def _distances(self, fab, forwarding):
        """D[i, c]: links from forwarding node c to target i, by BFS from all targets at once (numpy)."""
        S, cols = int(forwarding.sum()), self._target_cols
        both = fab[forwarding[self.topo.link_src[fab]] & forwarding[self.topo.link_dst[fab]]]
        a, b = self.fwd_col[self.topo.link_src[both]], self.fwd_col[self.topo.link_dst[both]]
        order = np.argsort(a, kind="stable")
        a, b = a[order], b[order]                          # CSR by source: node a reaches b in one link
        has = np.unique(a)
        starts = np.searchsorted(a, has)
        self.D = np.full((len(cols), S), INF, dtype=np.int32)
        chunk = max(1, (1 << 24) // max(b.size, 1))        # rows per pass: bounded memory
        for lo in range(0, len(cols), chunk):
            rows = np.arange(lo, min(lo + chunk, len(cols)))
            D = self.D[rows]
            frontier = np.zeros((rows.size, S), dtype=bool)
            frontier[np.arange(rows.size), cols[rows]] = True
            D[frontier] = 0
            level = 0
            while frontier.any() and has.size:
                level += 1
                reach = np.logical_or.reduceat(frontier[:, b], starts, axis=1)   # (rows, |has|)
                new = np.zeros_like(frontier)
                new[:, has] = reach
                new &= D == INF
                D[new] = level
                frontier = new
            self.D[rows] = D

    # ---- hop by hop ------------------------------------------------------------------
    def _candidates(self, cur, dst):
        """Next hops of flows at nodes `cur` heading to endpoint nodes `dst`: (cand, link, on a shortest path)."""
        cand, lk = self.nb[cur], self.lk[cur]                       # (n, deg)
        slot = self.slot_of[dst]
        col = self.fwd_col[np.maximum(cand, 0)]
        dist = self.D[self.target_row[slot][:, None], np.maximum(col, 0)] + self.target_off[slot][:, None]
        dist = np.where((cand >= 0) & (col >= 0), dist, INF)
        dist = np.where(cand == dst[:, None], 0, dist)
        best = dist.min(axis=1)
        if (best >= INF).any():
            i = int(np.argmax(best >= INF))
            raise ValueError(f"topology: no route from {self.topo.labels[cur[i]]} to {self.topo.labels[dst[i]]}")
        return cand, lk, dist == best[:, None]

    def _walk(self, src, dst, seed, mode):
        """Single-path routing (ecmp, adaptive): per hop, (flow indices, links); also hops per flow."""
        F = src.size
        cur, alive = src.copy(), np.arange(F)
        hops, records = np.zeros(F, dtype=np.int64), []
        load = np.zeros(self.topo.links) if mode == "adaptive" else None
        while alive.size:
            cand, lk, good = self._candidates(cur[alive], dst[alive])
            count = good.sum(axis=1)
            pick = (flow_hash(src[alive], dst[alive], seed, cur[alive]) % count.astype(np.uint64)).astype(np.int64)
            col = (np.cumsum(good, axis=1) <= pick[:, None]).sum(axis=1)
            if mode == "adaptive":                      # least-loaded eligible link, flows one after another
                for i in range(alive.size):
                    options = np.flatnonzero(good[i])
                    least = options[load[lk[i, options]] == load[lk[i, options]].min()]
                    col[i] = least[pick[i] % least.size]
                    load[lk[i, col[i]]] += 1
            rows = np.arange(alive.size)
            link, nxt = lk[rows, col], cand[rows, col]
            records.append((alive, link))
            cur[alive] = nxt
            arrived = nxt == dst[alive]
            hops[alive[~arrived & self.counts_hop[nxt]]] += 1
            alive = alive[~arrived]
        return records, hops

    def _spray(self, src, dst):
        """Fluid spraying: each switch splits a flow's bytes evenly over its ECMP set.

        A step whose messages all stay inside hosts (a hierarchical schedule's intra-host phases)
        leaves no flow for the network: no triples.
        """
        V, E = self.topo.graph.number_of_nodes(), self.topo.links
        if src.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        frag_flow, frag_node, frag_w = np.arange(src.size), src.copy(), np.ones(src.size)
        flows, links, weights = [], [], []
        while frag_flow.size:
            cand, lk, good = self._candidates(frag_node, dst[frag_flow])
            r, c = np.nonzero(good)
            f, w = frag_flow[r], frag_w[r] / good.sum(axis=1)[r]
            flows.append(f), links.append(lk[r, c]), weights.append(w)
            nxt = cand[r, c]
            keep = nxt != dst[f]
            key, inverse = np.unique(f[keep] * V + nxt[keep], return_inverse=True)
            frag_flow, frag_node, frag_w = key // V, key % V, np.bincount(inverse, w[keep], minlength=key.size)
        key, inverse = np.unique(np.concatenate(flows) * E + np.concatenate(links), return_inverse=True)
        return key // E, key % E, np.bincount(inverse, np.concatenate(weights), minlength=key.size)

    def route(self, src, dst, mode: str = "ecmp", seed: int = 0) -> Routes:
        """Routes of flows from endpoint nodes `src` to `dst` (arrays of node ids, src != dst)."""
        validate.choice(mode, "routing", MODES)
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        t, F = self.topo, src.size
        host = t.host_of[self.slot_of[src]] == t.host_of[self.slot_of[dst]]
        same = host & (t.accelerators_per_host > 1) & (not t.direct) & (self.up[src] >= 0)
        inter = np.flatnonzero(~same)
        records, hops = self._walk(src[inter], dst[inter], seed, "adaptive" if mode == "adaptive" else "ecmp")
        out_port = np.full(F, -1, dtype=np.int64)
        in_port = np.full(F, -1, dtype=np.int64)
        for idx, link in records:                       # hop order: first non-PCIe link is the out-port
            f = inter[idx]
            port = t.link_kind[link] != PCIE
            unset = port & (out_port[f] < 0)
            out_port[f[unset]] = link[unset]
            in_port[f[port]] = link[port]
        intra = np.flatnonzero(same)
        out_port[intra], in_port[intra] = self.up[src[intra]], self.down[dst[intra]]
        all_hops = np.zeros(F, dtype=np.int64)
        all_hops[inter] = hops
        if mode == "spray":
            f, link, w = self._spray(src[inter], dst[inter])
            f = inter[f]
        else:
            f = np.concatenate([inter[idx] for idx, _ in records]) if records else np.zeros(0, np.int64)
            link = np.concatenate([l for _, l in records]) if records else np.zeros(0, np.int64)
            w = np.ones(f.size)
        flow = np.concatenate([f, intra, intra])
        link = np.concatenate([link, self.up[src[intra]], self.down[dst[intra]]])
        weight = np.concatenate([w, np.ones(2 * intra.size)])
        order = np.argsort(flow, kind="stable")         # grouped by flow, hop order kept within a flow
        return Routes(flow=flow[order], link=link[order], weight=weight[order], out_port=out_port, in_port=in_port,
                      hops=all_hops)


def router(topology) -> Router:
    """`topology`'s routing tables, built on first use and kept with it (routing depends on the
    topology, never the other way round)."""
    if topology._router is None:
        topology._router = Router(topology)
    return topology._router


def route(topology, src, dst, mode: str = "ecmp", *, seed: int = 0) -> Routes:
    """Routes between endpoint nodes of `topology` (see ``Router.route``)."""
    return router(topology).route(src, dst, mode, seed)

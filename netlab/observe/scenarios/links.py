"""A network in which a few directed rank pairs have links of their own: a slow NIC, a thin spine.

``Network`` gives every pair of hosts the same NIC link. ``LinkMap`` keeps that model (each rank's
port held for alpha + n/B per message, ``netlab.net.network``) and overrides the link of chosen
(src, dst) pairs:

* a slow NIC on rank r: every message to or from r uses a link of ``fraction`` times the bandwidth;
* an oversubscribed spine: ranks on two leaves; a message between leaves gets the uplink's fair
  share. A leaf of h hosts with oversubscription R has uplink h*B/R per direction; when m ring
  flows cross it in one direction at once, each gets h*B/(R*m) (max-min fair, as the flow simulator
  ``netlab.sim`` shares a link). Exact for a ring all-reduce, whose steps all run at once and send
  the same bytes; for other patterns an approximation (the real uplink is shared per moment, not
  per pair), which is why the scenarios use the spine with ring all-reduces only.

Left out: the switches themselves (queues, ECMP), for which see ``netlab.sim`` and ``netlab.fabric``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...net.network import Link, Network


@dataclass(frozen=True)
class LinkMap(Network):
    """``Network`` plus ``overrides``: ((src, dst, Link), ...) for the pairs whose link differs."""
    overrides: tuple = ()

    def link(self, a: int, b: int) -> Link:
        for src, dst, link in self.overrides:
            if src == a and dst == b:
                return link
        return super().link(a, b)


def slow_nic(base: Network, rank: int, fraction: float, ranks: int) -> LinkMap:
    """Every message to or from `rank` at `fraction` of the NIC's bandwidth (same latency)."""
    slow = Link(base.nic.bandwidth * fraction, base.nic.latency, "slow NIC")
    pairs = [(rank, r) for r in range(ranks) if r != rank] + [(r, rank) for r in range(ranks) if r != rank]
    return LinkMap(nic=base.nic, ranks_per_host=base.ranks_per_host, intra=base.intra, gamma=base.gamma,
                   congestion=base.congestion, overrides=tuple((a, b, slow) for a, b in pairs))


def ring_crossings(leaf: list[int]) -> dict[tuple[int, int], int]:
    """How many ring edges r -> r+1 go from leaf a to leaf b, for each (a, b) with a != b."""
    p, out = len(leaf), {}
    for r in range(p):
        a, b = leaf[r], leaf[(r + 1) % p]
        if a != b:
            out[(a, b)] = out.get((a, b), 0) + 1
    return out


def spine(base: Network, leaf: list[int], ratio: float) -> LinkMap:
    """Ranks on leaves (``leaf[r]``); cross-leaf messages share an uplink oversubscribed `ratio`:1."""
    hosts = {x: leaf.count(x) for x in set(leaf)}
    cross = ring_crossings(leaf)
    overrides = []
    for a in range(len(leaf)):
        for b in range(len(leaf)):
            la, lb = leaf[a], leaf[b]
            if a == b or la == lb:
                continue
            uplink = min(hosts[la], hosts[lb]) * base.nic.bandwidth / ratio
            share = uplink / max(1, cross.get((la, lb), 1))
            overrides.append((a, b, Link(min(base.nic.bandwidth, share), base.nic.latency, "spine")))
    return LinkMap(nic=base.nic, ranks_per_host=base.ranks_per_host, intra=base.intra, gamma=base.gamma,
                   congestion=base.congestion, overrides=tuple(overrides))

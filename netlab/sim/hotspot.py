"""An incast hotspot in a fat-tree with background traffic, PFC on vs off: the congestion tree at scale.

    from netlab.sim import hotspot
    on, off = hotspot.compare(k=8, senders=16)          # 128 hosts, same seed, PFC on and off
    on.victims_slowdown(off), on.pause_above_hot_tor()

N senders (seeded, outside the receiver's rack) each push `size` bytes to one receiver at once, while
seeded background flows run between random pairs of the other hosts, none to the receiver. With
PFC the hot port's upstream links are paused, their own queues fill and pause the links feeding
them, up through the aggregation and core layers (a congestion tree; Guo et al., "RDMA over
Commodity Ethernet at Scale", SIGCOMM'16): background flows that never touch the receiver but
cross a paused link lose throughput (victims). Without PFC the hot port drops the incast's excess
and the background keeps its rate -- except where incast flows at line rate collide with it on an
upstream link before DCQCN has cut them: there both lose bytes, and such a background flow is
faster with PFC (the default run has both kinds; ``victims_slowdown`` shows which). The model is ``congestion.run``'s fluid; see there for what it
leaves out. Its figure is ``netlab.figures.congestion.draw_hotspot``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..net import fabrics
from ..net.topology import Topology
from .congestion import CongestionRun, run


@dataclass
class Hotspot:
    topology: Topology
    run: CongestionRun
    incast: np.ndarray       # (F,) bool: flow is one of the incast's senders
    receiver: int            # endpoint slot of the hot receiver
    hot_port: int            # link id: the receiver's ToR port toward it
    pfc: bool

    @property
    def background(self) -> np.ndarray:
        return ~self.incast

    def incast_completion(self) -> float:
        """s until the last incast flow finished (nan if not within the run)."""
        return float(np.max(self.run.fct[self.incast]))

    def above_hot_tor(self) -> np.ndarray:
        """Link ids above the receiver's ToR: aggregation -> ToR and core -> aggregation of its pod."""
        t = self.topology
        tor = t.link_src[self.hot_port]
        into_tor = np.flatnonzero((t.link_dst == tor) & (t.link_kind == 1))
        aggs = t.link_src[into_tor]
        into_aggs = np.flatnonzero(np.isin(t.link_dst, aggs) & (t.link_kind == 1) & ~np.isin(t.link_src, [tor]))
        core = into_aggs[[t.labels[t.link_src[l]].startswith("core") for l in into_aggs]]
        return np.concatenate([into_tor, core])

    def pause_above_hot_tor(self) -> float:
        """Total pause time (s, summed over links) on the links above the receiver's ToR."""
        return float(self.run.pause_s[self.above_hot_tor()].sum())

    def victims_slowdown(self, other: "Hotspot") -> np.ndarray:
        """(background flows,) completion time here / in `other` (the same flows, other PFC setting)."""
        return self.run.fct[self.background] / other.run.fct[other.background]


def incast_hotspot(k: int = 8, senders: int = 16, size: float = 1 << 20, background: int = 48,
                   background_size: float = 2 << 20, pfc: bool = True, transport: str = "dcqcn",
                   buffer: float = 512e3, xoff: float = 32e3, xon: float = 16e3, ecn=(5e3, 200e3, 0.01),
                   receiver: int = 0, seed: int = 0, nic="100GbE", dt: float = 1e-6, until: float = 0.5,
                   record: bool = False, topology: Topology | None = None) -> Hotspot:
    """One run: `senders` x `size` bytes into endpoint `receiver`, plus `background` random flows."""
    topo = topology or fabrics.fat_tree(k, nic=nic)
    P = topo.size
    if not 0 <= receiver < P:
        raise ValueError(f"receiver: must be an endpoint slot from 0 to {P - 1}, got {receiver!r}")
    into = np.flatnonzero(np.isin(topo.link_dst, topo.endpoints) & (topo.link_kind == 0))
    tor = dict(zip(topo.link_dst[into].tolist(), topo.link_src[into].tolist()))   # endpoint node -> its ToR
    racks = np.array([tor[v] for v in topo.endpoints.tolist()])
    same_rack = racks == racks[receiver]
    outside = np.flatnonzero(~same_rack)
    if not 1 <= senders <= outside.size:
        raise ValueError(f"senders: must be from 1 to {outside.size} (hosts outside the receiver's rack)")
    rng = np.random.default_rng(seed)
    src = rng.choice(outside, senders, replace=False)
    rest = np.setdiff1d(np.arange(P), np.concatenate([src, [receiver]]))
    if background and rest.size < 2:
        raise ValueError("background: no hosts left for background traffic")
    bg_src = rng.choice(rest, background)
    bg_dst = rng.choice(rest, background)
    clash = bg_src == bg_dst
    bg_dst[clash] = rest[(np.searchsorted(rest, bg_dst[clash]) + 1) % rest.size]
    all_src = np.concatenate([src, bg_src])
    all_dst = np.concatenate([np.full(senders, receiver), bg_dst])
    sizes = np.concatenate([np.full(senders, float(size)), np.full(background, float(background_size))])
    r = run(topo, all_src, all_dst, sizes, transport=transport, buffer=buffer, ecn=ecn,
            pfc=(xoff, xon) if pfc else None, dt=dt, seed=seed, until=until, record=record)
    incast = np.zeros(all_src.size, dtype=bool)
    incast[:senders] = True
    hot_port = r.paths[0][-1]
    return Hotspot(topo, r, incast, receiver, hot_port, pfc)


def compare(**options) -> tuple[Hotspot, Hotspot]:
    """The same scenario (same seed, same flows) with PFC on and off: (on, off)."""
    options.pop("pfc", None)
    topo = options.pop("topology", None) or fabrics.fat_tree(options.get("k", 8), nic=options.get("nic", "100GbE"))
    return incast_hotspot(pfc=True, topology=topo, **options), incast_hotspot(pfc=False, topology=topo, **options)

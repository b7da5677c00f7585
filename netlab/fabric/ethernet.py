"""Chapter 9's experiments on the packet fabric: Ethernet for AI on multi-path, multi-plane topologies.

Each function builds a ``net`` topology as packet-level switches (``multiswitch.SwitchedNetwork``),
starts a set of flows at t = 0 and runs them to completion, and returns a ``Result`` (a chapter 6
``fabric.experiments.Run`` with the network and the experiment's own numbers), next to its closed form:

* ``incast``: N senders x block into one receiver (its last-hop port is the bottleneck). A lossless
  or trimming fabric needs N x block / B (``lossless_round``) plus a few round trips; drop-tail
  with RTOmin 200 ms waits out the timeout (chapter 6);
* ``ring_step``: one step of a ring all-reduce, every host sending block to its ring neighbour, with
  the ranks placed on the hosts in a shuffled order (a scheduler that ignores the topology). Per-flow
  ECMP puts several flows on one link (a hash collision) and the step takes c x block / B, c the
  most flows on any link of chapter 5's routes (``ecmp_collisions``); spraying gives each of k paths
  1/k of every flow and the step takes about block / B;
* ``failover``: the same traffic with a link failing during the step (``failure.Failure``);
* ``planes_step``: a ring step over N planes (an 800G NIC as 8 x 100G), healthy or with a plane's
  link at one host down, against one link of the whole rate.

Transports are chapter 6's and UET's (``nscc``, ``rccc``); ``multipath`` is ``ecmp``, ``spray`` or
``reps``; ``trim`` makes every switch port trim instead of dropping. ECN: NSCC and RCCC get UEC
htsim's default marking, from 20 % to 80 % of the buffer (RED, Pmax 1) when no ``ecn`` is given;
DCTCP and DCQCN chapter 6's. Sizes: bytes, bytes/s, seconds.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import validate
from ..net import fabrics
from ..net.network import Link
from ..net.topology import Topology
from . import multipath as mp
from . import transport as tp
from .congestion import check_options
from .engine import Fabric
from .multiswitch import SwitchedNetwork
from .experiments import Run, default_ecn as ch6_ecn
from .switch import ECN, MTU

GBIT = 1e9 / 8
LATENCY = 50e-6               # s, a host's NIC alpha (25 us per host link, as chapter 6's star)


def default_ecn(transport: str, bandwidth: float, buffer) -> ECN | None:
    """The marking a transport expects when none is given (see the module docstring)."""
    if transport in tp.UNORDERED:
        if buffer is None:
            return None
        return ECN(0.2 * buffer, 0.8 * buffer, 1.0)
    return ch6_ecn(transport, bandwidth)


def topology(spec, hosts: int, bandwidth: float = GBIT, latency: float = LATENCY, *, hop_latency: float = 0.0) -> Topology:
    """A Topology from 'star', 'spineleaf:LEAVES:SPINES:RATIO' or 'fattree:K' (or a Topology, as is)."""
    if isinstance(spec, Topology):
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"topology: 'star', 'spineleaf:L:S:R', 'fattree:K' or a netlab Topology, got {spec!r}")
    kind = spec.split(":")[0].replace("-", "").replace("_", "").lower()
    if kind not in ("star", "spineleaf", "fattree"):
        raise ValueError(f"topology: the packet fabric takes star, spineleaf:L:S:R or fattree:K, got {spec!r}")
    return fabrics.parse(spec, ranks=hosts, nic=Link(bandwidth, latency), hop_latency=hop_latency)


def transport_options(transport: str, trim: bool, window, credit_rate=None) -> dict:
    if transport == "nscc":
        return {"trimming": bool(trim)}
    if transport == "rccc":
        return {} if credit_rate is None else {"credit_rate": float(credit_rate)}
    if window is not None and tp.takes_window(transport):
        return {"max_window": window}
    return {}


@dataclass
class Result(Run):
    """A chapter 6 ``Run`` plus the switched network and what this experiment reports."""
    network: SwitchedNetwork | None = None
    ideal_s: float = math.nan                        # the closed form the run is set beside
    info: dict = field(default_factory=dict)

    def totals(self) -> dict:
        base = super().totals()
        if self.network is not None:
            base.update(self.network.totals())
            base["drops"] = sum(p.drops for p in self.fabric.ports.values())
        senders = [f.sender for f in self.flows if f.sender is not None]
        base["nacks"] = sum(getattr(s, "nacked", 0) for s in senders)
        base["duplicates"] = sum(getattr(f, "duplicates", 0) for f in self.flows)
        base["fast_retransmits"] = sum(getattr(s, "fast_retransmits", 0) for s in senders)
        return base

    def summary(self) -> dict:
        s = super().summary()
        s["ideal_s"] = self.ideal_s
        s.update(self.info)
        return s

    @property
    def completion_s(self) -> float:
        return self.rounds[0] if self.rounds else math.inf

    def path_bytes(self) -> dict[str, int]:
        """Bytes each switch-to-switch link carried (the per-path load)."""
        return self.network.link_bytes("fabric") if self.network is not None else {}


def build(spec, hosts: int, *, bandwidth: float = GBIT, latency: float = LATENCY, buffer=None, transport="nscc",
          trim: bool = False, ecn="default", pfc=None, planes: int = 1, shared_buffer: bool = False,
          hop_latency: float = 0.0, framing=None, seed: int = 0):
    """(Fabric, SwitchedNetwork) of `spec` for `hosts` hosts (``ecn='default'``: the transport's marking;
    ``framing``: packets of its payload with its headers on the wire, ``net/framing.py``)."""
    from ..net.framing import parse
    framing = parse(framing)
    topo = topology(spec, hosts, bandwidth, latency, hop_latency=hop_latency)
    if hosts > topo.size:
        raise ValueError(f"senders: {topo.name} has {topo.size} hosts, {hosts} needed")
    if ecn == "default":
        ecn = default_ecn(transport, bandwidth, buffer)
    fab = Fabric(seed)
    net = SwitchedNetwork(fab, topo, buffer=buffer, ecn=ecn, pfc=pfc, trim=trim, planes=planes,
                          shared_buffer=shared_buffer, framing=framing)
    return fab, net


def run_pairs(fab, net, pairs, block: int, *, transport: str, rto_min: float, multipath: str, options: dict,
              seed: int = 0, time_limit: float = 60.0, event_limit: int | None = None, failure=None,
              bottleneck: str | None = None, ideal_s: float = math.nan) -> Result:
    """Flows of `block` bytes for every (source slot, destination slot) in `pairs`, all at t = 0."""
    wall = time.perf_counter()
    run = Result(fab, [], bottleneck or "", network=net, ideal_s=ideal_s)
    left = [len(pairs)]

    def done(_flow):
        left[0] -= 1
        if left[0] == 0:
            run.rounds.append(fab.now)
    if failure is not None:
        net.fail(failure)
    for i, (a, b) in enumerate(pairs):
        chooser = net.chooser(net.node(a), net.node(b), multipath, seed)
        f = net.flow(f"{a}->{b}", a, b, block, transport=transport, chooser=chooser, on_done=done)
        sender = net.sender(transport, f, rto_min, dict(options))
        fab.add_flow(f, sender)
        run.flows.append(f)
    fab.run(time_limit, stop=lambda: left[0] == 0, max_events=event_limit)
    if left[0]:
        run.complete = False
    run.payload = block * len(pairs)
    run.wall_s = time.perf_counter() - wall
    if failure is not None and run.complete and failure.at > run.rounds[0]:
        raise ValueError(f"failure: at {failure.at * 1e3:g} ms is after the run ended ({run.rounds[0] * 1e3:.3g} ms); "
                         f"choose a time within the run")
    return run


def _common(transport, trim, pfc, multipath, buffer, failure, planes, credit_rate, bandwidth, rto_min, block):
    check_options(transport, trim, pfc, multipath, buffer=buffer, failure=failure, planes=planes, credit_rate=credit_rate)
    validate.positive(bandwidth, "bandwidth")
    validate.positive(rto_min, "rto-min")
    validate.whole(block, "block", 1, 1 << 30)


def incast(senders: int = 16, block: int = 256 * 1024, *, topology_spec="star", transport: str = "nscc",
           trim: bool = False, buffer=32 * 1024, rto_min: float = 0.2, multipath: str = "ecmp",
           bandwidth: float = GBIT, latency: float = LATENCY, ecn="default", pfc=None, window=64 * 1024,
           credit_rate=None, planes: int = 1, failure=None, seed: int = 0, time_limit: float = 60.0,
           event_limit: int | None = None, hop_latency: float = 0.0, unscheduled: float = 0.0,
           framing=None) -> Result:
    """`senders` hosts (slots 1..N) each send `block` bytes to host 0 at once."""
    validate.whole(senders, "senders", 1, 100_000, int_only=True)
    _common(transport, trim, pfc, multipath, buffer, failure, planes, credit_rate, bandwidth, rto_min, block)
    fab, net = build(topology_spec, senders + 1, bandwidth=bandwidth, latency=latency, buffer=buffer,
                     transport=transport, trim=trim, ecn=ecn, pfc=pfc, planes=planes, hop_latency=hop_latency,
                     framing=framing, seed=seed)
    pairs = [(i + 1, 0) for i in range(senders)]
    down = net.paths(net.node(1), net.node(0))[0][-1].name
    options = transport_options(transport, trim, window, credit_rate)
    if transport == "rccc":
        options["unscheduled"] = validate.number(unscheduled, "unscheduled", 0, 1 << 40)
    elif unscheduled:
        raise ValueError(f"unscheduled: bytes sent before the first credit are RCCC's, not {transport}'s")
    run = run_pairs(fab, net, pairs, block, transport=transport, rto_min=rto_min, multipath=multipath,
                    options=options, seed=seed, time_limit=time_limit, event_limit=event_limit, failure=failure,
                    bottleneck=down, ideal_s=lossless_round(senders, block, bandwidth))
    return run


def ring_pairs(topo: Topology, hosts: int, placement="shuffled", seed: int = 0) -> list[tuple[int, int]]:
    """(slot of rank r, slot of rank r + 1) for a ring over `hosts` ranks placed on the topology."""
    slots = topo.placement(hosts, placement, seed)
    return [(int(slots[r]), int(slots[(r + 1) % hosts])) for r in range(hosts)]


def ring_step(hosts: int | None = None, block: int = 256 * 1024, *, topology_spec="fattree:4", transport="nscc",
              multipath: str = "spray", placement="shuffled", trim: bool = False, buffer=None,
              rto_min: float = 0.2, bandwidth: float = GBIT, latency: float = LATENCY, ecn="default",
              window=None, credit_rate=None, planes: int = 1, failure=None, seed: int = 0,
              time_limit: float = 60.0, event_limit: int | None = None, hop_latency: float = 0.0) -> Result:
    """One ring all-reduce step: rank r sends `block` to rank r + 1, every rank at once."""
    _common(transport, trim, None, multipath, buffer, failure, planes, credit_rate, bandwidth, rto_min, block)
    topo = topology(topology_spec, hosts or 16, bandwidth, latency, hop_latency=hop_latency)
    hosts = topo.size if hosts is None else validate.whole(hosts, "hosts", 2, topo.size, int_only=True)
    fab, net = build(topo, hosts, bandwidth=bandwidth, latency=latency, buffer=buffer, transport=transport,
                     trim=trim, ecn=ecn, planes=planes, seed=seed)
    pairs = ring_pairs(topo, hosts, placement, seed)
    run = run_pairs(fab, net, pairs, block, transport=transport, rto_min=rto_min, multipath=multipath,
                    options=transport_options(transport, trim, window, credit_rate), seed=seed,
                    time_limit=time_limit, event_limit=event_limit, failure=failure,
                    ideal_s=block / bandwidth)
    run.info["ecmp_collisions"] = ecmp_collisions(topo, pairs, seed)
    busiest = max(net.link_bytes("fabric").items(), key=lambda kv: kv[1], default=("", 0))
    run.bottleneck = busiest[0] or run.flows[0].path[-1].name
    return run


def ecmp_collisions(topo: Topology, pairs, seed: int = 0) -> int:
    """The most flows chapter 5's ECMP routes put on one link (1: no collision)."""
    from ..net import routing
    src = topo.endpoints[[a for a, _ in pairs]]
    dst = topo.endpoints[[b for _, b in pairs]]
    r = routing.route(topo, src, dst, "ecmp", seed=seed)
    return int(np.bincount(r.link, minlength=topo.links).max())


def lossless_round(senders: int, block: float, bandwidth: float) -> float:
    """N x block / B: a port that never idles and never drops."""
    return senders * block / bandwidth


def recovery(run: Result) -> dict:
    """After a failure: packets sent onto the dead link afterwards, and when the last of them left."""
    net = run.network
    if not net.failures:
        return {}
    failure, ports = net.failures[0]
    dead = set(ports)
    after, last = 0, -math.inf
    for f in run.flows:
        c = f.multipath
        if c is None:
            continue
        for ev, path in enumerate(c.paths):
            if dead.intersection(path) and c.last_at[ev] >= failure.at:
                last = max(last, c.last_at[ev])
    lost = sum(getattr(p, "lost", 0) for p in ports)
    after = lost
    return {"lost_on_failed_link": after, "last_sent_onto_it_s": (last - failure.at) if last > -math.inf else 0.0}


def failover(hosts: int = 8, block: int = 2 * 1024 * 1024, *, topology_spec="spineleaf:2:4:1",
             multipath: str = "reps", transport: str = "nscc", link: str = "leaf0->spine0", at: float = 2e-3,
             reroute: float | None = 10e-3, buffer=64 * 1024, trim: bool = True, rto_min: float = 1e-3,
             bandwidth: float = GBIT, latency: float = LATENCY, seed: int = 0, time_limit: float = 60.0,
             event_limit: int | None = None) -> Result:
    """Hosts on the first leaf send `block` each to hosts on the last, across the spines; `link` fails at `at`."""
    from .failure import Failure
    failure = Failure(link, at, reroute) if link else None
    _common(transport, trim, None, multipath, buffer, failure, 1, None, bandwidth, rto_min, block)
    topo = topology(topology_spec, hosts, bandwidth, latency)
    half = hosts // 2
    fab, net = build(topo, hosts, bandwidth=bandwidth, latency=latency, buffer=buffer, transport=transport,
                     trim=trim, seed=seed)
    pairs = [(i, half + i) for i in range(half)]
    run = run_pairs(fab, net, pairs, block, transport=transport, rto_min=rto_min, multipath=multipath,
                    options=transport_options(transport, trim, None), seed=seed, time_limit=time_limit,
                    event_limit=event_limit, failure=failure, ideal_s=block / bandwidth)
    run.info.update(recovery(run))
    return run


def planes_step(hosts: int = 8, block: int = 2 * 1024 * 1024, *, planes: int = 8, failed: str = "none",
                multipath: str = "reps", transport: str = "nscc", buffer=64 * 1024, trim: bool = True,
                rto_min: float = 1e-3, bandwidth: float = 8 * GBIT, latency: float = LATENCY, seed: int = 0,
                time_limit: float = 2.0, event_limit: int | None = None) -> Result:
    """A ring step over `planes` one-switch planes of bandwidth / planes each; `failed`: 'none', or 'link'
    (host 0's link in plane planes - 1, down from the start)."""
    from .failure import Failure
    validate.choice(failed, "failed", ("none", "link"))
    failure = Failure("h0->switch", 0.0, None, plane=planes - 1) if failed == "link" else None
    _common(transport, trim, None, multipath, buffer, failure, planes, None, bandwidth, rto_min, block)
    topo = topology("star", hosts, bandwidth, latency)
    fab, net = build(topo, hosts, bandwidth=bandwidth, latency=latency, buffer=buffer, transport=transport,
                     trim=trim, planes=planes, seed=seed)
    pairs = [(r, (r + 1) % hosts) for r in range(hosts)]
    run = run_pairs(fab, net, pairs, block, transport=transport, rto_min=rto_min, multipath=multipath,
                    options=transport_options(transport, trim, None), seed=seed, time_limit=time_limit,
                    event_limit=event_limit, failure=failure, ideal_s=block / bandwidth)
    return run

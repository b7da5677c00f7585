"""Chapter 9's experiments on the packet fabric: Ethernet for AI on multi-path, multi-plane topologies.

Each function builds a ``net`` topology as packet-level switches (``multiswitch.SwitchedNetwork``),
starts a set of flows at t = 0 and runs them to completion, and returns a ``net.result.SimResult`` (as
chapter 6's experiments do: its one step's time is ``time_s``; its ``PacketDetail`` has the network, the
closed form ``ideal_s`` and the experiment's own numbers, ``info``), next to its closed form:

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

Each takes the switch as a ``Congestion`` (the one description of a switch that ``netlab.network`` takes;
``INCAST``, ``RING``, ``FAILOVER`` and ``PLANES`` hold each experiment's defaults) and the NIC as a ``Link``.

One concept: the four experiments share the builder, the runner, the counters and the closed forms they
are set beside (one module over 300 lines).

Transports are chapter 6's and UET's (``nscc``, ``rccc``); ``multipath`` is ``ecmp``, ``spray`` or
``reps``; ``trim`` makes every switch port trim instead of dropping. ECN: NSCC and RCCC get UEC
htsim's default marking, from 20 % to 80 % of the buffer (RED, Pmax 1) when no ``ecn`` is given;
DCTCP and DCQCN chapter 6's. Sizes: bytes, bytes/s, seconds.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .. import validate
from ..net import fabrics
from ..net.network import Link
from ..net.result import SimResult
from ..net.topology import Topology
from . import multipath as mp
from . import transport as tp
from .congestion import Congestion, check_options
from .engine import Fabric
from .failure import Failure
from .multiswitch import SwitchedNetwork
from .experiments import PacketDetail, counters as ch6_counters, default_ecn as ch6_ecn
from .switch import ECN

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
    validate.instance(spec, "topology", str, "'star', 'spineleaf:L:S:R', 'fattree:K' or a netlab Topology")
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


def counters(engine: Fabric, flows, network: SwitchedNetwork) -> dict:
    """Chapter 6's counters (``experiments.counters``) and chapter 9's: trims, losses on failed links, NACKs,
    duplicate arrivals, fast retransmits: a chapter 9 run's ``SimResult.fabric``."""
    base = ch6_counters(engine, flows)
    base.update(network.totals())
    base["drops"] = sum(p.drops for p in engine.ports.values())
    senders = [f.sender for f in flows if f.sender is not None]
    base["nacks"] = sum(getattr(s, "nacked", 0) for s in senders)
    base["duplicates"] = sum(getattr(f, "duplicates", 0) for f in flows)
    base["fast_retransmits"] = sum(getattr(s, "fast_retransmits", 0) for s in senders)
    return base


DEFAULT = "default"           # a switch's ecn=DEFAULT: the transport's own marking (``default_ecn``)
NIC = Link(GBIT, LATENCY)     # a host's NIC: 1 Gbit/s, 50 us (25 us per host link)


def _marking(switch: Congestion, bandwidth: float):
    """The switch's ECN, with ``DEFAULT`` resolved to its transport's marking."""
    if isinstance(switch.ecn, str) and switch.ecn == DEFAULT:
        return default_ecn(switch.transport, bandwidth, switch.buffer)
    return switch.ecn


def _check(switch: Congestion, nic: Link, block) -> None:
    """One clear error naming the parameter (``validate``), before anything runs; the switch checked its own."""
    validate.instance(switch, "switch", Congestion, "a netlab.fabric.Congestion")
    validate.instance(nic, "nic", Link, "a netlab Link (bandwidth, latency)")
    validate.positive(nic.bandwidth, "bandwidth")
    validate.positive(switch.rto_min, "rto-min")
    validate.whole(block, "block", 1, 1 << 30)


def build(spec, hosts: int, *, switch: Congestion, nic: Link = NIC, hop_latency: float = 0.0, framing=None,
          shared_buffer: bool = False):
    """(Fabric, SwitchedNetwork) of `spec` (a topology spec or a Topology) for `hosts` hosts, with `switch`'s
    buffer, ECN (``DEFAULT``: the transport's marking), PFC, trimming, planes and seed; ``framing``: packets
    of its payload with its headers on the wire, ``net/framing.py``."""
    from ..net.framing import parse
    framing = parse(framing)
    topo = topology(spec, hosts, nic.bandwidth, nic.latency, hop_latency=hop_latency)
    if hosts > topo.size:
        raise ValueError(f"senders: {topo.name} has {topo.size} hosts, {hosts} needed")
    fab = Fabric(switch.seed)
    net = SwitchedNetwork(fab, topo, switch=switch, ecn=_marking(switch, nic.bandwidth), shared_buffer=shared_buffer,
                          framing=framing)
    return fab, net


def _run_pairs(fab, net, pairs, block: int, *, switch: Congestion, options: dict, time_limit: float = 60.0,
               event_limit: int | None = None, failure=None, bottleneck: str | None = None,
               ideal_s: float = math.nan) -> SimResult:
    """Flows of `block` bytes for every (source slot, destination slot) in `pairs`, all at t = 0, with
    `switch`'s transport, RTOmin, multipath scheme and seed."""
    transport, rto_min, multipath, seed = switch.transport, switch.rto_min, switch.multipath, switch.seed
    wall = time.perf_counter()
    detail = PacketDetail(fab, [], net, bottleneck or "", payload=block * len(pairs), ideal_s=ideal_s)
    left, times = [len(pairs)], []

    def done(_flow):
        left[0] -= 1
        if left[0] == 0:
            times.append(fab.now)
    if failure is not None:
        net.fail(failure)
    for i, (a, b) in enumerate(pairs):
        chooser = net.chooser(net.node(a), net.node(b), multipath, seed)
        f = net.flow(f"{a}->{b}", a, b, block, transport=transport, chooser=chooser, on_done=done)
        sender = net.sender(transport, f, rto_min, dict(options))
        fab.add_flow(f, sender)
        detail.flows.append(f)
    fab.run(time_limit, stop=lambda: left[0] == 0, max_events=event_limit)
    complete = not left[0]
    wall_s = time.perf_counter() - wall
    if failure is not None and complete and failure.at > times[0]:
        raise ValueError(f"failure: at {failure.at * 1e3:g} ms is after the run ended ({times[0] * 1e3:.3g} ms); "
                         f"choose a time within the run")
    return detail.finish(times, wall_s=wall_s, complete=complete, fabric=counters(fab, detail.flows, net))


INCAST = Congestion("nscc", buffer=32 * 1024, rto_min=0.2, ecn=DEFAULT, topology="star")


def incast(senders: int = 16, block: int = 256 * 1024, *, switch: Congestion = INCAST, nic: Link = NIC,
           hop_latency: float = 0.0, framing=None, time_limit: float = 60.0, event_limit: int | None = None) -> SimResult:
    """`senders` hosts (slots 1..N) each send `block` bytes to host 0 at once, through `switch` (its topology,
    transport, trimming, buffer, RTOmin, multipath, ECN, PFC, window, credits, planes, failure, seed; the
    defaults are ``INCAST``'s: change them with ``dataclasses.replace(ethernet.INCAST, ...)``); every NIC is
    `nic`."""
    validate.whole(senders, "senders", 1, 100_000, int_only=True)
    _check(switch, nic, block)
    transport = switch.transport
    fab, net = build(switch.topology, senders + 1, switch=switch, nic=nic, hop_latency=hop_latency, framing=framing)
    pairs = [(i + 1, 0) for i in range(senders)]
    down = net.paths(net.node(1), net.node(0))[0][-1].name
    options = transport_options(transport, switch.trim, switch.window, switch.credit_rate)
    if transport == "rccc":
        options["unscheduled"] = switch.unscheduled
    run = _run_pairs(fab, net, pairs, block, switch=switch, options=options, time_limit=time_limit,
                     event_limit=event_limit, failure=switch.failure, bottleneck=down,
                     ideal_s=lossless_round(senders, block, nic.bandwidth))
    return run


def ring_pairs(topo: Topology, hosts: int, placement="shuffled", seed: int = 0) -> list[tuple[int, int]]:
    """(slot of rank r, slot of rank r + 1) for a ring over `hosts` ranks placed on the topology."""
    slots = topo.placement(hosts, placement, seed)
    return [(int(slots[r]), int(slots[(r + 1) % hosts])) for r in range(hosts)]


RING = Congestion("nscc", ecn=DEFAULT, window=None, topology="fattree:4", placement="shuffled", multipath="spray")


def ring_step(hosts: int | None = None, block: int = 256 * 1024, *, switch: Congestion = RING, nic: Link = NIC,
              hop_latency: float = 0.0, time_limit: float = 60.0, event_limit: int | None = None) -> SimResult:
    """One ring all-reduce step: rank r sends `block` to rank r + 1, every rank at once, the ranks placed on
    `switch`'s topology by its placement (defaults: ``RING``)."""
    _check(switch, nic, block)
    topo = topology(switch.topology, hosts or 16, nic.bandwidth, nic.latency, hop_latency=hop_latency)
    hosts = topo.size if hosts is None else validate.whole(hosts, "hosts", 2, topo.size, int_only=True)
    fab, net = build(topo, hosts, switch=switch, nic=nic)
    pairs = ring_pairs(topo, hosts, switch.placement, switch.seed)
    run = _run_pairs(fab, net, pairs, block, switch=switch,
                     options=transport_options(switch.transport, switch.trim, switch.window, switch.credit_rate),
                     time_limit=time_limit, event_limit=event_limit, failure=switch.failure,
                     ideal_s=block / nic.bandwidth)
    run.info["ecmp_collisions"] = ecmp_collisions(topo, pairs, switch.seed)
    busiest = max(net.link_bytes("fabric").items(), key=lambda kv: kv[1], default=("", 0))
    run.detail.bottleneck = busiest[0] or run.flows[0].path[-1].name
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


def recovery(run: SimResult) -> dict:
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


FAILOVER = Congestion("nscc", buffer=64 * 1024, trim=True, rto_min=1e-3, ecn=DEFAULT, window=None,
                      topology="spineleaf:2:4:1", multipath="reps", failure=Failure("leaf0->spine0", 2e-3, 10e-3))


def failover(hosts: int = 8, block: int = 2 * 1024 * 1024, *, switch: Congestion = FAILOVER, nic: Link = NIC,
             time_limit: float = 60.0, event_limit: int | None = None) -> SimResult:
    """Hosts on the first leaf send `block` each to hosts on the last, across the spines; `switch`'s failure
    (``failure.Failure``: a link, when it fails, when routing reroutes; None: no failure) happens during the
    step. Defaults: ``FAILOVER``."""
    _check(switch, nic, block)
    topo = topology(switch.topology, hosts, nic.bandwidth, nic.latency)
    half = hosts // 2
    fab, net = build(topo, hosts, switch=switch, nic=nic)
    pairs = [(i, half + i) for i in range(half)]
    run = _run_pairs(fab, net, pairs, block, switch=switch, options=transport_options(switch.transport, switch.trim, None),
                     time_limit=time_limit, event_limit=event_limit, failure=switch.failure,
                     ideal_s=block / nic.bandwidth)
    run.info.update(recovery(run))
    return run


PLANES = Congestion("nscc", buffer=64 * 1024, trim=True, rto_min=1e-3, ecn=DEFAULT, window=None, topology="star",
                    multipath="reps", planes=8)


def planes_step(hosts: int = 8, block: int = 2 * 1024 * 1024, *, failed: str = "none", switch: Congestion = PLANES,
                nic: Link = Link(8 * GBIT, LATENCY), time_limit: float = 2.0, event_limit: int | None = None) -> SimResult:
    """A ring step over `switch`'s planes (one-switch planes of the NIC's bandwidth / planes each); `failed`:
    'none', or 'link' (host 0's link in the last plane, down from the start). Defaults: ``PLANES``."""
    validate.choice(failed, "failed", ("none", "link"))
    planes = switch.planes
    failure = Failure("h0->switch", 0.0, None, plane=planes - 1) if failed == "link" else None
    _check(switch, nic, block)
    check_options(switch.transport, switch.trim, None, switch.multipath, buffer=switch.buffer, failure=failure,
                  planes=planes)
    topo = topology("star", hosts, nic.bandwidth, nic.latency)
    fab, net = build(topo, hosts, switch=switch, nic=nic)
    pairs = [(r, (r + 1) % hosts) for r in range(hosts)]
    run = _run_pairs(fab, net, pairs, block, switch=switch, options=transport_options(switch.transport, switch.trim, None),
                     time_limit=time_limit, event_limit=event_limit, failure=failure, ideal_s=block / nic.bandwidth)
    return run

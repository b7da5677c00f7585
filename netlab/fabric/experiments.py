"""The chapter's experiments on the packet fabric: incast rounds, long flows through one port, a PFC victim.

* ``incast``: the barrier-synchronized read of Phanishayee et al. (FAST'08) and Vasudevan et al.
  (SIGCOMM'09), and a parameter server's push: N senders each send a block to one receiver through
  one switch port; a round ends when the receiver has every block, and the next round starts then.
  Optional background traffic from another job shares the receiver's port (Poisson arrivals, seeded).
* ``long_flows``: N long-lived flows through one bottleneck port, for DCTCP's queue sawtooth
  (SIGCOMM'10 section 3.3) and loss-based TCP filling the buffer.
* ``victim``: the DCQCN-validation scenario (H1->R1 and H2->R2 cross the link S1->S2; hosts on S2
  send an incast to R2): with PFC the pause of S1->S2 stops H1->R1, which never goes near R2.

Each takes its config (``Incast``, ``Victim``, a ``Congestion`` switch) and returns a ``net.result.SimResult``
(model 'packet'): its rounds are ``step_times``, their sum ``time_s``, what the switches counted ``fabric``,
and the rest (the ``Fabric`` with its traces, the flows, the bottleneck port) its ``PacketDetail``. One
module over 300 lines because the three are one concept: the same star, the same result and the same
checks of their settings.

Their networks are ``netlab.net`` topologies, built as packet ports the one way chapter 9's are
(``multiswitch.SwitchedNetwork``): the incast and the long flows a star (``net.fabrics.star``: senders
'h0'.., the receiver 'rx', the switch 'tor'), the victim two switches (``net.fabrics.dumbbell``). Only the
ports the traffic crosses are built, under the chapter's names ('h3.nic', 'tor->rx', 'S1->S2').

Defaults: 1500-byte packets, 25 us per link, so a 2-link path has a base RTT of 100 us plus
serialization (Vasudevan's SAN RTTs were 100-700 us).

One concept: chapter 6's experiments on the packet fabric, sharing one incast set-up (``Incast``) and one
result (``SimResult`` with a ``PacketDetail``).
"""
from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass, field, replace

import numpy as np

from . import transport as tp
from .congestion import Congestion
from .. import validate
from ..net import fabrics
from ..net.network import Link
from ..net.result import SimResult
from .engine import Fabric, Flow
from .multiswitch import SwitchedNetwork
from .rdma import DCQCN_RED
from .switch import ECN, MTU, PFC, TokenBucketPort, pfc_headroom

LINK_DELAY = 25e-6     # s per link


def check_settings(senders, block, bandwidth, switch: Congestion, *, rounds: int = 1,
                   link_delay: float = LINK_DELAY) -> None:
    """One clear error naming the parameter, before anything runs (``validate``'s checks; the switch's
    transport, buffer and RTOmin were checked when its ``Congestion`` was made)."""
    validate.whole(senders, "senders", 1, int_only=True)
    validate.whole(rounds, "rounds", 1, int_only=True)
    validate.positive(block, "block")
    validate.positive(bandwidth, "bandwidth")
    if switch.pfc is not None:
        switch.pfc.check(switch.buffer, bandwidth, link_delay)


def counters(engine: Fabric, flows) -> dict:
    """What chapter 6's switches and senders counted: drops, marks, PFC pause seconds (every port's, summed),
    timeouts and retransmissions (every flow's in ``flows``): a ``SimResult``'s ``fabric``."""
    ports = engine.ports.values()
    flows = [f for f in flows if f.sender is not None]
    return {"drops": sum(p.drops for p in ports), "marks": sum(p.marks for p in ports),
            "pause_s": sum(p.paused_seconds() for p in ports),
            "timeouts": sum(f.sender.timeouts for f in flows),
            "retransmissions": sum(f.sender.retransmissions for f in flows)}


@dataclass(eq=False)
class PacketDetail:
    """What the packet fabric observes of a run, beside the ``SimResult`` fields every model has (its rounds
    are ``step_times``, their sum ``time_s``; its counters ``fabric``; ``net/result.py``): the ``engine``
    (the ``Fabric``: its ports with their queue, drop, mark and pause traces, its event count), the measured
    ``flows``, the ``network`` (``multiswitch.SwitchedNetwork``), the ``bottleneck`` port's name, the
    ``payload`` the measured flows carried, and for chapter 9's runs the closed form ``ideal_s`` they are set
    beside (None: none, chapter 6's) and the experiment's own numbers, ``info``. Read through the result:
    ``run.engine.now``, ``run.flows``, ``run.queue()``."""
    engine: Fabric
    flows: list
    network: SwitchedNetwork
    bottleneck: str
    payload: int = 0
    ideal_s: float | None = None
    info: dict = field(default_factory=dict)
    result: SimResult | None = field(default=None, repr=False)   # the run it belongs to (set by SimResult)

    def finish(self, steps, *, wall_s: float, complete: bool = True, fabric: dict | None = None) -> SimResult:
        """The run's ``SimResult``: ``steps`` its round times (s); ``fabric`` its counters (default
        ``counters``, chapter 6's)."""
        steps = list(steps)
        time_s = math.inf if not complete else (sum(steps) if steps else self.engine.now)
        return SimResult(model="packet", time_s=time_s, step_times=steps, wall_s=wall_s,
                         topology=self.network.topology, complete=complete,
                         fabric=counters(self.engine, self.flows) if fabric is None else fabric, detail=self)

    def delivered(self) -> int:
        """Bytes the receivers had in order when the run ended (all of them if it is complete)."""
        return sum(f.rx_bytes[-1] for f in self.flows if not f.name.startswith("bg"))

    @property
    def port(self):
        return self.engine.ports[self.bottleneck]

    def queue(self, port: str | None = None):
        """(times s, queue bytes): the port's queue (default the bottleneck's) as a step function."""
        p = self.engine.ports[port or self.bottleneck]
        return np.asarray(p.q_t), np.asarray(p.q_bytes)

    def path_bytes(self) -> dict[str, int]:
        """Bytes each switch-to-switch link carried (the per-path load)."""
        return self.network.link_bytes("fabric")

    def summary(self) -> dict:
        r = self.result
        rounds = r.step_times.tolist()
        total = sum(rounds)
        times = np.asarray(rounds) if rounds else np.asarray([math.nan])
        s = {"goodput_Bps": self.payload / total if total else math.nan,
             "completion_s": {"p50": float(np.percentile(times, 50)), "p99": float(np.percentile(times, 99)),
                              "max": float(times.max())},
             "rounds": len(rounds), **r.fabric, "events": self.engine.events, "wall_s": r.wall_s}
        if self.ideal_s is not None:
            s["ideal_s"] = self.ideal_s
            s.update(self.info)
        return s


def rates(flow: Flow, t0: float, t1: float, bins: int = 100):
    """A flow's delivered rate (bytes/s) in ``bins`` equal intervals of [t0, t1]: (bin centres, rates)."""
    edges = np.linspace(t0, t1, bins + 1)
    delivered = np.interp(edges, np.asarray(flow.rx_t), np.asarray(flow.rx_bytes))
    return (edges[:-1] + edges[1:]) / 2, np.diff(delivered) / np.diff(edges)


def _star(fab: Fabric, hosts: int, *, bandwidth: float, link_delay: float, switch: Congestion, ecn, shared: bool,
          burst=None) -> SwitchedNetwork:
    """``hosts`` NICs -> one switch -> one port toward the receiver: a ``net`` star of hosts + 1 (the hosts
    'h0'.., the receiver 'rx', the switch 'tor'), every link at ``bandwidth`` with ``link_delay``, as the
    packet fabric's ports (``SwitchedNetwork``) with ``switch``'s buffer and PFC and the marking ``ecn``.
    The fabric gets only the ports its traffic crosses, as the chapter names them: each host's NIC 'h{i}.nic'
    and 'tor->rx' (a tbf-like token bucket with ``burst``, ``switch.TokenBucketPort``); the receiver's ACKs
    take no port."""
    validate.number(link_delay, "delay", 0)          # as a port checks it, before the Link doubles it
    labels = [f"h{i}" for i in range(hosts)] + ["rx"]
    topo = fabrics.star(hosts + 1, Link(bandwidth, 2 * link_delay), labels=labels, switch="tor")
    ports = {f"h{i}->tor": f"h{i}.nic" for i in range(hosts)} | {"tor->rx": "tor->rx"}
    shaped = None if burst is None else {"tor->rx": functools.partial(TokenBucketPort, burst=burst)}
    return SwitchedNetwork(fab, topo, switch=switch, ecn=ecn, shared_buffer=shared, ports=ports, port_class=shaped)


def _path(net: SwitchedNetwork, src: int, dst: int) -> list:
    """The ports from host slot ``src`` to ``dst`` (chapter 6's networks have one path between two hosts)."""
    return net.paths(net.node(src), net.node(dst))[0]


@dataclass(frozen=True, kw_only=True)
class Incast:
    """An incast, as ``incast`` runs it: ``rounds`` barrier-synchronized rounds of ``senders`` x
    ``block`` bytes into one switch port toward the receiver, every link at ``bandwidth`` (bytes/s) with
    ``link_delay`` (s). ``switch`` is the switch between them, the same ``Congestion`` that
    ``netlab.network(congestion=...)`` takes for real ranks: its transport, buffer per port, ECN, PFC,
    RTOmin, receive window, another job's ``background`` load (Poisson arrivals of ``background_size``
    bytes from one more host into the receiver's port) and ``seed``.

    ``shared_buffer``: the switch's buffer is one pool shared by its ports. ``burst`` (bytes) makes the
    receiver's port a token bucket as Linux's tbf (``switch.TokenBucketPort``). ``persistent``: each
    sender keeps one connection across rounds (window-based transports with ``resume``): its window,
    ssthresh and RTT estimate carry over to its next round's block. ``delayed_ack`` (s; the Linux
    testbed's model sets it): the receivers ACK every second in-order segment, with that delayed-ACK
    timer, as Linux's do (``engine.Flow``); None, every packet ACKed at once. ``transport_options``:
    further keywords for each sender (``transport.make``; e.g. ``linux=True``). ``time_limit``: the
    virtual seconds the rounds must finish in.
    """
    senders: int = 16
    block: int = 256 * 1024
    rounds: int = 1
    bandwidth: float = 1e9 / 8
    link_delay: float = LINK_DELAY
    switch: Congestion = Congestion("reno", buffer=64 * 1024, rto_min=tp.RTO_MIN)
    shared_buffer: bool = False
    burst: int | None = None
    persistent: bool = False
    delayed_ack: float | None = None
    transport_options: dict | None = None
    time_limit: float = 600.0

    def __post_init__(self):
        sw = self.switch
        validate.instance(sw, "switch", Congestion, "a netlab.fabric.Congestion")
        if sw.switched or sw.storm is not None:
            raise ValueError("switch: an incast runs on chapter 6's one switch (no topology, planes, trimming "
                             "or pause storm)")
        check_settings(self.senders, self.block, self.bandwidth, sw, rounds=self.rounds, link_delay=self.link_delay)
        if self.delayed_ack is not None:
            validate.positive(self.delayed_ack, "delayed_ack")
        if self.delayed_ack is not None and tp.TRANSPORTS[sw.transport].rate_based:
            raise ValueError(f"delayed_ack: for window-based transports only, not {sw.transport!r}")


def incast(config: Incast = Incast(), *, event_limit: int | None = None, progress=None) -> SimResult:
    """Run ``config``'s incast on the packet fabric: one ``Fabric``, a star of ``senders + 1`` hosts.

    ``window`` (the switch's) is each TCP receiver's advertised window in bytes (default Linux's initial
    64 KB, from tcp_rmem's 128 KB default buffer, kept fixed: Linux grows it by autotuning up to
    tcp_rmem's maximum; None: unlimited), so N x window is what the senders can have in flight at once.
    ``event_limit``: stop after that many events even if the rounds have not finished (the run is
    then ``complete`` False: what happened so far), to bound the wall time of an interactive answer.
    ``progress``: called now and then (every 4,096 events, and once at the end) with the bytes the
    receiver has in order so far, out of ``senders * block * rounds`` (a progress bar's count);
    the events run are the same with or without it.
    """
    import time
    sw = config.switch
    senders, block, rounds, bandwidth = config.senders, config.block, config.rounds, config.bandwidth
    buffer, transport, rto_min, seed, background = sw.buffer, sw.transport, sw.rto_min, sw.seed, sw.background
    ecn, window, background_size = sw.ecn, sw.window, sw.background_size
    link_delay, shared_buffer, burst, delayed_ack = config.link_delay, config.shared_buffer, config.burst, \
        config.delayed_ack
    persistent, time_limit, transport_options = config.persistent, config.time_limit, config.transport_options
    wall = time.perf_counter()
    fab = Fabric(seed)
    net = _star(fab, senders + 1, bandwidth=bandwidth, link_delay=link_delay, switch=sw, ecn=ecn, shared=shared_buffer,
                burst=burst)
    paths = [_path(net, i, senders + 1) for i in range(senders + 1)]       # host i -> rx; host `senders`: other job
    detail = PacketDetail(fab, [], net, "tor->rx", payload=senders * block * rounds)
    times = []                                                              # s, each round's
    options = dict(transport_options or {})
    if window is not None and tp.takes_window(transport):
        options.setdefault("max_window", window)
    state = {"round": 0, "left": 0, "start": 0.0}

    def start_round(_=None):
        state["left"], state["start"] = senders, fab.now
        for i in range(senders):
            flow = tp.flow_class(transport)(fab, f"r{state['round']}.h{i}", paths[i], block,
                                            start=fab.now, on_done=flow_done)
            flow.delayed_ack = delayed_ack
            sender = tp.make(transport, flow, rto_min, **options)
            if persistent and state["round"] > 0 and hasattr(sender, "resume"):
                sender.resume(detail.flows[-senders].sender)
            fab.add_flow(flow, sender)
            detail.flows.append(flow)

    def flow_done(flow):
        state["left"] -= 1
        if state["left"] == 0:
            times.append(fab.now - state["start"])
            state["round"] += 1
            if state["round"] < rounds:
                start_round()

    fab.schedule(0.0, start_round)
    if background > 0:
        rng = random.Random(seed)
        gap = background_size / (background * bandwidth)            # s between arrivals (mean)

        def arrival(_=None):
            if state["round"] >= rounds:
                return
            flow = tp.flow_class(transport)(fab, f"bg{len(fab.flows)}", paths[senders], background_size,
                                            start=fab.now)
            fab.add_flow(flow, tp.make(transport, flow, rto_min, **options))
            fab.schedule(fab.now + rng.expovariate(1 / gap), arrival)
        fab.schedule(rng.expovariate(1 / gap), arrival)
    if event_limit is not None:
        event_limit = validate.whole(event_limit, "event_limit", 1)
    stop = lambda: state["round"] >= rounds                         # noqa: E731
    if progress is not None:
        ticks = [0]

        def stop():
            ticks[0] += 1
            if not ticks[0] & 4095:
                current = detail.flows[-senders:] if state["round"] < rounds else []
                progress(state["round"] * senders * block + sum(f.rx_bytes[-1] for f in current))
            return state["round"] >= rounds
    fab.run(time_limit, stop=stop, max_events=event_limit)
    if progress is not None:
        current = detail.flows[-senders:] if state["round"] < rounds else []
        progress(state["round"] * senders * block + sum(f.rx_bytes[-1] for f in current))
    complete = True
    if state["round"] < rounds and event_limit is not None and fab.events >= event_limit:
        complete = False
    elif state["round"] < rounds:
        raise RuntimeError(f"incast: only {state['round']} of {rounds} rounds finished in {time_limit} s of virtual time")
    return detail.finish(times, wall_s=time.perf_counter() - wall, complete=complete)


def long_flows(n: int = 2, bandwidth: float = 10e9 / 8, *, switch: Congestion = Congestion("dctcp", rto_min=tp.RTO_MIN),
               duration: float = 0.02, link_delay: float = LINK_DELAY, loss: float = 0.0) -> SimResult:
    """n flows that never end, for ``duration`` seconds, through one port (a dumbbell) of ``switch`` (its
    transport, buffer, ECN, RTOmin and seed); ``loss``: the probability that the port's link loses a packet
    (independent, seeded), as for Mathis et al.'s relation."""
    import time
    check_settings(n, 1, bandwidth, switch, link_delay=link_delay)
    if switch.pfc is not None or switch.background or switch.switched or switch.storm is not None:
        raise ValueError("switch: long flows run through chapter 6's one port (no PFC, other job, topology or storm)")
    loss = validate.number(loss, "loss", 0, 1)
    if loss == 1:
        raise ValueError(f"loss: must be a probability in [0, 1), got {loss!r}")
    transport, rto_min = switch.transport, switch.rto_min
    wall = time.perf_counter()
    fab = Fabric(switch.seed)
    net = _star(fab, n, bandwidth=bandwidth, link_delay=link_delay, switch=switch, ecn=switch.ecn, shared=False)
    fab.ports["tor->rx"].loss = float(loss)
    detail = PacketDetail(fab, [], net, "tor->rx")
    for i in range(n):
        flow = Flow(fab, f"f{i}", _path(net, i, n), 10**15, start=0.0)
        fab.add_flow(flow, tp.make(transport, flow, rto_min))
        detail.flows.append(flow)
    fab.run(duration)
    return detail.finish([], wall_s=time.perf_counter() - wall)


@dataclass(frozen=True, kw_only=True)
class Victim:
    """The DCQCN-validation scenario as ``victim`` runs it: hosts at ``bandwidth`` (bytes/s) and links of
    ``link_delay`` (s); the link S1->S2 ``trunk`` times faster; ``incast_senders`` hosts on S2 each send to R2
    at line rate from ``incast_start`` for ``incast_length`` (s); the run lasts ``duration`` (s).
    ``switch``: both switches' transport, buffer per port, ECN, RTOmin and seed (its PFC, if any, is
    ``victim``'s ``pfc`` and ``xoff``'s to set: leave it None). ``xoff``: PFC's Xoff (bytes; None: half
    the buffer)."""
    switch: Congestion = Congestion("dcqcn", buffer=200_000, ecn=ECN(5_000, 100_000, 0.01), rto_min=1e-3)
    bandwidth: float = 10e9 / 8
    incast_senders: int = 15
    incast_start: float = 1e-3
    incast_length: float = 1e-3
    duration: float = 6e-3
    link_delay: float = 2e-6
    trunk: float = 2.0
    xoff: float | None = None

    def __post_init__(self):
        validate.instance(self.switch, "switch", Congestion, "a netlab.fabric.Congestion")
        if self.switch.pfc is not None:
            raise ValueError("switch: victim sets PFC itself (its pfc and the config's xoff); give a switch without pfc")
        check_settings(self.incast_senders, 1, self.bandwidth, self.switch, link_delay=self.link_delay)


def victim(pfc: bool = True, *, config: Victim = Victim()) -> SimResult:
    """F1: H1->R1 and F2: H2->R2 over S1->S2; ``incast_senders`` hosts on S2 blast R2 for ``incast_length``.

    The incast hosts each send at line rate for the incast's length (DCQCN-validation's 15 hosts x
    4 KB messages for 1 ms). The link S1->S2 is ``trunk`` times faster than the hosts' links, so
    F1 and F2 both run at line rate until the incast. Buffers are per port; PFC's Xoff defaults to
    half the buffer.
    """
    import time
    wall = time.perf_counter()
    sw, c = config.switch, config
    transport, bandwidth, buffer, ecn, link_delay, rto_min = sw.transport, c.bandwidth, sw.buffer, sw.ecn, \
        c.link_delay, sw.rto_min
    control = PFC(c.xoff if c.xoff is not None else buffer / 2) if pfc else None
    if control is not None:
        check_settings(c.incast_senders, 1, bandwidth, replace(sw, pfc=control), link_delay=link_delay)
    fab = Fabric(sw.seed)
    n = c.incast_senders
    validate.number(link_delay, "delay", 0)          # as a port checks it, before the Link doubles it
    labels = ["H1", "H2", "R1", "R2"] + [f"H{i + 3}" for i in range(n)]
    topo = fabrics.dumbbell(2, 2 + n, Link(bandwidth, 2 * link_delay), trunk=Link(c.trunk * bandwidth, link_delay),
                            labels=labels)
    ports = {f"{h}->{s}": f"{h}.nic" for h, s in [("H1", "S1"), ("H2", "S1")] + [(f"H{i + 3}", "S2") for i in range(n)]}
    ports |= {name: name for name in ("S1->S2", "S2->R1", "S2->R2")}
    net = SwitchedNetwork(fab, topo, switch=replace(sw, pfc=control), ecn=ecn, ports=ports)
    detail = PacketDetail(fab, [], net, "S2->R2")
    for name, src, dst in (("F1 (H1->R1)", 0, 2), ("F2 (H2->R2)", 1, 3)):
        flow = Flow(fab, name, _path(net, src, dst), 10**15, start=0.0)
        fab.add_flow(flow, tp.make(transport, flow, rto_min))
        detail.flows.append(flow)
    block = int(bandwidth * c.incast_length)
    for i in range(n):
        flow = Flow(fab, f"incast H{i + 3}->R2", _path(net, 4 + i, 3), block, start=c.incast_start)
        fab.add_flow(flow, tp.make(transport, flow, rto_min))
        detail.flows.append(flow)
    fab.run(c.duration)
    return detail.finish([], wall_s=time.perf_counter() - wall)


def headroom(bandwidth: float, link_delay: float = LINK_DELAY) -> float:
    """The PFC headroom a link needs (bytes), for choosing Xoff = buffer - headroom."""
    return pfc_headroom(bandwidth, link_delay)


def default_ecn(transport: str, bandwidth: float) -> ECN | None:
    """The marking a transport expects when none is given: DCTCP's K from Linux's dctcp.txt heuristic
    (20 packets at 1 Gbit/s, 65 at 10 Gbit/s, in proportion above), DCQCN's RED from its paper
    (Kmin 5 KB, Kmax 200 KB, Pmax 1 %); loss-based TCP and the ideal sender need none."""
    if transport == "dctcp":
        packets = 20 if bandwidth <= 1e9 / 8 else max(20, round(65 * bandwidth / (10e9 / 8)))
        return ECN.dctcp(packets * MTU)
    if transport == "dcqcn":
        return DCQCN_RED
    return None


JITTER = Incast(senders=4, block=64 * 1024, rounds=40,
                switch=Congestion("reno", buffer=64 * 1024, rto_min=tp.RTO_MIN, background=0.3))


def jitter(transports=("reno", "dctcp", "dcqcn"), *, config: Incast = JITTER, pfc: bool = False,
           keep_runs: bool = False, event_limit: int | None = None, progress=None) -> dict:
    """Round (step) times of synchronized bursts sharing the port with another job's seeded traffic: ``config``'s
    incast (its senders, block, rounds, bandwidth; its switch's buffer, RTOmin, background load and seed) once
    per transport, each with its own marking (``default_ecn``).

    DCQCN always runs with PFC (RoCE is deployed lossless); ``pfc`` adds it for the others too.

    Returns {transport: {"times": array of s, "p50", "p99", "max", "mean", "ideal"}}; "ideal" is the
    round a lossless, unshared port would take (N x block / B). ``keep_runs`` adds each transport's
    whole run under "run" (its fabric, flows and traces: about 15 MB per transport at 40 rounds, which
    a notebook kernel would otherwise keep for as long as it holds the result).
    ``event_limit``: each transport's run stops there; a run it stops is refused (``ValueError``
    naming rounds). ``progress``: as ``incast``'s, counting every transport's bytes one after another.
    """
    validate.instance(config, "config", Incast, "a netlab.fabric.Incast")
    senders, block, rounds, bandwidth, buffer = config.senders, config.block, config.rounds, config.bandwidth, \
        config.switch.buffer
    out = {}
    for i, name in enumerate(transports):
        control = PFC(buffer - headroom(bandwidth)) if pfc or name == "dcqcn" else None
        before = i * senders * block * rounds
        tick = None if progress is None else (lambda done, before=before: progress(before + done))
        switch = replace(config.switch, transport=name, ecn=default_ecn(name, bandwidth), pfc=control)
        run = incast(replace(config, switch=switch), event_limit=event_limit, progress=tick)
        if not run.complete:
            raise ValueError(f"rounds: {name} finished {len(run.step_times)} of {rounds} rounds within "
                             f"{event_limit:,} events, the most one run may take; ask for fewer rounds")
        times = np.asarray(run.step_times)
        out[name] = {"times": times, "p50": float(np.percentile(times, 50)), "p99": float(np.percentile(times, 99)),
                     "max": float(times.max()), "mean": float(times.mean()),
                     "ideal": senders * block / bandwidth}
        if keep_runs:
            out[name]["run"] = run
    return out

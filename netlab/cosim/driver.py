"""The model that times one epoch of a run's messages for the coordinator (``live.Coordinator``), and what
it observed: the port model, the switch fabric between the ranks, chapter 9's switched network, or a
flow-level fabric; its summary and its counter tracks for the trace.
"""
from __future__ import annotations

import heapq

from ..net.port import PortCalendar
from .flows import FlowEngine, FlowFabric
from .state import Message


def _framing(link) -> tuple[int, int]:
    """(header bytes on the wire per packet, payload bytes per packet) of a link's framing, or none."""
    from ..fabric.switch import MTU
    framing = getattr(link, "framing", None)
    if framing is None:
        return 0, MTU
    return framing.overhead, framing.payload


class FabricDriver:
    """The model that times one epoch's messages, and what it observed: the port model (``fabric.engine`` None:
    each NIC port books its messages in order), the switch fabric between the ranks, chapter 9's switched
    network, or a flow-level fabric (``FlowFabric``). ``all_done()`` says whether every rank is done
    (background traffic lasts until then) and ``running()`` whether, besides, the run goes on (a pause
    storm lasts that long)."""

    def __init__(self, spec, network, ranks: int, *, all_done, running):
        self.spec, self.network, self.ranks, self.all_done = spec, network, ranks, all_done
        self.flow_level = isinstance(spec, FlowFabric)
        self.completed = False                       # set when a message completes
        n, link = ranks, network.nic
        if self.flow_level:                          # chapter 5's topologies, timed flow by flow (flows.py)
            self.engine = FlowEngine(spec, n)
        elif spec.ports_only:
            self.out_ports = [PortCalendar() for _ in range(n)]
            self.in_ports = [PortCalendar() for _ in range(n)]
            self.engine = None
        elif spec.switched:
            self._switched(link)
        else:
            from ..fabric.engine import Fabric
            from ..fabric.switch import Switch  # noqa: F401  (the switch is built by Fabric.switch)
            self.engine = Fabric(seed=spec.seed)
            sw = self.engine.switch("switch", pfc=spec.pfc)
            hop = link.latency / 2                   # two links: a rank's one-way latency is alpha
            self.nics = [self.engine.port(f"rank{r}.nic", link.bandwidth, hop) for r in range(n)]
            self.downs = [self.engine.port(f"switch->rank{r}", link.bandwidth, hop, spec.buffer,
                                           ecn=spec.ecn, switch=sw) for r in range(n)]
            if spec.pfc is not None:
                spec.pfc.check(spec.buffer, link.bandwidth, hop)
            self.flows = []
            if spec.background:
                self._background(link, hop)
            if spec.storm is not None:                       # one host pauses its downlink (fabric/storm.py)
                spec.storm.install(self.engine, self.downs[spec.storm.rank], spec.pfc.priorities, running)

    def _switched(self, link) -> None:
        """Chapter 9's fabric: the spec's topology (or planes, or trimming on one switch) as switches and
        ports (``fabric.multiswitch.SwitchedNetwork``), ranks on its hosts in the spec's placement."""
        from ..fabric import ethernet
        from ..fabric.engine import Fabric
        spec = self.spec
        topo = ethernet.topology(spec.topology or "star", self.ranks, link.bandwidth, link.latency)
        if self.ranks > topo.size:
            raise ValueError(f"topology: {topo.name} has {topo.size} hosts, the run has {self.ranks} ranks")
        self.engine = Fabric(seed=spec.seed)
        self.net = ethernet.SwitchedNetwork(self.engine, topo, switch=spec, ecn=spec.ecn,
                                            framing=getattr(link, "framing", None))
        self.slots = [int(s) for s in topo.placement(self.ranks, spec.placement, spec.seed)]
        self.choosers: dict = {}                     # (src, dst) -> the connection's path chooser
        self.flows = []
        if spec.failure is not None:
            self.net.fail(spec.failure)

    def _background(self, link, hop) -> None:
        """Another job's seeded Poisson flows into one rank's port, for as long as any rank runs."""
        import random

        from ..fabric import transport as tp
        spec, fab = self.spec, self.engine
        if spec.background_to >= self.ranks:
            raise ValueError(f"background_to: rank {spec.background_to} of {self.ranks}")
        nic = fab.port("other-job.nic", link.bandwidth, hop)
        rng, gap = random.Random(spec.seed), spec.background_size / (spec.background * link.bandwidth)
        options = {"max_window": spec.window} if spec.window is not None and tp.takes_window(spec.transport) else {}

        def arrival(_=None):
            if self.all_done():
                return
            flow = tp.flow_class(spec.transport)(fab, f"bg{len(fab.flows)}", [nic, self.downs[spec.background_to]],
                                                 spec.background_size, start=fab.now)
            fab.add_flow(flow, tp.make(spec.transport, flow, spec.rto_min, **options))
            fab.schedule(fab.now + rng.expovariate(1 / gap), arrival)
        fab.schedule(rng.expovariate(1 / gap), arrival)

    # -- the port model
    def book_send(self, rank: int, msg: Message) -> None:
        """The port model: the sender's port takes the message in the order its program posts them."""
        duration = self.network.nic.time(msg.nbytes)
        msg.begin = self.out_ports[rank].reserve(msg.start, duration)
        msg.end = msg.begin + duration

    def port_reply(self, rank: int, what: str, msg: Message):
        """The port model's (begin, end) for `rank` waiting on `msg`: a receive books the receiver's port,
        in its wait order (None while the sender's port has yet to take the message)."""
        if what != "recv":
            return (msg.begin, msg.end)
        if msg.begin is None:
            return None
        nic = self.network.nic
        duration = nic.time(msg.nbytes)
        begin = self.in_ports[rank].reserve(msg.begin, duration)
        reply = (begin, begin + duration)
        if nic.framing is not None and nic.ack_time(msg.nbytes):
            self.out_ports[rank].reserve(begin, nic.ack_time(msg.nbytes))   # as clock.py
        return reply

    # -- a fabric
    def final(self, end: float) -> bool:
        """Has every event at or before `end` been processed? Then no other message can still complete by
        `end`: a flow not yet injected starts no earlier than the fabric's clock (>= end) and takes time."""
        heap = self.engine._heap
        return not heap or heap[0][0] > end

    def simulate_before(self, limit: float) -> bool:
        """Process events earlier than `limit`; stop right after a message completes (True if one did)."""
        fab, heap, pop = self.engine, self.engine._heap, heapq.heappop
        self.completed = False
        n = 0
        while heap and heap[0][0] < limit and not self.completed:
            t, _, fn, arg = pop(heap)
            fab.now = t
            fn(arg)
            n += 1
        fab.events += n
        return self.completed

    def inject(self, key: tuple, msg: Message) -> None:
        """Start message `key` ((src, dst, seq)) on the fabric at its sender's start time."""
        from ..fabric import transport as tp
        (src, dst, seq), start = key, msg.start

        def done(flow, msg=msg):
            msg.end = flow.done_at
            self.completed = True

        def done_at(end, msg=msg):
            msg.end = end
            self.completed = True

        if self.flow_level:
            self.engine.post(key, msg.nbytes, start, lambda end: done_at(end))
            return
        if self.spec.switched:
            from ..fabric.ethernet import transport_options
            spec, net = self.spec, self.net
            a, b = self.slots[src], self.slots[dst]
            if (src, dst) not in self.choosers:           # one chooser per connection, kept across messages
                self.choosers[(src, dst)] = net.chooser(net.node(a), net.node(b), spec.multipath, spec.seed)
            options = transport_options(spec.transport, spec.trim, spec.window, spec.credit_rate)
            if spec.transport == "rccc":
                options["unscheduled"] = spec.unscheduled
            flow = net.flow(f"{src}->{dst}#{seq}", a, b, max(msg.nbytes, 1), start=start, transport=spec.transport,
                            chooser=self.choosers[(src, dst)], on_done=done)
            sender = net.sender(spec.transport, flow, spec.rto_min, options)
            self.engine.add_flow(flow, sender)
            self.flows.append(flow)
            return
        overhead, mss = _framing(self.network.nic)
        flow = tp.flow_class(self.spec.transport)(self.engine, f"{src}->{dst}#{seq}", [self.nics[src], self.downs[dst]],
                                                  max(msg.nbytes, 1), start=start, mss=mss, on_done=done)
        flow.overhead = overhead
        options = {}
        if self.spec.window is not None and tp.takes_window(self.spec.transport):
            options["max_window"] = self.spec.window
        self.engine.add_flow(flow, tp.make(self.spec.transport, flow, self.spec.rto_min, **options))
        self.flows.append(flow)

    # -- what a run observed
    def summary(self) -> dict:
        """Drops, ECN marks, pause time, timeouts and retransmissions over the run (fabric runs)."""
        if self.engine is None:
            return {"model": "ports"}
        if self.flow_level:
            return self.engine.summary()
        ports = self.engine.ports.values()
        senders = [f.sender for f in self.flows if f.sender is not None]
        out = {"model": "fabric", "drops": sum(p.drops for p in ports), "marks": sum(p.marks for p in ports),
               "pause_s": sum(p.paused_seconds() for p in ports),
               "timeouts": sum(s.timeouts for s in senders),
               "retransmissions": sum(s.retransmissions for s in senders),
               "flows": len(self.flows), "events": self.engine.events}
        from ..fabric.transport import UNORDERED
        if self.spec.switched or self.spec.transport in UNORDERED:
            out["trims"] = sum(getattr(p, "trims", 0) for p in ports)
            out["nacks"] = sum(getattr(s, "nacked", 0) for s in senders)
            out["duplicates"] = sum(f.duplicates for f in self.flows)
        if self.spec.switched:
            out["link_bytes"] = self.net.link_bytes("fabric")
            if self.spec.failure is not None:
                out["failure_happened"] = self.spec.failure.at <= self.engine.now
                out["lost_on_failed_link"] = sum(getattr(p, "lost", 0) for _, ps in self.net.failures for p in ps)
        return out


    def tracks(self) -> list[dict]:
        """What the fabric recorded over time, as counter tracks for the trace (``Trace.counters``).

        Per port that ever queued, dropped, marked or paused: its queue in bytes, cumulative drops and
        ECN marks, priorities paused. Per sender -> receiver pair: the window (packets; DCQCN: rate in
        bytes/s) of its messages one after another. Per sending rank: cumulative retransmissions and
        timeouts. Each track: name, unit, times (s), values. Lists are shared, not copied."""
        if self.engine is None or self.flow_level:
            return []
        self.engine.catch_up(self.engine.now)        # timers asleep since their sender's last wake: fire them
        out = []

        def steps(times):
            return sorted(times), list(range(1, len(times) + 1))

        for port in self.engine.ports.values():
            if max(port.q_bytes) > 0:
                out.append({"track": f"{port.name} queue", "unit": "bytes", "t": port.q_t, "v": port.q_bytes})
            for what, times in (("drops", port.drop_t), ("ECN marks", port.mark_t),
                                ("trims", getattr(port, "trim_t", ()))):
                if times:
                    out.append({"track": f"{port.name} {what}", "unit": what.split()[-1], "t": times,
                                "v": list(range(1, len(times) + 1))})
            if port.pauses:
                out.append({"track": f"{port.name} paused", "unit": "priorities", "t": port.pause_t,
                            "v": port.pause_n})
        pairs, ranks = {}, {}
        for flow in self.flows:
            sender = flow.sender
            if sender is None:
                continue
            src, dst = flow.name.split("#")[0].split("->")
            pairs.setdefault((int(src), int(dst)), []).append(sender)
            ranks.setdefault(int(src), []).append(sender)
        from ..fabric.transport import TRANSPORTS
        unit = "bytes/s" if TRANSPORTS[self.spec.transport].rate_based else "packets"
        for (src, dst), senders in sorted(pairs.items()):
            t = [x for s in senders for x in s.w_t]
            if t:
                out.append({"track": f"window {src}->{dst}", "unit": unit, "t": t,
                            "v": [x for s in senders for x in s.w]})
        for src, senders in sorted(ranks.items()):
            for what, attr in (("retransmissions", "retx_t"), ("timeouts", "timeout_t")):
                times = [x for s in senders for x in getattr(s, attr)]
                if times:
                    t, v = steps(times)
                    out.append({"track": f"rank {src} {what}", "unit": what, "t": t, "v": v})
        return out

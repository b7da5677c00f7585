"""The packet-level discrete-event fabric: a clock, an event queue, ports, flows and their receivers.

Why packets and not a fluid: what this chapter teaches happens to individual packets. Incast
collapse is a tail drop that leaves a sender too few duplicate ACKs for fast retransmit, so it waits
out RTOmin; PFC pauses one port after the packet on the wire; DCTCP reacts to the fraction of marked
packets. A per-RTT fluid model would have to assume each of those. Packets cost events: a 16-sender
incast of 256 KB each is about 2,800 packets and 14,500 events (2 to 3 us each), resolved in about
0.04 s of wall time on an idle core (``benchmarks/congestion_speed.py`` prints it). At 40 Gbit/s and
tens of milliseconds that is too many events, which is why DCQCN's stability is studied on its
published fluid model (``fluid.py``).

The event loop is a heap of (time, sequence, callable, argument); the sequence breaks ties in the
order events were scheduled, so a run is deterministic: its random sources (ECN marking between
Kmin and Kmax, and a host's timing noise of up to half a packet time per send, which breaks the
phase lock-out that perfectly regular senders suffer at a drop-tail queue) come from a seeded
``random.Random``. Senders keep at most two packets queued in their NIC (Linux's TCP small
queues); the rest of a window waits in the sender until the NIC drains.

Sleeping timers: DCQCN keeps two periodic timers per flow (55 us) that run while the flow waits out
a 200 ms retransmission timeout; as events they were 96 % of a lossy DCQCN incast's 3 million. A
timer that fires while its sender is idle goes to sleep instead of onto the heap (the sender is in
``sleepers``); whatever next reaches the sender (an ACK, a CNP, its retransmission timer) first fires
the sleeping timer's due firings at their own times, with the floats a chain of events computes, and
puts the timer back on the heap. ``run`` counts those firings as the events they replace when it
checks ``stop`` (every 256th event), so a run ends where it would have, and every result is the same
(``benchmarks/fabric_identity.py`` checks the chapter's runs float for float); ``events`` counts
heap events only, ``ghosts`` the firings done without one.

ACKs, CNPs and PAUSE frames are not queued: they take the path's propagation delay back (plus an
optional extra feedback delay), as control traffic in a higher priority would. The receiver ACKs
every packet (no delayed ACK; the Linux testbed's model turns Linux's on per flow, ``delayed_ack``)
with the cumulative sequence it expects next, the packet it got (one SACK block) and its CE bit.
"""
from __future__ import annotations

import heapq
import itertools
import math
import random

from .. import validate
from .rdma import DCQCN_PARAMS
from .switch import MTU, Packet, Port, Switch


class Flow:
    """``size`` bytes from a sender to a receiver along ``path`` (the Ports it crosses, NIC first)."""

    def __init__(self, fabric, name: str, path: list, size: int, *, start: float = 0.0, mss: int = MTU,
                 prio: int = 0, on_done=None):
        validate.positive(size, "block")
        self.fabric, self.name, self.path, self.size, self.start = fabric, name, path, size, start
        self.mss, self.prio, self.on_done = mss, prio, on_done
        self.npkts = -(-size // mss)
        self.ack_delay = sum(p.delay for p in path)                         # s, ACK/CNP back to the sender
        self.base_rtt = 2 * sum(p.delay for p in path) + sum(mss / p.rate for p in path)
        self.drops = 0
        self.duplicates = 0                 # packets the receiver already had (a spurious or late resend)
        self.done_at = None                 # s, when the receiver had every byte
        self.expected = 0                   # receiver: next in-order packet
        self._ooo = set()                   # receiver: packets received beyond a gap
        self.last_cnp = -math.inf           # receiver (DCQCN's NP): when the last CNP left
        self.cnp_interval = DCQCN_PARAMS.cnp_interval
        self.rx_t, self.rx_bytes = [start], [0]   # in-order bytes delivered over time
        self.sender = None
        self.delayed_ack = None             # s: Linux's delayed ACK (set by the caller); None: ACK every packet
        self.multipath = None               # a path chooser (multipath.py): the path of each packet; None: `path`
        self.line = path[0].rate            # bytes/s a paced sender sends at (several planes: their sum)
        self.overhead = 0                   # bytes of headers each packet carries on the wire (framing)
        self._held = None                   # delayed_ack: the ACK held back, and since when

    def packet_size(self, seq: int) -> int:
        return self.mss if seq < self.npkts - 1 else self.size - self.mss * (self.npkts - 1)

    def receive(self, pkt: Packet) -> None:
        fab = self.fabric
        seq = pkt.seq
        sender = self.sender
        if self.delayed_ack is not None:
            return self._receive_delayed(pkt)
        self._deliver(seq)
        if sender.rate_based and pkt.ce and fab.now - self.last_cnp >= self.cnp_interval:
            self.last_cnp = fab.now
            fab.schedule(fab.now + self.ack_delay, sender.on_cnp, None)
        fab.schedule(fab.now + self.ack_delay, sender.on_ack, (self.expected, pkt.ce, pkt.sent_at, seq))

    def _deliver(self, seq: int) -> bool:
        """The receiver takes packet seq; True when it was the next in order."""
        fab = self.fabric
        if seq != self.expected:
            if seq > self.expected and seq not in self._ooo:
                self._ooo.add(seq)
            else:
                self.duplicates += 1
            return False
        self.expected += 1
        while self.expected in self._ooo:
            self._ooo.remove(self.expected)
            self.expected += 1
        self.rx_t.append(fab.now)
        self.rx_bytes.append(min(self.size, self.expected * self.mss))
        if self.expected == self.npkts and self.done_at is None:
            self.done_at = fab.now
            if self.on_done is not None:
                self.on_done(self)
        return True

    def _receive_delayed(self, pkt: Packet) -> None:
        """Linux's receiver (tcp_input.c, __tcp_ack_snd_check; window-based senders): an in-order
        packet with no hole behind it is ACKed with the next one (one ACK per two full segments), or
        when the delayed-ACK timer (`delayed_ack` s) fires; an out-of-order packet, a duplicate, the
        packet that fills a hole and the block's last (short) packet, which the reading application
        ACKs at once (tcp_cleanup_rbuf), are ACKed at once. The ACK echoes the timestamp of the first
        packet it covers (RFC 7323)."""
        fab = self.fabric
        had_hole = bool(self._ooo)
        in_order = self._deliver(pkt.seq)
        held = self._held
        if in_order and not had_hole and not self._ooo and self.expected < self.npkts and held is None:
            self._held = (pkt.sent_at, fab.now)
            fab.schedule(fab.now + self.delayed_ack, self._delack, fab.now)
            return
        sent_at = held[0] if held is not None and in_order else pkt.sent_at
        self._held = None
        fab.schedule(fab.now + self.ack_delay, self.sender.on_ack, (self.expected, pkt.ce, sent_at, pkt.seq))

    def _delack(self, since: float) -> None:
        held = self._held
        if held is None or held[1] != since:
            return                                   # sent with a later packet meanwhile
        self._held = None
        fab = self.fabric
        fab.schedule(fab.now + self.ack_delay, self.sender.on_ack, (self.expected, False, held[0], self.expected - 1))

    @property
    def fct(self) -> float | None:
        return None if self.done_at is None else self.done_at - self.start

    def summary(self) -> dict:
        s = self.sender
        return {"flow": self.name, "bytes": self.size, "fct_s": self.fct, "drops": self.drops,
                "retransmissions": s.retransmissions, "timeouts": s.timeouts,
                "fast_retransmits": getattr(s, "fast_retransmits", 0)}


class Fabric:
    """Clock + event queue + the ports, switches and flows of one experiment."""

    def __init__(self, seed: int = 0, jitter: float = 0.5):
        self.now = 0.0                      # s, virtual time
        self.jitter = jitter                # host NICs add U(0, jitter) x one packet time to each send
        self._heap = []
        self._seq = itertools.count()
        self.rng = random.Random(seed)
        self.ports: dict[str, Port] = {}
        self.switches: dict[str, Switch] = {}
        self.flows: list[Flow] = []
        self.events = 0                     # events processed
        self.ghosts = 0                     # timer firings done without an event (sleeping timers)
        self.sleepers = {}                  # senders whose timers sleep: catch_up(t), due(), fire(which)

    def schedule(self, t: float, fn, arg=None) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), fn, arg))

    def switch(self, name: str, **kw) -> Switch:
        sw = self.switches[name] = Switch(name, **kw)
        return sw

    def port(self, name: str, rate: float, delay: float, buffer=None, *, ecn=None, switch: Switch | None = None) -> Port:
        p = self.ports[name] = Port(self, name, rate, delay, buffer=buffer, ecn=ecn, switch=switch)
        return p

    def arrive(self, pkt: Packet) -> None:
        """A packet reaches the end of a link: the next port's queue, or its receiver."""
        pkt.hop += 1
        path = pkt.path
        if pkt.hop < len(path):
            path[pkt.hop].enqueue(pkt)
        else:
            pkt.flow.receive(pkt)

    def add_flow(self, flow: Flow, transport) -> Flow:
        flow.sender = transport
        self.flows.append(flow)
        self.schedule(flow.start, transport.begin, None)
        return flow

    def run(self, until: float = math.inf, stop=None, max_events: int | None = None) -> float:
        """Process events up to virtual time ``until`` (or until ``stop()`` is true, or ``max_events``
        were processed); returns the clock.

        ``stop()`` is honoured at every 256th event counting the timers that slept (see the module's
        docstring), as if they had been events: the run ends at the same event with or without
        sleeping timers."""
        heap, pop = self._heap, heapq.heappop
        n, ghosts = 0, self.ghosts
        budget = -1 if max_events is None else max_events
        while heap and heap[0][0] <= until:
            t, _, fn, arg = pop(heap)
            self.now = t
            fn(arg)
            n += 1
            if stop is not None and stop():
                self.catch_up(t)
                if (n + self.ghosts - ghosts) & 255:
                    n = self._run_to_boundary(until, n, ghosts)
                break
            if n == budget:
                self.catch_up(t)
                break
        else:
            if until != math.inf:
                self.now = max(self.now, until)
                self.catch_up(until)
        self.events += n
        return self.now

    # ---- sleeping timers: a periodic timer that nobody can observe need not be an event
    def catch_up(self, t: float) -> None:
        """Fire every sleeping timer due at or before ``t`` (at its own time, in its own order)."""
        for sleeper in list(self.sleepers):
            sleeper.catch_up(t)

    def _run_to_boundary(self, until: float, n: int, ghosts: int) -> int:
        """After ``stop()`` came true: go on, one event or sleeping timer at a time in time order, to
        the next 256th (the point at which a fabric without sleeping timers checks ``stop``)."""
        heap, pop = self._heap, heapq.heappop
        while True:
            real = heap[0][0] if heap and heap[0][0] <= until else math.inf
            due = min(((t, which, s) for s in self.sleepers for t, which in s.due()), default=None,
                      key=lambda d: d[0])
            if due is not None and due[0] <= until and due[0] <= real:
                self.now = due[0]
                due[2].fire(due[1])
            elif real != math.inf:
                t, _, fn, arg = pop(heap)
                self.now = t
                fn(arg)
                n += 1
            else:
                if until != math.inf:
                    self.now = max(self.now, until)
                return n
            if (n + self.ghosts - ghosts) & 255 == 0:
                return n

"""Switch output ports: a buffer in bytes, drop-tail, ECN marking (RED-style or DCTCP's K) and PFC.

A ``Port`` is one output queue plus the serializer behind it (a host NIC or a switch egress port):
packets wait in a FIFO per priority, leave one at a time at the line rate, and reach the next hop
after the link's propagation delay. What a port decides, and records:
  * admission (drop-tail): a packet that does not fit in the buffer is dropped. The buffer is per
    port, or shared by all ports of a switch with Choudhury-Hahne's dynamic threshold
    (a port may hold at most alpha x the free shared buffer);
  * ECN (``ECN``): on enqueue, an ECN-capable packet is marked CE with probability 0 below Kmin,
    Pmax x (q - Kmin)/(Kmax - Kmin) between, and 1 above Kmax, q being the queue in bytes it finds
    (RED on the instantaneous queue, as DCQCN's switches do). DCTCP's single threshold is
    Kmin = Kmax = K, Pmax = 1. Packets that are not ECN-capable (Reno, Cubic) are never marked;
  * PFC (``PFC``, IEEE 802.1Qbb): a switch counts, per ingress (upstream port, priority), the bytes
    that came in through it and are still buffered. Above Xoff it sends PAUSE to that upstream port
    (it arrives one link delay later; the upstream port stops that priority after its pause-response
    time, ``pause_response``, and after the packet then on the wire); below Xon it sends RESUME, which
    the upstream acts on after the same response time (so never before the PAUSE it follows). The
    pause is per port and priority, not per flow: every flow that shares the paused port waits,
    including flows bound elsewhere (victims). A lossless priority is
    admitted by its ingress counter (Xoff plus the headroom for bytes in flight while PAUSE travels),
    as lossless switches reserve buffer per ingress; it only drops if the headroom is too small.

A port's link may also lose packets at random (``Port.loss``, independent per packet, seeded), as a
link with bit errors does: the setting under which Mathis et al.'s loss-throughput relation is stated.

Left out on purpose: cut-through switching, multiple traffic classes sharing one scheduler beyond
strict priority, WRED's averaged queue, PFC deadlock detection, pause quanta (a PAUSE holds until
its RESUME, as switches that refresh XOFF do).

One concept: a switch output port and the queueing disciplines that act on its one buffer (drop-tail,
ECN, PFC).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .. import validate

MTU = 1500  # bytes; one packet on the wire (headers are not modelled: payload = packet)
NIC_QUEUE = 2 * MTU  # bytes a sender may keep queued in its NIC (Linux's TCP small queues)


@dataclass(frozen=True)
class ECN:
    """RED-style marking on the instantaneous queue (bytes); DCTCP: ``ECN.dctcp(K)``."""
    kmin: float
    kmax: float
    pmax: float = 1.0

    def __post_init__(self):
        validate.number(self.kmin, "ecn-kmin", 0)
        if not self.kmax >= self.kmin:
            raise ValueError(f"ecn-kmin: must not exceed ecn-kmax ({self.kmax!r} bytes), got {self.kmin!r}")
        validate.fraction(self.pmax, "ecn-pmax")

    @classmethod
    def dctcp(cls, k: float) -> "ECN":
        """Mark every packet that finds more than K bytes queued (DCTCP, SIGCOMM'10 section 3.1)."""
        return cls(k, k, 1.0)

    def probability(self, queue: float) -> float:
        if queue <= self.kmin:
            return 0.0
        if queue > self.kmax:
            return 1.0
        return self.pmax * (queue - self.kmin) / (self.kmax - self.kmin)


# IEEE 802.3's upper bound on how long a port may go on sending after a PAUSE (or PFC) frame reaches
# it, in bit times at each speed (the "response" term of 802.1Qbb's headroom: 60 pause quanta of 512 bit
# times at 10 Gbit/s, 80 at 25, 118 at 40, 394 at 100, 905 at 400 Gbit/s; sources in docs/fabric.md).
PAUSE_RESPONSE_BITS = {10e9: 30_720, 25e9: 40_960, 40e9: 60_416, 100e9: 201_728, 400e9: 463_360}


def pause_response(rate: float) -> float:
    """Seconds a port at ``rate`` (bytes/s) may keep sending after a PAUSE arrives: 802.3's allowance at
    that speed; between two tabled speeds the longer of their two times, below 10 Gbit/s and above
    400 Gbit/s the nearest one's (in time: 3.07 us at 10 Gbit/s, 1.16 us at 400 Gbit/s)."""
    bits = rate * 8
    times = {speed: bt / speed for speed, bt in PAUSE_RESPONSE_BITS.items()}
    below = [s for s in times if s <= bits * (1 + 1e-9)]
    above = [s for s in times if s >= bits * (1 - 1e-9)]
    return max(times[s] for s in ([max(below)] if below else []) + ([min(above)] if above else []))


def pfc_headroom(rate: float, delay: float, mtu: int = MTU, response: float | None = None) -> float:
    """Bytes that may still arrive on an ingress after it crosses Xoff (IEEE 802.1Qbb's worst case, as
    Cisco's PFC white paper lists it): the packet the switch is sending upstream when it decides to
    pause (the PAUSE waits behind it), the link's round trip at line rate (PAUSE going up, data on the
    wire coming down), the upstream port's pause-response time at line rate (``pause_response``, or
    ``response`` seconds), and the packet the upstream is sending when it stops. Transceiver
    latencies are left out. Linux's mlx5 driver reserves more (port_buffer.c, calculate_xoff): at
    100 Gbit/s over 3 m of cable this gives 28,591 B, the driver 34,780 B (tests/test_claims_ch6.py)."""
    response = pause_response(rate) if response is None else response
    return 2 * mtu + rate * (2 * delay + response)


@dataclass(frozen=True)
class PFC:
    """Priority flow control thresholds, bytes per ingress (port, priority)."""
    xoff: float
    xon: float | None = None          # default: Xoff - 2 MTU
    headroom: float | None = None     # default: pfc_headroom of the ingress link
    priorities: tuple = (0,)          # lossless priorities; others stay drop-tail
    response: float | None = None     # s the upstream keeps sending after PAUSE; default pause_response(rate)

    def __post_init__(self):
        validate.positive(self.xoff, "xoff")
        if self.xon is not None:
            validate.number(self.xon, "xon", 0, self.xoff)
        if self.headroom is not None:
            validate.number(self.headroom, "pfc-headroom", 0)
        if self.response is not None:
            validate.number(self.response, "pfc-response", 0)

    @property
    def resume(self) -> float:
        return self.xon if self.xon is not None else max(0.0, self.xoff - 2 * MTU)

    def check(self, buffer: float | None, rate: float, delay: float) -> float:
        """The headroom this ingress gets; raises if Xoff or the headroom do not fit in the buffer."""
        need = pfc_headroom(rate, delay, response=self.response_time(rate))
        room = self.headroom if self.headroom is not None else need
        if buffer is not None and self.xoff > buffer:
            raise ValueError(f"xoff: {self.xoff:g} bytes is above the buffer ({buffer:g} bytes)")
        if room < need:
            raise ValueError(f"pfc-headroom: {room:g} bytes cannot absorb the {need:g} bytes that arrive "
                             f"after PAUSE is sent (the link's round trip and the upstream's response at "
                             f"line rate, plus a packet at each end)")
        if buffer is not None and self.xoff + room > buffer:
            raise ValueError(f"pfc: no headroom: xoff {self.xoff:g} + headroom {room:g} bytes exceed the "
                             f"buffer ({buffer:g} bytes); lower xoff or raise the buffer")
        return room

    def response_time(self, rate: float) -> float:
        """Seconds an upstream port at ``rate`` keeps sending after a PAUSE arrives."""
        return pause_response(rate) if self.response is None else self.response


class Switch:
    """A switch: its ports' shared buffer (optional) and the PFC ingress counters."""

    def __init__(self, name: str, pfc: PFC | None = None, shared_buffer: float | None = None, alpha: float = 1.0):
        if shared_buffer is not None:
            validate.positive(shared_buffer, "buffer")
        self.name, self.pfc, self.shared, self.alpha = name, pfc, shared_buffer, alpha
        self.used = 0.0        # bytes in the shared buffer
        self.held = {}         # (upstream Port, priority) -> bytes buffered here that came through it
        self.room = {}         # upstream Port -> headroom bytes (checked once per ingress)
        self.pausing = set()   # (upstream Port, priority) currently paused by this switch
        self.peak = {}         # (upstream Port, priority) -> the most bytes it ever had buffered here


class Packet:
    """One packet: its flow, sequence number, bytes on the wire, ECN bits, hop and priority.

    ``path`` is the list of Ports it crosses (its flow's path unless a multipath scheme chose
    another, ``multipath.py``), ``ev`` the entropy (path index) it was sent with, and ``trimmed``
    whether a switch cut it to its header (``trimming.py``)."""
    __slots__ = ("flow", "seq", "size", "ect", "ce", "hop", "prio", "sent_at", "path", "ev", "trimmed")

    def __init__(self, flow, seq, size, ect, *, prio, sent_at):
        self.flow, self.seq, self.size, self.ect, self.prio, self.sent_at = flow, seq, size, ect, prio, sent_at
        self.ce = False
        self.hop = 0
        self.path = flow.path if flow is not None else None   # a lone port's test packet has no flow
        self.ev = 0
        self.trimmed = False


class Port:
    """One output queue and its serializer; ``fabric`` supplies the clock and the event queue."""

    def __init__(self, fabric, name: str, rate: float, delay: float, *, buffer: float | None = None,
                 ecn: ECN | None = None, switch: Switch | None = None):
        validate.positive(rate, "bandwidth")
        validate.number(delay, "delay", 0)
        if buffer is not None:
            validate.number(buffer, "buffer", 0)
        self.fabric, self.name, self.rate, self.delay = fabric, name, rate, delay   # bytes/s, s
        self.buffer, self.ecn, self.switch = buffer, ecn, switch
        self.queues = {}                     # priority -> deque of Packets
        self.qbytes = 0                      # bytes waiting (not counting the one on the wire)
        self.busy = False
        self.paused = {}                     # priority -> time the pause began
        self.drops = self.marks = self.pauses = 0
        self.pause_s = 0.0                   # seconds some priority of this port was paused
        self.tx_bytes = 0
        self.q_t, self.q_bytes = [0.0], [0]  # queue length over time (a step function)
        self.drop_t, self.mark_t = [], []    # when each drop and each ECN mark happened
        self.pause_t, self.pause_n = [0.0], [0]   # priorities paused over time (a step function)
        self.waiting = []                    # host NIC: senders waiting for room (TCP small queues)
        self.loss = 0.0                      # probability a packet is lost on this port's link (bit errors)
        self.losses = 0                      # packets the link lost (not counted in drops: the buffer had room)
        self.failed = False                  # its link is down (failure.py)

    # ---- admission, marking, queueing
    def enqueue(self, pkt: Packet) -> None:
        fab, size, sw = self.fabric, pkt.size, self.switch
        if sw is not None:
            pfc = sw.pfc
            if pfc is not None and pkt.prio in pfc.priorities and pkt.hop > 0:
                up = pkt.flow.path[pkt.hop - 1]
                key = (up, pkt.prio)
                if up not in sw.room:
                    sw.room[up] = pfc.check(self.buffer, up.rate, up.delay)
                held = sw.held.get(key, 0) + size
                if held > pfc.xoff + sw.room[up]:
                    self._drop(pkt)
                    return
                sw.held[key] = held
                if held > sw.peak.get(key, 0):
                    sw.peak[key] = held
                if held > pfc.xoff and key not in sw.pausing:
                    sw.pausing.add(key)
                    fab.schedule(fab.now + up.delay + pfc.response_time(up.rate), up.pause, pkt.prio)
            elif sw.shared is not None:
                if sw.used + size > sw.shared or self.qbytes + size > sw.alpha * (sw.shared - sw.used):
                    self._drop(pkt)
                    return
            elif self.buffer is not None and self.qbytes + size > self.buffer:
                self._drop(pkt)
                return
            sw.used += size
        elif self.buffer is not None and self.qbytes + size > self.buffer:
            self._drop(pkt)
            return
        if pkt.ect and self.ecn is not None:
            p = self.ecn.probability(self.qbytes)
            if p >= 1.0 or (p > 0.0 and fab.rng.random() < p):
                pkt.ce = True
                self.marks += 1
                self.mark_t.append(fab.now)
        q = self.queues.get(pkt.prio)
        if q is None:
            q = self.queues[pkt.prio] = deque()
        q.append(pkt)
        self.qbytes += size
        self.q_t.append(fab.now)
        self.q_bytes.append(self.qbytes)
        if not self.busy:
            self._start()

    def _drop(self, pkt: Packet) -> None:
        self.drops += 1
        self.drop_t.append(self.fabric.now)
        pkt.flow.drops += 1

    def _start(self) -> None:
        queues, paused = self.queues, self.paused
        best = None
        for prio, q in queues.items():
            if q and prio not in paused and (best is None or prio > best):
                best = prio
        if best is None:
            return
        pkt = queues[best].popleft()
        fab = self.fabric
        self.qbytes -= pkt.size
        self.q_t.append(fab.now)
        self.q_bytes.append(self.qbytes)
        self.busy = True
        sw = self.switch
        if self.waiting and self.qbytes < NIC_QUEUE:
            waiting, self.waiting = self.waiting, []
            for sender in waiting:
                sender.send()
        if sw is not None:
            sw.used -= pkt.size
            if sw.pfc is not None and pkt.prio in sw.pfc.priorities and pkt.hop > 0:
                key = (pkt.flow.path[pkt.hop - 1], pkt.prio)
                held = sw.held[key] = sw.held[key] - pkt.size
                if key in sw.pausing and held <= sw.pfc.resume:
                    sw.pausing.discard(key)
                    up = key[0]                # it acts on RESUME as late as on PAUSE: never before it
                    fab.schedule(fab.now + up.delay + sw.pfc.response_time(up.rate), up.resume, pkt.prio)
        fab.schedule(fab.now + self.tx_time(pkt), self._sent, pkt)

    def tx_time(self, pkt: Packet) -> float:
        """Seconds the packet holds the port: its serialization at the line rate."""
        return pkt.size / self.rate

    def _sent(self, pkt: Packet) -> None:
        self.busy = False
        self.tx_bytes += pkt.size
        fab = self.fabric
        if self.loss and fab.rng.random() < self.loss:  # lost on the wire, after it took the link's time
            self.losses += 1
            pkt.flow.drops += 1
        elif self.switch is None and fab.jitter:         # host timing noise, less than half a packet
            fab.schedule(fab.now + self.delay + fab.jitter * fab.rng.random() * pkt.size / self.rate, fab.arrive, pkt)
        else:
            fab.schedule(fab.now + self.delay, fab.arrive, pkt)
        if self.qbytes:
            self._start()

    # ---- PFC, as seen by the port being paused
    def pause(self, prio) -> None:
        if prio not in self.paused:
            self.paused[prio] = self.fabric.now
            self.pauses += 1
            self.pause_t.append(self.fabric.now)
            self.pause_n.append(len(self.paused))

    def resume(self, prio) -> None:
        began = self.paused.pop(prio, None)
        if began is not None:
            self.pause_s += self.fabric.now - began
            self.pause_t.append(self.fabric.now)
            self.pause_n.append(len(self.paused))
            if not self.busy:
                self._start()

    def paused_seconds(self) -> float:
        """Pause time so far, counting a pause still in force up to now."""
        return self.pause_s + sum(self.fabric.now - t for t in self.paused.values())

    def summary(self) -> dict:
        return {"port": self.name, "tx_bytes": self.tx_bytes, "drops": self.drops, "marks": self.marks,
                "pauses": self.pauses, "pause_s": self.paused_seconds(), "max_queue_bytes": max(self.q_bytes)}


class TokenBucketPort(Port):
    """A port shaped as Linux's tbf shapes one (the namespace testbed's switch port): a packet leaves
    as soon as the bucket holds its size in tokens, which refill at the rate up to ``burst`` bytes,
    onto a link of no serialization time (veth). After the port idles, a full bucket passes ``burst``
    bytes at once, on top of the queue."""

    def __init__(self, *args, burst: float, **kw):
        super().__init__(*args, **kw)
        self.burst = self.tokens = validate.number(burst, "burst", MTU)   # at least one packet
        self.filled_at = 0.0

    def tx_time(self, pkt: Packet) -> float:
        now = self.fabric.now
        self.tokens = min(self.burst, self.tokens + (now - self.filled_at) * self.rate)
        wait = max(0.0, (pkt.size - self.tokens) / self.rate)
        self.tokens += wait * self.rate - pkt.size
        self.filled_at = now + wait
        return wait

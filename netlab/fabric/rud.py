"""Reliable unordered delivery (UET's RUD): what the NSCC and RCCC senders share, and their receiver.

A sender of chapter 6 (``tcp.py``) assumes its packets arrive in order: three duplicate ACKs mean a
loss, so packets that took different paths and overtook each other trigger retransmissions of
packets that were never lost. Ultra Ethernet's transport delivers the packets of a message in any
order (RUD: each packet carries its own offset; the receiver writes it where it belongs), so a
sender built on it keeps per-packet state instead of a cumulative window edge:

* the receiver (``UnorderedFlow``) ACKs every packet it gets with the packet's number, its ECN bit,
  the cumulative point and how many packets it holds beyond that point (the out-of-order count); it
  answers a trimmed header (``trimming.py``) with a NACK for that packet;
* the sender (``Unordered``) resends a packet when it is NACKed, after a retransmission timeout
  (the oldest packet in flight has been out for RTO = max(RTOmin, SRTT + 4 RTTVAR), RFC 6298; then
  every packet in flight for more than a base RTT is given up, as TCP does), or when the
  out-of-order count reaches max(5, 1.5 windows) of packets: more packets came after it than could
  have overtaken it (htsim's SLEEK rule for UET). Reordering alone never triggers a resend.

What limits sending is the subclass's: a window in bytes (``nscc.py``) or the receiver's credits
(``rccc.py``). Multipath choosers (``multipath.py``) get every ACK, NACK and timeout. ACKs and NACKs
travel the path's propagation delay back without queueing, as every transport's do here.
Left out: ACK coalescing (UET ACKs every 16 KB or so; here every packet), message semantics
(one flow is one message), the PDC handshake, and selective ACK bitmaps (one packet per ACK).
"""
from __future__ import annotations

import math
from collections import deque

from .engine import Flow
from .sender import RTO_MAX, RTO_MIN, Sender
from .switch import NIC_QUEUE, Packet


class UnorderedFlow(Flow):
    """A flow whose receiver takes packets in any order and answers trimmed headers with NACKs."""
    answers_trims = True

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.trimmed_rx = 0                 # trimmed headers received (each answered with a NACK)
        self.reordered = 0                  # packets that arrived beyond a gap (out of order)
        self.pacer = None                   # RCCC: the receiving host's pull pacer (rccc.py)

    def receive(self, pkt: Packet) -> None:
        fab = self.fabric
        if pkt.trimmed:
            self.trimmed_rx += 1
            if self.pacer is not None:               # the resend will need a credit: owe it now
                self.pacer.ask((self.sender, self.packet_size(pkt.seq)))
            fab.schedule(fab.now + self.ack_delay, self.sender.on_nack, pkt.seq)
            return
        seq = pkt.seq
        if seq < self.expected or seq in self._ooo:
            self.duplicates += 1
        else:
            if seq != self.expected:
                self.reordered += 1
            self._deliver(seq)
        fab.schedule(fab.now + self.ack_delay, self.sender.on_ack,
                     (self.expected, pkt.ce, pkt.sent_at, seq, len(self._ooo)))


class Unordered(Sender):
    """Per-packet reliability over unordered delivery; subclasses decide how much may be in flight."""
    ect = True
    rate_based = False

    def __init__(self, flow, rto_min: float = RTO_MIN):
        super().__init__(flow, rto_min)
        self.acked = bytearray(self.npkts)
        self.nacked = 0
        self.out: dict[int, float] = {}       # packets in flight -> when sent (in send order)
        self.inflight = 0                     # payload bytes in flight
        self.rtx: deque = deque()             # packets known lost, to resend first
        self.lost = set()                     # ... the same, for membership
        self.done = 0                         # packets acknowledged
        self.recovery = -1                    # out-of-order recovery runs until this is cumulatively acked
        self.spurious = 0                     # resends the receiver already had (a duplicate ACK)
        self._rto_at = math.inf

    # ---- what may be sent: the subclass's window or credit -------------------------------------------
    def may_send(self, size: int) -> bool:
        raise NotImplementedError

    def sent(self, size: int) -> None:
        """A packet of `size` payload bytes left (credits are spent here)."""

    def begin(self, _) -> None:
        self.record(self.window_value())
        self.send()

    def window_value(self) -> float:
        return 0.0

    def _next(self):
        while self.rtx:
            seq = self.rtx[0]
            if self.acked[seq]:
                self.rtx.popleft()
                self.lost.discard(seq)
                continue
            return seq
        return self.next_seq if self.next_seq < self.npkts else None

    def send(self) -> None:
        flow = self.flow
        while not self.finished:
            seq = self._next()
            if seq is None:
                return
            size = flow.packet_size(seq)
            if not self.may_send(size):
                return
            nic = flow.path[0]
            if nic.qbytes >= NIC_QUEUE:                 # TCP small queues' NIC rule, as every sender here
                if self not in nic.waiting:
                    nic.waiting.append(self)
                return
            if self.rtx and self.rtx[0] == seq:
                self.rtx.popleft()
                self.lost.discard(seq)
            elif seq == self.next_seq:
                self.next_seq += 1
            self.transmit(seq)
            self.sent(size)

    def transmit(self, seq: int) -> None:
        flow, fab = self.flow, self.fabric
        if seq < self.high:
            self.retransmissions += 1
            self.retx_t.append(fab.now)
        else:
            self.high = seq + 1
        self.out.pop(seq, None)
        self.out[seq] = fab.now
        self.inflight += flow.packet_size(seq)
        pkt = Packet(flow, seq, flow.packet_size(seq) + flow.overhead, self.ect, prio=flow.prio, sent_at=fab.now)
        if flow.multipath is not None:
            flow.multipath.pick(pkt)
        pkt.path[0].enqueue(pkt)
        self.arm()

    def _forget(self, seq: int) -> None:
        if seq in self.out:
            del self.out[seq]
            self.inflight -= self.flow.packet_size(seq)

    def _lose(self, seq: int) -> None:
        """Packet `seq` is known lost: out of flight, to be resent."""
        if self.acked[seq] or seq in self.lost:
            return
        self._forget(seq)
        self.lost.add(seq)
        self.rtx.append(seq)

    # ---- feedback ------------------------------------------------------------------------------------
    def on_ack(self, msg) -> None:
        if self.finished:
            return
        cum, ce, sent_at, got, ooo = msg
        flow, fab = self.flow, self.fabric
        if flow.multipath is not None:
            flow.multipath.acked(got, ce)
        sample = fab.now - sent_at
        self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - sample)
        self.srtt = 0.875 * self.srtt + 0.125 * sample
        self.rto = max(self.rto_min, self.srtt + 4 * self.rttvar)
        if self.acked[got]:
            self.spurious += 1
            return
        self.acked[got] = 1
        self.done += 1
        self.backoff = 1
        newly = flow.packet_size(got)
        self._forget(got)
        if got in self.lost:                               # delivered after all (it was late, not lost)
            self.lost.discard(got)
        self.snd_una = cum
        if self.done == self.npkts:
            self.finished = True
            self.deadline = math.inf
            return
        self.on_feedback(newly, ce, sample)
        if self.recovery >= 0 and cum >= self.recovery:
            self.recovery = -1
        threshold = max(5, int(1.5 * self.window_packets()))
        if ooo >= threshold and self.recovery < 0:          # SLEEK: more arrived after the holes than can reorder
            self.recovery = self.high
            lost = 0
            for seq in range(cum, min(self.high, cum + max(1, int(self.window_packets())))):
                if not self.acked[seq] and seq in self.out:
                    self._lose(seq)
                    lost += flow.packet_size(seq)
            if lost:
                if flow.multipath is not None:
                    flow.multipath.timeout()            # a loss no NACK explained (REPS freezes on it)
                self.on_ooo_loss(lost)
        self.send()

    def on_nack(self, seq: int) -> None:
        if self.finished or self.acked[seq]:
            return
        self.nacked += 1
        if self.flow.multipath is not None:
            self.flow.multipath.nacked(seq)
        size = self.flow.packet_size(seq)
        if seq in self.out:
            self._lose(seq)
        self.on_trimmed(size)
        self.send()

    def window_packets(self) -> float:
        return max(1.0, self.window_value() / self.flow.mss)

    def on_feedback(self, newly: int, ce: bool, rtt: float) -> None:
        pass

    def on_trimmed(self, size: int) -> None:
        pass

    def on_loss_timeout(self, lost_bytes: int) -> None:
        pass

    def on_ooo_loss(self, lost_bytes: int) -> None:
        pass

    # ---- per-packet retransmission timer (one pending event, re-armed lazily) ------------------------
    def arm(self) -> None:
        if not self.out:
            self.deadline = math.inf
            return
        oldest = next(iter(self.out.values()))
        self.deadline = oldest + min(self.rto * self.backoff, RTO_MAX)
        if self.deadline < self._rto_at:
            self._rto_at = max(self.deadline, self.fabric.now)
            self.fabric.schedule(self._rto_at, self._timer, None)

    def _timer(self, _) -> None:
        fab = self.fabric
        if self._rto_at != fab.now:
            return                                          # stale: a nearer one was scheduled
        self._rto_at = math.inf
        if self.finished or not self.out:
            return
        wait = min(self.rto * self.backoff, RTO_MAX)
        self.deadline = next(iter(self.out.values())) + wait
        if fab.now + 1e-12 < self.deadline:                 # the oldest packet was resent or acked since
            self._rto_at = self.deadline
            fab.schedule(self.deadline, self._timer, None)
            return
        self.timeouts += 1
        self.timeout_t.append(fab.now)
        if self.flow.multipath is not None:
            self.flow.multipath.timeout()
        # as TCP's RTO does (RFC 6298 5.4, Linux's tcp_enter_loss), everything in flight is given up,
        # except packets sent within the last base RTT, which cannot have been acked yet
        limit = fab.now - self.flow.base_rtt
        lost = [seq for seq, t in self.out.items() if t <= limit]
        lost_bytes = sum(self.flow.packet_size(s) for s in lost)
        for seq in lost:
            self._lose(seq)
        self.backoff = min(self.backoff * 2, 64)
        self.on_loss_timeout(lost_bytes)
        self.send()
        self.arm()

    def summary(self) -> dict:
        return {"retransmissions": self.retransmissions, "timeouts": self.timeouts, "nacks": self.nacked,
                "spurious": self.spurious}

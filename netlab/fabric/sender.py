"""What every transport shares: ACK processing, the RTT estimator, the retransmission timer, go-back-N.

A cumulative ACK moves ``snd_una``; RTT samples from the echoed send time (TCP timestamps) feed
RFC 6298's SRTT/RTTVAR, and RTO = max(RTOmin, SRTT + 4 RTTVAR), with RTOmin 200 ms by default as on
Linux; the estimator starts from the path's base RTT (the connection is established, as for a
parameter server's persistent connections). On a timeout the sender goes back to the first
unacknowledged packet (go-back-N; the receiver keeps out-of-order packets, so only the lost ones are
new to it) and doubles the RTO until an ACK arrives. Each ACK also carries one SACK block (the
packet that triggered it), which window-based senders use in recovery (``tcp.py``).
"""
from __future__ import annotations

import math

from .. import validate
from .switch import Packet

RTO_MIN = 0.2          # s, Linux's TCP_RTO_MIN
RTO_MAX = 60.0         # s


class Sender:
    rate_based = False
    ect = False        # sends ECN-capable packets

    def __init__(self, flow, rto_min: float = RTO_MIN):
        validate.positive(rto_min, "rto-min")
        self.flow, self.fabric = flow, flow.fabric
        self.rto_min = rto_min
        self.npkts = flow.npkts
        self.snd_una = self.next_seq = self.high = 0
        self.srtt, self.rttvar = flow.base_rtt, flow.base_rtt / 2
        self.rto = max(rto_min, self.srtt + 4 * self.rttvar)
        self.backoff = 1
        self.deadline = math.inf
        self._timer_at = math.inf
        self.finished = False
        self.retransmissions = self.timeouts = 0
        self.retx_t, self.timeout_t = [], []     # when each retransmission and each timeout happened
        self.sacked = set()                  # packets above snd_una the receiver has (SACK)
        self.sack_high = 0                   # one past the highest SACKed packet
        self.resent_at = {}                  # packet -> when it was last resent in this recovery
        self.wrapped_at = -math.inf
        self.w_t, self.w = [], []            # window (packets) or rate (bytes/s) over time

    # ---- sending
    def transmit(self, seq: int) -> None:
        flow = self.flow
        if seq < self.high:
            self.retransmissions += 1
            self.retx_t.append(self.fabric.now)
        else:
            self.high = seq + 1
        pkt = Packet(flow, seq, flow.packet_size(seq) + flow.overhead, self.ect, prio=flow.prio, sent_at=self.fabric.now)
        if flow.multipath is not None:               # a path for this packet (multipath.py)
            flow.multipath.pick(pkt)
        pkt.path[0].enqueue(pkt)
        if self.deadline == math.inf:
            self.arm()

    def record(self, value: float) -> None:
        self.w_t.append(self.fabric.now)
        self.w.append(value)

    # ---- retransmission timer: one pending event at a time, re-armed lazily
    def arm(self) -> None:
        fab = self.fabric
        self.deadline = fab.now + min(self.rto * self.backoff, RTO_MAX)
        if self.deadline < self._timer_at:
            self._timer_at = self.deadline
            fab.schedule(self.deadline, self._timer, None)

    def _timer(self, _) -> None:
        fab = self.fabric
        if self._timer_at != fab.now:
            return                                   # a stale event: a nearer one was scheduled
        self._timer_at = math.inf
        if self.finished or self.deadline == math.inf:
            return
        if fab.now + 1e-12 < self.deadline:
            self._timer_at = self.deadline
            fab.schedule(self.deadline, self._timer, None)
            return
        self.timeouts += 1
        self.timeout_t.append(fab.now)
        if self.flow.multipath is not None:
            self.flow.multipath.timeout()
        self.backoff = min(self.backoff * 2, 64)
        self.next_seq = self.snd_una                 # go back to the first unacknowledged packet
        self.on_timeout()
        self.arm()
        self.send()

    # ---- ACKs
    def on_ack(self, msg) -> None:
        if self.finished:
            return
        ack, ce, sent_at, got = msg
        if self.flow.multipath is not None:          # the path of the packet this ACK is for: clean or marked
            self.flow.multipath.acked(got, ce)
        if got > ack:
            self.sacked.add(got)
            if got >= self.sack_high:
                self.sack_high = got + 1
        sample = self.fabric.now - sent_at           # RFC 6298 with timestamps
        self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - sample)
        self.srtt = 0.875 * self.srtt + 0.125 * sample
        self.rto = max(self.rto_min, self.srtt + 4 * self.rttvar)
        if ack > self.snd_una:
            newly = ack - self.snd_una
            if self.sacked:
                self.sacked.difference_update(range(self.snd_una, ack))
            self.snd_una = ack
            self.backoff = 1
            if self.next_seq < ack:
                self.next_seq = ack
            if ack >= self.npkts:
                self.finished = True
                self.deadline = math.inf
                return
            self.on_new_ack(newly, ce)
            self.deadline = math.inf
            self.arm()
        else:
            self.on_dup_ack(ce)
        self.send()

    def on_new_ack(self, newly: int, ce: bool) -> None:
        pass

    def on_dup_ack(self, ce: bool) -> None:
        pass

    def on_timeout(self) -> None:
        pass

    def on_cnp(self, _) -> None:
        pass



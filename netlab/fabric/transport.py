"""Transports per flow: loss-based TCP (Reno, Cubic), DCTCP, DCQCN and an ideal line-rate sender.

Common to all (``Sender``): a cumulative ACK moves ``snd_una``; RTT samples from the echoed send
time (TCP timestamps) feed RFC 6298's SRTT/RTTVAR, and RTO = max(RTOmin, SRTT + 4 RTTVAR), with
RTOmin 200 ms by default as on Linux; the estimator starts from the path's base RTT (the connection
is established, as for a parameter server's persistent connections). On a timeout the sender goes
back to the first unacknowledged packet (go-back-N; the receiver keeps out-of-order packets, so
only the lost ones are new to it) and doubles the RTO until an ACK arrives.

Window-based (``Reno``; RFC 5681, with a simplified SACK recovery after RFC 6675 as Linux has SACK
on): slow start from an initial window of 10 packets (Linux's IW10), congestion avoidance +1 packet
per RTT, fast retransmit on the third duplicate ACK (ssthresh = cwnd/2); during recovery each ACK
lets one missing packet (below the highest SACKed one) be resent and inflates the window by one.
``Cubic`` (RFC 8312, C = 0.4, beta = 0.7, with its TCP-friendly region) changes only the growth and
the cut. ``DCTCP`` (Alizadeh et al. SIGCOMM'10; Linux tcp_dctcp.c): ECN-capable; once per window
of data alpha <- (1-g) alpha + g F, F the fraction of ACKs echoing CE, g = 1/16, alpha starting at
1; on the first CE echo in a window cwnd <- cwnd (1 - alpha/2); on loss, Reno's halving.

Rate-based (``DCQCN``, Zhu et al. SIGCOMM'15; the reaction point as in the CoNEXT'16 model and HPCC's
rdma-hw.cc): flows start at line rate, paced. On a CNP: Rt <- Rc, Rc <- Rc (1 - alpha/2),
alpha <- (1-g) alpha + g; every tau' = 55 us without a CNP alpha <- (1-g) alpha (g = 1/256). Rate
increase events come from a timer (T = 55 us) and a byte counter (B = 10 MB): while both counters
are below F = 5, fast recovery Rc <- (Rt + Rc)/2; once one passes F, additive increase
Rt += R_AI; once both pass F, hyper increase Rt += i R_HAI; each followed by Rc <- (Rt + Rc)/2.
The receiver (NP) sends at most one CNP per 50 us per flow. ``Ideal``: paced at line rate, no
congestion reaction: today's netlab network when buffers are unlimited.

Left out: full SACK scoreboards (one block per ACK here), delayed ACKs, Nagle, receive-window limits, pacing for TCP (a window leaves as a
burst at NIC speed), DCQCN's target-rate clamping option and its TIMELY/HPCC cousins.
"""
from __future__ import annotations

import math

from .switch import NIC_QUEUE, Packet

RTO_MIN = 0.2          # s, Linux's TCP_RTO_MIN
RTO_MAX = 60.0         # s


class Sender:
    rate_based = False
    ect = False        # sends ECN-capable packets

    def __init__(self, flow, rto_min: float = RTO_MIN):
        if not rto_min > 0:
            raise ValueError(f"rto-min: must be greater than zero, got {rto_min!r}")
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
        else:
            self.high = seq + 1
        pkt = Packet(flow, seq, flow.packet_size(seq), self.ect, flow.prio, self.fabric.now)
        flow.path[0].enqueue(pkt)
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


class Reno(Sender):
    beta = 0.5

    def __init__(self, flow, rto_min: float = RTO_MIN, initial_window: int = 10, max_window: float | None = None):
        super().__init__(flow, rto_min)
        self.cwnd = float(initial_window)   # packets
        # the receiver's advertised window, packets (None: unlimited)
        self.max_window = math.inf if max_window is None else max(1, int(max_window // flow.mss))
        self.ssthresh = math.inf
        self.dupacks = 0
        self.recover = -1                    # recovery ends when this is acknowledged
        self.hole = 0                        # next candidate for a SACK retransmission
        self.fast_retransmits = 0

    def begin(self, _) -> None:
        self.record(self.cwnd)
        self.send()

    def send(self) -> None:
        allowed = min(int(self.cwnd) + (self.dupacks if self.recover >= 0 else 0), self.max_window)
        nic = self.flow.path[0]
        while self.next_seq < self.npkts and self.next_seq - self.snd_una < allowed:
            if nic.qbytes >= NIC_QUEUE:                    # TCP small queues: wait for the NIC to drain
                if self not in nic.waiting:
                    nic.waiting.append(self)
                return
            if self.next_seq not in self.sacked:
                self.transmit(self.next_seq)
            self.next_seq += 1

    def retransmit_hole(self) -> None:
        """SACK recovery (RFC 6675, simplified): resend the next packet below the highest SACKed
        one that the receiver lacks and that was not resent within the last SRTT (a resent packet
        can be lost again); called once per ACK, so recovery keeps packet conservation."""
        now, top = self.fabric.now, self.sack_high
        h = max(self.hole, self.snd_una)
        for _ in range(2):                                   # forward, then once more from snd_una
            while h < top:
                if h not in self.sacked and now - self.resent_at.get(h, -math.inf) > self.srtt:
                    self.resent_at[h] = now
                    self.transmit(h)
                    self.hole = h + 1
                    return
                h += 1
            if now - self.wrapped_at < self.srtt:
                return
            self.wrapped_at, h = now, self.snd_una

    def grow(self, newly: int) -> None:
        if self.cwnd < self.ssthresh:
            self.cwnd += newly                                  # slow start
        else:
            self.cwnd += newly / self.cwnd                      # congestion avoidance

    def cut(self) -> None:
        self.ssthresh = max(self.cwnd * self.beta, 2.0)

    def on_new_ack(self, newly: int, ce: bool) -> None:
        if self.recover >= 0:
            if self.snd_una >= self.recover:                   # full ACK: recovery ends
                self.recover = -1
                self.resent_at.clear()
                self.cwnd = self.ssthresh
            else:                                               # partial ACK: the next hole
                self.retransmit_hole()
        else:
            self.grow(newly)
        self.dupacks = 0
        self.record(self.cwnd)

    def on_dup_ack(self, ce: bool) -> None:
        if self.next_seq <= self.snd_una:
            return
        self.dupacks += 1
        if self.dupacks == 3 and self.recover < 0:
            self.cut()
            self.cwnd = self.ssthresh
            self.recover = self.next_seq
            self.fast_retransmits += 1
            self.hole = self.snd_una
            self.retransmit_hole()
            self.record(self.cwnd)
        elif self.recover >= 0:
            self.retransmit_hole()

    def on_timeout(self) -> None:
        self.cut()
        self.cwnd = 1.0
        self.dupacks = 0
        self.recover = -1
        self.record(self.cwnd)


class Cubic(Reno):
    """RFC 8312's window growth W(t) = C (t - K)^3 + W_max, in packets and seconds."""
    beta = 0.7
    C = 0.4

    def __init__(self, flow, rto_min: float = RTO_MIN, initial_window: int = 10, max_window: float | None = None):
        super().__init__(flow, rto_min, initial_window, max_window)
        self.w_max = 0.0
        self.epoch = None

    def cut(self) -> None:
        self.w_max = self.cwnd if self.cwnd >= self.w_max else self.cwnd * (1 + self.beta) / 2  # fast convergence
        self.ssthresh = max(self.cwnd * self.beta, 2.0)
        self.epoch = None

    def grow(self, newly: int) -> None:
        if self.cwnd < self.ssthresh:
            self.cwnd += newly
            return
        now = self.fabric.now
        if self.epoch is None:
            self.epoch = now
            self.w_max = max(self.w_max, self.cwnd)
        t = now - self.epoch + self.srtt
        k = ((self.w_max * (1 - self.beta)) / self.C) ** (1 / 3)
        target = self.C * (t - k) ** 3 + self.w_max
        friendly = self.w_max * self.beta + 3 * (1 - self.beta) / (1 + self.beta) * (now - self.epoch) / self.srtt
        target = max(target, friendly)
        self.cwnd += (target - self.cwnd) / self.cwnd * newly if target > self.cwnd else 0.01 * newly / self.cwnd


class DCTCP(Reno):
    ect = True

    def __init__(self, flow, rto_min: float = RTO_MIN, initial_window: int = 10, max_window: float | None = None,
                 g: float = 1 / 16):
        super().__init__(flow, rto_min, initial_window, max_window)
        self.g = g
        self.alpha = 1.0                     # Linux: dctcp_alpha_on_init = 1024/1024
        self.window_end = 0                  # alpha is updated when snd_una passes this
        self.acks = self.marked = 0
        self.cwr_end = -1                    # one cut per window of data
        self.alpha_t, self.alphas = [], []

    def _observe(self, ce: bool) -> None:
        self.acks += 1
        self.marked += ce
        if self.snd_una >= self.window_end:
            f = self.marked / self.acks
            self.alpha = (1 - self.g) * self.alpha + self.g * f
            self.alpha_t.append(self.fabric.now)
            self.alphas.append(self.alpha)
            self.acks = self.marked = 0
            self.window_end = self.next_seq
        if ce and self.snd_una > self.cwr_end:
            self.cwnd = max(self.cwnd * (1 - self.alpha / 2), 2.0)
            self.ssthresh = self.cwnd
            self.cwr_end = self.next_seq
            self.record(self.cwnd)

    def on_new_ack(self, newly: int, ce: bool) -> None:
        self._observe(ce)
        super().on_new_ack(newly, ce)

    def on_dup_ack(self, ce: bool) -> None:
        self._observe(ce)
        super().on_dup_ack(ce)


class Paced(Sender):
    """A rate-based sender: one packet every size/rate seconds, as a NIC's rate limiter sends."""
    rate_based = True

    def __init__(self, flow, rto_min: float = RTO_MIN):
        super().__init__(flow, rto_min)
        self.line = flow.path[0].rate                   # bytes/s
        self.rc = self.line                             # current rate, bytes/s
        self._pacing = False

    def begin(self, _) -> None:
        self.record(self.rc)
        self.send()

    def send(self) -> None:
        if not self._pacing and not self.finished:
            self._pacing = True
            self.fabric.schedule(self.fabric.now, self._pace, None)

    def _pace(self, _) -> None:
        nic = self.flow.path[0]
        if self.finished or self.next_seq >= self.npkts:
            self._pacing = False                        # resumes via send() after a timeout
            return
        if nic.qbytes > 2 * self.flow.mss:              # the NIC is paused or behind: do not pile up
            self.fabric.schedule(self.fabric.now + self.flow.mss / self.line, self._pace, None)
            return
        seq = self.next_seq
        self.next_seq += 1
        self.transmit(seq)
        self.sent_bytes(self.flow.packet_size(seq))
        self.fabric.schedule(self.fabric.now + self.flow.packet_size(seq) / self.rc, self._pace, None)

    def sent_bytes(self, n: int) -> None:
        pass


class Ideal(Paced):
    """Line rate, no reaction to congestion (lost packets come back after a timeout)."""


class DCQCN(Paced):
    ect = True

    def __init__(self, flow, rto_min: float = RTO_MIN, g: float = 1 / 256, alpha_timer: float = 55e-6,
                 increase_timer: float = 55e-6, byte_counter: float = 10e6, fast_recovery_steps: int = 5,
                 rate_ai: float | None = None, rate_hai: float | None = None, min_rate: float | None = None):
        super().__init__(flow, rto_min)
        self.g, self.tau_alpha, self.T, self.B, self.F = g, alpha_timer, increase_timer, byte_counter, fast_recovery_steps
        self.r_ai = rate_ai if rate_ai is not None else 40e6 / 8                 # bytes/s (paper: 40 Mbit/s)
        self.r_hai = rate_hai if rate_hai is not None else 10 * self.r_ai        # HPCC rdma-hw.cc's ratio
        self.min_rate = min_rate if min_rate is not None else self.line / 400
        self.rt = self.line
        self.alpha = 1.0
        self.cnp_seen = False
        self.timer_stage = self.byte_stage = 0
        self.bytes = 0.0
        self._gen = 0                                   # invalidates the increase timer on a cut
        self.cnps = 0

    def begin(self, _) -> None:
        super().begin(_)
        self.fabric.schedule(self.fabric.now + self.tau_alpha, self._alpha_timer, None)
        self.fabric.schedule(self.fabric.now + self.T, self._increase_timer, self._gen)

    def on_cnp(self, _) -> None:
        if self.finished:
            return
        self.cnps += 1
        self.rt = self.rc
        self.rc = max(self.min_rate, self.rc * (1 - self.alpha / 2))
        self.alpha = (1 - self.g) * self.alpha + self.g
        self.cnp_seen = True
        self.timer_stage = self.byte_stage = 0
        self.bytes = 0.0
        self._gen += 1
        self.fabric.schedule(self.fabric.now + self.T, self._increase_timer, self._gen)
        self.record(self.rc)

    def _alpha_timer(self, _) -> None:
        if self.finished:
            return
        if not self.cnp_seen:
            self.alpha *= 1 - self.g
        self.cnp_seen = False
        self.fabric.schedule(self.fabric.now + self.tau_alpha, self._alpha_timer, None)

    def _increase_timer(self, gen) -> None:
        if self.finished or gen != self._gen:
            return
        self.timer_stage += 1
        self._increase()
        self.fabric.schedule(self.fabric.now + self.T, self._increase_timer, gen)

    def sent_bytes(self, n: int) -> None:
        self.bytes += n
        if self.bytes >= self.B:
            self.bytes -= self.B
            self.byte_stage += 1
            self._increase()

    def _increase(self) -> None:
        low, high = min(self.timer_stage, self.byte_stage), max(self.timer_stage, self.byte_stage)
        if low > self.F:
            self.rt += (low - self.F) * self.r_hai      # hyper increase
        elif high > self.F:
            self.rt += self.r_ai                        # additive increase
        self.rt = min(self.rt, self.line)
        self.rc = min(self.line, (self.rt + self.rc) / 2)  # fast recovery: halfway to the target
        self.record(self.rc)


TRANSPORTS = {"reno": Reno, "cubic": Cubic, "dctcp": DCTCP, "dcqcn": DCQCN, "ideal": Ideal}


def make(name: str, flow, rto_min: float = RTO_MIN, **kw) -> Sender:
    try:
        cls = TRANSPORTS[name]
    except KeyError:
        raise ValueError(f"transport: must be one of {', '.join(TRANSPORTS)}, got {name!r}") from None
    return cls(flow, rto_min, **kw)

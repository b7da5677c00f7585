"""Rate-based senders: DCQCN (RoCE's congestion control) and the ideal line-rate sender.

``DCQCN`` (Zhu et al. SIGCOMM'15; the reaction point as in the CoNEXT'16 model and HPCC's
rdma-hw.cc): flows start at line rate, paced. On a CNP: Rt <- Rc, Rc <- Rc (1 - alpha/2),
alpha <- (1-g) alpha + g; every tau' = 55 us without a CNP alpha <- (1-g) alpha (g = 1/256). Rate
increase events come from a timer (T = 55 us) and a byte counter (B = 10 MB): while both counters
are below F = 5, fast recovery Rc <- (Rt + Rc)/2; once one passes F, additive increase
Rt += R_AI (40 Mbit/s); once both pass F, hyper increase Rt += i R_HAI (10 R_AI, HPCC's ratio);
each followed by Rc <- (Rt + Rc)/2. The receiver (NP) sends at most one CNP per 50 us per flow.
``Ideal``: paced at line rate, no congestion reaction: today's netlab network when buffers are
unlimited. Lost packets (a lossy fabric) come back by go-back-N after a timeout, as RoCE's do.

Left out: DCQCN's target-rate clamping option, NACK-triggered go-back-N, TIMELY/HPCC.
"""
from __future__ import annotations

from .sender import RTO_MIN, Sender


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

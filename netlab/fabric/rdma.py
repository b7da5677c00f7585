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

While a DCQCN sender is idle (everything sent, waiting for ACKs or a timeout) its timers sleep and
are caught up when something reaches it (``engine.py`` explains; the result is the same).

Left out: DCQCN's target-rate clamping option, NACK-triggered go-back-N, TIMELY/HPCC.

One concept: rate-based senders, DCQCN and the ideal sender sharing one pacing and rate-timer machinery.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .sender import RTO_MIN, Sender
from .switch import ECN


@dataclass(frozen=True)
class DCQCNParams:
    """DCQCN's constants, written once: the packet sender below, the receiver's CNP pacing
    (``engine.Flow``), DCQCN's fluid model (``fluid.py``) and the marking its switches use
    (``DCQCN_RED``) all read them here. The defaults are the paper's (SIGCOMM'15; CoNEXT'16's
    dcqcn2.m) and HPCC rdma-hw.cc's hyper-increase ratio."""
    g: float = 1 / 256                 # alpha's gain
    alpha_timer: float = 55e-6         # tau' (s): without a CNP for this long, alpha <- (1-g) alpha
    increase_timer: float = 55e-6      # T (s): the rate-increase timer
    byte_counter: float = 10e6         # B (bytes): the rate-increase byte counter
    fast_recovery_steps: int = 5       # F
    rate_ai: float = 40e6 / 8          # R_AI (bytes/s): the paper's 40 Mbit/s
    hai_ratio: int = 10                # R_HAI = hai_ratio x R_AI
    cnp_interval: float = 50e-6        # tau (s): the receiver sends at most one CNP per tau per flow


DCQCN_PARAMS = DCQCNParams()
DCQCN_RED = ECN(5_000, 200_000, 0.01)   # DCQCN's RED marking: Kmin 5 KB, Kmax 200 KB, Pmax 1 %


class Paced(Sender):
    """A rate-based sender: one packet every size/rate seconds, as a NIC's rate limiter sends."""
    rate_based = True

    def __init__(self, flow, rto_min: float = RTO_MIN):
        super().__init__(flow, rto_min)
        self.line = flow.line                           # bytes/s: its NIC's rate (several planes: their sum)
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

    def __init__(self, flow, rto_min: float = RTO_MIN, *, params: DCQCNParams = DCQCN_PARAMS,
                 min_rate: float | None = None):
        """``params``: DCQCN's constants (``DCQCNParams``); ``min_rate`` (bytes/s): the floor of a cut, by
        default 1/400 of the NIC's line rate."""
        super().__init__(flow, rto_min)
        P = params
        self.g, self.tau_alpha, self.T, self.B, self.F = P.g, P.alpha_timer, P.increase_timer, P.byte_counter, \
            P.fast_recovery_steps
        self.r_ai = P.rate_ai                                                             # bytes/s
        self.r_hai = P.hai_ratio * self.r_ai
        self.min_rate = min_rate if min_rate is not None else self.line / 400
        self.rt = self.line
        self.alpha = 1.0
        self.cnp_seen = False
        self.timer_stage = self.byte_stage = 0
        self.bytes = 0.0
        self._gen = 0                                   # invalidates the increase timer on a cut
        self.cnps = 0
        self.sleeping = {}                              # timer -> its next firing, while it sleeps

    def begin(self, _) -> None:
        super().begin(_)
        self.fabric.schedule(self.fabric.now + self.tau_alpha, self._alpha_timer, None)
        self.fabric.schedule(self.fabric.now + self.T, self._increase_timer, self._gen)

    # ---- the two periodic timers; while the sender is idle they sleep (the fabric's side is below)
    def on_ack(self, msg) -> None:
        self._reached(super().on_ack, msg)

    def _timer(self, _) -> None:
        self._reached(super()._timer, _)

    def _reached(self, handle, arg) -> None:
        """An ACK or the retransmission timer reached the sender: fire its sleeping timers' due firings
        first, then wake them if it now sends again or has finished."""
        if not self.sleeping:
            handle(arg)
            return
        self.catch_up(self.fabric.now)
        handle(arg)
        if self._pacing or self.finished:
            self.wake()

    def on_cnp(self, _) -> None:
        if self.sleeping:
            self.catch_up(self.fabric.now)
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
        if "increase" in self.sleeping:      # the old timer's next firing stays an event: it finds itself stale
            self.fabric.schedule(self.sleeping.pop("increase"), self._increase_timer, self._gen - 1)
            if not self.sleeping:
                del self.fabric.sleepers[self]
        self.fabric.schedule(self.fabric.now + self.T, self._increase_timer, self._gen)
        self.record(self.rc)

    def _alpha_timer(self, _) -> None:
        if self.finished:
            return
        self._alpha_step()
        t = self.fabric.now + self.tau_alpha
        if self._pacing:
            self.fabric.schedule(t, self._alpha_timer, None)
        else:
            self.sleep("alpha", t)

    def _alpha_step(self) -> None:
        if not self.cnp_seen:
            self.alpha *= 1 - self.g
        self.cnp_seen = False

    def _increase_timer(self, gen) -> None:
        if self.finished or gen != self._gen:
            return
        self._increase_step(self.fabric.now)
        t = self.fabric.now + self.T
        if self._pacing:
            self.fabric.schedule(t, self._increase_timer, gen)
        else:
            self.sleep("increase", t)

    def _increase_step(self, now: float) -> None:
        self.timer_stage += 1
        self._increase(now)

    def sent_bytes(self, n: int) -> None:
        self.bytes += n
        if self.bytes >= self.B:
            self.bytes -= self.B
            self.byte_stage += 1
            self._increase(self.fabric.now)

    def _increase(self, now: float) -> None:
        low, high = min(self.timer_stage, self.byte_stage), max(self.timer_stage, self.byte_stage)
        if low > self.F:
            self.rt += (low - self.F) * self.r_hai      # hyper increase
        elif high > self.F:
            self.rt += self.r_ai                        # additive increase
        self.rt = min(self.rt, self.line)
        self.rc = min(self.line, (self.rt + self.rc) / 2)  # fast recovery: halfway to the target
        self.w_t.append(now)
        self.w.append(self.rc)

    # ---- Sleeper: the fabric's side of the sleeping timers
    def sleep(self, which: str, t: float) -> None:
        self.sleeping[which] = t
        self.fabric.sleepers[self] = True

    def wake(self) -> None:
        """The sender sends again (or has finished): its timers go back on the event queue (caught up
        to now by whatever woke it; a timer that finds the sender idle again goes back to sleep)."""
        fab = self.fabric
        for which, t in self.sleeping.items():
            if which == "alpha":
                fab.schedule(t, self._alpha_timer, None)
            else:
                fab.schedule(t, self._increase_timer, self._gen)
        self.sleeping = {}
        del fab.sleepers[self]

    def due(self):
        return [(t, which) for which, t in self.sleeping.items()]

    def fire(self, which: str) -> None:
        """One sleeping firing, the earliest due of that timer."""
        t = self.sleeping[which]
        if which == "alpha":
            self._alpha_step()
            self.sleeping[which] = t + self.tau_alpha
        else:
            self._increase_step(t)
            self.sleeping[which] = t + self.T
        self.fabric.ghosts += 1

    def catch_up(self, until: float) -> None:
        """Every sleeping firing due at or before ``until``, with the floats an event per firing gives
        (the times by repeated addition, alpha by repeated multiplication)."""
        t = self.sleeping.get("alpha")
        if t is not None and t <= until:
            self._alpha_step()                                   # the first firing may see a CNP
            k, t = _count(t + self.tau_alpha, self.tau_alpha, until)
            self.alpha = _power(self.alpha, 1 - self.g, k)
            self.cnp_seen = False
            self.sleeping["alpha"] = t
            self.fabric.ghosts += k + 1
        t = self.sleeping.get("increase")
        if t is not None and t <= until:
            fired = 0
            while t <= until:                                    # until the rate stops changing
                rc = self.rc
                self._increase_step(t)
                t += self.T
                fired += 1
                if self.rt == self.line and self.rc == rc:
                    break
            if t <= until:                                       # the rest change only the stage
                times = _chain(t, self.T, until)
                self.timer_stage += len(times)
                self.w_t.extend(times.tolist())
                self.w.extend([self.rc] * len(times))
                fired += len(times)
                t = float(times[-1]) + self.T
            self.sleeping["increase"] = t
            self.fabric.ghosts += fired


def _chain(t: float, step: float, until: float) -> np.ndarray:
    """t, t + step, (t + step) + step, ... up to ``until``: the sums a chain of events computes
    (numpy's cumulative sum adds in order, so the floats are the same)."""
    if (until - t) < 256 * step:                                 # a few: plain floats are quicker
        out = []
        while t <= until:
            out.append(t)
            t += step
        return np.asarray(out, dtype=float)
    parts = []
    while t <= until:
        n = min(int((until - t) / step) + 2, 1 << 20)
        seq = np.cumsum(np.concatenate(([t], np.full(n, step))))
        i = int(np.searchsorted(seq, until, side="right"))
        if i <= n:
            parts.append(seq[:i])
            break
        parts.append(seq[:n])
        t = float(seq[n])
    return np.concatenate(parts) if parts else np.empty(0)


def _count(t: float, step: float, until: float) -> tuple[int, float]:
    """How many of t, t + step, ... are at or before ``until``, and the first that is not."""
    if (until - t) < 256 * step:
        k = 0
        while t <= until:
            t += step
            k += 1
        return k, t
    times = _chain(t, step, until)
    return len(times), (float(times[-1]) + step if len(times) else t)


def _power(x: float, c: float, k: int) -> float:
    """x multiplied by c, k times in a row (not c ** k: the rounding of each product is kept)."""
    if k < 256:
        for _ in range(k):
            x *= c
        return x
    while k > 0 and x != 0.0:
        n = min(k, 1 << 20)
        x = float(np.multiply.accumulate(np.concatenate(([x], np.full(n, c))))[-1])
        k -= n
    return x

"""NSCC, Ultra Ethernet's sender-based congestion control, after SMaRTT (arXiv 2404.01630) and UEC's htsim.

A window in bytes, moved by two signals on every ACK: the ECN mark (is some queue on this packet's
path above the switches' marking threshold?) and the queueing delay, the ACK's round trip minus the
path's base RTT (how long did this packet wait?). The four combinations (SMaRTT's quadrants, as
htsim's ``UecSrc::updateCwndOnAck_NSCC`` implements them):

    no mark, delay >= target   fair increase:         inc += FI x acked bytes   (a full queue elsewhere, or
                                                                                  sharing: grow slowly, fairly)
    no mark, delay <  target   proportional increase: inc += alpha x acked x (target - delay)
    mark,    delay >= target   multiplicative decrease, at most once per base RTT:
                               cwnd x= max(1 - gamma (avg delay - target) / avg delay, 0.5)
    mark,    delay <  target   nothing (a queue that is already draining: only change path)

and the increases are applied together every 8 packets or every base RTT (``fulfill``):
cwnd += inc / cwnd, plus eta once per base RTT. QuickAdapt: once per base RTT + target, if a trimmed
packet came back (a NACK) or the delay passed 4 x target, and what was delivered in that time is
below 1/8 of the maximum window, the window jumps down to what was delivered. A NACK also takes the
trimmed bytes off the window. The window starts at its maximum, 1.5 BDP, and never falls below one
packet. Parameters scale with the BDP against htsim's reference of 100 Gbit/s x 12 us, as htsim's
``initNsccParams`` does: target = base RTT (0.75 base RTT with trimming), FI = 5 MSS a,
alpha = 4 MSS a b / target, eta = 0.15 MSS a, gamma = 0.8, with a = BDP / 150,000 B and b = target / 12 us.

Simplified, and said so: the fast increase below 1 us of delay (too small a delay for the lab's
microsecond links), the receiver's window penalty (rcv_cwnd_pend) and the delay sample averaging of
ACK coalescing are left out; one flow is one message. Loss recovery is ``rud.py``'s.
"""
from __future__ import annotations

from .rud import Unordered
from .sender import RTO_MIN

REF_BDP = 100e9 / 8 * 12e-6      # bytes: htsim's reference network, 100 Gbit/s x 12 us
REF_RTT = 12e-6                  # s


class NSCC(Unordered):
    def __init__(self, flow, rto_min: float = RTO_MIN, trimming: bool = False, target: float | None = None):
        super().__init__(flow, rto_min)
        mss = flow.mss
        self.mtu = mss + flow.overhead
        self.base_rtt = flow.base_rtt
        bdp = flow.base_rtt * flow.line
        self.maxwnd = 1.5 * bdp
        self.cwnd = self.maxwnd
        self.min_cwnd = float(self.mtu)
        self.target = target if target is not None else flow.base_rtt * (0.75 if trimming else 1.0)
        a = bdp / REF_BDP
        b = self.target / REF_RTT
        self.alpha = 4 * mss * a * b / self.target
        self.fi = 5 * mss * a
        self.eta = 0.15 * mss * a
        self.gamma = 0.8
        self.delay_alpha = 0.0125
        self.qa_threshold = 4 * self.target
        self.adjust_period = flow.base_rtt
        self.adjust_bytes = 8 * self.mtu
        self.avg_delay = 0.0
        self.inc = 0.0
        self.received = self.achieved = 0.0
        self.ignored = self.to_ignore = 0.0
        self.last_adjust = self.last_decrease = 0.0
        self.qa_end = 0.0
        self.trigger_qa = False
        self.quick_adapts = self.decreases = 0

    def may_send(self, size: int) -> bool:
        return self.inflight + size <= self.cwnd or self.inflight == 0

    def window_value(self) -> float:
        return self.cwnd

    # ---- the control law ---------------------------------------------------------------------------
    def _delay(self, delay: float, marked: bool) -> None:
        """htsim's update_delay: the averaged delay the multiplicative decrease is judged by."""
        if not marked and delay > self.target:
            self.avg_delay = self.delay_alpha * self.base_rtt * 0.25 + (1 - self.delay_alpha) * self.avg_delay
        elif delay > 5 * self.base_rtt:
            self.avg_delay = 0.0125 * delay + 0.9875 * self.avg_delay
        else:
            self.avg_delay = self.delay_alpha * delay + (1 - self.delay_alpha) * self.avg_delay

    def _quick_adapt(self, loss: bool, marked: bool, delay: float) -> bool:
        now = self.fabric.now
        done = False
        if self.ignored < self.to_ignore and marked:
            done = True
        elif now > self.qa_end:
            if (self.qa_end != 0 and (self.trigger_qa or loss or delay > self.qa_threshold)
                    and self.achieved < self.maxwnd / 8):
                self.cwnd = max(self.achieved, self.min_cwnd)
                self.to_ignore, self.ignored = float(self.inflight), 0.0
                self.trigger_qa = False
                self.quick_adapts += 1
                done = True
                self.record(self.cwnd)
            self.achieved = 0.0
            self.qa_end = now + self.base_rtt + self.target
        if done:
            self.inc = 0.0
            self.received = 0.0
        return done

    def _bound(self) -> None:
        self.cwnd = min(max(self.cwnd, self.min_cwnd), self.maxwnd)

    def on_feedback(self, newly: int, ce: bool, rtt: float) -> None:
        now = self.fabric.now
        delay = max(0.0, rtt - self.base_rtt)
        self._delay(delay, ce)
        self.achieved += newly
        self.received += newly
        self.ignored += newly
        if self._quick_adapt(False, ce, delay):
            return
        if not ce and delay >= self.target:
            self.inc += self.fi * newly                                   # fair increase
        elif not ce:
            self.inc += self.alpha * newly * (self.target - delay)        # proportional increase
        elif delay >= self.target:
            if self.avg_delay > self.target and now - self.last_decrease > self.base_rtt:
                self.cwnd *= max(1 - self.gamma * (self.avg_delay - self.target) / self.avg_delay, 0.5)
                self.last_decrease = now
                self.decreases += 1
                self.record(self.cwnd)
        self._bound()
        if self.received > self.adjust_bytes or now - self.last_adjust > self.adjust_period:
            self.cwnd += self.inc / self.cwnd                             # fulfill the increases
            if now - self.last_adjust >= self.adjust_period:
                self.cwnd += self.eta
                self.last_adjust = now
            self.inc = self.received = 0.0
            self._bound()
            self.record(self.cwnd)

    def on_trimmed(self, size: int) -> None:
        """A NACK: the packet was trimmed at a full queue (htsim's updateCwndOnNack_NSCC)."""
        self.ignored += size
        self._delay(self.base_rtt, True)                  # a trim means about a network RTT of queue
        self.trigger_qa = True
        if not self._quick_adapt(True, True, 0.0):
            self.cwnd -= size
            self._bound()
            self.record(self.cwnd)

    def on_loss_timeout(self, lost_bytes: int) -> None:
        """Packets given up after a timeout each take their size off the window (htsim's
        mark_packet_for_retransmission)."""
        self.cwnd -= lost_bytes
        self._bound()
        self.record(self.cwnd)

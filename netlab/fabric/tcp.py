"""Window-based TCP senders: Reno, Cubic and DCTCP, in packets.

``Reno`` (RFC 5681, with a simplified SACK recovery after RFC 6675 as Linux has SACK on): slow start
from an initial window of 10 packets (Linux's IW10), congestion avoidance +1 packet per RTT, fast
retransmit on the third duplicate ACK (ssthresh = cwnd/2); during recovery each ACK lets one missing
packet (below the highest SACKed one) be resent and inflates the window by one. A receive window
(``max_window``) caps what is in flight. ``Cubic`` (RFC 8312, C = 0.4, beta = 0.7, with its
TCP-friendly region) changes only the growth and the cut. ``DCTCP`` (Alizadeh et al. SIGCOMM'10;
RFC 8257 section 3.3; Linux tcp_dctcp.c): ECN-capable; once per window of data, when snd_una passes
the window's end, alpha <- (1-g) alpha + g F, F the fraction of the window's ACKs echoing CE, g =
1/16, alpha starting at 1 (dctcp_update_alpha, called from tcp_ack's tcp_in_ack_event); on the
first CE echo outside CWR, cwnd <- cwnd (1 - alpha/2), at least 2 packets, with the alpha in hand
(tcp_fastretrans_alert -> tcp_enter_cwr -> dctcp_ssthresh, later in the same tcp_ack), and no other
cut until an ACK passes the sequence sent when it cut (CWR ends above high_seq); so a window's marks
are cut with the windows before's alpha and counted at its end. The cut is applied at once where
Linux lowers ssthresh and lets PRR bring cwnd down over the next RTT. On loss, Reno's halving.

The Linux kernel's profile of these senders (RACK, tail loss probes, the kernel's RTO and its timer
ticks) is its own class, ``linux_tcp.LinuxTCP``, beside them. ``resume`` carries a persistent
connection's window and RTT estimate from one message to the next.

Left out: full SACK scoreboards (one block per ACK here), delayed ACKs (the receiver's, an option
of the engine's flows), Nagle, pacing (a window leaves as a burst at NIC speed, at most two packets
queued in the NIC), PRR (recovery sends one packet per ACK), RACK and tail loss probes (``linux_tcp.py``).
"""
from __future__ import annotations

import math

from .sender import RTO_MIN, Sender
from .switch import NIC_QUEUE


class Reno(Sender):
    """Textbook Reno with SACK recovery (the module's docstring says what it models)."""
    beta = 0.5

    def __init__(self, flow, rto_min: float = RTO_MIN, initial_window: int = 10, max_window: float | None = None):
        super().__init__(flow, rto_min)
        self.initial_window = initial_window
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

    def window(self) -> tuple[int, int]:
        """(packets the window lets be in flight, SACKed packets not counted as in flight): Reno's
        window inflated by the duplicate ACKs of a recovery."""
        return min(int(self.cwnd) + (self.dupacks if self.recover >= 0 else 0), self.max_window), 0

    def send(self) -> bool:
        """Send what the window allows; False when it stopped to wait for the NIC to drain."""
        allowed, sacked = self.window()
        nic = self.flow.path[0]
        while self.next_seq < self.npkts and self.next_seq - self.snd_una - sacked < allowed:
            if nic.qbytes >= NIC_QUEUE:                    # TCP small queues: wait for the NIC to drain
                if self not in nic.waiting:
                    nic.waiting.append(self)
                return False
            if self.next_seq not in self.sacked:
                self.transmit(self.next_seq)
            self.next_seq += 1
        return True

    def resume(self, prev: "Reno") -> None:
        """Go on from ``prev``, the same connection's sender of the previous message (a persistent
        connection): its window, ssthresh and RTT estimate carry over."""
        self.cwnd, self.ssthresh = prev.cwnd, prev.ssthresh
        self.srtt, self.rttvar = prev.srtt, prev.rttvar
        self.rto = prev.rto

    def retransmit_hole(self) -> None:
        """SACK recovery (RFC 6675, simplified): resend the next packet below the highest SACKed
        one that the receiver lacks and that was not resent within the last SRTT (a resent packet
        can be lost again); called once per ACK, so recovery keeps packet conservation."""
        now, top = self.fabric.now, self.sack_high
        h = max(self.hole, self.snd_una)
        for _ in range(2):                                   # forward, then once more from snd_una
            while h < top:
                if h not in self.sacked and self._lost(h, now):
                    self.resent_at[h] = now
                    self.transmit(h)
                    self.hole = h + 1
                    return
                h += 1
            if now - self.wrapped_at < self.srtt:
                return
            self.wrapped_at, h = now, self.snd_una

    def _lost(self, h: int, now: float) -> bool:
        """Is packet h (below the highest SACKed one) lost and due for a resend? It was not resent
        within the last SRTT."""
        return now - self.resent_at.get(h, -math.inf) > self.srtt

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

    def recovery_due(self) -> bool:
        """Does this duplicate ACK (outside recovery) start a fast retransmit? The third one does."""
        return self.dupacks == 3

    def on_dup_ack(self, ce: bool) -> None:
        if self.next_seq <= self.snd_una:
            return
        self.dupacks += 1
        if self.recover < 0 and self.recovery_due():
            self.enter_recovery()
        elif self.recover >= 0:
            self.retransmit_hole()

    def enter_recovery(self) -> None:
        """Fast retransmit: cut the window and resend the first hole."""
        self.cut()
        self.cwnd = self.ssthresh
        self.recover = self.next_seq
        self.fast_retransmits += 1
        self.hole = self.snd_una
        self.retransmit_hole()
        self.record(self.cwnd)

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

    def __init__(self, flow, rto_min: float = RTO_MIN, initial_window: int = 10, max_window: float | None = None,
                 **profile):
        super().__init__(flow, rto_min, initial_window, max_window, **profile)
        self.w_max = 0.0
        self.epoch = None

    def resume(self, prev: "Reno") -> None:
        super().resume(prev)
        self.w_max = getattr(prev, "w_max", 0.0)               # a new epoch starts with the next growth

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
                 *, g: float = 1 / 16, **profile):
        super().__init__(flow, rto_min, initial_window, max_window, **profile)
        self.g = g
        self.alpha = 1.0                     # Linux: dctcp_alpha_on_init = 1024/1024
        self.window_end = 0                  # alpha is updated when snd_una passes this
        self.acks = self.marked = 0
        self.cwr_end = -1                    # one cut per window of data
        self.alpha_t, self.alphas = [], []
        self.windows = []                    # (acked, marked) packets of each window that updated alpha
        self.cuts = []                       # (time, cwnd before, cwnd after, alpha used) of each ECN cut

    def _observe(self, ce: bool) -> None:
        self.acks += 1
        self.marked += ce
        if self.snd_una >= self.window_end:
            f = self.marked / self.acks
            self.windows.append((self.acks, self.marked))
            self.alpha = (1 - self.g) * self.alpha + self.g * f
            self.alpha_t.append(self.fabric.now)
            self.alphas.append(self.alpha)
            self.acks = self.marked = 0
            self.window_end = self.next_seq
        if ce and self.snd_una > self.cwr_end:
            before = self.cwnd
            self.cwnd = max(self.cwnd * (1 - self.alpha / 2), 2.0)
            self.cuts.append((self.fabric.now, before, self.cwnd, self.alpha))
            self.ssthresh = self.cwnd
            self.cwr_end = self.next_seq
            self.record(self.cwnd)

    def on_new_ack(self, newly: int, ce: bool) -> None:
        self._observe(ce)
        super().on_new_ack(newly, ce)

    def on_dup_ack(self, ce: bool) -> None:
        self._observe(ce)
        super().on_dup_ack(ce)

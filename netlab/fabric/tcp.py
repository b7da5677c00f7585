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

``LinuxTCP`` is the Linux kernel's profile of these senders (``LinuxReno``, ``LinuxCubic``,
``LinuxDCTCP``; ``transport.make(..., linux=True)`` picks them): RACK, tail loss probes, the kernel's
RTO and its timer ticks; its docstring says what it adds. ``resume`` carries a persistent
connection's window and RTT estimate from one message to the next.

Left out: full SACK scoreboards (one block per ACK here), delayed ACKs (the receiver's, an option
of the engine's flows), Nagle, pacing (a window leaves as a burst at NIC speed, at most two packets
queued in the NIC), PRR (recovery sends one packet per ACK), and outside ``LinuxTCP`` RACK and
tail loss probes.
"""
from __future__ import annotations

import math

from .sender import RTO_MAX, RTO_MIN, Sender
from .switch import NIC_QUEUE

TLP_MIN = 2e-3            # s, added to 2 SRTT for a probe with more than one packet out (TCP_TIMEOUT_MIN)
TLP_SINGLE = 0.2          # s, added instead when one packet is out (TCP_RTO_MIN: the peer's delayed ACK)


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


class LinuxTCP(Reno):
    """The Linux kernel's profile of a TCP sender (``LinuxReno``, ``LinuxCubic``, ``LinuxDCTCP``).

    Adds to Reno, Cubic or DCTCP the loss recovery of the Linux kernel (tcp_input.c, tcp_recovery.c,
    tcp_output.c; net.ipv4.tcp_early_retrans = 3, tcp_recovery = 1, its defaults), which is what decides
    an incast on a real stack: RACK (RFC 8985) marks a packet lost as soon as a packet sent after it is
    SACKed (no reordering exists here, so its reordering window is left out), so one SACK starts recovery
    instead of three duplicate ACKs, and a resent packet is resent again once a packet sent after the
    resend is delivered; a tail loss probe (TLP, RFC 8985 section 7) fires 2 SRTT + 2 ms after the last
    send or ACK (2 SRTT + 200 ms with one packet out), never later than the RTO, while no recovery runs:
    it sends one new packet, or resends the last one, so its SACK lets RACK find the lost tail; the
    window limits the packets in flight, SACKed ones not counted (tcp_packets_in_flight), with no
    Reno-style inflation by duplicate ACKs in recovery; and the
    RTO is SRTT + max(4 RTTVAR, RTOmin) (tcp_set_rto: RTOmin bounds the variance term), not
    max(RTOmin, SRTT + 4 RTTVAR). ``tick`` (s, 1/HZ of the kernel, e.g. 4 ms at HZ = 250) keeps the RTO,
    RTOmin and the probe timeout in whole ticks counted from the current one, as jiffies timers do:
    on such a kernel ``rto_min 1ms`` is one tick. ``resume`` carries a persistent connection's state from
    one message to the next, with the restart after idle (tcp_slow_start_after_idle = 1).
    """

    def __init__(self, flow, rto_min: float = RTO_MIN, initial_window: int = 10, max_window: float | None = None,
                 tick: float = 0.0):
        super().__init__(flow, rto_min, initial_window, max_window)
        if not tick >= 0:
            raise ValueError(f"tick: must be zero or more seconds, got {tick!r}")
        self.tick = float(tick)
        self.rack = (-math.inf, -1)          # (send time, seq) of the most recently sent packet delivered
        self.xmit_at = {}                    # packet -> when it was last sent
        self.loss_until = 0                  # after an RTO, no probe until this is acknowledged
        self.tlp_high = -1                   # a probe is out until snd_una passes this
        self.probes = 0
        self._probe_at = math.inf            # the pending probe event (one at a time, re-armed lazily)
        self.probe_deadline = math.inf
        self.rto = self.srtt + max(4 * self.rttvar, rto_min)

    def window(self) -> tuple[int, int]:
        """SACKed packets have left the network (tcp_packets_in_flight); no inflation in recovery."""
        return min(int(self.cwnd), self.max_window), len(self.sacked)

    def send(self) -> bool:
        if not super().send():
            return False
        self.arm_probe()
        return True

    def _ticks(self, seconds: float) -> float:
        """A duration as the kernel's timers keep it: rounded up to whole ticks (usecs_to_jiffies)."""
        return math.ceil(seconds / self.tick - 1e-9) * self.tick if self.tick else seconds

    def _tick_start(self) -> float:
        """When the current tick began: a jiffies timer counts whole ticks from there."""
        return math.floor(self.fabric.now / self.tick + 1e-9) * self.tick if self.tick else self.fabric.now

    def arm(self) -> None:
        self.rto = self._ticks(self.srtt + max(4 * self.rttvar, self._ticks(self.rto_min)))
        fab = self.fabric
        self.deadline = self._tick_start() + min(self.rto * self.backoff, RTO_MAX)
        if self.deadline < self._timer_at:
            self._timer_at = self.deadline
            fab.schedule(self.deadline, self._timer, None)

    def transmit(self, seq: int) -> None:
        self.xmit_at[seq] = self.last_sent = self.fabric.now
        super().transmit(seq)

    def resume(self, prev: "LinuxTCP") -> None:
        """Reno's carry-over, and after an idle period longer than the RTO the window restarts as
        Linux's tcp_cwnd_restart does (tcp_slow_start_after_idle = 1): ssthresh <- max(ssthresh,
        3/4 cwnd), cwnd halved per RTO idle, down to no less than IW."""
        super().resume(prev)
        idle = self.fabric.now - getattr(prev, "last_sent", self.fabric.now)
        if idle > self.rto:
            self.ssthresh = max(self.ssthresh, 0.75 * self.cwnd)
            restart = min(self.initial_window, self.cwnd)
            cwnd = self.cwnd
            while (idle := idle - self.rto) > 0 and cwnd > restart:
                cwnd /= 2
            self.cwnd = max(cwnd, restart)

    def on_ack(self, msg) -> None:
        self.rack = max(self.rack, (msg[2], msg[3]))
        if msg[0] >= self.tlp_high:
            self.tlp_high = -1
        super().on_ack(msg)

    def arm_probe(self) -> None:
        """Schedule a tail loss probe, as tcp_schedule_loss_probe does, when one may be sent."""
        if (self.finished or self.recover >= 0 or self.snd_una < self.loss_until or self.tlp_high >= 0
                or self.next_seq <= self.snd_una):
            self.probe_deadline = math.inf
            return
        fab = self.fabric
        out = self.next_seq - self.snd_una
        pto = self._ticks(2 * self.srtt + (TLP_SINGLE if out == 1 else TLP_MIN))
        self.probe_deadline = min(self._tick_start() + pto, self.deadline - 1e-9)   # before the RTO, never after
        if self.probe_deadline < self._probe_at:
            self._probe_at = self.probe_deadline
            fab.schedule(self.probe_deadline, self._probe, None)

    def _probe(self, _) -> None:
        fab = self.fabric
        if self._probe_at != fab.now:
            return                                           # stale: a nearer one was scheduled
        self._probe_at = math.inf
        if self.probe_deadline == math.inf or self.finished:
            return
        if fab.now + 1e-12 < self.probe_deadline:            # pushed later since: wait for it
            self._probe_at = self.probe_deadline
            fab.schedule(self.probe_deadline, self._probe, None)
            return
        self.probe_deadline = math.inf
        if self.recover >= 0 or self.next_seq <= self.snd_una:
            return
        self.probes += 1
        if self.next_seq < self.npkts and self.next_seq - self.snd_una < self.max_window:
            seq = self.next_seq                              # new data, outside the window
            self.next_seq += 1
        else:
            seq = self.high - 1                              # else the last packet sent
        self.tlp_high = self.next_seq
        self.transmit(seq)
        self.deadline = math.inf
        self.arm()                                           # tcp_rearm_rto after the probe

    def _lost(self, h: int, now: float) -> bool:
        """RACK: packet h was last sent before the most recently sent packet that was delivered (ties
        broken by sequence, as tcp_rack_sent_after does)."""
        return (self.xmit_at.get(h, -math.inf), h) < self.rack

    def on_new_ack(self, newly: int, ce: bool) -> None:
        if self.recover < 0 and self.sack_high > self.snd_una and self._lost(self.snd_una, self.fabric.now):
            self.dupacks = 0
            self.enter_recovery()                               # RACK: a hole below a SACKed packet
            return
        super().on_new_ack(newly, ce)

    def recovery_due(self) -> bool:
        """Outside recovery one SACK is enough (RACK), as well as the third duplicate ACK."""
        return self.dupacks == 3 or self.sack_high > self.snd_una

    def enter_recovery(self) -> None:
        self.probe_deadline = math.inf
        super().enter_recovery()

    def on_timeout(self) -> None:
        super().on_timeout()
        self.loss_until = self.high
        self.tlp_high = -1


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
                 g: float = 1 / 16, **profile):
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


class LinuxReno(LinuxTCP):
    """Reno with the Linux kernel's loss recovery."""


class LinuxCubic(Cubic, LinuxTCP):
    """Cubic with the Linux kernel's loss recovery (Linux's default congestion control)."""


class LinuxDCTCP(DCTCP, LinuxTCP):
    """DCTCP with the Linux kernel's loss recovery: DCTCP's ECN bookkeeping sees every ACK first."""


LINUX = {Reno: LinuxReno, Cubic: LinuxCubic, DCTCP: LinuxDCTCP}   # each sender's kernel profile

"""The Linux kernel's profile of the textbook senders of ``tcp.py``: ``LinuxTCP`` and its Reno, Cubic and
DCTCP (``LINUX`` maps each textbook sender to its profile; ``transport.make(..., linux=True)`` picks them).

What the kernel adds to the textbook (``LinuxTCP``'s docstring has the details and the kernel's function
names): RACK loss detection, tail loss probes, the kernel's RTO with its minimum, and its timers rounded
to jiffies. Kept apart so that textbook Reno carries no kernel branches.
"""
from __future__ import annotations

import math

from .. import validate
from .sender import RTO_MAX, RTO_MIN
from .tcp import DCTCP, Cubic, Reno

TLP_MIN = 2e-3            # s, added to 2 SRTT for a probe with more than one packet out (TCP_TIMEOUT_MIN)
TLP_SINGLE = 0.2          # s, added instead when one packet is out (TCP_RTO_MIN: the peer's delayed ACK)


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
                 *, tick: float = 0.0):
        super().__init__(flow, rto_min, initial_window, max_window)
        self.tick = validate.number(tick, "tick", 0)
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


class LinuxReno(LinuxTCP):
    """Reno with the Linux kernel's loss recovery."""


class LinuxCubic(Cubic, LinuxTCP):
    """Cubic with the Linux kernel's loss recovery (Linux's default congestion control)."""


class LinuxDCTCP(DCTCP, LinuxTCP):
    """DCTCP with the Linux kernel's loss recovery: DCTCP's ECN bookkeeping sees every ACK first."""


LINUX = {Reno: LinuxReno, Cubic: LinuxCubic, DCTCP: LinuxDCTCP}   # each sender's kernel profile

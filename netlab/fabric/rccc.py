"""RCCC, Ultra Ethernet's receiver-credit congestion control: the receiver paces its senders.

In an incast the only queue that matters is the one in front of the receiver, and only the receiver
knows how many senders it has. So the receiver grants credit (NDP's PULL packets, Homa's grants,
UET RCCC's credit): a pull pacer (``CreditPacer``, one per receiving host) issues one packet of
credit every packet time at ``credit_rate`` x its link rate (1 by default; htsim uses 0.99), round
robin over the senders that still need credit. A sender sends a packet only against credit: its
first ``unscheduled`` bytes go at once (0 by default: every packet waits for a credit; NDP sends a
first window of about a BDP, htsim's RCCC speculates with 1.5 BDP, which an extreme incast turns
into a burst of trims), and the rest only as credits arrive. So the receiver's port gets exactly
its link rate: its queue stays near empty however many senders there are, and the incast ends in
about N x block / B plus one round trip for the first request.

The request for credit travels to the receiver in one one-way delay (control traffic, not queued);
each credit travels back the same way. A trimmed packet (``trimming.py``) is owed a new credit by
the receiver the moment its header arrives; a packet lost without trace (a timeout, or the
out-of-order rule of ``rud.py``) is asked for again by the sender. The sender ignores ECN (UET
turns last-hop marking off for RCCC); loss recovery is ``rud.py``'s.
Left out: credits of several packets per pull (htsim: 4 MTUs), the receiver's own window and
NSCC running beside RCCC for congestion in the core (UET can combine them; here it is one or the other).
"""
from __future__ import annotations

from collections import deque

from .rud import Unordered
from .sender import RTO_MIN


class CreditPacer:
    """One receiving host's pull pacer: a packet of credit per packet time, round robin."""

    def __init__(self, fabric, rate: float, fraction: float = 1.0):
        self.fabric, self.rate, self.fraction = fabric, rate, fraction
        self.queue: deque = deque()
        self.need: dict = {}                        # sender -> payload bytes of credit still owed
        self.running = False
        self.granted = 0                            # payload bytes granted
        self.grant_t: list[float] = []              # when each credit left

    def ask(self, msg) -> None:
        """(sender, bytes): a request (or a trimmed packet) reached the receiver."""
        sender, nbytes = msg
        if nbytes <= 0 or sender.finished:
            return
        if self.need.get(sender, 0) <= 0:
            self.queue.append(sender)
        self.need[sender] = self.need.get(sender, 0) + nbytes
        if not self.running:
            self.running = True
            self._tick(None)

    def _tick(self, _) -> None:
        fab = self.fabric
        while self.queue:
            sender = self.queue.popleft()
            if self.need.get(sender, 0) > 0 and not sender.finished:
                break
            self.need.pop(sender, None)
        else:
            self.running = False
            return
        flow = sender.flow
        amount = min(flow.mss, self.need[sender])
        self.need[sender] -= amount
        if self.need[sender] > 0:
            self.queue.append(sender)
        self.granted += amount
        self.grant_t.append(fab.now)
        fab.schedule(fab.now + flow.ack_delay, sender.on_credit, amount)
        fab.schedule(fab.now + (flow.mss + flow.overhead) / (self.rate * self.fraction), self._tick, None)


def pacer_for(flow, fraction: float = 1.0) -> CreditPacer:
    """The pull pacer of `flow`'s receiving host (one per host, made on first use)."""
    fab = flow.fabric
    pacers = fab.__dict__.setdefault("pacers", {})
    key = getattr(flow, "receiver", None) or flow.path[-1]
    if key not in pacers:
        rate = getattr(flow, "receiver_rate", None) or flow.path[-1].rate
        pacers[key] = CreditPacer(fab, rate, fraction)
    return pacers[key]


class RCCC(Unordered):
    ect = False                                      # no last-hop ECN for RCCC

    def __init__(self, flow, rto_min: float = RTO_MIN, unscheduled: float = 0.0, credit_rate: float = 1.0):
        super().__init__(flow, rto_min)
        bdp = flow.base_rtt * flow.line
        self.maxwnd = 1.5 * bdp
        self.credit = float(min(max(unscheduled, 0.0), flow.size))
        self.unscheduled = self.credit
        self.credit_rate = credit_rate
        self.pacer = None
        self.credits = 0                             # credits received

    def begin(self, _) -> None:
        self.pacer = pacer_for(self.flow, self.credit_rate)
        self.flow.pacer = self.pacer
        fab = self.fabric
        fab.schedule(fab.now + self.flow.ack_delay, self.pacer.ask, (self, self.flow.size - self.credit))
        super().begin(_)

    def may_send(self, size: int) -> bool:
        return self.credit >= size - 1e-9

    def sent(self, size: int) -> None:
        self.credit -= size

    def window_value(self) -> float:
        return self.credit

    def window_packets(self) -> float:
        return max(1.0, self.maxwnd / self.flow.mss)

    def on_credit(self, amount: float) -> None:
        if self.finished:
            return
        self.credits += 1
        self.credit += amount
        self.send()

    def _ask_again(self, nbytes: int) -> None:
        fab = self.fabric
        fab.schedule(fab.now + self.flow.ack_delay, self.pacer.ask, (self, nbytes))

    def on_loss_timeout(self, lost_bytes: int) -> None:
        self._ask_again(lost_bytes)

    def on_ooo_loss(self, lost_bytes: int) -> None:
        self._ask_again(lost_bytes)

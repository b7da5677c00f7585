"""Packet trimming: a switch port whose buffer is full cuts the packet to its header instead of dropping it.

NDP (Handley et al., SIGCOMM 2017) and Ultra Ethernet: when a data packet does not fit in a port's
buffer, the switch removes its payload and forwards the remaining header (``HEADER`` bytes, the
64 bytes UEC's htsim trims to) in a queue of its own that is served before data (strict priority,
``TRIM_PRIO``). The header reaches the receiver one queueing delay of headers later, the receiver
answers with a NACK (``rud.py``), and the sender resends that packet at once: a loss is known within
about one round trip, instead of after a retransmission timeout, and nothing pauses (no PFC).

``TrimmingPort`` is a ``switch.Port`` whose drop becomes a trim: a packet that would be dropped
(drop-tail, shared buffer) goes to the header queue as a ``HEADER``-byte packet, keeping its ECN
mark; a header that meets a full header queue (``header_buffer`` bytes, the data buffer's size by
default) is dropped, and so is a trimmed header that arrives trimmed at a second full port and finds
no room. Trims are counted and timed like drops (``trims``, ``trim_t``).

Only transports that answer a header with a NACK (UET's, here ``nscc`` and ``rccc``) can use
trimming; a kernel TCP receiver would discard a truncated packet, so a packet of any other transport
is dropped as before (``Congestion`` refuses trimming for them).
Left out: trimming at the sender's NIC, a header queue with its own ECN, trimming to a size that
keeps part of the payload, and the DSCP code point a real switch rewrites on a trimmed packet.
"""
from __future__ import annotations

from collections import deque

from .switch import Port

HEADER = 64            # bytes of a trimmed packet (UEC htsim's default trimsize)
TRIM_PRIO = 7          # the header queue's priority: above data (0)


class TrimmingPort(Port):
    """A port that trims instead of dropping (see the module docstring)."""

    def __init__(self, *args, header_buffer: float | None = None, **kw):
        super().__init__(*args, **kw)
        base = self.buffer if self.buffer is not None else 64 * 1024
        self.header_buffer = float(header_buffer if header_buffer is not None else max(base, 8 * HEADER))
        self.trims = 0
        self.trim_t: list[float] = []
        self.header_drops = 0

    def _drop(self, pkt) -> None:
        if not getattr(pkt.flow, "answers_trims", False):
            return super()._drop(pkt)                   # a receiver that would discard a header: a drop
        headers = self.queues.get(TRIM_PRIO)
        if headers is not None and (len(headers) + 1) * HEADER > self.header_buffer:
            self.header_drops += 1
            return super()._drop(pkt)
        fab = self.fabric
        if not pkt.trimmed:
            pkt.trimmed = True
            pkt.size = HEADER
            self.trims += 1
            self.trim_t.append(fab.now)
        pkt.prio = TRIM_PRIO
        if headers is None:
            headers = self.queues[TRIM_PRIO] = deque()
        headers.append(pkt)
        if self.switch is not None:
            self.switch.used += pkt.size                 # _start gives it back when the header leaves
        self.qbytes += pkt.size
        self.q_t.append(fab.now)
        self.q_bytes.append(self.qbytes)
        if not self.busy:
            self._start()

    def summary(self) -> dict:
        return {**super().summary(), "trims": self.trims, "header_drops": self.header_drops}

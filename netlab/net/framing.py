"""What a wire really carries: each packet's headers on top of its payload, at a set MTU.

netlab's links carry payload at the link's rate (``Link.time``: alpha + n / B). A real link carries
packets, and each packet carries headers; ``Framing`` counts them, and ``netlab.network(...,
framing="tcp")`` (or ``Framing("rocev2", mtu=4200)``) charges them:

    stack   headers above Ethernet, per packet                      payload per packet at IP MTU m
    tcp     IPv4 20 + TCP 20 + timestamps 12 = 52 B (Linux's default) m - 52 (1448 at 1500)
    rocev2  IPv4 20 + UDP 8 + BTH 12 + ICRC 4 = 44 B (RDMA verbs)    the largest InfiniBand MTU (256, 512,
                                                                     1024, 2048, 4096) that fits m - 44:
                                                                     1024 at 1500, 4096 at 4200 or 9000
    uet     64 B in all, Ethernet's included (UEC's htsim models a    m + 14 - 64
            UET packet as its payload plus 64 B)

Every packet also has Ethernet's 14-byte header and, on a physical link, 24 bytes more: the frame
check sequence (4), the preamble and start delimiter (8) and the inter-frame gap (12), which take
wire time like data. ``layer1=False`` leaves those 24 out: that is what Linux's ``tc tbf`` counts
(the frame from its Ethernet header, no FCS), and so what the namespace testbed's shaped links
carry. For kernel TCP, ``acks=True`` also counts the receiver's ACKs, a 66-byte frame (plus the 24)
for every second full segment (Linux's delayed ACK), on the reverse direction: the port model books
them on the receiver's outgoing port (``runtime/clock.py``), where they delay its next send.

A message of n bytes is ceil(n / payload) packets (at least one) of payload and headers:
``wire(n) = n + packets x overhead``; ``Link.time(n) = alpha + wire(n) / B``. The packet fabric
(``netlab.fabric``) sends packets of ``payload`` bytes and ``payload + overhead`` on the wire.
Left out: IPv6 (20 bytes more), VLAN tags (4), RoCE's RETH on the first packet of a write (16),
TCP options other than timestamps, and ACKs of RoCE and UET (coalesced by their NICs).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import validate

ETHERNET = 14                     # bytes: destination, source, EtherType
LAYER1 = 4 + 8 + 12               # FCS, preamble + SFD, inter-frame gap
IB_MTUS = (256, 512, 1024, 2048, 4096)
HEADERS = {"tcp": 20 + 32, "rocev2": 20 + 8 + 12 + 4, "uet": 64 - ETHERNET}
TCP_ACK = ETHERNET + 20 + 32      # an ACK frame: Ethernet, IPv4, TCP with timestamps, no payload
STACKS = tuple(HEADERS)


@dataclass(frozen=True)
class Framing:
    """Headers per packet for `stack` at IP MTU `mtu`; `layer1`: count FCS, preamble and gap; `acks`:
    count TCP's delayed ACKs on the reverse direction (tcp only)."""
    stack: str = "tcp"
    mtu: int = 1500
    layer1: bool = True
    acks: bool = True

    def __post_init__(self):
        validate.choice(self.stack, "framing", STACKS)
        validate.whole(self.mtu, "mtu", 576, 65535, int_only=True)
        if self.stack == "rocev2" and self.mtu - HEADERS["rocev2"] < IB_MTUS[0]:
            raise ValueError(f"mtu: RoCEv2 needs an MTU of at least {IB_MTUS[0] + HEADERS['rocev2']} bytes, "
                             f"got {self.mtu}")
        for name in ("layer1", "acks"):
            validate.flag(getattr(self, name), name)

    @property
    def payload(self) -> int:
        """Payload bytes per packet."""
        room = self.mtu - HEADERS[self.stack]
        if self.stack == "rocev2":
            return max(m for m in IB_MTUS if m <= room)
        if self.stack == "uet":
            return self.mtu + ETHERNET - 64
        return room

    @property
    def overhead(self) -> int:
        """Bytes on the wire per packet besides its payload."""
        return ETHERNET + HEADERS[self.stack] + (LAYER1 if self.layer1 else 0)

    @property
    def ack_frame(self) -> int:
        return TCP_ACK + (LAYER1 if self.layer1 else 0) if self.stack == "tcp" and self.acks else 0

    def packets(self, n: float) -> int:
        return max(1, math.ceil(n / self.payload))

    def wire(self, n: float) -> float:
        """Bytes on the wire for an n-byte message."""
        return n + self.packets(n) * self.overhead

    def ack_bytes(self, n: float) -> float:
        """Bytes of ACKs the receiver of an n-byte message sends back (tcp with acks; else 0)."""
        return math.ceil(self.packets(n) / 2) * self.ack_frame if self.ack_frame else 0.0

    def efficiency(self) -> float:
        """Payload / wire bytes of full packets: the share of the link that carries data."""
        return self.payload / (self.payload + self.overhead)

    def describe(self) -> str:
        extra = "" if self.layer1 else ", without FCS, preamble and gap (as tbf counts)"
        acks = " + delayed ACKs" if self.ack_frame else ""
        return (f"{self.stack} framing at MTU {self.mtu}: {self.payload} B payload + {self.overhead} B headers per "
                f"packet{acks}{extra}")


def parse(spec) -> Framing | None:
    """A Framing from None, a Framing, 'tcp' | 'rocev2' | 'uet', or 'tcp:9000' (stack:MTU)."""
    if spec is None or isinstance(spec, Framing):
        return spec
    validate.instance(spec, "framing", str, f"one of {', '.join(STACKS)} (optionally ':MTU'), or a Framing")
    stack, _, mtu = spec.partition(":")
    try:
        return Framing(stack, int(mtu)) if mtu else Framing(stack)
    except ValueError as exc:
        if "invalid literal" in str(exc):
            raise ValueError(f"mtu: a whole number of bytes after ':', got {mtu!r}") from None
        raise


def ring_allreduce(p: int, n: float, bandwidth: float, latency: float, *, framing: Framing | None) -> float:
    """A ring all-reduce's time on the port model with framing: 2(p-1) steps of n/p bytes, each
    alpha + wire(n/p) / B, and between two steps the ACKs of the step's incoming n/p on each rank's
    outgoing port (the port model books them after the step's send; the last step's delay nothing)."""
    if p <= 1:
        return 0.0
    c = n / p
    if framing is None:
        return 2 * (p - 1) * (latency + c / bandwidth)
    steps = 2 * (p - 1)
    return steps * (latency + framing.wire(c) / bandwidth) + (steps - 1) * framing.ack_bytes(c) / bandwidth

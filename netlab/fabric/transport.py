"""The transports a flow can use, by name: loss-based TCP (Reno, Cubic), DCTCP, DCQCN and "ideal".

Packet-level senders over the fabric of ``engine.py``: ``sender.py`` holds what they share (ACKs,
RTO with RTOmin, go-back-N), ``tcp.py`` the window-based ones, ``rdma.py`` the rate-based ones.
"""
from __future__ import annotations

from .rdma import DCQCN, Ideal, Paced
from .sender import RTO_MAX, RTO_MIN, Sender
from .tcp import DCTCP, Cubic, Reno

__all__ = ["DCQCN", "DCTCP", "RTO_MAX", "RTO_MIN", "TRANSPORTS", "Cubic", "Ideal", "Paced", "Reno", "Sender", "make"]

TRANSPORTS = {"reno": Reno, "cubic": Cubic, "dctcp": DCTCP, "dcqcn": DCQCN, "ideal": Ideal}


def make(name: str, flow, rto_min: float = RTO_MIN, **kw) -> Sender:
    try:
        cls = TRANSPORTS[name]
    except KeyError:
        raise ValueError(f"transport: must be one of {', '.join(TRANSPORTS)}, got {name!r}") from None
    return cls(flow, rto_min, **kw)

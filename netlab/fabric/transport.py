"""The transports a flow can use, by name: loss-based TCP (Reno, Cubic), DCTCP, DCQCN and "ideal", and
Ultra Ethernet's NSCC and RCCC over reliable unordered delivery.

Packet-level senders over the fabric of ``engine.py``: ``sender.py`` holds what they share (ACKs,
RTO with RTOmin, go-back-N), ``tcp.py`` the window-based ones, ``rdma.py`` the rate-based ones,
``rud.py`` the unordered ones (``nscc.py``, ``rccc.py``), whose flows are ``rud.UnorderedFlow``s.
"""
from __future__ import annotations

from .. import validate
from .nscc import NSCC
from .rccc import RCCC
from .rdma import DCQCN, Ideal, Paced
from .sender import RTO_MAX, RTO_MIN, Sender
from .linux_tcp import LINUX
from .tcp import DCTCP, Cubic, Reno

__all__ = ["DCQCN", "DCTCP", "NSCC", "RCCC", "RTO_MAX", "RTO_MIN", "TRANSPORTS", "UNORDERED", "Cubic", "Ideal",
           "Paced", "Reno", "Sender", "flow_class", "make", "takes_window"]

TRANSPORTS = {"reno": Reno, "cubic": Cubic, "dctcp": DCTCP, "dcqcn": DCQCN, "ideal": Ideal, "nscc": NSCC,
              "rccc": RCCC}
UNORDERED = ("nscc", "rccc")          # reliable unordered delivery: they answer trimmed headers with NACKs


def flow_class(name: str):
    """The flow (receiver) a transport needs: an unordered one for NSCC and RCCC, else the engine's."""
    if name in UNORDERED:
        from .rud import UnorderedFlow
        return UnorderedFlow
    from .engine import Flow
    return Flow


def takes_window(name: str) -> bool:
    """Does this transport have a TCP receive window (``max_window``)? Rate-based and UET ones do not."""
    cls = TRANSPORTS[name]
    return not cls.rate_based and name not in UNORDERED


def make(name: str, flow, rto_min: float = RTO_MIN, linux: bool = False, *, tick: float = 0.0, **kw) -> Sender:
    """A sender of transport ``name`` for ``flow``. ``linuxnet.linux``: the Linux kernel's profile of a TCP sender
    (``linux_tcp.LinuxTCP``: RACK, tail loss probes, the kernel's RTO), with its timers kept in ``tick``s
    (s, 1/HZ; 0: exact; without ``linuxnet.linux`` it has no effect). For reno, cubic and dctcp only."""
    cls = TRANSPORTS[validate.choice(name, "transport", TRANSPORTS)]
    validate.number(tick, "tick", 0)
    if linux:
        if cls not in LINUX:
            raise ValueError(f"linux: the kernel's TCP profile is for {', '.join(c.__name__.lower() for c in LINUX)}, "
                             f"not {name!r}")
        return LINUX[cls](flow, rto_min, tick=tick, **kw)
    return cls(flow, rto_min, **kw)

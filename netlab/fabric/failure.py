"""A link that goes down at a chosen time, and the routing that withdraws it after a reroute delay.

``Failure("leaf0->spine1", at=2e-3, reroute=10e-3)``: at 2 ms both directions of the link stop:
the packets queued in its two ports and every packet that reaches them later are lost (counted as
``lost`` on the port and as drops of their flows), with no signal to anyone. Two things can notice:

* **routing**, after ``reroute`` seconds: the fabric's routing protocol converges (a BGP or OSPF
  fabric takes milliseconds to seconds) and withdraws every path through the link, so per-flow ECMP
  rehashes its flows over the paths left and oblivious spraying stops using it (``multipath.py``,
  ``Chooser.reroute``). Until then ECMP keeps hashing onto the dead link;
* **the transport**, end to end: packets that never come back. REPS recycles only the entropies of
  packets that were acknowledged, so a dead path's entropies leave its buffer within a few round
  trips, with no help from routing.

A host's own NIC link (``"h3->leaf0"``, or a plane's, ``plane=``) is also known at once to that
host's NIC, which stops sending on it (``Chooser.pick``); the hosts sending to it learn only end to end.
``recovery`` (``multiswitch.recovery``) measures, from each flow's packets, when the last packet was
sent onto the dead link: the recovery time is measured, not assumed.
Left out: link flapping, partial (gray) failures that drop a fraction of packets, and BFD.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import validate


@dataclass(frozen=True)
class Failure:
    """A link (by its label, either direction: ``topology.link_label``) down from `at` s; routing
    withdraws it `reroute` s later (None: never); `plane` picks the plane of a multi-plane fabric."""
    link: str
    at: float = 0.0
    reroute: float | None = 10e-3
    plane: int = 0

    def __post_init__(self):
        if not isinstance(self.link, str) or "->" not in self.link:
            raise ValueError(f"failure: a link's label such as 'leaf0->spine1', got {self.link!r}")
        object.__setattr__(self, "at", validate.number(self.at, "failure", 0.0, 3600.0))
        if self.reroute is not None:
            object.__setattr__(self, "reroute", validate.number(self.reroute, "reroute", 0.0, 3600.0))
        validate.whole(self.plane, "plane", 0, None, int_only=True)

    def describe(self) -> str:
        where = f" of plane {self.plane}" if self.plane else ""
        then = "never rerouted" if self.reroute is None else f"rerouted after {self.reroute * 1e3:g} ms"
        return f"link {self.link}{where} down at {self.at * 1e3:g} ms, {then}"


def take_down(fabric, ports: list) -> None:
    """Both ports of a link stop now: their queues are lost, and so is everything that reaches them."""
    for port in ports:
        port.failed = True
        port.lost = getattr(port, "lost", 0)
        for q in port.queues.values():
            while q:
                pkt = q.popleft()
                port.qbytes -= pkt.size
                if port.switch is not None:
                    port.switch.used -= pkt.size
                _lose(port, pkt)
        port.q_t.append(fabric.now)
        port.q_bytes.append(port.qbytes)

        def enqueue(pkt, port=port):
            _lose(port, pkt)
        port.enqueue = enqueue                      # (the one packet already on the wire gets through)


def _lose(port, pkt) -> None:
    port.lost += 1
    port.drops += 1
    port.drop_t.append(port.fabric.now)
    pkt.flow.drops += 1

"""A PFC pause storm from one host: its NIC keeps pausing the switch port toward it.

Guo et al., "RDMA over Commodity Ethernet at Scale" (SIGCOMM 2016, its section on the NIC PFC pause
frame storm): a host whose receive pipeline stalls keeps sending PAUSE frames to its switch port.
That port's queue stops draining, so the switch's PFC ingress counters (``switch.Switch``) for every
port that feeds it cross Xoff, and the switch pauses those upstream ports in turn. A pause stops a
priority, not a flow, so those senders stop sending to everyone: their other flows, bound for
healthy hosts, wait too (victims). One switch is enough for it to spread to every host that sends to
the stalled one.

``Storm(rank, fraction, period)``: the NIC of ``rank`` pauses the switch's port toward it for the
first ``fraction`` of every ``period`` (from t = 0) and resumes it for the rest, on every lossless
priority, for as long as any rank runs. Installed by ``cosim.live.Coordinator`` when
``Congestion(storm=...)`` is set (PFC must be on: a pause storm needs lossless priorities).

Left out: the stall's cause (a NIC firmware or driver fault), pause quanta and the NIC watchdog that
production fabrics added to stop a storm (the paper's fix), and a host pausing only some priorities.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import validate


@dataclass(frozen=True)
class Storm:
    """Host `rank` pauses its downlink `fraction` of every `period` seconds."""
    rank: int
    fraction: float
    period: float = 100e-6

    def __post_init__(self):
        validate.whole(self.rank, "storm-rank", 0, None, int_only=True)
        object.__setattr__(self, "fraction", validate.number(self.fraction, "storm-fraction", 0.01, 0.95))
        object.__setattr__(self, "period", validate.number(self.period, "storm-period", 1e-6, 1.0))

    def describe(self) -> str:
        return (f"rank {self.rank}'s NIC pauses its switch port {self.fraction:.0%} of every "
                f"{self.period * 1e6:g} us")

    def install(self, fabric, port, priorities, running) -> None:
        """Pause and resume `port` (the switch's port toward the host) on `priorities` while `running()`."""
        on, off = self.fraction * self.period, (1 - self.fraction) * self.period

        def pause(_=None):
            if not running():
                return
            for prio in priorities:
                port.pause(prio)
            fabric.schedule(fabric.now + on, resume)

        def resume(_=None):
            for prio in priorities:
                port.resume(prio)
            fabric.schedule(fabric.now + off, pause)
        fabric.schedule(0.0, pause)

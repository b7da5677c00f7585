"""What sits between real ranks' NICs on a congestion-aware fabric: ``Congestion``, a switch with a buffer
per port and a transport per flow, given to ``netlab.network(..., congestion=...)``.

This is the user's side: the settings, their checks and their one-line description. The launcher's
coordinator that times every message with them, and each rank's line to it, are ``live.py``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..units import parse_bytes, parse_time


@dataclass(frozen=True)
class Congestion:
    """What sits between the ranks' NICs: a switch with a buffer per port, and a transport per flow.

    transport: 'ideal' (paced at line rate; with no buffer, ECN or PFC it is today's port model),
               'reno', 'cubic', 'dctcp' or 'dcqcn'.
    buffer:    bytes per switch output port (e.g. '64K'); None: unlimited.
    ecn:       ``netlab.fabric.ECN`` marking thresholds; pfc: ``netlab.fabric.PFC``.
    rto_min:   the TCP retransmission timeout's floor (Linux: 200 ms).
    window:    bytes a TCP receiver advertises (caps a window); None: unlimited.
    background: load (0 to 0.95 of the line rate) of another job's traffic into rank
               ``background_to``'s switch port: Poisson arrivals of ``background_size``-byte flows
               from one more host, with this transport, seeded by ``seed`` (as ``scenarios.incast``).
    storm:     ``netlab.fabric.storm.Storm``: one host's NIC pauses the switch port toward it part of
               the time (a PFC pause storm; needs ``pfc``).
    """
    transport: str = "ideal"
    buffer: float | None = None
    ecn: object = None
    pfc: object = None
    rto_min: float = 0.2
    window: float | None = 64 * 1024
    seed: int = 0
    background: float = 0.0
    background_to: int = 0
    background_size: int = 64 * 1024
    storm: object = None
    address: str = ""           # set by the launcher for one run
    authkey: bytes = b""

    def __post_init__(self):
        from .transport import TRANSPORTS
        if self.transport not in TRANSPORTS:
            raise ValueError(f"transport: must be one of {', '.join(TRANSPORTS)}, got {self.transport!r}")
        if self.buffer is not None:
            object.__setattr__(self, "buffer", parse_bytes(self.buffer, "buffer"))
            if self.buffer < 1500 and self.pfc is None:
                raise ValueError(f"buffer: must hold at least one 1500-byte packet, got {self.buffer!r}")
        object.__setattr__(self, "rto_min", parse_time(self.rto_min, "rto_min"))
        if not self.rto_min > 0:
            raise ValueError(f"rto_min: must be greater than zero, got {self.rto_min!r}")
        if self.window is not None and not self.window >= 1500:
            raise ValueError(f"window: must be at least one 1500-byte packet, got {self.window!r}")
        from .. import validate
        object.__setattr__(self, "background", validate.number(self.background, "background", 0, 0.95))
        validate.whole(self.background_to, "background_to", 0, None, int_only=True)
        validate.whole(self.background_size, "background_size", 1, 1 << 30, int_only=True)
        validate.seed(self.seed)
        if self.storm is not None:
            from .storm import Storm
            if not isinstance(self.storm, Storm):
                raise ValueError(f"storm: must be a netlab.fabric.storm.Storm, got {self.storm!r}")
            if self.pfc is None:
                raise ValueError("storm: a PFC pause storm needs pfc= (lossless priorities to pause)")

    @property
    def ports_only(self) -> bool:
        """True when this is today's model: an ideal sender, unlimited buffers, no ECN, PFC or other job."""
        return (self.transport == "ideal" and self.buffer is None and self.ecn is None and self.pfc is None
                and not self.background and self.storm is None)

    def describe(self) -> str:
        if self.ports_only:
            return "ideal transport, unlimited buffers"
        parts = [self.transport, f"buffer {'unlimited' if self.buffer is None else f'{self.buffer:,.0f} B'}"]
        if self.ecn is not None:
            parts.append(f"ECN Kmin {self.ecn.kmin:,.0f} B Kmax {self.ecn.kmax:,.0f} B Pmax {self.ecn.pmax:g}")
        if self.pfc is not None:
            parts.append(f"PFC Xoff {self.pfc.xoff:,.0f} B")
        if self.transport in ("reno", "cubic", "dctcp"):
            parts.append(f"RTOmin {self.rto_min * 1e3:g} ms")
        if self.background:
            parts.append(f"another job at {self.background:.0%} load into rank {self.background_to}")
        if self.storm is not None:
            parts.append(self.storm.describe())
        return ", ".join(parts)

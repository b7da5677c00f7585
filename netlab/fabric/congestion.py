"""What sits between real ranks' NICs on a congestion-aware fabric: ``Congestion``, a switch with a buffer
per port and a transport per flow, given to ``netlab.network(..., congestion=...)``.

This is the user's side: the settings, their checks and their one-line description. The launcher's
coordinator that times every message with them, and each rank's line to it, are ``cosim.live.py``.
"""
from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from .. import validate
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
               from one more host, with this transport, seeded by ``seed`` (as ``fabric.experiments.incast``).
    storm:     ``netlab.fabric.storm.Storm``: one host's NIC pauses the switch port toward it part of
               the time (a PFC pause storm; needs ``pfc``).

    Chapter 9 (Ethernet for AI; ``ethernet.py``, ``multiswitch.py``):
    transport: also 'nscc' (UET's sender-based window, ``nscc.py``) and 'rccc' (UET's receiver
               credits, ``rccc.py``), both over reliable unordered delivery (``rud.py``). They react to
               ECN marks only where ``ecn`` marks (``ethernet.default_ecn`` gives UEC htsim's 20-80 %).
    trim:      switch ports cut a packet that does not fit to its header instead of dropping it
               (``trimming.py``); needs nscc or rccc, a buffer, and no PFC.
    topology:  None: chapter 6's one switch; 'star', 'spineleaf:LEAVES:SPINES:RATIO', 'fattree:K' (at the
               network's NIC rate and alpha) or a ``netlab.net`` Topology: the packet fabric's switches.
    placement: 'ordered' (rank r on host r) or 'shuffled' (hosts in a seeded random order).
    multipath: 'ecmp' (one hashed path per pair, chapter 5's), 'spray' (round robin over every
               shortest path) or 'reps' (recycled entropies), ``multipath.py``.
    planes:    N separate copies of the fabric at 1/N of the rate each, a NIC port per plane.
    failure:   ``netlab.fabric.failure.Failure``: a link down at a time, rerouted after a delay.
    credit_rate: rccc: the receiver's credits as a fraction of its link rate (default 1).
    unscheduled: rccc: bytes a sender may send before its first credit (default 0).
    """
    transport: str = "ideal"
    _: KW_ONLY                  # every setting but the transport by name
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
    trim: bool = False
    topology: object = None
    placement: str = "ordered"
    multipath: str = "ecmp"
    planes: int = 1
    failure: object = None
    credit_rate: float | None = None
    unscheduled: float = 0.0
    # Not a field: a spec as the user writes it is on no launcher's line. The copy the ranks receive
    # for one run (``cosim.live.Launched``) carries the coordinator's address and key.
    address = ""

    def __post_init__(self):
        from .transport import TRANSPORTS
        validate.choice(self.transport, "transport", TRANSPORTS)
        if self.buffer is not None:
            object.__setattr__(self, "buffer", parse_bytes(self.buffer, "buffer"))
            if self.buffer < 1500 and self.pfc is None:
                raise ValueError(f"buffer: must hold at least one 1500-byte packet, got {self.buffer!r}")
        object.__setattr__(self, "rto_min", parse_time(self.rto_min, "rto_min"))
        validate.positive(self.rto_min, "rto_min")
        if self.window is not None:
            validate.number(self.window, "window", 1500)       # at least one 1500-byte packet
        object.__setattr__(self, "background", validate.number(self.background, "background", 0, 0.95))
        validate.whole(self.background_to, "background_to", 0, None, int_only=True)
        validate.whole(self.background_size, "background_size", 1, 1 << 30, int_only=True)
        validate.seed(self.seed)
        if self.storm is not None:
            from .storm import Storm
            validate.instance(self.storm, "storm", Storm, "a netlab.fabric.storm.Storm")
            if self.pfc is None:
                raise ValueError("storm: a PFC pause storm needs pfc= (lossless priorities to pause)")
        self._check_ethernet()

    def _check_ethernet(self) -> None:
        """Chapter 9's options (``check_options`` says what is refused and why)."""
        from .failure import Failure
        validate.flag(self.trim, "trim")
        check_options(self.transport, self.trim, self.pfc, self.multipath, buffer=self.buffer, failure=self.failure,
                      planes=self.planes, credit_rate=self.credit_rate)
        validate.choice(self.placement, "placement", ("ordered", "shuffled"))
        if self.failure is not None:
            validate.instance(self.failure, "failure", Failure, "a netlab.fabric.failure.Failure")
        if self.topology is not None:
            from ..net.topology import Topology
            validate.instance(self.topology, "topology", (str, Topology),
                              "'star', 'spineleaf:L:S:R', 'fattree:K' or a Topology")
            if isinstance(self.topology, str) and self.topology.split(":")[0].replace("-", "").replace("_", "") \
                    .lower() not in ("star", "spineleaf", "fattree"):
                raise ValueError(f"topology: the packet fabric takes star, spineleaf:L:S:R or fattree:K, "
                                 f"got {self.topology!r}")
        object.__setattr__(self, "unscheduled", validate.number(self.unscheduled, "unscheduled", 0, 1 << 40))
        if self.unscheduled and self.transport != "rccc":
            raise ValueError(f"unscheduled: bytes sent before the first credit are RCCC's, not {self.transport}'s")
        if self.failure is not None and self.topology is None and self.planes == 1:
            raise ValueError("failure: give a topology (or planes) whose link can fail; the one-switch star "
                             "of chapter 6 has no other path")
        if self.switched and (self.background or self.storm is not None):
            raise ValueError("background: another job's traffic and pause storms run on chapter 6's one switch "
                             "only (no topology, planes or trimming)")

    @property
    def switched(self) -> bool:
        """True when the fabric is chapter 9's (a topology, planes or trimming), not chapter 6's one switch."""
        return self.topology is not None or self.planes > 1 or self.trim

    @property
    def ports_only(self) -> bool:
        """True when this is today's model: an ideal sender, unlimited buffers, no ECN, PFC or other job."""
        return (self.transport == "ideal" and self.buffer is None and self.ecn is None and self.pfc is None
                and not self.background and self.storm is None and not self.switched and self.failure is None)

    def describe(self) -> str:
        if self.ports_only:
            return "ideal transport, unlimited buffers"
        parts = [self.transport, f"buffer {'unlimited' if self.buffer is None else f'{self.buffer:,.0f} B'}"]
        if isinstance(self.ecn, str):
            parts.append(f"ECN: the transport's {self.ecn} marking")
        elif self.ecn is not None:
            parts.append(f"ECN Kmin {self.ecn.kmin:,.0f} B Kmax {self.ecn.kmax:,.0f} B Pmax {self.ecn.pmax:g}")
        if self.pfc is not None:
            parts.append(f"PFC Xoff {self.pfc.xoff:,.0f} B")
        if self.transport in ("reno", "cubic", "dctcp", "nscc", "rccc"):
            parts.append(f"RTOmin {self.rto_min * 1e3:g} ms")
        if self.background:
            parts.append(f"another job at {self.background:.0%} load into rank {self.background_to}")
        if self.storm is not None:
            parts.append(self.storm.describe())
        if self.trim:
            parts.append("trimming")
        if self.topology is not None:
            name = self.topology if isinstance(self.topology, str) else self.topology.name
            parts.append(f"topology {name} ({self.placement} ranks), {self.multipath}")
        if self.planes > 1:
            parts.append(f"{self.planes} planes")
        if self.failure is not None:
            parts.append(self.failure.describe())
        if self.transport == "rccc":
            parts.append(f"credits at {self.credit_rate or 1:g} x the receiver's link")
        return ", ".join(parts)


def check_options(transport: str, trim: bool, pfc, multipath: str, *, buffer, failure=None, planes: int = 1,
                  credit_rate=None) -> None:
    """The combinations chapter 9's fabric (``ethernet.py``) refuses, each with one line naming the parameter."""
    from . import multipath as mp
    from . import transport as tp
    validate.choice(transport, "transport", tuple(tp.TRANSPORTS))
    validate.choice(multipath, "multipath", mp.SCHEMES)
    validate.whole(planes, "planes", 1, 16, int_only=True)
    if trim and pfc is not None:
        raise ValueError("trim: trimming and PFC are two answers to a full buffer; choose one (trim cuts "
                         "the packet, PFC pauses the sender)")
    if trim and transport not in tp.UNORDERED:
        raise ValueError(f"trim: a trimmed header needs a receiver that answers it with a NACK (nscc or rccc); "
                         f"{transport}'s receiver would discard it")
    if trim and buffer is None:
        raise ValueError("trim: trimming needs a finite buffer (with an unlimited one nothing is ever cut)")
    if pfc is not None and (multipath != "ecmp" or failure is not None or planes > 1):
        raise ValueError("pfc: PFC is modelled on single-path flows only (per-flow ECMP, one plane, no failure)")
    if credit_rate is not None:
        if transport != "rccc":
            raise ValueError(f"credit-rate: receiver credits are RCCC's (transport rccc), not {transport}'s")
        validate.number(credit_rate, "credit-rate", 1e-3, 1.0)     # a fraction of the receiver's link

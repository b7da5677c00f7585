"""netlab.fabric: switches with buffers, ECN and PFC, and per-flow transports (chapter 6).

Two models, one vocabulary:
  * a packet-level discrete-event fabric (``engine``, ``switch``, ``transport``, ``experiments``):
    Reno, Cubic, DCTCP, DCQCN and an ideal sender over drop-tail / ECN / PFC ports; every drop,
    mark, pause, window and rate is recorded;
  * DCQCN's fluid model (``fluid``, Zhu et al. CoNEXT'16) for its stability at 40 Gbit/s;
and the closed forms they are checked against (``theory``). Both return a ``net.result.SimResult``, as
chapter 5's flow-level simulator does (its ``detail``: ``PacketDetail``, ``fluid.FluidDetail``).
"""
from .engine import Fabric, Flow
from .congestion import Congestion
from .experiments import Incast, PacketDetail, Victim, incast, jitter, long_flows, rates, victim
from .switch import ECN, MTU, PFC, Port, Switch, pfc_headroom
from .transport import RTO_MIN, TRANSPORTS

__all__ = ["ECN", "MTU", "PFC", "RTO_MIN", "TRANSPORTS", "Congestion", "Fabric", "Flow", "Incast", "PacketDetail",
           "Port", "Switch", "Victim", "incast", "jitter", "long_flows", "pfc_headroom", "rates", "victim"]

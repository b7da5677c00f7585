"""The nominal setting every scenario states before its culprit changes it, shared by the plans
(``__init__``) and the runs (``runs.py``): the ranks, the nominal network, the model's shape, and the
pfc_storm scenario's switch."""
from __future__ import annotations

RANKS = 4                         # all-reduce ranks
PS_LAYOUT = (4, 3)                # parameter-server runs: workers, servers
NETWORK = ("10Gbit/s", "50us")    # the nominal NIC every scenario states (chapter 7's)
SHAPE = dict(width=128, layers=8, batch=64)
BIG_BUCKET = 10**12               # one bucket: the gradient all-reduced whole
STORM_BUFFER = 128 * 1024         # pfc_storm: bytes per switch port, Xoff = buffer - PFC headroom
STORM_PERIOD = 200e-6             # pfc_storm: the stalled NIC pauses part of every period (s)


def storm_network(storm=None):
    """The pfc_storm scenario's network: the stated NIC through one switch with PFC, ideal transport;
    `storm` (a ``netlab.fabric.storm.Storm``) puts the stalled host in, None leaves the fabric healthy."""
    from ...fabric.congestion import Congestion
    from ...fabric.switch import PFC, pfc_headroom
    from ...net.network import network
    nic = network(*NETWORK).nic
    pfc = PFC(STORM_BUFFER - pfc_headroom(nic.bandwidth, nic.latency / 2))
    return network(*NETWORK, congestion=Congestion("ideal", buffer=STORM_BUFFER, pfc=pfc, storm=storm))

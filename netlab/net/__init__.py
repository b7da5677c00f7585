"""The network model: links, presets, ports (and, in later chapters, topologies), and what a simulated run of it
returns (``result.SimResult``)."""
from .network import Link, Network, network
from .presets import DEVICES, LINKS, Device, device

__all__ = ["Link", "Network", "network", "Device", "device", "LINKS", "DEVICES"]

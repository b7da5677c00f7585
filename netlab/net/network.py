"""The emulated network that real ranks run on: links with a latency and a bandwidth.

Model (DESIGN.md, "Time"). Each rank has its own full-duplex port on every link class it uses:
a NIC for traffic between hosts and, when ranks are grouped on hosts, an intra-host port
(NVLink- or PCIe-like) for traffic inside a host. A message of n bytes between ranks a and b on a
link with latency alpha and bandwidth B holds a's outgoing port and b's incoming port for
``alpha + n / B`` seconds (the Hockney cost of one message). A port carries one message at a time
in each direction, so messages that share a port share its bandwidth: k senders into one
receiver finish after k * (alpha + n/B).

Left out on purpose: the fabric between the ports (switches, oversubscribed spines, ECMP), which
is the flow simulator's job (``netlab.sim``), and backpressure (a sender does not see that the
receiver's port is busy).
"""
from __future__ import annotations

import contextlib
import contextvars
import sys
from dataclasses import dataclass

from .. import validate
from ..units import fmt_bandwidth, fmt_time, parse_bandwidth, parse_time
from .presets import LINKS


@dataclass(frozen=True)
class Link:
    """One link class: per-direction bandwidth in bytes/s, one-way latency (alpha) in seconds.

    ``framing`` (``net/framing.py``): count each packet's headers on the wire, and TCP's ACKs on the
    reverse direction; None (the default) carries payload only."""
    bandwidth: float
    latency: float = 0.0
    name: str = ""
    framing: object = None

    def __post_init__(self):
        validate.positive(self.bandwidth, "bandwidth")
        validate.number(self.latency, "latency", 0)
        if self.framing is not None:
            from .framing import Framing
            validate.instance(self.framing, "framing", Framing, "a netlab.net.framing.Framing")

    @classmethod
    def of(cls, bandwidth=None, latency=None, preset: str | None = None,
           names: tuple[str, str] = ("bandwidth", "latency")) -> "Link":
        """Build a link from human units and/or a preset; explicit values override the preset.
        `names`: what errors call the two values (e.g. intra_bandwidth, intra_latency)."""
        name = ""
        if preset is not None:
            validate.choice(preset, "preset", LINKS)
            bw, lat, _ = LINKS[preset]
            bandwidth = bw if bandwidth is None else bandwidth
            latency = lat if latency is None else latency
            name = preset
        if bandwidth is None:
            raise ValueError("bandwidth: required (e.g. '10Gbit/s') unless a preset is given")
        return cls(parse_bandwidth(bandwidth, names[0]),
                   parse_time(latency if latency is not None else 0, names[1]), name)

    def time(self, nbytes: float) -> float:
        """Seconds one message of nbytes holds a port: alpha + n / B (with framing: its bytes on the wire)."""
        if self.framing is not None:
            return self.latency + self.framing.wire(nbytes) / self.bandwidth
        return self.latency + nbytes / self.bandwidth

    def ack_time(self, nbytes: float) -> float:
        """Seconds the receiver's ACKs of an nbytes message hold its outgoing port (0 without TCP framing)."""
        return self.framing.ack_bytes(nbytes) / self.bandwidth if self.framing is not None else 0.0

    def describe(self) -> str:
        label = f"{self.name}: " if self.name else ""
        extra = f", {self.framing.describe()}" if self.framing is not None else ""
        return f"{label}{fmt_bandwidth(self.bandwidth)}, latency {fmt_time(self.latency)}{extra}"


@dataclass(frozen=True)
class Network:
    """Ranks on hosts: rank r lives on host r // ranks_per_host.

    nic:   the link between hosts (each rank has its own NIC port, rail style).
    intra: the link between ranks on one host; required when ranks_per_host > 1.
    gamma: seconds per byte of reduction arithmetic (the gamma of alpha-beta-gamma); 0 by default.
    congestion: a switch with buffers and a transport between the NICs (``netlab.fabric.Congestion``);
           None: each message holds its two ports for alpha + n/B, nothing queues or drops.
    """
    nic: Link
    ranks_per_host: int = 1
    intra: Link | None = None
    gamma: float = 0.0
    congestion: object = None

    def __post_init__(self):
        validate.whole(self.ranks_per_host, "ranks_per_host", 1, int_only=True)
        if self.ranks_per_host > 1 and self.intra is None:
            raise ValueError("intra: an intra-host link is required when ranks_per_host > 1")
        validate.number(self.gamma, "gamma", 0)
        if self.congestion is not None:
            if _is_instance(self.congestion, "netlab.cosim.flows", "FlowFabric"):   # chapter 5's topologies, flow by flow
                self.congestion.check(self)
            elif not _is_congestion(self.congestion):
                raise ValueError(f"congestion: a netlab.fabric.Congestion, got {self.congestion!r}")
            elif self.ranks_per_host != 1:
                raise ValueError("congestion: one rank per host only (the switch fabric has no intra-host links)")

    def host(self, rank: int) -> int:
        return rank // self.ranks_per_host

    def link_class(self, a: int, b: int) -> str:
        """'intra' for two ranks on one host, 'nic' otherwise."""
        return "intra" if self.ranks_per_host > 1 and self.host(a) == self.host(b) else "nic"

    def link(self, a: int, b: int) -> Link:
        return self.intra if self.link_class(a, b) == "intra" else self.nic

    def describe(self) -> str:
        text = f"NIC {self.nic.describe()}"
        if self.ranks_per_host > 1:
            text += f"; {self.ranks_per_host} ranks per host over {self.intra.describe()}"
        if self.gamma:
            text += f"; reduction {self.gamma * 1e9:g} ns/byte"
        if self.congestion is not None:
            text += f"; switch: {self.congestion.describe()}"
        return text + " (GB = 1e9 B, Gbit/s = 1e9 bit/s)"


_congestion = contextvars.ContextVar("netlab_congestion", default=None)


def _is_congestion(spec) -> bool:
    """Whether `spec` is a ``netlab.fabric.Congestion``, without importing the fabric (it sits above
    this layer and imports it): an instance exists only once its module has been imported, so when
    ``sys.modules`` has no such module, nothing is one."""
    return _is_instance(spec, "netlab.fabric.congestion", "Congestion")


def _is_instance(obj, module_name: str, cls: str) -> bool:
    """isinstance(obj, module_name.cls) without importing the module: no instance exists before it is imported."""
    module = sys.modules.get(module_name)
    return module is not None and isinstance(obj, getattr(module, cls))


@contextlib.contextmanager
def congestion(spec):
    """Every network built inside the block gets this switch fabric, so any experiment takes it unchanged:

        with netlab.congestion(Congestion("reno", buffer="64K")):
            measure_step(ranks=8, bandwidth="1Gbit/s")
    """
    if spec is not None and not _is_congestion(spec):
        raise ValueError(f"congestion: a netlab.fabric.Congestion or None, got {spec!r}")
    token = _congestion.set(spec)
    try:
        yield spec
    finally:
        _congestion.reset(token)


def intra_link(bandwidth=None, latency=None, preset: str | None = None) -> Link:
    """The link between accelerators inside a host from human units and/or a preset (NVLink3 unless a
    bandwidth or another preset is given); errors name intra_bandwidth and intra_latency."""
    if bandwidth is None and preset is None:
        preset = "NVLink3"
    return Link.of(bandwidth, latency, preset, names=("intra_bandwidth", "intra_latency"))


def network(bandwidth=None, latency=None, preset: str | None = None, *, ranks_per_host: int = 1,
            intra: Link | str | None = None, gamma: float = 0.0, congestion=None, framing=None) -> Network:
    """Network from human units: ``network('10Gbit/s', '5us')`` or ``network(preset='100GbE')``.

    ``congestion=Congestion('reno', buffer='64K')`` (``netlab.fabric.Congestion``) puts a switch with
    buffers between the ranks and times every message with that transport (real ranks only).
    ``framing='tcp'`` (or 'rocev2', 'uet', 'tcp:9000', a ``netlab.net.framing.Framing``) counts each
    packet's headers on the NIC links, at that MTU (``net/framing.py``).
    ``intra``: the link between a host's ranks, a preset name ('NVLink3') or a ``Link`` (``intra_link``
    builds one from units); by default NVLink3 when ``ranks_per_host`` > 1.
    """
    nic = Link.of(bandwidth, latency, preset)
    if framing is not None:
        import dataclasses

        from .framing import parse
        nic = dataclasses.replace(nic, framing=parse(framing))
    if isinstance(intra, str):
        intra = intra_link(preset=intra)
    elif intra is None and ranks_per_host > 1:
        intra = intra_link()
    elif intra is not None:
        validate.instance(intra, "intra", Link, "a link preset name (e.g. 'NVLink3') or a netlab Link")
    return Network(nic=nic, ranks_per_host=ranks_per_host, intra=intra, gamma=gamma,
                   congestion=congestion if congestion is not None else _congestion.get())

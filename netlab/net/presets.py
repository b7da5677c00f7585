"""Named links and devices, each with the public source of its figures.

Links carry a per-direction bandwidth (every link here is full duplex) and a one-way
small-message latency (alpha). Bandwidths are the standards' or datasheets' line rates, per
direction. Latencies are representative end-to-end figures for one small message through the
usual software stack, not vendor guarantees; they set the order of magnitude a student reasons
with, and every preset can be overridden (``Link(bandwidth=..., latency=...)``).

Devices carry a dense peak FLOP/s; compute time in netlab is FLOPs / (peak * efficiency).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import validate
# name: (bandwidth per direction, alpha, source)
LINKS: dict[str, tuple[str, str, str]] = {
    "1GbE": ("1Gbit/s", "50us", "IEEE 802.3ab 1000BASE-T; alpha: kernel TCP one-way, typical"),
    "10GbE": ("10Gbit/s", "20us", "IEEE 802.3ae; alpha: kernel TCP one-way, typical"),
    "25GbE": ("25Gbit/s", "10us", "IEEE 802.3by; alpha: kernel TCP one-way, typical"),
    "100GbE": ("100Gbit/s", "5us", "IEEE 802.3ba; alpha: RoCEv2 verbs one-way, typical"),
    "400GbE": ("400Gbit/s", "5us", "IEEE 802.3bs; alpha: RoCEv2 verbs one-way, typical"),
    "IB-EDR": ("100Gbit/s", "1.5us", "InfiniBand EDR 4x (IBTA); NVIDIA ConnectX-5 datasheet"),
    "IB-HDR": ("200Gbit/s", "1.5us", "InfiniBand HDR 4x (IBTA); NVIDIA ConnectX-6 datasheet"),
    "IB-NDR": ("400Gbit/s", "1.5us", "InfiniBand NDR 4x (IBTA); NVIDIA ConnectX-7 datasheet"),
    "PCIe3x16": ("15.75GB/s", "1us", "PCI-SIG PCIe 3.0: 8 GT/s x 16 lanes, 128b/130b encoding"),
    "PCIe4x16": ("31.5GB/s", "1us", "PCI-SIG PCIe 4.0: 16 GT/s x 16 lanes, 128b/130b encoding"),
    "PCIe5x16": ("63GB/s", "1us", "PCI-SIG PCIe 5.0: 32 GT/s x 16 lanes, 128b/130b encoding"),
    "NVLink3": ("300GB/s", "2us", "NVIDIA A100 datasheet: 600 GB/s total NVLink, i.e. 300 GB/s per direction"),
    "NVLink4": ("450GB/s", "2us", "NVIDIA H100 SXM datasheet: 900 GB/s total NVLink, i.e. 450 GB/s per direction"),
}

# name: (dense peak FLOP/s, source)
DEVICES: dict[str, tuple[float, str]] = {
    "cpu-core": (96e9, "one x86 core, 3 GHz x 2 FMA units x 8 fp32 lanes x 2 FLOP (AVX2)"),
    "T4-fp32": (8.1e12, "NVIDIA T4 datasheet, fp32"),
    "T4-fp16": (65e12, "NVIDIA T4 datasheet, fp16 tensor cores"),
    "V100-fp32": (15.7e12, "NVIDIA V100 SXM2 datasheet, fp32"),
    "V100-fp16": (125e12, "NVIDIA V100 SXM2 datasheet, fp16 tensor cores"),
    "A100-fp32": (19.5e12, "NVIDIA A100 datasheet, fp32"),
    "A100-bf16": (312e12, "NVIDIA A100 datasheet, bf16 tensor cores, dense"),
    "H100-fp32": (67e12, "NVIDIA H100 SXM datasheet, fp32"),
    "H100-bf16": (989e12, "NVIDIA H100 SXM datasheet, bf16 tensor cores, dense"),
}


@dataclass(frozen=True)
class Device:
    """A compute device: time = FLOPs / (peak_flops * efficiency)."""
    name: str
    peak_flops: float
    efficiency: float = 0.5   # model FLOPs utilisation; 0.4-0.55 is what large trainings report

    def __post_init__(self):
        validate.positive(self.peak_flops, "peak_flops")
        validate.fraction(self.efficiency, "efficiency")

    def seconds(self, flops: float) -> float:
        return flops / (self.peak_flops * self.efficiency)


def device(name: str, efficiency: float = 0.5) -> Device:
    """A named device preset, e.g. device('A100-bf16', efficiency=0.4)."""
    validate.choice(name, "device", DEVICES)
    return Device(name, DEVICES[name][0], efficiency)

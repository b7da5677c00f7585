"""BytePS's closed forms for one push/pull (or all-reduce) of an M-byte model: what the runs are checked against.

From Jiang et al., "A Unified Architecture for Accelerating Distributed DNN Training in
Heterogeneous GPU/CPU Clusters" (BytePS, OSDI 2020), Table 1 and section 3.1 (also
bytedance/byteps docs/rationale.md). p workers, k servers, full-duplex NICs of B bytes/s each way:

    all-reduce (ring)            2(p-1)/p * M / B
    PS, non-colocated            max(M/B, p*M/(k*B))            push and pull overlapped
    PS, colocated (k = p)        2(p-1)/p * M / B               = all-reduce's traffic
    BytePS (k CPU servers)       2p(p-1) M / ((p^2 + kp - 2k) B)

What is overlapped. Each worker's NIC sends M (pushes) and receives M (pulls): M/B each way, both
directions at once. Each server's NIC receives p*M/k and sends p*M/k. The max() assumes a server
returns part of the model while other parts are still arriving -- true when the model travels in
many chunks (BytePS's partitions), since a chunk is answered as soon as all p pushes of it are in.
With one message per server (ps-lite ranges) nothing overlaps: 2 * max(M/B, p*M/(k*B)). One server
(k = 1) costs p*M/B at best: it grows linearly with the number of workers, the PS hotspot.

``ps_time`` is the bandwidth term only, as the table: no alpha per message and no pipeline fill
(the last chunk's answer leaves after the last chunk arrives), which the emulation charges on top
and the runs' checks allow for. Unbalanced shards: the hottest server's share h of the model
replaces 1/k.
"""
from __future__ import annotations

from ..collectives import cost
from ..net.network import Link


def allreduce_time(p: int, model_bytes: float, bandwidth: float) -> float:
    """The ring's bandwidth term (no latency), from the project's cost model."""
    return cost.ring_allreduce(p, model_bytes, Link(bandwidth, 0.0))


def ps_time(p: int, k: int, model_bytes: float, bandwidth: float, *, overlapped: bool = True,
            hottest_share: float | None = None) -> float:
    """Non-colocated PS: max(M/B, p*M/(k*B)); without overlap twice that. `hottest_share` defaults to 1/k."""
    share = 1.0 / k if hottest_share is None else hottest_share
    t = max(model_bytes / bandwidth, p * share * model_bytes / bandwidth)
    return t if overlapped else 2 * t


def colocated_time(p: int, model_bytes: float, bandwidth: float) -> float:
    return allreduce_time(p, model_bytes, bandwidth)


def byteps_time(p: int, k: int, model_bytes: float, bandwidth: float) -> float:
    """BytePS's optimum with k extra CPU summation servers beside p workers (k = 0: all-reduce)."""
    return 2 * p * (p - 1) * model_bytes / ((p * p + k * p - 2 * k) * bandwidth)

"""Closed forms the fabric is checked against (sources in each docstring; sizes in bytes, times in s).

* DCTCP's steady state for N synchronized long flows (Alizadeh et al. SIGCOMM'10, section 3.3, as
  encoded in Stanford CS244's theoretical_queue.py): W* = (C RTT + K)/N, alpha = sqrt(2/W*),
  amplitude A = 1/2 sqrt(2 N (C RTT + K)), period T_C = A/N RTTs, Q_max = K + N, Q_min = K + N - A,
  and the guideline K > C RTT / 7 (from Q_min > 0), all in packets.
* Incast with at least one retransmission timeout per round (Chen et al. WREN'09's model with one
  RTO event): goodput <= N D / (N D / B + RTOmin).
* A lossless (PFC) incast: the port is never idle, so a round takes N D / B.
* Loss-based TCP's throughput against its loss rate p (Mathis, Semke, Mahdavi, Ott, CCR 1997):
  MSS / RTT x C / sqrt(p), C = sqrt(3/2) for Reno's sawtooth with one loss every 1/p packets, every
  packet ACKed, no timeouts and no window limit.
"""
from __future__ import annotations

import math

from .switch import MTU


def dctcp_sawtooth(flows: int, bandwidth: float, rtt: float, k: float, *, packet: int = MTU) -> dict:
    """DCTCP's queue sawtooth; ``bandwidth`` in bytes/s, ``k`` in bytes; results in packets and RTTs."""
    bdp = bandwidth * rtt / packet                       # C x RTT, packets
    kp = k / packet
    w = (bdp + kp) / flows
    amplitude = 0.5 * math.sqrt(2 * flows * (bdp + kp))
    return {"window": w, "alpha": math.sqrt(2 / w), "amplitude": amplitude, "period_rtts": amplitude / flows,
            "q_max": kp + flows, "q_min": kp + flows - amplitude, "k_min": bdp / 7}


def incast_goodput_one_timeout(senders: int, block: float, bandwidth: float, rto_min: float) -> float:
    """Bytes/s when every round waits out one RTOmin besides sending N x block at line rate."""
    total = senders * block
    return total / (total / bandwidth + rto_min)


def lossless_round(senders: int, block: float, bandwidth: float) -> float:
    """Seconds for N x block through one port that never idles and never drops."""
    return senders * block / bandwidth


def mathis_throughput(mss: float, rtt: float, loss: float, c: float = math.sqrt(1.5)) -> float:
    """Bytes/s of one Reno flow that loses a fraction ``loss`` of its packets (Mathis et al. 1997)."""
    if not 0 < loss < 1:
        raise ValueError(f"loss: must be a probability in (0, 1), got {loss!r}")
    return mss / rtt * c / math.sqrt(loss)

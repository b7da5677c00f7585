"""Why all-to-all needs bisection bandwidth and a ring all-reduce does not: one fat-tree, two ratios.

    from netlab.sim import alltoall
    rows = alltoall.bisection(k=8, ratios=(1, 4))        # 128 hosts: ring all-reduce vs all-to-all
    alltoall.crossing_share("alltoall", k=8), alltoall.crossing_share("ring", k=8)

A k-ary fat-tree has h = k/2 hosts under each edge switch. Oversubscribed R : 1 at the edge
(``fabrics.oversubscribed_fat_tree``), the h hosts share h B / R of uplink. What each pattern sends
up through that uplink decides whether it notices:

* **ring all-reduce**, ranks in topology order: in every step each rank sends n/p to the next rank,
  which is under the same edge switch for all but one of the edge's h ranks. One flow per edge
  leaves it, and with its bytes spread over the h uplinks (``spray``) it gets min(B, h B / R):
  nothing changes until R > h. The formula is the ring's with B * min(1, h/R).
* **all-to-all** (``collectives.alltoall``): every rank sends n/p to every other rank, (p - h)/p of
  its bytes to ranks under other edge switches. All at once (``concurrent``) the edge's uplinks
  carry h (p - h)/p n in h B / R, so with spraying

      t = (p-1) alpha + n/B * max((p-1)/p, R (p-h)/p)

  the NIC's bound at 1 : 1, and R times the crossing bytes' bound above: at R = 4 close to 4x
  slower. ``pairwise`` rounds are permutations: round s takes alpha + (n/p)/B * max(1, R c_s / h),
  where c_s is the most ranks of one edge whose partner r+s is under another edge.

Every number comes from the flow simulator (``netlab.sim``: the lab's own schedules, max-min
sharing, ``spray`` routing so that ECMP hash collisions do not blur the comparison -- chapter 5 shows
them); the formulas above are printed beside it as predictions, and a test holds the two within
1 % and checks the per-link bytes of a k = 4 case against a count by hand.

Left out: ECMP's collisions (``routing="ecmp"`` adds them), real MoE traffic's uneven splits and
hot experts, and hierarchical all-to-all that gathers inside a host first.
"""
from __future__ import annotations

import functools

import numpy as np

from ..collectives import cost
from .. import validate
from ..collectives import counts
from ..net import fabrics
from ..net.network import Link
from . import Simulator, simulate

PATTERNS = {"ring all-reduce": ("allreduce", "ring"), "all-to-all": ("alltoall", "concurrent"),
            "all-to-all, pairwise": ("alltoall", "pairwise")}


def crossing_share(pattern: str, k: int) -> float:
    """Share of a rank's bytes that leave its edge switch: the ring's 1/h of the ranks send one flow
    out of h; every all-to-all rank sends (p - h)/p of its buffer out."""
    h, p = k // 2, k ** 3 // 4
    if pattern.startswith("ring"):
        return 1 / h
    return (p - h) / p


def _edge_of(k: int, p: int) -> np.ndarray:
    return np.arange(p) // (k // 2)


def predicted(pattern: str, k: int, ratio: float, nbytes: int, *, nic: Link) -> float:
    """Seconds the closed form gives for `pattern` (a key of ``PATTERNS``) on all k^3/4 hosts, sprayed."""
    collective, algo = PATTERNS[pattern]
    h, p = k // 2, k ** 3 // 4
    _, _, s = counts(collective, nbytes, p)
    B, a = nic.bandwidth, nic.latency
    if collective == "allreduce":
        return cost.ring_allreduce(p, s, Link(B * min(1.0, h / ratio), a))
    if algo == "concurrent":
        return (p - 1) * a + s / B * max((p - 1) / p, ratio * (p - h) / p)
    edge, m = _edge_of(k, p), s / p
    total = 0.0
    for shift in range(1, p):
        out = edge != edge[(np.arange(p) + shift) % p]              # ranks whose partner is under another edge
        c = np.bincount(edge, out, minlength=p // h).max()
        total += a + m / B * max(1.0, ratio * c / h)
    return total


@functools.lru_cache(maxsize=16)
def _run(k: int, ratio: float, pattern: str, nbytes: int, nic, routing: str):
    """One simulation, kept: a prediction question and the chapter's next cell ask for the same runs."""
    topo = fabrics.oversubscribed_fat_tree(k, ratio, nic)
    collective, algo = PATTERNS[pattern]
    return topo, simulate(Simulator(topo, routing=routing), collective, algo, nbytes)


def bisection(k: int = 8, ratios=(1, 4), nbytes: int = 16 << 20, patterns=("ring all-reduce", "all-to-all"),
              *, nic="100GbE", routing: str = "spray") -> list[dict]:
    """One row per (pattern, ratio): simulated time, busbw, its formula, the bottleneck, the slowdown
    against the first ratio, and the share of each rank's bytes that crosses its edge's uplinks."""
    validate.whole(nbytes, "size", 1, int_only=True)
    rows, base = [], {}
    for ratio in ratios:
        for pattern in patterns:
            validate.choice(pattern, "pattern", PATTERNS)
            topo, r = _run(k, float(ratio), pattern=pattern, nbytes=int(nbytes), nic=nic, routing=routing)
            base.setdefault(pattern, r.time_s)
            rows.append({"pattern": pattern, "ratio": ratio, "ranks": r.ranks, "bytes": r.nbytes,
                         "time_s": r.time_s, "busbw_GBps": r.busbw_GBps,
                         "formula_s": predicted(pattern, k, ratio, nbytes, nic=topo.nic),
                         "slowdown": r.time_s / base[pattern], "bottleneck": r.bottleneck_label,
                         "bottleneck_kind": topo.kind_of(r.bottleneck_link),
                         "crossing_share": crossing_share(pattern, k), "result": r})
    return rows

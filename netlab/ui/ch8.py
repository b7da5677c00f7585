"""Chapter 8's panel: which traffic feels an oversubscribed fabric, and what placement does about it.

One spine-leaf (4 leaves of 8 host ports, 2 spines; ``fabrics.spine_leaf``) whose leaf uplinks are
oversubscribed ratio : 1 (带宽收敛比), a job of `hosts` ranks placed packed (as few leaves as
possible, topology-aware: 拓扑感知) or scattered (round-robin over the leaves), and two traffic
patterns of S bytes per rank: data parallelism's ring all-reduce and expert parallelism's
all-to-all (``collectives.alltoall``, all blocks at once). Every number is the flow simulator's
(``netlab.sim.placement_grid``: the lab's own schedules, max-min sharing, ``spray`` routing), for all four ratios
and both placements at once, so the figure shows the whole trade-off and the text the setting chosen.
Beside each time the closed form (``predicted``): the ring's flows that leave a leaf share its
uplinks, and the all-to-all's bytes that leave a leaf, n (p - n)/p S from the n job ranks there,
go through D B / R of uplink.

Left out: ECMP's hash collisions (chapter 5's panel has them), other jobs on the same uplinks, and
packets (chapter 6).
"""
from __future__ import annotations

from .. import validate
from ..figures.codesign import oversubscribed_patterns
from ..sim.placement_grid import BANDWIDTHS, HOSTS, LEAVES, PATTERNS, PORTS, RATIOS, SIZES, grid
from ..sim.placement_grid import predicted, simulated  # noqa: F401 -- the model, read by the chapter's tests
from ..units import fmt_bytes, fmt_time, parse_bytes
from .panel import Panel, choice, toggle


class Ch8Panel(Panel):
    """All four ratios and both placements per change; ``last`` keeps the chosen setting's numbers."""

    min_height = "520px"
    tight = False                 # the figure lays itself out (subplots_adjust): one draw less per change

    def __init__(self, *, pattern: str = "all-to-all", ratio: int = 4, placement: str = "packed", hosts: int = 32,
                 size: str = "64M", bandwidth: str = "100Gbit/s"):
        validate.choice(pattern, "pattern", PATTERNS)
        validate.choice(ratio, "ratio", RATIOS)
        validate.choice(placement, "placement", ("packed", "scattered"))
        validate.choice(hosts, "hosts", HOSTS)
        validate.choice(size, "size", SIZES)
        validate.choice(bandwidth, "bandwidth", BANDWIDTHS)
        super().__init__({
            "pattern": toggle(list(PATTERNS), pattern, "traffic"),
            "ratio": choice(RATIOS, ratio, "oversubscription :1"),
            "placement": toggle(["packed", "scattered"], placement, "placement"),
            "hosts": choice(HOSTS, hosts, "job ranks"),
            "size": choice(SIZES, size, "S per rank"),
            "bandwidth": choice(BANDWIDTHS, bandwidth, "NIC bandwidth"),
        })

    def greyed(self, values):
        """A packed job inside one leaf never touches the uplinks: the ratio means nothing to it."""
        return {"ratio": values["placement"] == "packed" and values["hosts"] <= PORTS}

    def render(self, values):
        self.last = result = grid(values, nbytes=parse_bytes(values.size, "size"))
        return self.describe(result), oversubscribed_patterns(result, ratios=RATIOS)

    @staticmethod
    def describe(result) -> str:
        s, c, grid = result["setting"], result["chosen"], result["grid"]
        other = "ring all-reduce" if s["pattern"] == "all-to-all" else "all-to-all"
        base = grid[s["pattern"], s["placement"], 1]["time_s"]
        o, o1 = grid[other, s["placement"], s["ratio"]], grid[other, s["placement"], 1]
        return (f"{s['pattern']} of S = {fmt_bytes(c['bytes'])} per rank, {s['hosts']} ranks {s['placement']} in "
                f"{c['leaves']} of {LEAVES} leaves, uplinks {s['ratio']}:1, NICs {s['bandwidth']}:\n"
                f"  time {fmt_time(c['time_s'])} (closed form {fmt_time(c['formula_s'])}), "
                f"{c['time_s'] / base:.2f}x its time at 1:1; busbw {c['busbw_GBps']:.2f} GB/s; "
                f"bottleneck {c['bottleneck']}\n"
                f"  {c['spine_share']:.0%} of its bytes cross the spine; the {other} here: {fmt_time(o['time_s'])}, "
                f"{o['time_s'] / o1['time_s']:.2f}x its time at 1:1, {o['spine_share']:.0%} across the spine")

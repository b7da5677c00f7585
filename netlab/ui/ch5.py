"""Chapter 5's panel: pick a fabric, servers, placement, routing, algorithm and scale; watch the
simulated all-reduce, its bottleneck link, and the fabric drawn with each link's load.

Every answer is a simulator run (``netlab.sim``) of the same schedules the real ranks execute;
a 1,024-rank ring takes 0.7 s and 4,096 ranks 3.3 s on 2 cores, figure included (measured on an idle machine).
The topology a setting describes is built by ``netlab.sim.experiments.panel_fabric``; the chapter's other
figures are in ``netlab.figures.topology``; running real ranks beside the simulator in ``netlab.sim.compare``.
"""
from __future__ import annotations

import ipywidgets as widgets

from .. import sim
from ..sim.experiments import panel_fabric
from ..figures.topology import draw as draw_topology
from ..net.routing import MODES
from ..units import fmt_bytes, fmt_time, parse_bytes
from .panel import Panel, choice, columns, dropdown, slider, start_values, toggle

ALGOS = [("flat ring", "ring"), ("hierarchical (leader per server)", "hierarchical"),
         ("hierarchical (rails)", "hierarchical_rail"), ("tree", "tree")]
NICS = [("one per GPU, rail-optimized", "rail"), ("one per GPU, same ToR", "tor"), ("one per server", "single")]
RANKS = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
SIZES = ["1M", "16M", "64M", "256M", "1G"]
START = {"fabric": "fat-tree", "k": 8, "ratio": 1, "gpus": 1, "nics": "rail", "placement": "ordered",
         "routing": "ecmp", "algo": "ring", "ranks": 128, "size": "64M", "seed": 0}   # the controls' first values


def describe(r) -> str:
    """Two lines: time, busbw, the bottleneck and what set the pace."""
    s = r.summary()
    kinds = r.time_by_bottleneck_kind()
    pace = ", ".join(f"{kind} {t / r.time_s:.0%}" for kind, t in sorted(kinds.items(), key=lambda kv: -kv[1]))
    ties = f" (and {s['links_as_busy'] - 1} links as busy)" if s["links_as_busy"] > 1 else ""
    return (f"{r.ranks} ranks, {r.algo}, S = {fmt_bytes(r.nbytes)}: time {fmt_time(r.time_s)}, "
            f"busbw {r.busbw_GBps:.2f} GB/s (GB = 1e9 B); slowest flow {r.slowest_flow:.2f} x line rate\n"
            f"bottleneck {s['bottleneck']} ({s['bottleneck_kind']}), {s['bottleneck_util']:.0%} utilized{ties}; "
            f"steps limited by: {pace}; simulated in {r.wall_s:.2f} s")


class FabricPanel(Panel):
    """Widgets for the fabric explorer; ``last`` keeps the latest SimResult (headless-testable)."""

    min_height = "470px"

    def __init__(self, *, max_ranks: int = 4096, **start):
        """``start``: the controls' first values by name (``START``'s, which the rest keep)."""
        v = start_values(start, START, "chapter 5's panel")
        fabric, k, ratio, gpus, nics, placement = (v[n] for n in ("fabric", "k", "ratio", "gpus", "nics", "placement"))
        routing, algo, ranks, size, seed = (v[n] for n in ("routing", "algo", "ranks", "size", "seed"))
        layout = {"width": "440px"}
        self.controls = {
            "fabric": toggle(["fat-tree", "spine-leaf"], fabric, "fabric"),
            "k": choice([4, 8, 16, 32], k, "fat-tree k"),
            "ratio": choice([1, 2, 4, 8], ratio, "spine-leaf ratio :1"),
            "gpus": choice([1, 2, 4, 8], gpus, "GPUs per server"),
            "nics": dropdown(NICS, nics, "NICs", layout=layout),
            "placement": toggle(["ordered", "shuffled"], placement, "placement"),
            "routing": toggle(list(MODES), routing, "routing"),
            "algo": dropdown(ALGOS, algo, "algorithm", layout=layout),
            "ranks": choice([r for r in RANKS if r <= max_ranks], ranks, "ranks"),
            "size": choice(SIZES, size, "all-reduce size"),
            "seed": slider(widgets.IntSlider, seed, 0, 19, description="seed (shuffle, hash)"),
        }
        for name in ("k", "ratio", "ranks", "size", "seed", "gpus"):
            self.controls[name].layout.width = layout["width"]
        left, right = ("fabric", "k", "ratio", "gpus", "nics", "placement"), ("routing", "algo", "ranks", "size", "seed")
        super().__init__(self.controls, layout=columns(self.controls, left, right))

    def greyed(self, values):
        """Fat-tree k means nothing to a spine-leaf fabric and the ratio nothing to a fat-tree; with one
        GPU a server the three NIC designs are one; the seed shuffles a shuffled placement and seeds the
        ECMP hash (and adaptive routing's ties), so an ordered, sprayed run has no use for it."""
        return {"k": values["fabric"] != "fat-tree", "ratio": values["fabric"] != "spine-leaf",
                "nics": values["gpus"] == 1,
                "seed": values["placement"] == "ordered" and values["routing"] == "spray"}

    def render(self, v):
        topo = panel_fabric(fabric=v.fabric, k=v.k, ratio=float(v.ratio), gpus=v.gpus, nics=v.nics, ranks=v.ranks)
        self.last = r = sim.simulate(sim.Simulator(topo, v.ranks, placement=v.placement, routing=v.routing,
                                                   seed=v.seed), "allreduce", v.algo, parse_bytes(v.size, "size"))
        return describe(r), draw_topology(r.topology, load=r.utilization, highlight=r.bottleneck_link)

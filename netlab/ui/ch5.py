"""Chapter 5's panel and figures: pick a fabric, servers, placement, routing, algorithm and scale;
watch the simulated all-reduce, its bottleneck link, and the fabric drawn with each link's load.

Every answer is a simulator run (``netlab.sim``) of the same schedules the real ranks execute;
a 1,024-rank ring takes 0.7 s and 4,096 ranks 3.3 s on 2 cores, figure included (measured on an idle machine).
"""
from __future__ import annotations

import functools
import textwrap

import ipywidgets as widgets
import matplotlib.pyplot as plt

from .. import sim
from ..plots import log_grid
from ..net import draw, fabrics
from ..net.routing import MODES
from ..net.topology import Host
from ..units import fmt_bytes, fmt_time, parse_bytes
from .panel import Panel, new_figure, slider

ALGOS = [("flat ring", "ring"), ("hierarchical (leader per server)", "hierarchical"),
         ("hierarchical (rails)", "hierarchical_rail"), ("tree", "tree")]
NICS = [("one per GPU, rail-optimized", "rail"), ("one per GPU, same ToR", "tor"), ("one per server", "single")]
RANKS = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
SIZES = ["1M", "16M", "64M", "256M", "1G"]


@functools.lru_cache(maxsize=16)
def build(fabric: str, k: int, ratio: float, gpus: int, nics: str, ranks: int, nic: str = "100GbE",
          intra: str = "NVLink3"):
    """The topology a panel setting describes, with just enough servers for `ranks` (kept: builds are reused)."""
    host = Host(gpus, nics=1 if nics == "single" else gpus, rail=nics == "rail", intra=intra)
    if ranks % gpus:
        raise ValueError(f"ranks: {ranks} ranks do not fill servers of {gpus} GPUs")
    hosts = ranks // gpus
    if fabric == "fat-tree":
        most = k ** 3 // 4 // host.nics * gpus
        if ranks > most:
            raise ValueError(f"ranks: a k={k} fat-tree holds {most} GPUs with this server design; raise k")
        return fabrics.fat_tree(k, nic, host, hosts=hosts)
    if fabric == "spine-leaf":
        return fabrics.parse(f"spineleaf:8:4:{ratio:g}", ranks, nic, host)
    raise ValueError(f"fabric: must be 'fat-tree' or 'spine-leaf', got {fabric!r}")


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

    def __init__(self, fabric: str = "fat-tree", k: int = 8, ratio: float = 1, gpus: int = 1, nics: str = "rail",
                 placement: str = "ordered", routing: str = "ecmp", algo: str = "ring", ranks: int = 128,
                 size: str = "64M", seed: int = 0, max_ranks: int = 4096):
        style, layout = {"description_width": "120px"}, {"width": "440px"}
        self.controls = {
            "fabric": widgets.ToggleButtons(options=["fat-tree", "spine-leaf"], value=fabric, description="fabric",
                                            style=style),
            "k": slider(widgets.SelectionSlider, options=[4, 8, 16, 32], value=k, description="fat-tree k"),
            "ratio": slider(widgets.SelectionSlider, options=[1, 2, 4, 8], value=ratio,
                            description="spine-leaf ratio :1"),
            "gpus": slider(widgets.SelectionSlider, options=[1, 2, 4, 8], value=gpus, description="GPUs per server"),
            "nics": widgets.Dropdown(options=NICS, value=nics, description="NICs", style=style,
                                     layout=widgets.Layout(**layout)),
            "placement": widgets.ToggleButtons(options=["ordered", "shuffled"], value=placement,
                                               description="placement", style=style),
            "routing": widgets.ToggleButtons(options=list(MODES), value=routing,
                                             description="routing", style=style),
            "algo": widgets.Dropdown(options=ALGOS, value=algo, description="algorithm", style=style,
                                     layout=widgets.Layout(**layout)),
            "ranks": slider(widgets.SelectionSlider, options=[r for r in RANKS if r <= max_ranks], value=ranks,
                            description="ranks"),
            "size": slider(widgets.SelectionSlider, options=SIZES, value=size, description="all-reduce size"),
            "seed": slider(widgets.IntSlider, seed, 0, 19, description="seed (shuffle, hash)"),
        }
        for name in ("k", "ratio", "ranks", "size", "seed", "gpus"):
            self.controls[name].layout.width = layout["width"]
            self.controls[name].style = style
        # fat-tree k means nothing to a spine-leaf fabric and the ratio nothing to a fat-tree
        self.controls["fabric"].observe(lambda change: self._enable(change["new"]), names="value")
        self._enable(fabric)
        left = widgets.VBox([self.controls[n] for n in ("fabric", "k", "ratio", "gpus", "nics", "placement")])
        right = widgets.VBox([self.controls[n] for n in ("routing", "algo", "ranks", "size", "seed")])
        super().__init__(self.controls, layout=widgets.HBox([left, right]))

    def _enable(self, fabric):
        self.controls["k"].disabled = fabric != "fat-tree"
        self.controls["ratio"].disabled = fabric != "spine-leaf"

    def run(self, fabric, k, ratio, gpus, nics, placement, routing, algo, ranks, size, seed):
        topo = build(fabric, k, float(ratio), gpus, nics, ranks)
        return sim.simulate(topo, "allreduce", algo, parse_bytes(size, "size"), ranks, placement=placement,
                            routing=routing, seed=seed)

    def render(self, **setting):
        r = self.run(**setting)
        self.last = r
        fig = new_figure(10, 4.2)
        draw.draw(r.topology, r.utilization, ax=fig.subplots(), highlight=r.bottleneck)
        return describe(r), fig


def scaling_plot(rows: list[dict], ax=None, title: str = "busbw against scale"):
    """busbw (log) against ranks (log 2), one small panel per design (rows from ``experiments.scaling``):
    rank order solid with filled markers, 'shuffled' placement dotted with open markers, so neither
    hides the other where they coincide. With `ax`, every design on that one axes, labelled at its end."""
    from ..plots import label_lines
    designs = list(dict.fromkeys(r["design"] for r in rows))
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]

    def pts(name, placement):
        return sorted((r["ranks"], r["busbw_GBps"]) for r in rows
                      if r["design"] == name and r.get("placement", "ordered") == placement)
    if ax is None:
        fig, axes = plt.subplots(1, len(designs), figsize=(3.3 * len(designs), 3.3), sharey=True, squeeze=False)
        axes = list(axes.flat)
    else:
        fig, axes = ax.figure, [ax] * len(designs)
    ends = {}
    for i, (a, name) in enumerate(zip(axes, designs)):
        colour = colours[i % len(colours)]
        for placement, line, face in (("ordered", "-", colour), ("shuffled", ":", "white")):
            p = pts(name, placement)
            if p:
                a.plot(*zip(*p), ls=line, marker="o", ms=5, color=colour, mfc=face, lw=1.6)
                if placement == "ordered":
                    ends[name] = (*zip(*p), colour)
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        log_grid(a)
        a.set_xlabel("ranks")
        if len(set(map(id, axes))) > 1:
            a.set_title(textwrap.fill(name, 34), fontsize=9, color=colour)
    axes[0].set_ylabel("busbw (GB/s, GB = 1e9 B)")
    if len(set(map(id, axes))) == 1:
        label_lines(axes[0], ends, fontsize=7)
        axes[0].set_title(title, fontsize=10)
    else:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def real_vs_sim(network, ranks: int, algos, sizes) -> list[dict]:
    """The same all-reduces on real ranks and in the simulator; prints a table and returns its rows."""
    from ..sim.compare import side_by_side
    rows = []
    print(f"# {ranks} ranks; {network.describe()}")
    print(f"# {'algo':18s} {'S':>9s} {'real ranks':>11s} {'simulator':>11s} {'difference':>10s} {'messages':>8s}"
          f"  same messages?")
    for algo in algos:
        for size in sizes:
            d = side_by_side(network, ranks, "allreduce", algo, parse_bytes(size, "size"))
            d.pop("sim")
            rows.append(d)
            print(f"  {algo:18s} {fmt_bytes(d['bytes']):>9s} {fmt_time(d['real_s']):>11s} {fmt_time(d['sim_s']):>11s}"
                  f" {d['error']:+10.3%} {d['messages']:8d}  {'yes' if d['same_pattern'] else 'NO'}")
    return rows

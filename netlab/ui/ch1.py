"""Chapter 1's panel: move nodes, bandwidth, latency, model size, samples per device and device; watch one step.

Every slider change runs a real training step on real ranks (the pool is warm, so an answer takes
a fraction of a second) and redraws the compute/communication split and the per-rank timeline.
"""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt

from .. import plots
from ..cluster import MAX_RANKS
from ..data import load
from ..net.presets import DEVICES
from ..step import measure_step
from ..train import grad_bytes
from ..units import fmt_bytes, fmt_time

BANDWIDTHS = ["100Mbit/s", "1Gbit/s", "10Gbit/s", "25Gbit/s", "100Gbit/s", "400Gbit/s"]
LATENCIES = ["1us", "2us", "5us", "10us", "20us", "50us", "100us"]
WIDTHS = [128, 256, 512, 1024, 2048, 3500]
BATCHES = [8, 16, 32, 64, 128]          # samples (tokens) per device per step; ranks x batch <= training set


class StepPanel:
    def __init__(self, ranks: int = 4, bandwidth: str = "10Gbit/s", latency: str = "5us", width: int = 512,
                 device: str = "cpu-core", max_width: int = 3500, batch: int = 32):
        style = {"description_width": "110px"}
        layout = widgets.Layout(width="460px")
        sizes = [(f"{fmt_bytes(grad_bytes(w))} (width {w})", w) for w in WIDTHS if w <= max_width]
        self.controls = {
            "ranks": widgets.IntSlider(ranks, 1, MAX_RANKS, description="nodes", continuous_update=False,
                                       style=style, layout=layout),
            "bandwidth": widgets.SelectionSlider(options=BANDWIDTHS, value=bandwidth, description="bandwidth",
                                                 continuous_update=False, style=style, layout=layout),
            "latency": widgets.SelectionSlider(options=LATENCIES, value=latency, description="latency",
                                               continuous_update=False, style=style, layout=layout),
            "width": widgets.SelectionSlider(options=sizes, value=width, description="gradient size",
                                             continuous_update=False, style=style, layout=layout),
            "batch": widgets.SelectionSlider(options=BATCHES, value=batch, description="samples/device",
                                             continuous_update=False, style=style, layout=layout),
            "device": widgets.Dropdown(options=list(DEVICES), value=device, description="device",
                                       style=style, layout=layout),
        }
        self.last = None
        self.samples = len(load("train")[1])         # one global batch must fit the training set
        self.out = widgets.interactive_output(self.update, self.controls)
        self.out.layout.min_height = "520px"          # no jumping while a new figure is drawn
        self.widget = widgets.VBox([widgets.VBox(list(self.controls.values())), self.out])

    def update(self, ranks, bandwidth, latency, width, batch, device):
        if ranks * batch > self.samples:
            print(f"cannot run this setting: {ranks} nodes x {batch} samples exceed the {self.samples:,} "
                  f"training digits")
            return
        try:
            r = measure_step(ranks=ranks, bandwidth=bandwidth, latency=latency, width=width, batch=batch,
                             device=device)
        except (ValueError, MemoryError) as exc:
            print(f"cannot run this setting: {exc}")
            return
        self.last = r
        print(f"{ranks} ranks x {batch} samples, {fmt_bytes(r.grad_bytes)} of gradients, {bandwidth} / {latency}")
        print(f"step {fmt_time(r.total_s)} = compute {fmt_time(r.compute_s)} + communication {fmt_time(r.comm_s)}")
        print(f"waiting on the network: {r.comm_s / r.total_s:.0%} of the step; "
              f"communication / compute = {r.comm_s / r.compute_s:.3g}")
        fig, axes = plt.subplots(2, 1, figsize=(9, 1.6 + 0.42 * ranks + 2.2),
                                 gridspec_kw={"height_ratios": [1, max(2, 0.42 * ranks)]})
        plots.breakdown(r.compute_s, r.comm_s, ax=axes[0])
        plots.timeline(r.trace, ax=axes[1])
        plt.show()
        plt.close(fig)

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)

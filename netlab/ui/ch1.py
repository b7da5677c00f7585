"""Chapter 1's panel: move nodes, bandwidth, latency, model size, samples per device and device; watch one step.

Every slider change runs a real training step on real ranks (the pool is warm, so an answer takes
a fraction of a second) and redraws the compute/communication split and the per-rank timeline.
"""
from __future__ import annotations

import ipywidgets as widgets

from ..runtime.pool import MAX_RANKS
from ..data import size
from ..figures.common import margins
from ..figures.timeline import from_trace, timeline
from ..net.presets import DEVICES
from ..dataparallel.step import measure_step
from ..dataparallel.train import grad_bytes
from ..units import fmt_bytes, fmt_time
from .panel import Panel, choice, dropdown, new_figure, slider

BANDWIDTHS = ["100Mbit/s", "1Gbit/s", "10Gbit/s", "25Gbit/s", "100Gbit/s", "400Gbit/s"]
LATENCIES = ["1us", "2us", "5us", "10us", "20us", "50us", "100us"]
WIDTHS = [128, 256, 512, 1024, 2048, 3500]
BATCHES = [8, 16, 32, 64, 128]          # samples (tokens) per device per step; ranks x batch <= training set


class StepPanel(Panel):
    min_height = "520px"                       # no jumping while a new figure is drawn
    tight = False                              # render() lays the figure out itself

    def __init__(self, *, ranks: int = 4, bandwidth: str = "10Gbit/s", latency: str = "5us", width: int = 512,
                 device: str = "cpu-core", max_width: int = 3500, batch: int = 32):
        self.samples = size("train")         # one global batch must fit the training set
        self._figures: dict = {}
        sizes = [(f"{fmt_bytes(grad_bytes(w))} (width {w})", w) for w in WIDTHS if w <= max_width]
        super().__init__({
            "ranks": slider(widgets.IntSlider, ranks, 1, MAX_RANKS, description="nodes"),
            "bandwidth": choice(BANDWIDTHS, bandwidth, "bandwidth"),
            "latency": choice(LATENCIES, latency, "latency"),
            "width": choice(sizes, width, "gradient size"),
            "batch": choice(BATCHES, batch, "samples/device"),
            "device": dropdown(list(DEVICES), device, "device"),
        })

    def greyed(self, values):
        """One node sends nothing: the network's bandwidth and latency do not enter its step."""
        alone = values["ranks"] == 1
        return {"bandwidth": alone, "latency": alone}

    def render(self, values):
        ranks, bandwidth, latency, batch = values.ranks, values.bandwidth, values.latency, values.batch
        if ranks * batch > self.samples:
            raise ValueError(f"batch: {ranks} nodes x {batch} samples exceed the {self.samples:,} training digits")
        r = measure_step(ranks=ranks, bandwidth=bandwidth, latency=latency, width=values.width, batch=batch,
                         device=values.device)
        self.last = r
        text = (f"{ranks} ranks x {batch} samples, {fmt_bytes(r.grad_bytes)} of gradients, {bandwidth} / {latency}:\n"
                f"  step {fmt_time(r.total_s)} = compute {fmt_time(r.compute_s)} + communication "
                f"{fmt_time(r.comm_s)}\n  {r.comm_s / r.total_s:.0%} of the step waits on the network; "
                f"communication / compute = {r.comm_s / r.compute_s:.3g}")
        # One axes, laid out in inches (no tight_layout, no tight crop): the step's split and every
        # rank's timeline on one time axis, and the fewest draws per change, which is most of its time.
        # A figure per node count, kept: the next change at that count redraws into the same axes.
        if ranks not in self._figures:
            rows, top, bottom = 0.42 * (ranks + 1.3), 0.35, 0.95
            height = top + max(1.2, rows) + bottom
            fig = new_figure(9, height)
            ax = fig.subplots()
            margins(fig, (0.9, 0.25, bottom, top))
            self._figures[ranks] = fig, ax
        fig, ax = self._figures[ranks]
        timeline(from_trace(r.trace), ax=ax, ranks=r.trace.world_size, clock="virtual" if r.trace.virtual else "wall",
                 span_s=max(r.total_s, r.trace.makespan), step=(r.compute_s, r.comm_s),
                 title="one training step: its split (top) and each rank's timeline")
        return text, fig

"""Chapter 4's panel: pick a compression method, its knob, error feedback, bandwidth and nodes.

Every change trains the chapter's MLP on real ranks with that method (and, once per setting, the
fp32 baseline), then shows bytes per step, step time, the accuracy curves against the baseline
(against steps and against virtual time) and the step time of this method and fp32 over bandwidths
from 100 Mbit/s to 400 Gbit/s, with where it stops paying.
"""
from __future__ import annotations

import ipywidgets as widgets

from ..compress import DEFAULTS, LEVEL_BITS, METHODS, pays
from ..compress.training import run_training
from ..figures.compress import compression_pays
from ..units import fmt_bytes, fmt_time, parse_bandwidth
from .panel import STYLE, Panel, choice, dropdown, refine, slider

BANDWIDTHS = ["100Mbit/s", "1Gbit/s", "10Gbit/s", "25Gbit/s", "100Gbit/s", "400Gbit/s"]
RATIOS = [0.001, 0.003, 0.01, 0.03, 0.1, 0.3]
TAUS = [0.001, 0.003, 0.01, 0.03]
FIRST_STEPS = 20        # a change shows these steps first when the panel trains for twice as many or more


class CompressPanel(Panel):
    min_height = "720px"

    def __init__(self, *, method: str = "topk", error_feedback: bool = True, bandwidth: str = "1Gbit/s",
                 ranks: int = 4, steps: int = 200, max_ranks: int = 8, sweep=pays.BANDWIDTHS):
        self.steps, self.sweep = steps, list(sweep)
        self._baselines, self._sweeps = {}, {}
        super().__init__({
            "method": dropdown(list(METHODS), method, "method"),
            "ratio": choice(RATIOS, DEFAULTS["ratio"], "ratio (k/d)"),
            "rank": slider(widgets.IntSlider, DEFAULTS["rank"], 1, 4, description="rank r"),
            "bits": choice(list(LEVEL_BITS), DEFAULTS["bits"], "bits (QSGD)"),
            "tau": choice(TAUS, DEFAULTS["tau"], "threshold tau"),
            "error_feedback": widgets.Checkbox(error_feedback, description="error feedback", style=STYLE),
            "bandwidth": choice(BANDWIDTHS, bandwidth, "bandwidth"),
            "ranks": slider(widgets.IntSlider, ranks, 2, max_ranks, description="nodes"),
        })

    def greyed(self, values):
        """Only the chosen method's knob is live; error feedback means nothing without compression."""
        knob = METHODS[values["method"]][0]
        return {**{name: name != knob for name in DEFAULTS},
                "error_feedback": values["method"] == "none"}

    def options(self, values) -> dict:
        """The chosen method's one knob and its value (none for fp32 and the knob-less methods)."""
        knob = METHODS[values.method][0]
        return {} if knob is None else {knob: values[knob]}

    def render(self, values):
        """The first FIRST_STEPS steps first, then all ``steps`` (where the whole run is short, only that).
        The first answer is the full run's beginning (the same seeds and data order, a virtual clock):
        the same step time, bytes and curve so far; the sweep over bandwidths comes with it where it
        was measured before, else with the full answer."""
        for steps in refine(self.steps, FIRST_STEPS):
            yield self._answer(values, steps)

    def _answer(self, values, steps):
        method, error_feedback, bandwidth, ranks = values.method, values.error_feedback, values.bandwidth, values.ranks
        options = self.options(values)
        key = (ranks, bandwidth, steps)
        if key not in self._baselines:
            self._baselines[key] = run_training("none", ranks=ranks, steps=steps, bandwidth=bandwidth)
        base = self._baselines[key]
        r = base if method == "none" else run_training(method, ranks=ranks, steps=steps, bandwidth=bandwidth,
                                                       error_feedback=error_feedback, **options)
        spec = (method, options, error_feedback)
        sweep_key = (ranks, method, tuple(sorted(options.items())), error_feedback)
        first = steps < self.steps
        if sweep_key not in self._sweeps and not first:
            self._sweeps[sweep_key] = pays.step_times(["none", spec] if method != "none" else ["none"],
                                                      self.sweep, ranks=ranks)
        rows = self._sweeps.get(sweep_key)
        self.last = {"result": r, "baseline": base, "rows": rows}
        ef = " + error feedback" if error_feedback and method != "none" else ""
        part = f" -- first answer, the first {steps} of {self.steps} steps; the rest follows" if first else ""
        lines = [
            f"{pays.label(method, options)}{ef} on {ranks} nodes over {bandwidth}{part}:",
            f"  payload {fmt_bytes(r.payload_bytes)} per rank per step, {r.compression_ratio:.1f}x smaller than "
            f"fp32's {fmt_bytes(r.dense_bytes)}",
            f"  on the wire {fmt_bytes(r.bytes_per_step)} sent per rank per step (fp32: "
            f"{fmt_bytes(base.bytes_per_step)})",
            f"  step {fmt_time(r.step_s)} vs fp32 {fmt_time(base.step_s)} "
            f"({'faster' if r.step_s < base.step_s else 'slower'}: x{base.step_s / r.step_s:.2f})",
            f"  compressing costs {fmt_time(r.encode_s)} + {fmt_time(r.decode_s)} per decoded payload",
            f"  test accuracy after {steps} steps: {r.final_accuracy:.3f} (fp32 {base.final_accuracy:.3f})"
            + (f"   DIVERGED at step {r.diverged}" if r.diverged is not None else "")]
        if method != "none" and rows is not None:
            cross = pays.crossover(rows, pays.label(method, options))
            lines.append(f"  compression stops paying above {pays.bandwidth_label(cross)}" if cross else
                         "  no crossover between 100 Mbit/s and 400 Gbit/s")
        fig = compression_pays([] if method == "none" else [r], base, rows=rows, mark=parse_bandwidth(bandwidth))
        return "\n".join(lines), fig

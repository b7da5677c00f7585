"""Chapter 3's panel: parameter servers against ring all-reduce, on real ranks.

Every change of a control trains chapter 1's MLP twice on real ranks -- through parameter servers
with the chosen layout and consistency, and through a ring all-reduce with the same workers and
stragglers -- and draws per-server bytes and port utilization (the hotspot), the staleness
histogram, and accuracy against virtual time for both (``netlab.figures.ps.ps_vs_ring``).
"""
from __future__ import annotations

import ipywidgets as widgets

from ..figures import ps as figures
from ..units import fmt_bytes, fmt_time
from .panel import Panel, choice, refine, slider, start_values, toggle

BANDWIDTHS = ["100Mbit/s", "1Gbit/s", "10Gbit/s", "25Gbit/s", "100Gbit/s"]
START = {"workers": 8, "servers": 2, "sharding": "hash", "bandwidth": "10Gbit/s", "mode": "bsp", "staleness": 2,
         "stragglers": 2, "slowdown": 4.0}                 # the controls' first values
FIRST_STEPS = 4         # a change shows these steps first when the panel trains for twice as many or more


class PSPanel(Panel):
    """Workers, servers, sharding, bandwidth, consistency, staleness bound, stragglers: watch a PS train."""

    min_height = "420px"
    tight = False                 # the figure lays itself out (subplots_adjust): one draw less per change

    def __init__(self, *, steps=40, partition_bytes=32_768, **start):
        """``start``: the controls' first values by name (``START``'s, which the rest keep)."""
        v = start_values(start, START, "chapter 3's panel")
        workers, servers, sharding, bandwidth = v["workers"], v["servers"], v["sharding"], v["bandwidth"]
        mode, staleness, stragglers, slowdown = v["mode"], v["staleness"], v["stragglers"], v["slowdown"]
        self.steps, self.partition_bytes = steps, partition_bytes
        self.baseline = None
        self._cache = {}
        controls = {
            "workers": slider(widgets.IntSlider, workers, 2, 12, description="workers"),
            "servers": slider(widgets.IntSlider, servers, 1, 8, description="servers"),
            "sharding": toggle(["range", "hash"], sharding, "sharding"),
            "bandwidth": choice(BANDWIDTHS, bandwidth, "bandwidth"),
            "mode": toggle(["bsp", "ssp", "async"], mode, "consistency"),
            "staleness": slider(widgets.IntSlider, staleness, 0, 8, description="staleness bound s"),
            "stragglers": slider(widgets.IntSlider, stragglers, 0, 4, description="stragglers / step"),
            "slowdown": slider(widgets.FloatSlider, value=slowdown, min=1.0, max=8.0, step=0.5,
                               description="straggler slowdown"),
        }
        super().__init__(controls)

    def greyed(self, values):
        """The staleness bound applies to SSP only; one server holds every key (no sharding to choose);
        without stragglers there is no one to slow down."""
        return {"staleness": values["mode"] != "ssp", "sharding": values["servers"] == 1,
                "slowdown": values["stragglers"] == 0}

    def _allreduce(self, v, steps):
        from ..ps.baseline import run_allreduce
        workers, bandwidth, stragglers, slowdown = v.workers, v.bandwidth, v.stragglers, v.slowdown
        key = (workers, bandwidth, stragglers, slowdown, steps)
        if key not in self._cache:
            self._cache[key] = run_allreduce(workers=workers, bandwidth=bandwidth, steps=steps,
                                             stragglers=min(stragglers, workers), slowdown=slowdown,
                                             eval_every=max(1, steps // 8))
        return self._cache[key]

    def render(self, values):
        """A FIRST_STEPS-step run of the setting first, then the ``steps``-step run (where that is short,
        only it). Every number of the first answer means what it means in the full one (step time per
        step, bytes per server, accuracy after the steps it says). Under BSP it is exactly the full
        run's beginning (the same seeds and data order, a virtual clock; evaluating costs no virtual
        time); under SSP and async its last steps differ by a few percent, as the slower workers of a
        short run stop pushing sooner."""
        for steps in refine(self.steps, FIRST_STEPS):
            yield self._answer(values, steps)

    def _answer(self, v, steps):
        from ..ps import run_ps
        workers, servers, sharding, bandwidth = v.workers, v.servers, v.sharding, v.bandwidth
        mode, staleness, stragglers, slowdown = v.mode, v.staleness, v.stragglers, v.slowdown
        r = run_ps(workers=workers, servers=servers, sharding=sharding, bandwidth=bandwidth, mode=mode,
                   staleness=staleness, stragglers=min(stragglers, workers), slowdown=slowdown, steps=steps,
                   partition_bytes=self.partition_bytes, eval_every=max(1, steps // 8))
        ar = self._allreduce(v, steps)
        self.last, self.baseline = r, ar
        part = "" if steps == self.steps else f" -- first answer, a {steps}-step run; the {self.steps}-step run follows"
        hot = max(r.server_bytes) / sum(r.server_bytes)
        winner = f"PS ({mode})" if r.step_s < ar["step_s"] else "ring all-reduce (synchronous)"
        text = "\n".join([
            f"{workers} workers + {servers} servers ({sharding}, {mode}{f' s={staleness}' if mode == 'ssp' else ''}), "
            f"{fmt_bytes(r.setup['model_bytes'])} model over {bandwidth}{part}:",
            f"  PS step {fmt_time(r.step_s)} (push/pull {fmt_time(r.comm_s)}), accuracy {r.accuracy:.3f}",
            f"  ring all-reduce on {workers} ranks: step {fmt_time(ar['step_s'])}, accuracy {ar['accuracy']:.3f}",
            f"  shorter step: {winner}"
            + ("" if mode == "bsp" else f"  ({mode} vs a synchronous ring: set bsp to compare architectures alone)"),
            f"  hottest server carries {hot:.0%} of the server bytes (even split: {1 / servers:.0%})"
            + (f"; at most {r.max_gap} step(s) ahead of the slowest" if mode == "ssp" else "")])
        note = f"accuracy vs time: {steps} steps (the {self.steps}-step run follows)" if steps < self.steps else ""
        fig = figures.ps_vs_ring(r, ar, mode=mode, steps_note=note)
        return text, fig

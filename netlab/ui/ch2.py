"""Chapter 2's panels: the ring all-reduce step by step, and every all-reduce algorithm measured on
real ranks beside its formula (the runs: ``netlab.collectives.experiments``; the figures:
``netlab.figures.collectives``).
"""
from __future__ import annotations

import ipywidgets as widgets

from ..collectives import cost
from ..runtime import pool
from ..collectives.experiments import FLAT, measure, ring_snapshots
from ..figures.collectives import contributions, time_vs_size
from ..net.network import network
from ..units import fmt_bytes, fmt_time, parse_bytes
from .panel import Panel, choice, dropdown, new_figure, slider

SIZES = ["1K", "4K", "16K", "64K", "256K", "1M", "4M", "16M", "64M", "256M"]


class RingStepper(Panel):
    """A slider over the ring all-reduce's 2(p-1) steps, showing which data each rank holds."""

    min_height = "260px"

    def __init__(self, ranks: int = 4):
        self.ranks, self.shots = ranks, ring_snapshots(ranks)
        self.slider = widgets.IntSlider(0, 0, len(self.shots) - 1, description="step", continuous_update=True)
        super().__init__({"step": self.slider})

    def render(self, values):
        p, step = self.ranks, values.step
        phase = ("start: each rank holds only its own data" if step == 0 else
                 f"reduce-scatter step {step} of {p - 1}: send one chunk right, add the one from the left"
                 if step < p else f"all-gather step {step - p + 1} of {p - 1}: pass finished chunks right")
        return "", contributions(self.shots[step], title=phase)


def _runs(best: dict) -> list[str]:
    """{size: fastest algorithm} as runs of sizes: ["recursive_doubling 1K-64K", "halving_doubling 256K-256M"]."""
    runs: list[list] = []
    for size, algo in best.items():
        if runs and runs[-1][0] == algo:
            runs[-1][2] = size
        else:
            runs.append([algo, size, size])
    return [f"{a} {lo}" if lo == hi else f"{a} {lo}-{hi}" for a, lo, hi in runs]


def _in_flat_order(rows: list[dict]) -> list[dict]:
    """Rows grouped by algorithm in FLAT's order (sizes keep their order: the sort is stable)."""
    return sorted(rows, key=lambda r: FLAT.index(r["algo"]))


class CollectivePanel(Panel):
    """World size, message size, bandwidth, latency, algorithm -> time, formula, busbw, and the curves.

    Every algorithm is measured over every size at one (world size, bandwidth, latency); the panel keeps
    what it measured, so a new message size or algorithm, or a setting seen before, answers at once. A
    new setting answers first with the chosen algorithm measured and every formula drawn (its own row of
    the table is final), then with all the algorithms measured."""

    tight = False           # the figure sets its own margins (figures.collectives.time_vs_size)

    def __init__(self, *, ranks: int = 8, size: str = "1M", bandwidth: str = "100Gbit/s", latency: str = "5us",
                 algo: str = "ring"):
        self.rows = None
        self._measured: dict[tuple, list[dict]] = {}
        super().__init__({
            "ranks": slider(widgets.IntSlider, ranks, 2, pool.MAX_RANKS, description="world size"),
            "size": choice(SIZES, size, "message size"),
            "bandwidth": choice(["1Gbit/s", "10Gbit/s", "25Gbit/s", "100Gbit/s", "400Gbit/s"], bandwidth, "bandwidth"),
            "latency": choice(["1us", "2us", "5us", "10us", "50us"], latency, "latency"),
            "algo": dropdown(FLAT, algo, "algorithm"),
        })

    def render(self, values):
        ranks, bandwidth, latency, algo = values.ranks, values.bandwidth, values.latency, values.algo
        key, sizes = (ranks, bandwidth, latency), [parse_bytes(s) for s in SIZES]
        if key not in self._measured:
            others = [a for a in FLAT if a != algo]
            mine = measure(ranks, sizes, bandwidth, latency, algos=[algo])
            net = network(bandwidth, latency)
            formulas = [{"algo": a, "ranks": ranks, "bytes": s, "time_s": float("nan"),
                         "predicted_s": cost.time("allreduce", a, ranks, s, network=net)} for a in others for s in sizes]
            yield self._answer(values, _in_flat_order(mine + formulas), first=True)
            # the chosen algorithm is measured already (virtual time: the same rows again)
            self._measured[key] = _in_flat_order(mine + measure(ranks, sizes, bandwidth, latency, algos=others))
        yield self._answer(values, self._measured[key], first=False)

    def _answer(self, values, rows, *, first: bool):
        ranks, size, bandwidth, latency, algo = (values[k] for k in ("ranks", "size", "bandwidth", "latency", "algo"))
        self.rows = rows
        row = next(r for r in rows if r["algo"] == algo and r["bytes"] == parse_bytes(size))
        net = network(bandwidth, latency)
        if first:
            fastest = f"  fastest: follows when every algorithm is measured (first answer: {algo}'s markers only)"
        else:
            best = {s: min((r for r in rows if r["bytes"] == parse_bytes(s)), key=lambda r: r["time_s"])["algo"]
                    for s in SIZES}
            fastest = "  fastest: " + ", ".join(_runs(best))
        text = "\n".join([
            f"{algo} all-reduce of {fmt_bytes(row['bytes'])} on {ranks} ranks over {bandwidth}, {latency}:",
            f"  measured {fmt_time(row['time_s'])} (virtual), formula {fmt_time(row['predicted_s'])}",
            f"  algbw {row['algbw_GBps']:.2f} GB/s, busbw {row['busbw_GBps']:.2f} GB/s "
            f"(link {net.nic.bandwidth / 1e9:g} GB/s; GB = 1e9 B)",
            fastest])
        cross = {"ring = recursive doubling": cost.crossover("allreduce", "ring", "recursive_doubling", ranks, network=net)}
        fig = new_figure(7.5, 4.2)
        time_vs_size(rows, ax=fig.subplots(), crossovers=cross)
        return text, fig

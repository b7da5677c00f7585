"""Chapter 2's experiments: each collective on a small example, the ring step by step, and a panel
that measures every all-reduce algorithm on real ranks beside its formula.

Everything shown comes from runs on real ranks: the examples move real tensors; the ring's steps
are snapshots taken on the ranks between steps; the panel's times are virtual times of size-only
runs (identical to real payloads', see tests), with the formula next to them.
"""
from __future__ import annotations

import ipywidgets as widgets
import torch

from .. import cluster, collectives, cost
from ..bench import bench
from ..collectives.schedule import execute, rank_plan
from ..figures.collectives import contributions, time_vs_size
from ..net.network import network
from ..units import fmt_bytes, fmt_time, parse_bytes
from .panel import LAYOUT, STYLE, Panel, new_figure, slider

FLAT = ["naive", "ring", "tree", "recursive_doubling", "halving_doubling"]
SIZES = ["1K", "4K", "16K", "64K", "256K", "1M", "4M", "16M", "64M", "256M"]


def _example(comm, collective, algo, n):
    x = torch.arange(n, dtype=torch.int64) + 10 * (comm.rank + 1)       # rank r holds 10(r+1), 10(r+1)+1, ...
    before = x.tolist()
    if collective == "allgather":
        after = collectives.all_gather(comm, x[:1], algo=algo)
        before = x[:1].tolist()
    elif collective == "reduce_scatter":
        after = collectives.reduce_scatter(comm, x, algo=algo)
    else:
        after = getattr(collectives, collective)(comm, x, algo=algo)
    return before, after.tolist()


def example(collective: str, algo: str | None = None, ranks: int = 4, n: int = 4) -> list[tuple[list, list]]:
    """Run one collective on real ranks with small integers; print and return (before, after) per rank."""
    algo = algo or ("tree" if collective in ("broadcast", "reduce") else "ring")
    res = cluster.run(_example, collective, algo, n, ranks=ranks)
    print(f"{collective} ({algo}) on {ranks} ranks")
    for r, (before, after) in enumerate(res.values):
        note = ("" if collective != "reduce" or r == 0 else
                "   (not the root: a partial sum)" if after != before else "   (not the root: only sent, unchanged)")
        print(f"  rank {r}: before {before!s:<22} after {after}{note}")
    return res.values


def _ring_snapshots(comm, n):
    x = torch.full((n,), 1 << comm.rank, dtype=torch.int64)             # rank r contributes bit r
    plan = rank_plan(collectives.schedule("allreduce", "ring", comm.world_size, n), comm.rank)
    offsets, lengths = collectives.chunk_bounds(n, comm.world_size)
    first = lambda t: [int(t[o]) for o in offsets]                      # noqa: E731 -- one value per chunk
    shots = [first(x)]
    for step in plan:
        execute(comm, x, None, plan=[step])
        shots.append(first(x))
    return shots


def ring_snapshots(ranks: int = 4) -> list[list[list[int]]]:
    """[step][rank][chunk] -> bitmask of the ranks whose data is summed there, taken on real ranks."""
    res = cluster.run(_ring_snapshots, ranks, ranks=ranks)
    return [[res.values[r][s] for r in range(ranks)] for s in range(len(res.values[0]))]


class RingStepper(Panel):
    """A slider over the ring all-reduce's 2(p-1) steps, showing which data each rank holds."""

    min_height = "260px"

    def __init__(self, ranks: int = 4):
        self.ranks, self.shots = ranks, ring_snapshots(ranks)
        self.slider = widgets.IntSlider(0, 0, len(self.shots) - 1, description="step", continuous_update=True)
        super().__init__({"step": self.slider})

    def render(self, step):
        p = self.ranks
        phase = ("start: each rank holds only its own data" if step == 0 else
                 f"reduce-scatter step {step} of {p - 1}: send one chunk right, add the one from the left"
                 if step < p else f"all-gather step {step - p + 1} of {p - 1}: pass finished chunks right")
        fig = new_figure(1.1 * p + 2, 0.55 * p + 1.2)
        contributions(self.shots[step], ax=fig.subplots(), title=phase)
        return "", fig


def measure(ranks: int, sizes, bandwidth: str, latency: str, algos=FLAT) -> list[dict]:
    """bench() of every algorithm over the sizes: virtual time, formula, algbw, busbw."""
    net = network(bandwidth, latency)
    return [row for algo in algos for row in bench("allreduce", algo, ranks, sizes, net)]


def _runs(best: dict) -> list[str]:
    """{size: fastest algorithm} as runs of sizes: ["recursive_doubling 1K-64K", "halving_doubling 256K-256M"]."""
    runs: list[list] = []
    for size, algo in best.items():
        if runs and runs[-1][0] == algo:
            runs[-1][2] = size
        else:
            runs.append([algo, size, size])
    return [f"{a} {lo}" if lo == hi else f"{a} {lo}-{hi}" for a, lo, hi in runs]


class CollectivePanel(Panel):
    """World size, message size, bandwidth, latency, algorithm -> time, formula, busbw, and the curves."""

    def __init__(self, ranks: int = 8, size: str = "1M", bandwidth: str = "100Gbit/s", latency: str = "5us",
                 algo: str = "ring"):
        self.rows = None
        super().__init__({
            "ranks": slider(widgets.IntSlider, ranks, 2, cluster.MAX_RANKS, description="world size"),
            "size": slider(widgets.SelectionSlider, options=SIZES, value=size, description="message size"),
            "bandwidth": slider(widgets.SelectionSlider, options=["1Gbit/s", "10Gbit/s", "25Gbit/s", "100Gbit/s",
                                                                  "400Gbit/s"],
                                value=bandwidth, description="bandwidth"),
            "latency": slider(widgets.SelectionSlider, options=["1us", "2us", "5us", "10us", "50us"], value=latency,
                              description="latency"),
            "algo": widgets.Dropdown(options=FLAT, value=algo, description="algorithm", style=STYLE,
                                     layout=widgets.Layout(**LAYOUT)),
        })

    def render(self, ranks, size, bandwidth, latency, algo):
        self.rows = rows = measure(ranks, [parse_bytes(s) for s in SIZES], bandwidth, latency)
        row = next(r for r in rows if r["algo"] == algo and r["bytes"] == parse_bytes(size))
        net = network(bandwidth, latency)
        best = {s: min((r for r in rows if r["bytes"] == parse_bytes(s)), key=lambda r: r["time_s"])["algo"]
                for s in SIZES}
        text = "\n".join([
            f"{algo} all-reduce of {fmt_bytes(row['bytes'])} on {ranks} ranks over {bandwidth}, {latency}:",
            f"  measured {fmt_time(row['time_s'])} (virtual), formula {fmt_time(row['predicted_s'])}",
            f"  algbw {row['algbw_GBps']:.2f} GB/s, busbw {row['busbw_GBps']:.2f} GB/s "
            f"(link {net.nic.bandwidth / 1e9:g} GB/s; GB = 1e9 B)",
            "  fastest: " + ", ".join(_runs(best))])
        cross = {"ring = recursive doubling": cost.crossover("allreduce", "ring", "recursive_doubling", ranks, net)}
        fig = new_figure(7.5, 4.2)
        time_vs_size(rows, ax=fig.subplots(), crossovers=cross)
        return text, fig


def latency_sweep(ranks_list=(2, 4, 8, 16), algos=("ring", "tree", "recursive_doubling"), size: int = 1024,
                  bandwidth: str = "100Gbit/s", latency: str = "5us") -> list[dict]:
    """One small message on growing worlds: where the alpha terms of each algorithm show."""
    net = network(bandwidth, latency)
    cluster.get_cluster(max(ranks_list))                                 # one pool for the whole sweep
    return [row for p in ranks_list for algo in algos for row in bench("allreduce", algo, p, [size], net)]

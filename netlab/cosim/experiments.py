"""Experiments of chapter 6 on real ranks over the fabric: one incast round, and step-time jitter of
real training beside another job's traffic.

``incast_on_ranks`` is one parameter-server push (every rank but 0 sends a block to rank 0 at once)
through the switch, so the chapter can set its round beside the packet model's.

Chapter 6's ``fabric.experiments.jitter`` times model rounds (synchronized bursts into one port). This is
the same question asked of real training: ``ranks`` gloo ranks run ``train.fit`` (forward and
backward charged by FLOPs, a ring all-reduce of the real gradient, the optimizer step) on a
congestion fabric whose rank-0 port also carries another job's seeded Poisson flows
(``Congestion(background=...)``), once per transport. Each step's time is the slowest rank's clock
at the end of the step minus that at the end of the one before; p50, p99 and max summarise them.

Transports and their switch settings follow ``fabric.experiments.jitter``: DCTCP with its K, DCQCN with its
RED marking and PFC (RoCE is deployed lossless), Reno with drop-tail; "ideal" is a paced sender
with the same buffer (it still drops when the other job fills the port).

Left out: more than one job of real ranks (the other job is traffic only), and per-step compute
noise (every step's compute is the same FLOPs; the spread is the network's).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dataparallel import train
from .. import validate
from ..runtime import launch, pool
from ..net.network import network
from ..net.presets import device as make_device
from ..units import parse_bytes, parse_time
from ..fabric.congestion import Congestion
from ..fabric.experiments import default_ecn
from ..fabric.switch import PFC, pfc_headroom

TRANSPORTS = ("ideal", "reno", "dctcp", "dcqcn")


def _steps(comm, steps: int, width: int, batch: int):
    """Train `steps` steps with a ring all-reduce; this rank's clock after each step."""
    fit = train.fit(comm, train.FitConfig(steps=steps, width=width, batch=batch, eval_every=1, eval_from=0),
                    sync=train.AllReduce("ring"))
    return fit.history["time_s"]


def spec_for(transport: str, *, bandwidth: float, latency: float, buffer, background: float, rto_min,
             seed: int) -> Congestion:
    """The switch settings a transport runs with here (as ``fabric.experiments.jitter``)."""
    room = pfc_headroom(bandwidth, latency / 2)
    if transport == "dcqcn" and buffer <= room:
        raise ValueError(f"buffer: {buffer:,.0f} bytes cannot hold DCQCN's PFC headroom ({room:,.0f} bytes at this "
                         f"bandwidth and latency); give a larger buffer")
    pfc = PFC(buffer - room) if transport == "dcqcn" else None
    return Congestion(transport, buffer=buffer, ecn=default_ecn(transport, bandwidth), pfc=pfc, rto_min=rto_min,
                      background=background, seed=seed)


@dataclass(frozen=True, kw_only=True)
class JitterRun:
    """``step_jitter``'s run: the transports compared, the ranks, the steps and the model trained, the link,
    and the fabric's buffer and background traffic (``spec_for``). Frozen and checked when built (one
    ValueError naming the field); the link's bandwidth, latency and buffer are kept as given."""
    transports: tuple = TRANSPORTS
    ranks: int = 3
    steps: int = 12
    width: int = 64
    batch: int = 32
    bandwidth: object = "1Gbit/s"
    latency: object = "20us"
    buffer: object = "32K"
    background: float = 0.5
    rto_min: object = "200ms"
    seed: int = 0

    def __post_init__(self):
        for name in self.transports:
            validate.choice(name, "transports", TRANSPORTS)
        pool.check_ranks(self.ranks)
        object.__setattr__(self, "steps", validate.whole(self.steps, "steps", 2, 10_000))
        train.check_model(self.width, 2)
        validate.whole(self.batch, "batch", 1, 4096, int_only=True)
        self.link()

    def link(self) -> tuple[float, float, int]:
        """(bandwidth bytes/s, latency s, buffer bytes), checked."""
        bw = self.bandwidth
        bw = validate.bandwidth(bw) if isinstance(bw, str) else validate.positive(bw, "bandwidth")
        return bw, parse_time(self.latency, "latency"), parse_bytes(self.buffer, "buffer")


def step_jitter(run: JitterRun | None = None, **settings) -> dict:
    """{transport: {"times": step times (s), "p50", "p99", "max", "mean", "fabric": the run's summary}}.

    A ``JitterRun``, or its fields as keywords."""
    cfg = validate.config(JitterRun, run, settings)
    steps, width, batch, ranks = cfg.steps, cfg.width, cfg.batch, cfg.ranks
    bw, lat, buf = cfg.link()
    specs = {name: spec_for(name, bandwidth=bw, latency=lat, buffer=buf, background=cfg.background,
                            rto_min=cfg.rto_min, seed=cfg.seed) for name in cfg.transports}   # checked before any run
    out = {}
    for name, spec in specs.items():
        res = launch.run(_steps, steps, width, batch, ranks=ranks, network=network(bw, lat, congestion=spec),
                          device=make_device("cpu-core", 0.5))
        ends = np.max(np.asarray(res.values), axis=0)               # the slowest rank, step by step
        times = np.diff(np.concatenate([[0.0], ends]))
        out[name] = {"times": times, "p50": float(np.percentile(times, 50)), "p99": float(np.percentile(times, 99)),
                     "max": float(times.max()), "mean": float(times.mean()), "fabric": res.fabric,
                     "describe": spec.describe()}
    return out


# ---- one parameter-server push (an incast round) on real ranks -----------------------------------
def _push(comm, block: int):
    """Rank 0 is the server; every other rank pushes `block` bytes to it at once (one incast round)."""
    import torch
    if comm.rank == 0:
        shards = [torch.empty(block // 4) for _ in range(comm.world_size - 1)]
        comm.wait(*[comm.irecv(shard, src) for src, shard in zip(range(1, comm.world_size), shards)])
        if not all(float(shard[0]) == src for src, shard in zip(range(1, comm.world_size), shards)):
            raise RuntimeError("a pushed shard arrived wrong")
    else:
        comm.send(torch.full((block // 4,), float(comm.rank)), 0)
    return comm.now()


def incast_on_ranks(senders: int, block, bandwidth, latency, *, congestion: Congestion) -> tuple[float, dict]:
    """One parameter-server push on senders + 1 real gloo ranks through the fabric: (round s, summary)."""
    block = parse_bytes(block, "block")
    if block % 4:
        raise ValueError(f"block: a whole number of float32s (a multiple of 4 bytes), got {block}")
    res = launch.run(_push, block, ranks=senders + 1, network=network(bandwidth, latency, congestion=congestion))
    return res.values[0], res.fabric

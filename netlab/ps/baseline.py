"""The same training synchronized by ring all-reduce, with the same stragglers: the PS's competitor.

Chapter 1's data-parallel loop (``netlab.train``): every worker computes on its slice, the ranks sum
gradients with a ring all-reduce (2(p-1)/p of the model through every NIC, no extra machines),
and every rank applies the same SGD update. Synchronous by nature: a straggler holds up the ring.
Uses the PS run's configuration (model, batch, lr, momentum, stragglers), so the two runs differ
only in how the gradients meet.
"""
from __future__ import annotations

import torch

from .. import cluster, collectives, data, train
from ..net.network import network as make_network
from ..net.presets import device as make_device
from .config import PSConfig
from .experiment import make_config


def allreduce_main(comm, cfg: PSConfig) -> dict:
    model = train.make_model(cfg.width, cfg.layers, cfg.seed)
    x, y = data.load("train")
    xt, yt = data.load("test")
    p = comm.world_size
    compute_s = comm.device.seconds(train.step_flops(cfg.width, cfg.layers, cfg.batch))
    velocities, comm_s = [], []
    history = {"step": [], "time_s": [], "accuracy": []}
    steps = cfg.membership.steps
    for t in range(steps):
        idx = train.batch_indices(t, comm.rank, p, cfg.batch, len(y), cfg.seed)
        model.zero_grad(set_to_none=False)
        with comm.compute(seconds=compute_s * cfg.slow(comm.rank, t), label="forward+backward"):
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx], reduction="sum") / (p * cfg.batch)
            loss.backward()
        start = comm.now()
        flat = collectives.allreduce(comm, train.flat_grad(model), algo="ring")
        comm_s.append(comm.now() - start)
        train.set_flat_grad(model, flat)
        with torch.no_grad():
            for i, param in enumerate(model.parameters()):          # the servers' update, on every rank
                if cfg.momentum:
                    if len(velocities) <= i:
                        velocities.append(torch.zeros_like(param))
                    velocities[i].mul_(cfg.momentum).add_(param.grad)
                    param -= cfg.lr * velocities[i]
                else:
                    param -= cfg.lr * param.grad
        if comm.rank == 0 and cfg.eval_every and ((t + 1) % cfg.eval_every == 0 or t == steps - 1):
            history["step"].append(t + 1)
            history["time_s"].append(comm.now())
            history["accuracy"].append(train.accuracy(model, xt, yt))
    return {"comm_s": comm_s, "history": history}


PS_ONLY = ("servers", "sharding", "mode", "staleness", "partition_bytes")   # settings a ring has no use for


def run_allreduce(config: PSConfig | None = None, *, bandwidth="10Gbit/s", latency="5us", device="cpu-core",
                  efficiency=0.5, timeout=120.0, **settings) -> dict:
    """Ring all-reduce training with run_ps's configuration, or its settings (workers, steps, width, batch,
    lr, stragglers, ...; the parameter-server layout's are ignored)."""
    if config is not None and settings:
        raise ValueError(f"config: give a PSConfig or its settings ({', '.join(settings)}), not both")
    cfg = config if config is not None else make_config(**{k: v for k, v in settings.items() if k not in PS_ONLY},
                                                        servers=1)
    workers, steps = cfg.roles.workers, cfg.membership.steps
    cluster.check_memory(workers, cluster.rank_bytes(train.grad_bytes(cfg.width, cfg.layers), 6),
                         "this all-reduce run")
    res = cluster.run(allreduce_main, cfg, ranks=workers, network=make_network(bandwidth, latency),
                      device=make_device(device, efficiency), timeout=timeout)
    hist = res.values[0]["history"]
    per_step = [max(v["comm_s"][t] for v in res.values) for t in range(steps)]
    return {"step_s": res.trace.makespan / steps, "comm_s": sum(per_step) / steps, "history": hist,
            "accuracy": hist["accuracy"][-1] if hist["accuracy"] else float("nan"),
            "nic_bytes": [c[0] + c[1] for c in res.counters]}

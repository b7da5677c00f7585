"""The same training synchronized by ring all-reduce, with the same stragglers: the PS's competitor.

Chapter 1's data-parallel loop (``netlab.dataparallel.train``): every worker computes on its slice, the ranks sum
gradients with a ring all-reduce (2(p-1)/p of the model through every NIC, no extra machines),
and every rank applies the same SGD update (not charged to the clock: the servers' is not either).
Synchronous by nature: a straggler holds up the ring. Uses the PS run's configuration (model,
batch, lr, momentum, stragglers), so the two runs differ only in how the gradients meet.
"""
from __future__ import annotations

from ..dataparallel import train
from ..runtime import launch, memory, shared
from ..net.network import network as make_network
from ..net.presets import device as make_device
from .config import PSConfig
from .experiment import make_config


def allreduce_main(comm, cfg: PSConfig) -> dict:
    """Chapter 1's loop with the PS run's stragglers; the update is not charged, as the servers' is not."""
    fit = train.FitConfig(steps=cfg.membership.steps, width=cfg.width, layers=cfg.layers, batch=cfg.batch,
                          lr=cfg.lr, momentum=cfg.momentum, seed=cfg.seed, eval_every=cfg.eval_every,
                          charge_optimizer=False)
    res = train.fit(comm, fit, sync=train.AllReduce("ring"), slow=lambda t: cfg.slow(comm.rank, t))
    return {"comm_s": res.comm_s, "history": res.evaluated(comm.rank)}


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
    shared.check_memory(workers, memory.rank_bytes(train.grad_bytes(cfg.width, cfg.layers), 6),
                         "this all-reduce run")
    res = launch.run(allreduce_main, cfg, ranks=workers, network=make_network(bandwidth, latency),
                      device=make_device(device, efficiency), timeout=timeout)
    hist = res.values[0]["history"]
    per_step = [max(v["comm_s"][t] for v in res.values) for t in range(steps)]
    return {"step_s": res.trace.makespan / steps, "comm_s": sum(per_step) / steps, "history": hist,
            "accuracy": hist["accuracy"][-1] if hist["accuracy"] else float("nan"),
            "nic_bytes": [c[0] + c[1] for c in res.counters]}

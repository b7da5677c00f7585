"""Chapter 3's experiment: parameter-server training on real ranks, and what it cost.

``run_ps`` is what the chapter's widgets and ``python -m netlab ps`` call. It checks the settings
(one clear error naming the parameter), runs workers and servers on real ranks over an emulated
network, and reports:

* step_s: virtual seconds per step (the last worker's finish / its steps), and comm_s, the mean
  push-to-last-pull time of a step on the slowest worker;
* server_bytes: bytes through each server's NIC (in + out), server_util: the fraction of the run
  each server's incoming port was busy -- the hotspot;
* staleness: histogram of update staleness; max_gap: how far (steps) a worker ever ran ahead of
  the slowest under SSP;
* accuracy vs virtual time on worker 0, and the final test accuracy.

Defaults: plain SGD with lr 0.2, applied by the servers (0.5 trains faster, but its accuracy
curves jump about). Momentum works under BSP (the same arithmetic as all-reduce training), but
with stale pushes it adds to the implicit momentum that asynchrony already brings (Mitliagkas et
al., "Asynchrony begets momentum", 2016): at momentum 0.9 the asynchronous runs here stall near
30-40 % accuracy, so the comparison uses none.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from netlab.lazy import lazy
torch = lazy("torch", globals())

from ..dataparallel import train
from .. import validate
from ..runtime import launch, memory, pool, shared
from ..net.network import network as make_network
from ..net.presets import Device, device as make_device
from ..runtime.trace import Trace
from . import consistency
from .config import Layout, PSConfig, training_of
from .roles import Roles
from .sharding import shard_map
from .training import rank_main


@dataclass
class PSResult:
    step_s: float
    comm_s: float
    server_bytes: list
    server_util: list
    staleness: dict
    max_gap: int
    accuracy: float
    history: dict
    trace: Trace = field(repr=False)
    setup: dict = field(default_factory=dict)
    states: list = field(default_factory=list, repr=False)    # each server's ServerState (save/restore)
    workers: list = field(default_factory=list, repr=False)   # each worker's returned dict
    config: PSConfig | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        return {"step_s": self.step_s, "comm_s": self.comm_s, "server_bytes": self.server_bytes,
                "server_util": self.server_util, "staleness": {str(k): v for k, v in self.staleness.items()},
                "max_gap": self.max_gap, "accuracy": self.accuracy,
                "history": self.history, **self.setup}


def make_config(layout: Layout | None = None, **settings) -> PSConfig:
    """Check the run's layout and build the configuration the ranks receive.

    `layout`: a ``Layout``, or its fields as keywords (workers, servers, sharding, mode, staleness,
    steps, partition_bytes, membership). The other settings are PSConfig's own fields (width, layers,
    batch, lr, momentum, stragglers, slowdown, straggle, eval_every, seed, start, restore, ready),
    checked by PSConfig itself.
    """
    names = {f.name for f in fields(Layout)}
    lay = validate.config(Layout, layout, {k: v for k, v in settings.items() if k in names})
    training = {k: v for k, v in settings.items() if k not in names}
    model = training_of(training)                      # the MLP, checked before its size is used
    if "ready" in training and training["ready"] is None:
        del training["ready"]                          # None: the default wait condition
    numel = train.parameter_count(model.width, model.layers)
    return PSConfig(roles=Roles.of(lay.workers, lay.servers),
                    smap=shard_map(numel, lay.servers, lay.sharding, lay.partition_bytes),
                    membership=lay.membership, mode=lay.mode, staleness=lay.bound, **training)


def run_ps(config: PSConfig | None = None, *, colocated=False, bandwidth="10Gbit/s", latency="5us",
           device="cpu-core", efficiency=0.5, emulate=True, timeout=120.0, **settings) -> PSResult:
    """Train with `workers` workers and `servers` parameter servers on real ranks; see the module doc.

    Either a ``PSConfig`` or the settings that ``make_config`` takes (workers, servers, sharding,
    mode, staleness, steps, width, lr, ...); the network and the device are given here.
    ``colocated=True``: every rank is a worker and a server (k = p; `servers` is ignored), BSP
    only -- BytePS's summation service with no CPU servers (``hybrid.py``); server_bytes then
    counts each rank's whole NIC, its worker traffic included.
    ``emulate=False``: no emulated network, the wall clock (loopback here, or a real cluster under
    torchrun with workers + servers processes). Servers then take pushes in the order they start
    for real, so ASP/SSP results vary from run to run; BSP's model does not (sums in rank order).
    """
    if config is not None and settings:
        raise ValueError(f"config: give a PSConfig or its settings ({', '.join(settings)}), not both")
    where = {"bandwidth": bandwidth, "latency": latency, "device": device, "efficiency": efficiency,
             "timeout": timeout}
    if colocated:
        return _colocated(config, settings, where)
    cfg = config if config is not None else make_config(**settings)
    net = make_network(bandwidth, latency) if emulate else None
    dev = device if isinstance(device, Device) else make_device(device, efficiency)
    ranks = cfg.roles.world_size
    if not launch.under_torchrun():
        shared.check_memory(ranks, memory.rank_bytes(train.grad_bytes(cfg.width, cfg.layers), 6),
                             "this parameter-server run")
    res = launch.run(rank_main, cfg, ranks=ranks, network=net, device=dev if emulate else None, timeout=timeout)
    where = ({"bandwidth_Bps": net.nic.bandwidth, "latency_s": net.nic.latency, "network": net.describe()}
             if emulate else {"network": "none (wall clock)"})
    if res.fabric is not None:                         # a congestion fabric: its drops, marks, timeouts
        where["fabric"] = res.fabric
    return summarize(cfg, res, {**where, "device": dev.name, "clock": "virtual" if emulate else "wall"})


def _colocated(config: PSConfig | None, settings: dict, where: dict) -> PSResult:
    """Every rank a worker and a server: BytePS's summation service with no CPU servers."""
    from .hybrid import run_hybrid
    if config is not None:
        raise ValueError("colocated: give the settings (workers=..., steps=...), not a PSConfig: "
                         "a colocated run has no separate servers to configure")
    if consistency.check_mode(settings.get("mode", "bsp"), settings.get("staleness", 2))[0] != "bsp":
        raise ValueError(f"colocated: a colocated PS here is synchronous only (mode='bsp'), "
                         f"got mode={settings['mode']!r}")
    if (settings.get("stragglers") or settings.get("membership") is not None
            or settings.get("restore") is not None or settings.get("start")):
        raise ValueError("colocated: stragglers, membership and saved servers need separate servers "
                         "(colocated=False)")
    cfg = make_config(**{**settings, "servers": 1})             # checks every setting; `servers` is ignored
    workers, steps, sharding = cfg.roles.workers, cfg.membership.steps, cfg.smap.scheme
    training = {name: getattr(cfg, name) for name in ("width", "layers", "batch", "lr", "momentum", "seed",
                                                        "eval_every")}
    out = run_hybrid(workers=workers, cpu_servers=0, fraction=0.0, steps=steps,
                     partition_bytes=settings.get("partition_bytes"),
                     method="hash" if sharding == "hash" else "balanced", **training, **where)
    tr = out["trace"]
    util = [sum(e.end - e.start for e in tr.of(r, "recv")) / tr.makespan for r in range(workers)]
    hist = out["history"]
    setup = {"workers": workers, "servers": workers, "colocated": True, "sharding": sharding, "mode": "bsp",
             "steps": steps, "width": cfg.width, "model_bytes": out["model_bytes"], "lr": cfg.lr,
             "momentum": cfg.momentum, "network": make_network(where["bandwidth"], where["latency"]).describe(),
             "clock": "virtual"}
    setup["chunks"] = out["chunks"]
    pushes = steps * workers * out["chunks"]                     # every update is the sum of one step: never stale
    return PSResult(step_s=out["step_s"], comm_s=out["comm_s"], server_bytes=out["worker_bytes"], server_util=util,
                    staleness={0: pushes}, max_gap=0, accuracy=hist["accuracy"][-1] if hist["accuracy"] else math.nan,
                    history=hist, trace=tr, setup=setup,
                    workers=[{"worker": 0, "params": out["params"], "history": hist}])


def summarize(cfg: PSConfig, res, extra: dict) -> PSResult:
    workers = [v for v in res.values if v["role"] == "worker"]
    servers = sorted((v for v in res.values if v["role"] == "server"), key=lambda v: v["server"])
    tr = res.trace
    worker_ranks = [cfg.roles.worker_rank(v["worker"]) for v in workers]
    finish = max(tr.clocks[r] for r in worker_ranks)
    most = max(v["steps"] for v in workers)
    step_s = finish / most if most else 0.0           # every run's clock starts at 0
    per_step = [v["comm_s"] for v in workers if v["comm_s"]]
    comm_s = sum(max(c[i] for c in per_step if i < len(c)) for i in range(most)) / most if per_step else 0.0
    server_ranks = cfg.roles.server_ranks()
    server_bytes = [res.counters[r][0] + res.counters[r][1] for r in server_ranks]
    busy = [sum(e.end - e.start for e in tr.of(r, "recv")) for r in server_ranks]
    util = [b / tr.makespan if tr.makespan else 0.0 for b in busy]
    records = [rec for s in servers for rec in s["state"].records]
    gaps = [g for s in servers for g in s["state"].gaps]
    w0 = next(v for v in workers if v["worker"] == 0)
    history = w0["history"]
    setup = {"workers": cfg.roles.workers, "servers": cfg.roles.servers, "sharding": cfg.smap.scheme,
             "chunks": len(cfg.smap.chunks), "mode": cfg.mode,
             "staleness_bound": None if math.isinf(cfg.staleness) else cfg.staleness,
             "steps": cfg.membership.steps, "width": cfg.width, "model_bytes": 4 * cfg.smap.numel,
             "stragglers": cfg.stragglers, "slowdown": cfg.slowdown, "straggle": cfg.straggle, "lr": cfg.lr,
             "momentum": cfg.momentum, **extra}
    return PSResult(step_s=step_s, comm_s=comm_s, server_bytes=server_bytes, server_util=util,
                    staleness=consistency.histogram(r[3] for r in records), max_gap=max(gaps, default=0),
                    accuracy=history["accuracy"][-1] if history["accuracy"] else math.nan, history=history, trace=tr,
                    setup=setup, states=[s["state"] for s in servers],
                    workers=sorted(workers, key=lambda v: v["worker"]), config=cfg)


def assemble(result: PSResult) -> np.ndarray:
    """The model the servers hold at the end, as one flat fp32 vector (numpy)."""
    flat = np.empty(result.config.smap.numel, dtype=np.float32)
    for c in result.config.smap.chunks:
        flat[c.offset:c.offset + c.length] = result.states[c.server].values[c.index]
    return flat

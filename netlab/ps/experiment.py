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
from dataclasses import dataclass, field

import torch

from .. import cluster, train, validate
from ..net.network import network as make_network
from ..net.presets import Device, device as make_device
from ..runtime.trace import Trace
from . import consistency
from .config import PSConfig
from .roles import Membership, Roles
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


def _number(value, name, low=0.0, high=math.inf, whole=False):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= high
    if whole:
        ok = ok and float(value).is_integer()
    if not ok:
        kind = "a whole number" if whole else "a number"
        raise ValueError(f"{name}: must be {kind} from {low:g} to {high:g}, got {value!r}")
    return int(value) if whole else float(value)


def make_config(workers=4, servers=1, sharding="range", mode="bsp", staleness=2, steps=50, width=128, layers=2,
                batch=32, lr=0.2, momentum=0.0, stragglers=0, slowdown=1.0, straggle="random", partition_bytes=None,
                membership: Membership | None = None, eval_every=10, seed=0, start=0, restore=None,
                ready=None) -> PSConfig:
    """Check every setting and build the configuration the ranks receive."""
    validate.whole(servers, "servers", 1, cluster.MAX_RANKS)
    roles = Roles.of(workers, servers)
    mode, bound = consistency.check_mode(mode, staleness)
    steps = _number(steps, "steps", 1, 100_000, whole=True)
    train.check_model(width, layers)
    _number(batch, "batch", 1, 4096, whole=True)
    lr, momentum = validate.positive(lr, "lr", 100.0), _number(momentum, "momentum", 0.0, 0.999)
    validate.whole(staleness, "staleness", 0, 100_000)
    validate.whole(eval_every, "eval_every", 0, 100_000)            # 0: no evaluation
    validate.seed(seed)
    if partition_bytes is not None:                    # 0: one message per server, range sharding only
        validate.whole(partition_bytes, "partition_bytes", 0 if sharding == "range" else 1, 1 << 30)
    stragglers = _number(stragglers, "stragglers", 0, workers, whole=True)
    slowdown = _number(slowdown, "slowdown", 1.0, 1000.0)
    if straggle not in ("random", "fixed"):
        raise ValueError(f"straggle: must be 'random' (a new set of slow workers each step) or 'fixed', got {straggle!r}")
    membership = membership or Membership(workers, steps)
    if membership.workers != workers or membership.steps != steps:
        raise ValueError(f"membership: made for {membership.workers} workers and {membership.steps} steps, "
                         f"the run has {workers} and {steps}")
    if mode != "bsp" and membership.join:
        raise ValueError("membership: workers can join between steps only under BSP (mode='bsp')")
    start = _number(start, "start", 0, steps - 1, whole=True)
    if restore is not None and len(restore) != servers:
        raise ValueError(f"restore: need one saved state per server ({servers}), got {len(restore)}")
    numel = train.parameter_count(width, layers)
    kwargs = {} if ready is None else {"ready": ready}
    return PSConfig(roles, shard_map(numel, servers, sharding, partition_bytes), membership, mode, bound, lr,
                    momentum, width, layers, batch, seed, stragglers, slowdown, straggle, eval_every, start,
                    tuple(restore) if restore is not None else None, **kwargs)


def run_ps(workers=4, servers=1, sharding="range", mode="bsp", staleness=2, bandwidth="10Gbit/s", latency="5us",
           steps=50, width=128, layers=2, batch=32, lr=0.2, momentum=0.0, stragglers=0, slowdown=1.0,
           straggle="random", partition_bytes=None, membership=None, eval_every=10, device="cpu-core",
           efficiency=0.5, seed=0, start=0, restore=None, ready=None, colocated=False, emulate=True,
           timeout=120.0) -> PSResult:
    """Train with `workers` workers and `servers` parameter servers on real ranks; see the module doc.

    ``colocated=True``: every rank is a worker and a server (k = p; `servers` is ignored), BSP
    only -- BytePS's summation service with no CPU servers (``hybrid.py``); server_bytes then
    counts each rank's whole NIC, its worker traffic included.
    ``emulate=False``: no emulated network, the wall clock (loopback here, or a real cluster under
    torchrun with workers + servers processes). Servers then take pushes in the order they start
    for real, so ASP/SSP results vary from run to run; BSP's model does not (sums in rank order).
    """
    if colocated:
        if consistency.check_mode(mode, staleness)[0] != "bsp":
            raise ValueError(f"colocated: a colocated PS here is synchronous only (mode='bsp'), got mode={mode!r}")
        if stragglers or membership is not None or restore is not None or start:
            raise ValueError("colocated: stragglers, membership and saved servers need separate servers "
                             "(colocated=False)")
        return _colocated(workers, sharding, bandwidth, latency, steps, width, layers, batch, lr, momentum,
                          partition_bytes, eval_every, device, efficiency, seed, timeout)
    cfg = make_config(workers, servers, sharding, mode, staleness, steps, width, layers, batch, lr, momentum,
                      stragglers, slowdown, straggle, partition_bytes, membership, eval_every, seed, start, restore,
                      ready)
    net = make_network(bandwidth, latency) if emulate else None
    dev = device if isinstance(device, Device) else make_device(device, efficiency)
    ranks = cfg.roles.world_size
    if not cluster.under_torchrun():
        cluster.check_memory(ranks, 80e6 + 6 * train.grad_bytes(width, layers), "this parameter-server run")
    res = cluster.run(rank_main, cfg, ranks=ranks, network=net, device=dev if emulate else None, timeout=timeout)
    where = ({"bandwidth_Bps": net.nic.bandwidth, "latency_s": net.nic.latency, "network": net.describe()}
             if emulate else {"network": "none (wall clock)"})
    return summarize(cfg, res, {**where, "device": dev.name, "clock": "virtual" if emulate else "wall"})


def _colocated(workers, sharding, bandwidth, latency, steps, width, layers, batch, lr, momentum, partition_bytes,
               eval_every, device, efficiency, seed, timeout) -> PSResult:
    from .hybrid import run_hybrid
    if sharding not in ("range", "hash"):
        raise ValueError(f"sharding: must be one of range, hash, got {sharding!r}")
    out = run_hybrid(workers, 0, 0.0, bandwidth, latency, steps, width, layers, batch, lr, momentum, partition_bytes,
                     eval_every, device, efficiency, seed, timeout, method="hash" if sharding == "hash" else "balanced")
    tr = out["trace"]
    util = [sum(e.end - e.start for e in tr.of(r, "recv")) / tr.makespan for r in range(workers)]
    hist = out["history"]
    setup = {"workers": workers, "servers": workers, "colocated": True, "sharding": sharding, "mode": "bsp",
             "steps": steps, "width": width, "model_bytes": out["model_bytes"], "lr": lr, "momentum": momentum,
             "network": make_network(bandwidth, latency).describe(), "clock": "virtual"}
    setup["chunks"] = out["chunks"]
    pushes = steps * workers * out["chunks"]                     # every update is the sum of one step: never stale
    return PSResult(out["step_s"], out["comm_s"], out["worker_bytes"], util, {0: pushes}, 0,
                    hist["accuracy"][-1] if hist["accuracy"] else math.nan, hist, tr, setup,
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
    return PSResult(step_s, comm_s, server_bytes, util, consistency.histogram(r[3] for r in records),
                    max(gaps, default=0), history["accuracy"][-1] if history["accuracy"] else math.nan,
                    history, tr, setup, [s["state"] for s in servers],
                    sorted(workers, key=lambda v: v["worker"]), cfg)


def assemble(result: PSResult) -> torch.Tensor:
    """The model the servers hold at the end, as one flat fp32 vector."""
    flat = torch.empty(result.config.smap.numel)
    for c in result.config.smap.chunks:
        flat[c.offset:c.offset + c.length] = result.states[c.server].values[c.index]
    return flat

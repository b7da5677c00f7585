"""Chapter 1's experiment: one data-parallel step on real ranks, and how it scales with nodes.

``measure_step`` is what the chapter's widgets and ``python -m netlab step`` both call: it runs
``train.step`` on N real ranks over an emulated network (or the wall clock) and reports the step's
compute, communication and total time, the loss, and the per-rank trace.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import collectives, data, validate
from . import train
from ..runtime import launch, memory, pool, shared
from ..net.network import Network, network as make_network
from ..net.presets import Device, device as make_device
from ..runtime.trace import Trace
from ..units import parse_bytes


@dataclass
class StepResult:
    ranks: int
    compute_s: float            # forward + backward + optimizer, slowest rank
    comm_s: float               # gradient all-reduce, slowest rank
    total_s: float              # the step: when the slowest rank finished
    loss: float                 # global-batch mean loss before the update
    grad_bytes: int             # fp32 gradient bytes per rank
    clock: str                  # "virtual" or "wall"
    trace: Trace = field(repr=False)
    setup: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"ranks": self.ranks, "compute_s": self.compute_s, "comm_s": self.comm_s,
                "total_s": self.total_s, "loss": self.loss, "grad_bytes": self.grad_bytes,
                "clock": self.clock, **self.setup}


@dataclass(frozen=True, kw_only=True)
class StepConfig:
    """One step of chapter 1's experiment: the ranks, the network, the model, the device, buckets and overlap.

    Frozen and keyword-only, checked when built (one ValueError naming the field), so a bad value
    fails in the notebook, never on a rank. ``bucket`` (bytes, or "1M") and/or ``overlap=True``:
    DDP-style gradient buckets (``netlab.dataparallel.overlap``), all-reduced during the backward pass
    when ``overlap`` is on, after it when off; ``bucket=None`` with overlap is DDP's default (1 MiB
    first bucket, then 25 MiB). ``emulate=False``: the wall clock, no emulated network.
    """
    ranks: int = 4
    bandwidth: object = "10Gbit/s"
    latency: object = "5us"
    preset: str | None = None
    width: int = 512
    layers: int = 2
    batch: int = 32                     # samples per rank
    algo: str = "ring"
    device: str | Device = "cpu-core"
    efficiency: float = 0.5
    emulate: bool = True
    timeout: float = 120.0
    bucket: object = None
    overlap: bool = False

    def __post_init__(self):
        pool.check_ranks(self.ranks)
        train.check_model(self.width, self.layers)
        try:
            samples = data.size("train")            # ranks x batch must fit in the training set
        except FileNotFoundError:
            samples = 1 << 20
        validate.whole(self.batch, "batch", 1, max(1, samples // self.ranks), int_only=True)
        algo = collectives.resolve("allreduce", self.algo)[1]     # unknown algorithm: fail here, not on a rank
        object.__setattr__(self, "algo", algo)


def measure_step(config: StepConfig | None = None, **settings) -> StepResult:
    """One training step on real ranks (``StepConfig``, or its fields as keywords); virtual time unless
    ``emulate=False``.

    With buckets or overlap (see ``StepConfig``) the result also has exposed_comm_s and overlap_frac,
    read from the trace (``netlab.observe.analysis``).
    """
    cfg = validate.config(StepConfig, config, settings)
    ranks, bandwidth, latency, preset = cfg.ranks, cfg.bandwidth, cfg.latency, cfg.preset
    width, layers, batch, algo = cfg.width, cfg.layers, cfg.batch, cfg.algo
    device, efficiency, emulate, timeout, bucket, overlap = (cfg.device, cfg.efficiency, cfg.emulate, cfg.timeout,
                                                             cfg.bucket, cfg.overlap)
    if not launch.under_torchrun():
        shared.check_memory(ranks, memory.rank_bytes(train.grad_bytes(width, layers), 5, memory.LIGHT_RANK_BASE),
                             "this step")
    bucketed = bucket is not None or overlap
    if bucketed:
        from . import buckets
        caps = buckets.ddp_caps(None) if bucket is None else (None, buckets.check_bucket_bytes(
            parse_bytes(bucket, "bucket") if isinstance(bucket, str) else bucket))
    net: Network | None = make_network(bandwidth, latency, preset)     # checked even when unused
    if not emulate:
        net = None
    dev = device if isinstance(device, Device) else make_device(device, efficiency)
    if bucketed:
        return _bucketed(ranks, net, dev=dev, timeout=timeout, width=width, layers=layers, batch=batch, algo=algo,
                         caps=caps, overlap=bool(overlap))
    res = launch.run(train.step, ranks=ranks, network=net, device=dev, timeout=timeout,
                      width=width, layers=layers, batch=batch, algo=algo)
    tr = res.trace
    compute = max(sum(e.end - e.start for e in tr.of(r, "compute")) for r in range(ranks))
    setup = {"algo": algo, "width": width, "layers": layers, "batch_per_rank": batch,
             "device": dev.name, "efficiency": dev.efficiency,
             "network": net.describe() if net else "none (wall clock, loopback)"}
    if net is not None:
        setup.update(bandwidth_Bps=net.nic.bandwidth, latency_s=net.nic.latency)
    return StepResult(ranks=ranks, compute_s=compute, comm_s=max(v["comm_s"] for v in res.values), total_s=tr.makespan,
                      loss=sum(v["loss"] for v in res.values), grad_bytes=res.values[0]["grad_bytes"],
                      clock="virtual" if net else "wall", trace=tr, setup=setup)


def _bucketed(ranks, net, dev, timeout, width, layers, batch, algo, caps, overlap) -> StepResult:
    from ..observe import analysis
    from . import overlap as ov
    first, cap = caps
    res = launch.run(ov.overlapped_step, ranks=ranks, network=net, device=dev, timeout=timeout, width=width,
                      layers=layers, batch=batch, algo=algo, bucket_bytes=cap, first_bucket_bytes=first,
                      overlap=overlap)
    tr = res.trace
    compute = max(sum(e.end - e.start for e in tr.of(r, "compute")) for r in range(ranks))
    rows = analysis.breakdown(tr)
    worst = max(rows, key=lambda row: row["exposed_comm_s"])
    setup = {"algo": algo, "width": width, "layers": layers, "batch_per_rank": batch,
             "device": dev.name, "efficiency": dev.efficiency,
             "network": net.describe() if net else "none (wall clock, loopback)",
             "bucket_bytes": cap, "first_bucket_bytes": first if first is not None else cap, "overlap": overlap,
             "buckets": [b["bytes"] for b in res.values[0]["buckets"]],
             "exposed_comm_s": worst["exposed_comm_s"], "overlap_frac": worst["overlap_frac"]}
    if net is not None:
        setup.update(bandwidth_Bps=net.nic.bandwidth, latency_s=net.nic.latency)
    return StepResult(ranks=ranks, compute_s=compute, comm_s=max(v["comm_s"] for v in res.values), total_s=tr.makespan,
                      loss=sum(v["loss"] for v in res.values), grad_bytes=res.values[0]["grad_bytes"],
                      clock="virtual" if net else "wall", trace=tr, setup=setup)


def scaling(ranks_list=(1, 2, 4, 8), bandwidths=("1Gbit/s", "10Gbit/s"), progress: bool = False,
            **kwargs) -> list[dict]:
    """Weak scaling (fixed batch per rank): throughput and efficiency for each node count and bandwidth.

    efficiency(p) = throughput(p) / (p * throughput(1)); 1.0 means perfect linear scaling.
    """
    from tqdm.auto import tqdm
    rows = []
    shared.get_cluster(max(ranks_list))          # one pool for every point of the sweep
    jobs = [(bw, p) for bw in bandwidths for p in ranks_list]
    for bw, p in tqdm(jobs, desc="scaling", disable=not progress):
        r = measure_step(ranks=p, bandwidth=bw, **kwargs)
        rows.append({"bandwidth": bw, "ranks": p, "total_s": r.total_s, "compute_s": r.compute_s,
                     "comm_s": r.comm_s, "samples_per_s": p * r.setup["batch_per_rank"] / r.total_s})
    for row in rows:
        base = next(x for x in rows if x["bandwidth"] == row["bandwidth"] and x["ranks"] == min(ranks_list))
        per_rank_base = base["samples_per_s"] / base["ranks"]
        row["efficiency"] = row["samples_per_s"] / (row["ranks"] * per_rank_base)
    return rows

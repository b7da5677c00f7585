"""Data, tensor and pipeline parallelism side by side: bytes per step and step time on one network.

``measure(mode=...)`` runs one training step of the same model on the same global batch on real
ranks over an emulated network: "dp" is chapter 1's step (``step.measure_step``, each rank a
batch/p slice, one ring all-reduce of the gradients), "tp" is ``tensor.tp_step`` and "pp" is
``pipeline.pp_step``. Each result carries what the run measured (bytes sent by all ranks, the
step's makespan, the loss) beside the closed forms of both (``formula``). ``compare`` runs the three.

What the table shows: data parallelism sends 2(p-1) x the gradient bytes whatever the batch;
tensor parallelism sends activations, so its traffic grows with the batch and the layers; the
pipeline sends the least (one activation and one gradient per cut) but pays the bubble.
Left out: hybrids (DP x TP x PP, ZeRO), overlap of communication with compute in TP and PP.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...collectives import cost
from ...dataparallel import step, train
from ... import validate
from ...runtime import launch, memory, pool, shared
from ...net.network import network as make_network
from ...net.presets import Device, device as make_device
from ...runtime.trace import Trace
from . import mlp, pipeline, tensor

MODES = ("dp", "tp", "pp")


@dataclass
class ParallelResult:
    mode: str
    ranks: int
    bytes_per_step: int        # bytes sent by all ranks in the step, as measured
    step_s: float              # the step's makespan (virtual seconds)
    compute_s: float           # forward, backward and optimizer of the busiest rank
    loss: float                # the global batch's mean loss before the update
    formula_bytes: int         # the closed forms of both
    formula_s: float
    setup: dict = field(default_factory=dict)
    trace: Trace | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        return {"mode": self.mode, "ranks": self.ranks, "bytes_per_step": self.bytes_per_step, "step_s": self.step_s,
                "compute_s": self.compute_s, "loss": self.loss, "formula_bytes": self.formula_bytes,
                "formula_s": self.formula_s, **self.setup}


def formula(mode: str, *, ranks: int, width: int, layers: int, batch: int, micro_batches: int, network,
            device: Device) -> tuple[int, float]:
    """(bytes all ranks send, step seconds) of one step, in closed form."""
    if mode == "dp":
        grad = train.grad_bytes(width, layers)
        flops = train.step_flops(width, layers, batch // ranks) + 2 * train.parameter_count(width, layers)
        comm = cost.ring_allreduce(ranks, grad, network.nic, network.gamma) if ranks > 1 else 0.0
        return 2 * (ranks - 1) * grad, device.seconds(flops) + comm
    if mode == "tp":
        return (tensor.traffic(width, layers, batch, ranks),
                tensor.step_time(width, layers, batch, ranks, network=network, device=device))
    return (pipeline.traffic(width, batch, ranks),
            pipeline.step_time(width, layers, batch, ranks, micro_batches=micro_batches, network=network,
                               device=device))


@dataclass(frozen=True, kw_only=True)
class ParallelConfig:
    """One step of `mode` ("dp", "tp" or "pp"): the ranks, the network, the model, the global batch, the device.

    Frozen and keyword-only, checked when built (one ValueError naming the field), so a bad value
    fails before any rank starts. `batch` is the global batch; `micro_batches` is the pipeline's.
    """
    mode: str = "dp"
    ranks: int = 4
    bandwidth: object = "10Gbit/s"
    latency: object = "50us"
    width: int = 256
    layers: int = 4
    batch: int = 256
    micro_batches: int = 4
    device: str | Device = "cpu-core"
    efficiency: float = 0.5
    timeout: float = 120.0

    def __post_init__(self):
        mode, ranks, width, layers, batch = self.mode, self.ranks, self.width, self.layers, self.batch
        validate.choice(mode, "mode", MODES)
        pool.check_ranks(ranks)
        train.check_model(width, layers)
        micro_batches = validate.whole(self.micro_batches, "micro_batches", 1, pipeline.MAX_MICRO, int_only=True)
        object.__setattr__(self, "micro_batches", micro_batches)
        mlp.check_batch(batch, ranks if mode == "dp" else micro_batches if mode == "pp" else 1)
        if mode == "tp":
            tensor.check(width, layers, ranks)
        if mode == "pp":
            pipeline.check(width, layers, ranks, micro_batches, batch=batch)


def measure(mode: str | ParallelConfig = "dp", **settings) -> ParallelResult:
    """One step of `mode` ("dp", "tp" or "pp") on real ranks: a ``ParallelConfig``, or a mode and the
    config's fields as keywords (ranks=4, bandwidth, latency, width, layers, batch = the global batch, ...)."""
    if isinstance(mode, ParallelConfig):
        cfg = validate.config(ParallelConfig, mode, settings)
    else:
        cfg = ParallelConfig(mode=mode, **settings)
    mode, ranks, bandwidth, latency = cfg.mode, cfg.ranks, cfg.bandwidth, cfg.latency
    width, layers = cfg.width, cfg.layers
    batch, micro_batches, device, efficiency, timeout = (cfg.batch, cfg.micro_batches, cfg.device, cfg.efficiency,
                                                         cfg.timeout)
    net = make_network(bandwidth, latency)
    dev = device if isinstance(device, Device) else make_device(device, efficiency)
    setup = {"width": width, "layers": layers, "batch": batch, "micro_batches": micro_batches if mode == "pp" else 1,
             "bandwidth_Bps": net.nic.bandwidth, "latency_s": net.nic.latency, "device": dev.name,
             "efficiency": dev.efficiency}
    if mode == "pp":
        setup["bubble"] = pipeline.bubble(ranks, micro_batches)
    predicted = formula(mode, ranks=ranks, width=width, layers=layers, batch=batch, micro_batches=micro_batches,
                        network=net, device=dev)
    if mode == "dp":
        r = step.measure_step(ranks=ranks, bandwidth=bandwidth, latency=latency, width=width, layers=layers,
                              batch=batch // ranks, device=dev, timeout=timeout)
        trace, loss = r.trace, r.loss
    else:
        shared.check_memory(ranks, memory.rank_bytes(train.grad_bytes(width, layers), 4, memory.LIGHT_RANK_BASE),
                             "this step")
        fn = tensor.tp_step if mode == "tp" else pipeline.pp_step
        extra = {"micro_batches": micro_batches} if mode == "pp" else {}
        res = launch.run(fn, ranks=ranks, network=net, device=dev, timeout=timeout, width=width, layers=layers,
                          batch=batch, **extra)
        trace = res.trace
        loss = res.values[0]["loss"] if mode == "tp" else sum(v["loss"] for v in res.values)
    compute = max(sum(e.end - e.start for e in trace.of(r, "compute")) for r in range(ranks))
    sent = sum(e.bytes for e in trace.events if e.kind == "send")
    return ParallelResult(mode=mode, ranks=ranks, bytes_per_step=sent, step_s=trace.makespan, compute_s=compute,
                          loss=loss, formula_bytes=predicted[0], formula_s=predicted[1], setup=setup, trace=trace)


def compare(*, ranks: int = 4, bandwidth="10Gbit/s", latency="50us", modes=MODES, **kwargs) -> list[ParallelResult]:
    """``measure`` for each of `modes` on the same network, model and global batch."""
    for m in modes:
        validate.choice(m, "mode", MODES)
    return [measure(m, ranks=ranks, bandwidth=bandwidth, latency=latency, **kwargs) for m in modes]

"""Train chapter 1's digits MLP on real ranks with a compressed gradient exchange.

``train_compressed`` is the rank function: chapter 1's loop (``netlab.dataparallel.train.fit``) with the sync
replaced by a compression pipeline (``Counted`` wraps it to count bytes), and the optimizer's
momentum turned off when the method carries its own (DGC's momentum correction). It records
accuracy against steps and against the virtual clock, and the bytes each rank really put on the
wire per step.

``run_training`` launches it from a ``TrainConfig`` (``config.py``) or the same keywords: it prices
the codec's compute first (``codec_cost``: the per-element model by default, or measured here), so
that compressing is charged to the clock like any other compute, then returns a ``TrainResult``.

Divergence: the summed gradient is the same on every rank, so when it stops being finite all ranks
see it at once, stop, and report the step (the last finite model is evaluated). A run never hangs
on a NaN.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from netlab.lazy import lazy
torch = lazy("torch", globals())

from ..dataparallel import train
from ..runtime import launch, memory, shared
from ..net.network import network as make_network
from ..net.presets import Device, device as make_device
from . import make
from .methods import SyncConfig
from .codec_cost import codec_seconds
from .config import TrainConfig

class Counted(train.Sync):
    """A compression pipeline as ``train.fit``'s sync, counting the bytes it really sent and its payloads."""
    returns, region = "gradient", None

    def __init__(self, pipeline):
        self.pipeline, self.wire_bytes, self.payload_bytes = pipeline, 0, 0

    def __call__(self, comm, flat: torch.Tensor, step: int) -> torch.Tensor:
        sent = comm.bytes_sent
        flat = self.pipeline.sync(comm, flat, step)
        self.wire_bytes += comm.bytes_sent - sent
        self.payload_bytes += self.pipeline.payload_bytes
        return flat


def train_compressed(comm, cfg: TrainConfig, *, encode_s: float = 0.0, decode_s: float = 0.0,
                     sync_factory=None) -> dict:
    """Rank function: train as `cfg` says; history of accuracy (rank 0), time and wire bytes.

    encode_s / decode_s: the codec's compute charged per step. `sync_factory(comm)`, when given,
    builds the sync object instead of `cfg.method` (an exercise's answer plugs in this way).
    """
    model = train.make_model(cfg.width, cfg.layers, cfg.seed)
    shapes = [tuple(p.shape) for p in model.parameters()]
    if sync_factory is not None:
        pipeline = sync_factory(comm)
    else:
        pipeline = make(SyncConfig(method=cfg.method, error_feedback=cfg.error_feedback, shapes=shapes,
                                   world_size=comm.world_size, comm_rank=comm.rank, seed=cfg.seed, encode_s=encode_s,
                                   decode_s=decode_s, **cfg.options))
    sync = Counted(pipeline)
    fit = train.FitConfig.like(cfg, momentum=0.0 if pipeline.handles_momentum else cfg.momentum,
                               stop_if_not_finite=True)
    res = train.fit(comm, fit, sync=sync, model=model)
    return {**res.history, "wire_bytes": sync.wire_bytes, "payload_bytes": sync.payload_bytes,
            "steps_done": res.steps_done, "diverged": res.diverged, "clock_s": comm.now()}


@dataclass
class TrainResult:
    method: str
    error_feedback: bool
    options: dict
    steps: list                 # evaluation points (step numbers)
    accuracy: list              # test accuracy at each point (rank 0's model; all ranks hold the same)
    time_s: list                # virtual (or wall) clock at each point, rank 0
    loss: list                  # global-batch training loss at each point
    final_accuracy: float
    bytes_per_step: float       # bytes one rank sent per step, mean over ranks and steps (wire)
    payload_bytes: float        # bytes of one rank's compressed gradient per step (mean)
    dense_bytes: int            # fp32 gradient bytes per rank
    compression_ratio: float    # dense_bytes / payload_bytes
    step_s: float               # mean step time on the clock (slowest rank / steps)
    diverged: int | None        # the step at which the summed gradient stopped being finite
    encode_s: float             # charged compute per step for compressing (seconds, device-scaled)
    decode_s: float             # ... per decoded payload
    setup: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def run_training(method: str | TrainConfig = "none", *, bandwidth="1Gbit/s", latency="5us",
                 device: str | Device = "cpu-core", efficiency: float = 0.5, timeout: float = 300.0,
                 sync_factory=None, **settings) -> TrainResult:
    """Train with `method` on real ranks over an emulated network; see ``TrainResult``.

    Either a ``TrainConfig`` or a method name and the config's settings (ranks, steps, error_feedback,
    width, lr, codec, ...) with the method's options beside them (ratio=0.01, rank=2, ...).
    codec: how compress/decompress compute is charged (``codec_cost``): "model" (default, per-element
    FLOPs from the committed calibration: the same on every machine), "measured" (timed here, now)
    or "free" (nothing).
    """
    if isinstance(method, TrainConfig):
        if settings:
            raise ValueError(f"config: give a TrainConfig or its settings ({', '.join(settings)}), not both")
        cfg = method
    else:
        cfg = TrainConfig.of(method, **settings)
    method, ranks, steps, options = cfg.method, cfg.ranks, cfg.steps, cfg.options
    width, layers, batch = cfg.width, cfg.layers, cfg.batch
    net = make_network(bandwidth, latency)
    dev = device if isinstance(device, Device) else make_device(device, efficiency)
    encode_s = decode_s = 0.0
    if sync_factory is None:
        encode_s, decode_s = codec_seconds(method, ranks, width, layers, batch=batch, device=dev,
                                           error_feedback=cfg.error_feedback, codec=cfg.codec, **options)
    if not launch.under_torchrun():
        shared.check_memory(ranks, memory.rank_bytes(train.grad_bytes(width, layers), 12), "this training run")
    res = launch.run(train_compressed, cfg, ranks=ranks, network=net, device=dev, timeout=timeout, encode_s=encode_s,
                      decode_s=decode_s, sync_factory=sync_factory)
    h0 = res.values[0]
    done = steps if h0["diverged"] is None else h0["diverged"] + 1      # gradient exchanges that ran
    losses = [sum(v["loss"][i] for v in res.values) for i in range(len(h0["loss"]))]
    wire = sum(v["wire_bytes"] for v in res.values) / (ranks * done)
    payload = sum(v["payload_bytes"] for v in res.values) / (ranks * done)
    dense = train.grad_bytes(width, layers)
    setup = {"ranks": ranks, "network": net.describe(), "device": dev.name, "efficiency": dev.efficiency,
             "width": width, "layers": layers, "batch_per_rank": batch, "lr": cfg.lr, "momentum": cfg.momentum,
             "seed": cfg.seed, "codec": cfg.codec}
    return TrainResult(method=method, error_feedback=cfg.error_feedback, options=dict(options), steps=h0["step"],
                       accuracy=h0["accuracy"], time_s=h0["time_s"], loss=losses, final_accuracy=h0["accuracy"][-1],
                       bytes_per_step=wire, payload_bytes=payload, dense_bytes=dense,
                       compression_ratio=dense / payload if payload else math.inf, step_s=res.trace.makespan / done,
                       diverged=h0["diverged"], encode_s=encode_s, decode_s=decode_s, setup=setup)

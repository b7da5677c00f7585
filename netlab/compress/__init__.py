"""Gradient compression (chapter 4): compressors, error-feedback memory, and how payloads travel.

    from netlab import compress
    sync = compress.make("topk", ratio=0.01, error_feedback=True)        # in rank code
    summed = sync.sync(comm, my_grad_share, step)                        # like an all-reduce

    from netlab.compress.training import run_training               # from a notebook: real ranks
    run_training("topk", ranks=4, steps=300, ratio=0.01, error_feedback=True)
    from netlab.compress.pays import step_times                     # step time over bandwidths
    step_times(["none", "fp16", "topk"], bandwidths=["100Mbit/s", "10Gbit/s"])

``make`` builds a pipeline from a ``SyncConfig`` (``methods.py``: the catalogue, each knob's default,
the config). Split as GRACE splits it: ``base`` (Compressor, Payload, bit packing), ``error_feedback`` (error feedback),
``communicate`` (all-reduce / all-gather of payloads, the ``Compression`` pipeline), and one file per
family: ``quantize`` (fp16, bf16, int8, QSGD, TernGrad), ``sign`` (scaled sign, majority vote),
``sparsify`` (top-k, random-k, threshold), ``dgc``, ``powersgd``. ``training`` trains the digits MLP
with any of them on real ranks; ``codec_cost`` measures what compressing costs in compute;
``pays`` sweeps bandwidth to find where compression stops paying.
"""
from __future__ import annotations

from .base import Compressor, Identity, Payload, pack_bits, unpack_bits
from .communicate import Compression, allgather_payloads, allgatherv, allreduce_payload
from .dgc import DGC, DGCMemory, DGCTopK
from .error_feedback import NoMemory, ResidualMemory
from .powersgd import PowerSGD
from .quantize import QSGD, Cast, Int8, TernGrad
from .sign import MajorityVote, ScaledSign
from .sparsify import RandomK, Threshold, TopK
from .methods import DEFAULTS, LEVEL_BITS, METHODS, SyncConfig, check_method, levels_for_bits

from netlab.lazy import lazy
torch = lazy("torch", globals())

from .. import seeds


def make_compressor(method: str, ratio: float = DEFAULTS["ratio"], bits: int = DEFAULTS["bits"],
                    tau: float = DEFAULTS["tau"], *, seed: int = 0, rescale: bool = True,
                    levels: int | None = None) -> Compressor:
    """The compressor alone (no memory, no communication), e.g. for single-process experiments."""
    check_method(method)
    if method in ("dgc", "powersgd"):
        raise ValueError(f"method: {method} is a whole pipeline (its own memory); use make()")
    return {
        "none": lambda: Identity(),
        "fp16": lambda: Cast("float16"),
        "bf16": lambda: Cast("bfloat16"),
        "int8": lambda: Int8(levels),
        "qsgd": lambda: QSGD(levels if levels is not None else levels_for_bits(bits), seed=seed),
        "terngrad": lambda: TernGrad(seed=seed),
        "sign": lambda: ScaledSign(),
        "majority": lambda: MajorityVote(),
        "topk": lambda: TopK(ratio),
        "randomk": lambda: RandomK(ratio, rescale=rescale, seed=seed),
        "threshold": lambda: Threshold(tau),
    }[method]()


def make(config: SyncConfig | str, /, **settings):
    """A ``sync(comm, grad, step)`` object: from a ``SyncConfig``, or a method name and its fields as keywords
    (``make("topk", ratio=0.01, error_feedback=True)``)."""
    if isinstance(config, SyncConfig):
        if settings:
            raise ValueError(f"config: give a SyncConfig or its settings ({', '.join(settings)}), not both")
        cfg = config
    else:
        cfg = SyncConfig(method=config, **settings)
    costs = {"algo": cfg.algo, "encode_s": cfg.encode_s, "decode_s": cfg.decode_s}
    if cfg.method == "powersgd":
        return PowerSGD(cfg.shapes, rank=cfg.rank, error_feedback=cfg.error_feedback, warm_start=cfg.warm_start,
                        start_iter=cfg.start_iter, seed=cfg.seed, **costs)
    if cfg.method == "dgc":
        return DGC(cfg.ratio, momentum=cfg.dgc_momentum, clip_norm=cfg.clip_norm, warmup_steps=cfg.warmup_steps,
                   world_size=cfg.world_size, error_feedback=cfg.error_feedback, **costs)
    seed = cfg.seed if cfg.method == "randomk" else seeds.derive(cfg.seed, seeds.NOISE, cfg.comm_rank)
    compressor = make_compressor(cfg.method, cfg.ratio, cfg.bits, cfg.tau, seed=seed, rescale=cfg.rescale)
    return Compression.of(compressor, cfg.error_feedback, **costs)


__all__ = ["METHODS", "DEFAULTS", "LEVEL_BITS", "SyncConfig", "make", "make_compressor", "check_method", "levels_for_bits",
           "Compressor", "Payload", "Identity", "Cast", "Int8", "QSGD", "TernGrad", "ScaledSign",
           "MajorityVote", "TopK", "RandomK", "Threshold", "DGC", "DGCTopK", "DGCMemory", "PowerSGD",
           "NoMemory", "ResidualMemory", "Compression", "allreduce_payload", "allgather_payloads",
           "allgatherv", "pack_bits", "unpack_bits"]

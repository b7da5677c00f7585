"""Gradient compression (chapter 4): compressors, error-feedback memory, and how payloads travel.

    from netlab import compress
    sync = compress.make("topk", ratio=0.01, error_feedback=True)        # in rank code
    summed = sync.sync(comm, my_grad_share, step)                        # like an all-reduce

    from netlab.compress.training import run_training               # from a notebook: real ranks
    run_training("topk", ranks=4, steps=300, ratio=0.01, error_feedback=True)
    from netlab.compress.pays import step_times                     # step time over bandwidths
    step_times(["none", "fp16", "topk"], bandwidths=["100Mbit/s", "10Gbit/s"])

Split as GRACE splits it: ``base`` (Compressor, Payload, bit packing), ``memory`` (error feedback),
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
from .memory import NoMemory, ResidualMemory
from .powersgd import PowerSGD
from .quantize import QSGD, Cast, Int8, TernGrad
from .sign import MajorityVote, ScaledSign
from .sparsify import RandomK, Threshold, TopK

import torch

from .. import seeds, validate

# name: (knob the chapter's widgets move, one line on what it is)
METHODS = {
    "none": (None, "fp32 all-reduce, the baseline"),
    "fp16": (None, "cast to fp16, all-reduced in fp16"),
    "bf16": (None, "cast to bf16, all-reduced in bf16"),
    "int8": (None, "int8 codes, one shared scale, floor(127/p) levels: sums cannot overflow"),
    "qsgd": ("bits", "QSGD: s levels per bucket of 128, stochastic rounding (unbiased)"),
    "terngrad": (None, "TernGrad: {-1,0,1} x max|g|, stochastic (unbiased)"),
    "sign": (None, "scaled sign (EF-SignSGD): 1 bit + ||g||_1/d"),
    "majority": (None, "signSGD with majority vote: sign of the summed signs"),
    "topk": ("ratio", "top-k: largest k = ratio*d, int32 indices + fp32 values"),
    "randomk": ("ratio", "random-k x d/k (unbiased), shared indices, all-reduced"),
    "threshold": ("tau", "every |g| >= tau, indices + values, variable size"),
    "dgc": ("ratio", "DGC: momentum correction, clipping, masking, warm-up"),
    "powersgd": ("rank", "PowerSGD rank r, warm start"),
}
DEFAULTS = {"ratio": 0.01, "bits": 4, "tau": 1e-2, "rank": 1}       # each knob's default, everywhere
LEVEL_BITS = (2, 4, 8)                                              # QSGD widths a code may take


def check_method(method) -> str:
    return validate.choice(method, "method", METHODS)


def levels_for_bits(bits) -> int:
    """QSGD levels s that fill `bits` bits: codes sign * xi in [-s, s], 2s + 1 <= 2^bits."""
    validate.choice(bits, "bits", LEVEL_BITS)
    return 2 ** (bits - 1) - 1


def make_compressor(method: str, ratio: float = DEFAULTS["ratio"], bits: int = DEFAULTS["bits"],
                    tau: float = DEFAULTS["tau"], seed: int = 0, rescale: bool = True,
                    levels: int | None = None) -> Compressor:
    """The compressor alone (no memory, no communication), e.g. for single-process experiments."""
    check_method(method)
    if method in ("dgc", "powersgd"):
        raise ValueError(f"method: {method} is a whole pipeline (its own memory); use make()")
    return {
        "none": lambda: Identity(),
        "fp16": lambda: Cast(torch.float16),
        "bf16": lambda: Cast(torch.bfloat16),
        "int8": lambda: Int8(levels),
        "qsgd": lambda: QSGD(levels if levels is not None else levels_for_bits(bits), seed=seed),
        "terngrad": lambda: TernGrad(seed=seed),
        "sign": lambda: ScaledSign(),
        "majority": lambda: MajorityVote(),
        "topk": lambda: TopK(ratio),
        "randomk": lambda: RandomK(ratio, rescale=rescale, seed=seed),
        "threshold": lambda: Threshold(tau),
    }[method]()


def make(method: str, error_feedback: bool = False, *, ratio: float = DEFAULTS["ratio"],
         bits: int = DEFAULTS["bits"], tau: float = DEFAULTS["tau"], rank: int = DEFAULTS["rank"], shapes=None,
         world_size: int = 1, comm_rank: int = 0, seed: int = 0, rescale: bool = True, dgc_momentum: float = 0.9,
         clip_norm: float | None = 1.0, warmup_steps: int = 0, start_iter: int = 0, warm_start: bool = True,
         algo: str = "ring", encode_s: float = 0.0, decode_s: float = 0.0):
    """A ``sync(comm, grad, step)`` object for `method`.

    `comm_rank` seeds per-rank randomness (QSGD, TernGrad draw independently on each rank); random-k
    uses `seed` alone (its indices must agree). `shapes` (the parameters' shapes, in flat order) is
    needed by PowerSGD. DGC's `dgc_momentum` replaces the optimizer's (``handles_momentum``).
    """
    check_method(method)
    costs = {"algo": algo, "encode_s": encode_s, "decode_s": decode_s}
    if method == "powersgd":
        if shapes is None:
            raise ValueError("shapes: PowerSGD needs the parameters' shapes (e.g. [p.shape for p in model.parameters()])")
        return PowerSGD(shapes, rank=rank, error_feedback=error_feedback, warm_start=warm_start,
                        start_iter=start_iter, seed=seed, **costs)
    if method == "dgc":
        return DGC(ratio, momentum=dgc_momentum, clip_norm=clip_norm, warmup_steps=warmup_steps,
                   world_size=world_size, error_feedback=error_feedback, **costs)
    per_rank_seed = seeds.derive(seed, seeds.NOISE, comm_rank)
    compressor = make_compressor(method, ratio, bits, tau, seed=seed if method == "randomk" else per_rank_seed,
                                 rescale=rescale)
    return Compression.of(compressor, error_feedback, **costs)


__all__ = ["METHODS", "DEFAULTS", "LEVEL_BITS", "make", "make_compressor", "check_method", "levels_for_bits",
           "Compressor", "Payload", "Identity", "Cast", "Int8", "QSGD", "TernGrad", "ScaledSign",
           "MajorityVote", "TopK", "RandomK", "Threshold", "DGC", "DGCTopK", "DGCMemory", "PowerSGD",
           "NoMemory", "ResidualMemory", "Compression", "allreduce_payload", "allgather_payloads",
           "allgatherv", "pack_bits", "unpack_bits"]

"""The compression methods' catalogue, their knobs' defaults, and the one configuration a pipeline is built from.

``METHODS`` names every method with the knob the chapter's widgets move; ``DEFAULTS`` holds each
knob's default, read by the compressor classes, ``SyncConfig``, the panel and the CLI alike (one
place to change one). ``SyncConfig`` is what ``compress.make`` builds a ``sync(comm, grad, step)``
object from: keyword-only and frozen, checked when built (one ValueError naming the parameter); the
knobs themselves are checked by the compressor that takes them. Left out: anything about a training
run (model, steps, learning rate), which ``config.TrainConfig`` holds.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import validate

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


@dataclass(frozen=True, kw_only=True)
class SyncConfig:
    """One rank's gradient sync: the method, its knob, and where the rank sits.

    `comm_rank` seeds per-rank randomness (QSGD, TernGrad draw independently on each rank); random-k
    uses `seed` alone (its indices must agree). `shapes` (the parameters' shapes, in flat order) is
    needed by PowerSGD. DGC's `dgc_momentum` replaces the optimizer's (``handles_momentum``);
    `encode_s`/`decode_s` are the codec's compute charged to the clock per step (``codec_cost``).
    """
    method: str = "none"
    error_feedback: bool = False
    ratio: float = DEFAULTS["ratio"]        # top-k, random-k, DGC
    bits: int = DEFAULTS["bits"]            # QSGD
    tau: float = DEFAULTS["tau"]            # threshold
    rank: int = DEFAULTS["rank"]            # PowerSGD
    shapes: tuple | list | None = None
    world_size: int = 1
    comm_rank: int = 0
    seed: int = 0
    rescale: bool = True                    # random-k: multiply by d/k (unbiased)
    dgc_momentum: float = 0.9
    clip_norm: float | None = 1.0           # DGC's local gradient clipping
    warmup_steps: int = 0                   # DGC's density warm-up
    start_iter: int = 0                     # PowerSGD: plain all-reduce before this step
    warm_start: bool = True                 # PowerSGD: reuse last step's Q
    algo: str = "ring"                      # the all-reduce that carries summable payloads
    encode_s: float = 0.0
    decode_s: float = 0.0

    def __post_init__(self):
        check_method(self.method)
        validate.whole(self.world_size, "world_size", 1, int_only=True)
        validate.whole(self.comm_rank, "comm_rank", 0, self.world_size - 1, int_only=True)
        validate.seed(self.seed)
        if self.method == "powersgd" and self.shapes is None:
            raise ValueError("shapes: PowerSGD needs the parameters' shapes (e.g. [p.shape for p in model.parameters()])")

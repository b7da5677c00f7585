"""What one compressed-training run is: the method and its options, the ranks, the model, SGD, the codec.

``TrainConfig`` is keyword-only and frozen, and checks its values when built (one ValueError naming
the parameter), so ``training.run_training`` fails in the notebook, never on a rank. A method's
knob and extras (ratio, bits, tau, rank, warmup_steps, ...) travel in `options`, checked by building
the method's pipeline once (here if this process has torch, else on one rank of the pool, so a
notebook kernel does not import torch for it). Left out: the network, the device and the timeout, which the launcher
takes beside the config.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..dataparallel import train
from .. import validate
from ..runtime import launch, pool
from . import check_method, make
from .methods import SyncConfig
from .codec_cost import DEFAULT_CODEC, check_codec


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    method: str = "none"
    error_feedback: bool = False
    options: dict = field(default_factory=dict)     # the method's knob and extras, as ``compress.make`` takes them
    ranks: int = 4
    steps: int = 300
    width: int = 128
    layers: int = 2
    batch: int = 32                                 # samples per rank per step
    lr: float = 0.1
    momentum: float = 0.0                           # turned off by methods that carry their own (DGC)
    seed: int = 0
    eval_every: int | None = None                   # None: about 20 points a curve, at least 3 steps apart
    codec: str = DEFAULT_CODEC                      # how compress/decompress compute is charged (codec_cost)

    def __post_init__(self):
        check_method(self.method)
        pool.check_ranks(self.ranks)
        train.check_model(self.width, self.layers)
        validate.whole(self.steps, "steps", 1, 100_000, int_only=True)
        validate.whole(self.batch, "batch", 1, 4096, int_only=True)
        validate.positive(self.lr, "lr", 100.0)
        validate.seed(self.seed)
        check_codec(self.codec)
        if self.eval_every:
            validate.whole(self.eval_every, "eval_every", 1, 100_000)
        else:
            object.__setattr__(self, "eval_every", max(3, self.steps // 20))
        shapes = train.param_shapes(self.width, self.layers)
        try:                                                    # an unknown option fails here, without torch
            sync = SyncConfig(method=self.method, error_feedback=self.error_feedback, shapes=shapes,
                              world_size=self.ranks, **self.options)
        except TypeError as exc:
            raise ValueError(f"options: {self.method} does not take {', '.join(self.options)} ({exc})") from None
        problem = launch.where_torch_is(_build, sync)          # a bad value too: building the pipeline needs torch
        if problem:
            raise ValueError(problem)

    @classmethod
    def of(cls, method: str = "none", **settings) -> "TrainConfig":
        """From ``run_training``'s keywords: this class's fields, and the method's options beside them."""
        names = {f.name for f in fields(cls)} - {"options"}
        options = {k: v for k, v in settings.items() if k not in names}
        return cls(method=method, options=options, **{k: v for k, v in settings.items() if k in names})


def _build(sync: SyncConfig) -> str | None:
    """None if ``make(sync)`` builds the method's pipeline, else its error message (it pickles without torch)."""
    try:
        make(sync)
    except ValueError as exc:
        return str(exc)
    return None

"""Deep Gradient Compression (Lin et al., ICLR 2018): top-k of an accumulated *velocity*.

All four of DGC's techniques, as the reference README (synxlin/deep-gradient-compression) and
GRACE's ``DgcMemory`` implement them, on each rank:

    local gradient clipping   g <- g * min(1, (c / sqrt(p)) / ||g||)   before accumulating
                              (c bounds the summed gradient's norm; a rank's share of it is c/sqrt(p)
                              when the ranks' contributions are independent: the paper's N^-1/2)
    momentum correction       u <- m u + g ;  v <- v + u                 (accumulate velocity, not g)
    sparsify                  send top-k of v (k = density * d, indices + values, all-gathered)
    momentum factor masking   u[sent] = 0 ;  v[sent] = 0                 (v keeps what was not sent)
    warm-up                   density 25 %, 6.25 %, 1.56 %, 0.39 % ... (x 1/4 per quarter of the
                              warm-up steps) down to the target, as the paper's 4 warm-up epochs

The optimizer then applies lr * (sum of the ranks' sparse v) with *no* momentum of its own: the
momentum already lives in u (``handles_momentum``). Without error feedback, v is reset to u every
step (nothing accumulates beyond momentum).

Left out: the sampled threshold search (the reference samples 1 % of v to estimate the k-th
magnitude; exact top-k is used here), and the Nesterov variant.
"""
from __future__ import annotations

import math

from netlab.lazy import lazy
torch = lazy("torch", globals())

from .. import validate
from .base import Payload
from .communicate import Compression
from .methods import DEFAULTS
from .sparsify import TopK, _check_ratio, k_of


def density(step: int, target: float, warmup_steps: int) -> float:
    """DGC's exponential warm-up: 0.25 * 4^-stage over 4 stages of warmup_steps/4, never below target."""
    if warmup_steps <= 0 or step >= warmup_steps:
        return target
    stage = step * 4 // warmup_steps
    return max(target, 0.25 * 4.0 ** -stage)


class DGCTopK(TopK):
    """Top-k whose density follows DGC's warm-up schedule."""
    name = "dgc"

    def __init__(self, ratio: float = DEFAULTS["ratio"], warmup_steps: int = 0):
        super().__init__(ratio)
        self.warmup_steps = warmup_steps

    def describe(self):
        return f"dgc {self.ratio:.3g}" + (f" (warm-up {self.warmup_steps} steps)" if self.warmup_steps else "")

    def compress(self, x, step=0, shared=None):
        k = k_of(density(step, self.ratio, self.warmup_steps), x.numel())
        idx = self.select(x, k)
        return Payload([idx.to(torch.int32), x[idx].float()], x.numel())


class DGCMemory:
    """Momentum correction, local clipping and momentum factor masking; v is the residual."""

    def __init__(self, momentum: float = 0.9, clip_norm: float | None = None, world_size: int = 1,
                 error_feedback: bool = True):
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum: must be in [0, 1), got {momentum!r}")
        if clip_norm is not None:
            validate.positive(clip_norm, "clip_norm")
        self.momentum, self.world_size = momentum, world_size
        self.clip = None if clip_norm is None else clip_norm / math.sqrt(world_size)   # this rank's share
        self.accumulate = error_feedback
        self.error_feedback = True               # always decode its own payload: masking needs the indices
        self.u: torch.Tensor | None = None       # (d,) velocity
        self.v: torch.Tensor | None = None       # (d,) accumulated velocity: the residual

    def compensate(self, grad, step=0):
        if self.u is None:
            self.u, self.v = torch.zeros_like(grad), torch.zeros_like(grad)
        if self.clip is not None:
            norm = float(grad.norm())
            if norm > self.clip:
                grad = grad * (self.clip / norm)
        self.u = self.momentum * self.u + grad
        self.v = self.v + self.u if self.accumulate else self.u.clone()
        return self.v

    def update(self, compensated, sent, step=0, payload=None):
        idx = payload.tensors[0].long()
        self.v = compensated.clone()
        self.v[idx] = 0                          # what was sent leaves the accumulator ...
        self.u[idx] = 0                          # ... and its momentum stops pushing it (masking)

    def residual(self):
        return self.v


class DGC(Compression):
    """DGC as a ``sync``: DGCTopK + DGCMemory, all-gathered; the optimizer must not add momentum."""
    handles_momentum = True

    def __init__(self, ratio: float = DEFAULTS["ratio"], momentum: float = 0.9, clip_norm: float | None = 1.0,
                 warmup_steps: int = 0, *, world_size: int = 1, error_feedback: bool = True, **kwargs):
        _check_ratio(ratio)
        super().__init__(DGCTopK(ratio, warmup_steps),
                         DGCMemory(momentum, clip_norm, world_size, error_feedback), **kwargs)
        self._ef = error_feedback

    @property
    def error_feedback(self) -> bool:
        return self._ef

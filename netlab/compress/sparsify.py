"""Sparsification: send a few elements. Top-k, random-k and a threshold, with their indices.

* Top-k (Aji & Heafield 2017; Stich et al. 2018): the k = ratio * d largest |g_i|, sent as k int32
  indices and k fp32 values: 8k bytes, so 1 % of the elements is 2 % of the bytes. Contractive
  (||g - C(g)||^2 <= (1 - k/d) ||g||^2) and biased. Each rank picks different indices, so the
  payloads cannot be summed in flight: they are all-gathered, and the gathered volume grows with
  the number of ranks (the DGC reference's warning).
* Random-k: k indices drawn uniformly. Every rank draws *the same* indices from a generator seeded
  with (seed, step) -- a private ``torch.Generator``, never the global RNG (GRACE reseeds the
  global one) -- so the indices need not be sent and the values are all-reduced: 4k bytes. With
  ``rescale`` the values are multiplied by d/k, which makes it unbiased but not contractive (its
  error can exceed the gradient): error feedback then diverges. Without ``rescale`` it is
  contractive and biased.
* Threshold (Strom 2015): every element with |g_i| >= tau. The size varies from step to step and
  rank to rank (possibly zero), so ranks exchange sizes before the all-gather (counted).
"""
from __future__ import annotations

from netlab.lazy import lazy
torch = lazy("torch", globals())

from .. import seeds, validate
from .base import Compressor, Payload
from .methods import DEFAULTS


def _check_ratio(ratio) -> float:
    return validate.fraction(ratio, "ratio")


def k_of(ratio: float, numel: int) -> int:
    """Elements kept: round(ratio * numel), at least one."""
    return max(1, min(numel, round(ratio * numel)))


def scatter(indices: torch.Tensor, values: torch.Tensor, numel: int) -> torch.Tensor:
    out = torch.zeros(numel, dtype=torch.float32)
    out.index_put_((indices.long(),), values.float(), accumulate=True)
    return out


class TopK(Compressor):
    """The k largest magnitudes: int32 indices + fp32 values."""
    name = "topk"
    contractive = True

    def __init__(self, ratio: float = DEFAULTS["ratio"]):
        self.ratio = _check_ratio(ratio)

    def describe(self):
        return f"top-k {self.ratio:.3g}"

    def select(self, x: torch.Tensor, k: int) -> torch.Tensor:
        return torch.topk(x.abs(), k, sorted=False).indices

    def compress(self, x, step=0, shared=None):
        idx = self.select(x, k_of(self.ratio, x.numel()))
        return Payload([idx.to(torch.int32), x[idx].float()], x.numel())

    def decompress(self, payload):
        idx, values = payload.tensors
        return scatter(idx, values, payload.numel)


class RandomK(Compressor):
    """k random elements, the same on every rank (shared seed): values only, all-reduced."""
    name = "randomk"
    summable = True

    def __init__(self, ratio: float = DEFAULTS["ratio"], rescale: bool = True, seed: int = 0):
        self.ratio, self.rescale, self.seed = _check_ratio(ratio), bool(rescale), seed
        self.unbiased = self.rescale
        self.contractive = not self.rescale

    def describe(self):
        return f"random-k {self.ratio:.3g}" + (" (x d/k)" if self.rescale else "")

    def indices(self, numel: int, step: int) -> torch.Tensor:
        gen = seeds.torch_generator(self.seed, seeds.SAMPLING, step)    # same on every rank
        return torch.randperm(numel, generator=gen)[:k_of(self.ratio, numel)].sort().values

    def compress(self, x, step=0, shared=None):
        idx = self.indices(x.numel(), step)
        values = x[idx].float()
        if self.rescale:
            values = values * (x.numel() / idx.numel())
        return Payload([values], x.numel(), {"indices": idx})

    def decompress(self, payload):
        return scatter(payload.meta["indices"], payload.tensors[0], payload.numel)


class Threshold(Compressor):
    """Every element with |g_i| >= tau: a variable number of int32 indices + fp32 values."""
    name = "threshold"
    contractive = False          # below-threshold gradients are never sent: no fixed delta
    fixed_size = False

    def __init__(self, tau: float = DEFAULTS["tau"]):
        self.tau = validate.positive(tau, "tau", 1e3)        # |g| >= 1e3: nothing would ever be sent

    def describe(self):
        return f"threshold {self.tau:g}"

    def compress(self, x, step=0, shared=None):
        idx = torch.nonzero(x.abs() >= self.tau).reshape(-1)
        return Payload([idx.to(torch.int32), x[idx].float()], x.numel())

    def decompress(self, payload):
        idx, values = payload.tensors
        return scatter(idx, values, payload.numel)

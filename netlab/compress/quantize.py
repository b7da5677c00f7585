"""Quantization: fewer bits per element. fp16, bf16, int8 with a shared scale, QSGD, TernGrad.

* fp16 / bf16: cast. Summed in that format by an all-reduce, as PyTorch's ``fp16_compress_hook``
  does (a test compares the two on real ranks). fp16 keeps 11 significant bits but only 5 exponent
  bits (values below ~6e-8 flush to zero, above 65504 overflow); bf16 keeps fp32's range with 8
  significant bits. Each rank's contribution here is already its share of the global mean, so
  there is nothing to divide first (the hook divides by world size to avoid fp16 overflow).
* int8 with a scale: q = round(x / scale), scale = max|x| / L. An int8 all-reduce *overflows
  silently* (4 ranks x 100 -> -112), so the ranks first agree on one scale (an all-gather of their
  max|x|, 4 bytes each, counted) and use L = floor(127 / p) levels: any partial sum of p codes stays
  within [-127, 127]. The price: fewer levels as p grows (31 at 4 ranks, 7 at 16).
* QSGD (Alistarh et al., NeurIPS 2017): per bucket of `bucket` elements, levels xi in {0..s} with
  P[xi = l + 1] = s|v_i|/||v|| - l (stochastic rounding), sent as sign * xi packed in
  ceil(lg(2s+1)) bits (rounded up to 2, 4 or 8), plus one fp32 norm per bucket. Unbiased; GRACE's
  defaults bucket = 128. Elias coding is left out. All-gathered (norms differ per rank).
* TernGrad (Wen et al., NeurIPS 2017): clip at c*sigma (c = 2.5), s = max|g|, keep sign(g) with
  probability |g|/s: {-1, 0, 1} in 2 bits plus one fp32 scalar. Unbiased when not clipped. One
  scalar for the whole flat gradient here (the paper uses one per layer).
"""
from __future__ import annotations

from netlab.lazy import lazy
torch = lazy("torch", globals())

from .. import collectives, validate
from .base import Compressor, Payload, bits_for, pack_bits, unpack_bits
from .methods import DEFAULTS, levels_for_bits


class Cast(Compressor):
    """fp16 or bf16: half the bytes, summed in half precision."""
    summable = True
    contractive = True

    NAMES = {"float16": "fp16", "bfloat16": "bf16"}

    def __init__(self, dtype=None):                 # None: float16; a torch dtype or its name
        name = "float16" if dtype is None else dtype if isinstance(dtype, str) else str(dtype).replace("torch.", "")
        validate.choice(name, "dtype", tuple(self.NAMES))       # float16 or bfloat16, by name
        self._dtype = name                          # resolved on first use: building one needs no torch
        self.name = self.NAMES[name]

    @property
    def dtype(self):
        return getattr(torch, self._dtype)

    def compress(self, x, step=0, shared=None):
        return Payload([x.to(self.dtype)], x.numel())

    def decompress(self, payload):
        return payload.tensors[0].float()


class Int8(Compressor):
    """int8 codes with one scale shared by all ranks, and headroom so that sums never overflow."""
    name = "int8"
    summable = True
    contractive = True

    def __init__(self, levels: int | None = None):
        if levels is not None:
            validate.whole(levels, "levels", 1, 127, int_only=True)
        self.levels = levels

    def levels_for(self, world_size: int) -> int:
        """Levels L such that p * L <= 127: the sum of p codes cannot overflow int8."""
        safe = 127 // world_size
        if self.levels is not None and self.levels > safe:
            raise ValueError(f"levels: {self.levels} levels summed over {world_size} ranks can reach "
                             f"{self.levels * world_size} > 127 and overflow int8; use at most {safe}")
        return self.levels or safe

    def agree(self, comm, x):
        """All ranks use max over ranks of max|x|: an all-gather of one fp32 per rank (counted)."""
        mine = x.abs().max().reshape(1).float()
        peak = collectives.all_gather(comm, mine).max() if comm.world_size > 1 else mine[0]
        return float(peak), self.levels_for(comm.world_size)

    def compress(self, x, step=0, shared=None):
        peak, levels = shared if shared is not None else (float(x.abs().max()), self.levels_for(1))
        scale = peak / levels if peak > 0 else 1.0
        q = torch.round(x / scale).clamp_(-levels, levels).to(torch.int8)
        return Payload([q], x.numel(), {"scale": scale, "levels": levels})

    def decompress(self, payload):
        return payload.tensors[0].float() * payload.meta["scale"]


class QSGD(Compressor):
    """QSGD with s levels per bucket and stochastic rounding (unbiased)."""
    name = "qsgd"
    unbiased = True

    def __init__(self, levels: int = levels_for_bits(DEFAULTS["bits"]), bucket: int = 128, seed: int = 0):
        validate.whole(levels, "levels", 1, 127, int_only=True)
        validate.whole(bucket, "bucket", 1, int_only=True)
        self.levels, self.bucket = levels, bucket
        self.bits = bits_for(2 * levels + 1)          # codes sign*xi + s in 0..2s
        self.generator = torch.Generator().manual_seed(seed)

    def describe(self):
        return f"qsgd s={self.levels} ({self.bits} bits, bucket {self.bucket})"

    def _buckets(self, x):
        n = x.numel()
        pad = (-n) % self.bucket
        return torch.cat([x, x.new_zeros(pad)]).view(-1, self.bucket), n   # (buckets, bucket)

    def compress(self, x, step=0, shared=None):
        v, n = self._buckets(x)
        norms = v.norm(dim=1, keepdim=True)                                  # (buckets, 1)
        r = self.levels * v.abs() / norms.clamp_min(torch.finfo(x.dtype).tiny)
        low = r.floor()
        xi = low + (torch.rand(r.shape, generator=self.generator) < (r - low)).float()
        codes = (torch.sign(v) * xi + self.levels).reshape(-1)[:n]
        return Payload([pack_bits(codes, self.bits), norms.reshape(-1)], n)

    def decompress(self, payload):
        packed, norms = payload.tensors
        n = payload.numel
        codes = unpack_bits(packed, self.bits, n).float() - self.levels
        per = torch.repeat_interleave(norms, self.bucket)[:n]
        return codes / self.levels * per


class TernGrad(Compressor):
    """TernGrad: {-1, 0, 1} times one scalar, kept with probability |g| / max|g| (unbiased if unclipped)."""
    name = "terngrad"
    unbiased = True

    def __init__(self, clip: float | None = 2.5, seed: int = 0):
        if clip is not None:
            validate.positive(clip, "clip")                   # standard deviations
        self.clip = clip
        self.generator = torch.Generator().manual_seed(seed)

    def describe(self):
        return f"terngrad (clip {self.clip} sigma)" if self.clip else "terngrad (no clipping)"

    def compress(self, x, step=0, shared=None):
        if self.clip is not None:
            bound = self.clip * float(x.std()) if x.numel() > 1 else float(x.abs().max())
            x = x.clamp(-bound, bound)
        s = float(x.abs().max())
        keep = torch.rand(x.shape, generator=self.generator) * s < x.abs()    # P = |x| / s
        codes = torch.sign(x) * keep + 1                                       # 0, 1, 2
        return Payload([pack_bits(codes, 2), torch.tensor([s])], x.numel())

    def decompress(self, payload):
        packed, s = payload.tensors
        return (unpack_bits(packed, 2, payload.numel).float() - 1) * s

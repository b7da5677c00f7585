"""PowerSGD (Vogels, Karimireddy & Jaggi, NeurIPS 2019): rank-r gradients by one power iteration.

Written to match PyTorch's own ``powerSGD_hook`` (torch/distributed/algorithms/ddp_comm_hooks/
powerSGD_hook.py) step for step -- a test runs both on real gloo ranks and compares -- except that
each rank's input here is its *share* of the summed gradient and the output is the sum (the hook
takes per-rank means and returns the mean; the two agree when share = mean / p). Per step:

    error feedback   M_i <- M_i + e_i                          (per parameter, viewed as (shape[0], -1))
    which to squash  matrices with (n + m) r * min_compression_rate < n m; vectors (biases) and
                     small matrices are all-reduced uncompressed, in one contiguous buffer
    Q                warm start: last step's Q, re-orthogonalized; otherwise (and the first time)
                     standard normal from seed rng.randint(1e9), rng = RandomState(seed): the same on
                     every rank, different each draw; drawn in groups of equal shape, as the hook does
    P = M Q          all-reduce the Ps (n r floats each) -- in one buffer with the uncompressed
                     tensors, where the hook uses two all-reduces -- and orthogonalize them
                     (Gram-Schmidt for r <= 2, QR above, as the hook)
    Q = M^T P        all-reduce the Qs (m r floats each)
    M ~ P Q^T        the summed low-rank gradient
    e_i <- M_i - (P Q^T) / p   the residual against the *aggregated* approximation (as the hook and
                     the epfml reference do), so the ranks' residuals sum to what was not applied

Bytes on the wire per step: sum over squashed matrices of (n + m) r floats, plus the uncompressed
ones, each in an all-reduce (so the ratio is fp32 size / that, 20.5x for a 64-128-10 MLP at r = 1).
``start_iter`` steps of plain all-reduce come first (the hook's ``start_powerSGD_iter``, whose
default of 1000 means a short run never compresses; here the default is 0).

Left out: batching tensors of equal shape (``batch_tensors_with_same_shape``), and the epfml
library's alternating half-steps.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
from netlab.lazy import lazy
torch = lazy("torch", globals())

from .. import collectives
from .methods import DEFAULTS


def should_compress(n: int, m: int, rank: int, min_compression_rate: float) -> bool:
    """The hook's rule: compress only if (n + m) r * min_compression_rate < n m."""
    return (n + m) * rank * min_compression_rate < n * m


def orthogonalize(matrix: torch.Tensor, epsilon: float = 0.0) -> None:
    """Orthonormal columns, in place: (n, r). Gram-Schmidt for r <= 2, QR otherwise (as the hook)."""
    r = matrix.shape[1]
    if r > 2:
        q, _ = torch.linalg.qr(matrix)
        matrix.copy_(q)
        return
    for i in range(r):
        col = matrix[:, i:i + 1]
        norm = torch.norm(col, dim=0, keepdim=True)
        if epsilon == 0 and float(norm) == 0:
            col.zero_()                          # an all-zero column (a layer with zero gradient)
        else:
            col /= norm + epsilon
        if i + 1 < r:
            rest = matrix[:, i + 1:]
            rest -= torch.sum(col * rest, dim=0, keepdim=True) * col


class PowerSGD:
    """Rank-r PowerSGD over a flat gradient made of tensors of the given shapes (in that order)."""
    handles_momentum = False
    communicator = "allreduce"

    def __init__(self, shapes, rank: int = DEFAULTS["rank"], *, error_feedback: bool = True, warm_start: bool = True,
                 start_iter: int = 0, min_compression_rate: float = 2.0, seed: int = 0,
                 epsilon: float = 0.0, algo: str = "ring", encode_s: float = 0.0, decode_s: float = 0.0):
        from .. import validate
        validate.whole(rank, "rank", 1, max((min(s) for s in shapes if len(s) > 1), default=1))  # r <= min(n, m)
        validate.whole(start_iter, "start_iter", 0, int_only=True)
        self.shapes = [tuple(s) for s in shapes]
        self.rank, self.error_feedback, self.warm_start = rank, error_feedback, warm_start
        self.start_iter, self.min_compression_rate, self.epsilon = start_iter, min_compression_rate, epsilon
        self.algo, self.encode_s, self.decode_s = algo, encode_s, decode_s
        self.rng = np.random.RandomState(seed)
        self.iter = 0
        self.error: torch.Tensor | None = None
        self.qs: list[torch.Tensor] | None = None      # warm start: per squashed matrix, (m, r)
        # the plan: which tensors are squashed, their (n, m, r), and the hook's shape-grouped order
        sizes = [int(np.prod(s)) if s else 1 for s in self.shapes]
        self.offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(int).tolist()
        self.sizes = sizes
        self.squashed, self.plain = [], []
        for i, s in enumerate(self.shapes):
            n = s[0] if s else 1
            m = sizes[i] // n if n else 0
            r = min(n, m, rank)
            (self.squashed if len(s) >= 1 and should_compress(n, m, r, min_compression_rate) else self.plain).append(i)
        groups = defaultdict(list)
        for i in self.squashed:
            n = self.shapes[i][0]
            groups[(n, self.sizes[i] // n)].append(i)
        self.order = [i for members in groups.values() for i in members]       # squashed, hook's order
        self.numel = sum(sizes)
        self.payload_bytes = 4 * self.wire_elements()

    def wire_elements(self) -> int:
        """Floats this rank contributes per compressed step: Ps, Qs and the uncompressed tensors."""
        total = sum(self.sizes[i] for i in self.plain)
        for i in self.order:
            n = self.shapes[i][0]
            m = self.sizes[i] // n
            total += (n + m) * min(n, m, self.rank)
        return total

    def describe(self) -> str:
        return f"powersgd rank {self.rank}, allreduce" + (", error feedback" if self.error_feedback else "")

    def _matrix(self, flat, i):
        n = self.shapes[i][0]
        return flat[self.offsets[i]:self.offsets[i] + self.sizes[i]].view(n, -1)

    def _cost(self, comm, seconds, label):
        return comm.compute(seconds=seconds if comm.virtual else None, label=label)

    def sync(self, comm, grad: torch.Tensor, step: int = 0) -> torch.Tensor:
        """This rank's contribution in, the (low-rank approximated) sum over ranks out."""
        it, self.iter = self.iter, self.iter + 1
        if it < self.start_iter:                                     # plain all-reduce at first
            self.payload_bytes = 4 * self.numel
            return collectives.allreduce(comm, grad.clone(), algo=self.algo)
        with self._cost(comm, self.encode_s, "compress"):
            x = grad.clone()
            if self.error_feedback:
                if self.error is None:
                    self.error = torch.zeros_like(x)
                x += self.error
            compensated = x.clone()
            if self.qs is None or not self.warm_start:               # fresh Qs, the same on every rank
                gen = torch.Generator().manual_seed(int(self.rng.randint(1_000_000_000)))
                self.qs = []
                for i in self.order:
                    n = self.shapes[i][0]
                    m = self.sizes[i] // n
                    q = torch.randn(1, m, min(n, m, self.rank), generator=gen)[0]
                    orthogonalize(q, self.epsilon)
                    self.qs.append(q)
            else:
                for q in self.qs:
                    orthogonalize(q, self.epsilon)
            mats = [self._matrix(x, i) for i in self.order]
            ps = [mat @ q for mat, q in zip(mats, self.qs)]          # (n, r) each
            plain = torch.cat([x[self.offsets[i]:self.offsets[i] + self.sizes[i]] for i in self.plain]) \
                if self.plain else torch.empty(0)
        # one all-reduce for the uncompressed tensors and the Ps (the hook sends two: same bytes, one
        # latency term fewer); Ps are summed, not averaged: they are orthogonalized next
        first = torch.cat([plain] + [p.reshape(-1) for p in ps])
        if first.numel():
            collectives.allreduce(comm, first, algo=self.algo)
        plain, p_flat = first[:plain.numel()], first[plain.numel():]
        with self._cost(comm, self.decode_s / 2, "compress"):
            ps = self._split(p_flat, ps)
            for p in ps:
                orthogonalize(p, self.epsilon)
            qs = [mat.T @ p for mat, p in zip(mats, ps)]              # (m, r) each
        q_flat = torch.cat([q.reshape(-1) for q in qs]) if qs else torch.empty(0)
        if q_flat.numel():
            collectives.allreduce(comm, q_flat, algo=self.algo)      # Qs, summed
        with self._cost(comm, self.decode_s / 2, "decompress"):
            self.qs = self._split(q_flat, qs)
            out = torch.empty_like(x)
            for i, p, q in zip(self.order, ps, self.qs):
                self._matrix(out, i).copy_(p @ q.T)
            o = 0
            for i in self.plain:
                out[self.offsets[i]:self.offsets[i] + self.sizes[i]] = plain[o:o + self.sizes[i]]
                o += self.sizes[i]
            if self.error_feedback:
                self.error = compensated - out / comm.world_size
        self.payload_bytes = 4 * (plain.numel() + p_flat.numel() + q_flat.numel())
        return out.view_as(grad)

    @staticmethod
    def _split(flat, like):
        out, o = [], 0
        for t in like:
            out.append(flat[o:o + t.numel()].view_as(t).clone())
            o += t.numel()
        return out

    def residual(self):
        return self.error

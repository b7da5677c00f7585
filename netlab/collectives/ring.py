"""Ring algorithms: all-reduce = reduce-scatter + all-gather, each p-1 steps around a ring.

The buffer is cut into p chunks. In reduce-scatter step s, rank r sends chunk (r - s) mod p to
rank r+1, which adds it to its own; after p-1 steps rank r holds the full sum of chunk r+1. The
all-gather then passes the finished chunks around the ring for p-1 more steps. Each step moves n/p
bytes over every link at once, so the bandwidth term 2(p-1)/p * n/B is optimal (Patarasuk & Yuan
2009) while the latency term 2(p-1)*alpha grows with p. Baidu brought it to deep learning (2017);
Horovod and NCCL made it the default.

Left out: pipelining chunks into smaller slices (NCCL's "slices"), which hides latency but not
bandwidth; the step count here is the textbook one that the cost model uses.
"""
from __future__ import annotations

import numpy as np

from .schedule import Step, chunk_bounds


def reduce_scatter(p: int, count: int, owner_shift: int = 0):
    """Ring reduce-scatter: after p-1 steps rank r holds the sum of chunk (r + owner_shift) mod p.

    In step s rank r adds what it received into chunk (r + shift - s - 1) and passes it on, so the
    chunk it finishes last is its own. The all-reduce uses shift 1 (the textbook form).
    """
    offsets, lengths = chunk_bounds(count, p)
    r = np.arange(p)
    for s in range(p - 1):
        c = (r + owner_shift - s - 1) % p                 # chunk rank r passes on: n/p elements
        yield Step(r, (r + 1) % p, offsets[c], lengths[c], reduce=True)


def all_gather(p: int, count: int, owner_shift: int = 0):
    """Ring all-gather: rank r starts owning chunk (r + owner_shift) mod p; p-1 steps spread them all."""
    offsets, lengths = chunk_bounds(count, p)
    r = np.arange(p)
    for s in range(p - 1):
        c = (r + owner_shift - s) % p                     # chunk rank r forwards to r + 1
        yield Step(r, (r + 1) % p, offsets[c], lengths[c], reduce=False)


def allreduce(p: int, count: int):
    """Ring all-reduce in 2(p-1) steps of n/p elements each."""
    yield from reduce_scatter(p, count, owner_shift=1)
    yield from all_gather(p, count, owner_shift=1)

"""Binomial trees: reduce, broadcast, all-reduce (reduce then broadcast), and van de Geijn's
long-message broadcast (binomial scatter, then ring all-gather).

In a binomial tree the set of ranks that hold the data doubles every round, so a broadcast (or,
run backwards, a reduce) takes ceil(lg p) rounds of a whole message: ceil(lg p)(alpha + n/B). Few
rounds make it the choice for small messages; sending the whole vector every round makes it poor
for large ones. Any p works: in round k, rank v sends to v + 2^k only if that rank exists.
Ranks are numbered relative to the root (v = (rank - root) mod p).

Source: Thakur, Rabenseifner & Gropp, "Optimization of collective communication operations in
MPICH", IJHPCA 19(1), 2005 (binomial broadcast and reduce; scatter + all-gather broadcast).
"""
from __future__ import annotations

import numpy as np

from .ring import all_gather
from .schedule import Step, chunk_bounds, span


def rounds(p: int) -> int:
    """ceil(lg p): rounds of a binomial tree over p ranks."""
    return int(np.ceil(np.log2(p))) if p > 1 else 0


def _to_ranks(step: Step, p: int, root: int) -> Step:
    """Steps are built on ranks relative to the root; shift them back."""
    return Step(src=(step.src + root) % p, dst=(step.dst + root) % p, offset=step.offset, length=step.length,
                reduce=step.reduce)


def reduce(p: int, count: int, root: int = 0):
    """Binomial reduce: in round k, v with v mod 2^(k+1) = 2^k sends its partial sum to v - 2^k."""
    v = np.arange(p)
    for k in range(rounds(p)):
        senders = v[v % (2 << k) == (1 << k)]
        yield _to_ranks(Step(senders, senders - (1 << k), 0, count, reduce=True), p, root)


def broadcast(p: int, count: int, root: int = 0):
    """Binomial broadcast: in round k (from the top), v with v mod 2^(k+1) = 0 sends to v + 2^k."""
    v = np.arange(p)
    for k in reversed(range(rounds(p))):
        senders = v[(v % (2 << k) == 0) & (v + (1 << k) < p)]
        yield _to_ranks(Step(senders, senders + (1 << k), 0, count, reduce=False), p, root)


def allreduce(p: int, count: int):
    """Reduce to rank 0, then broadcast from it: 2 ceil(lg p)(alpha + n/B)."""
    yield from reduce(p, count)
    yield from broadcast(p, count)


def scatter_allgather_broadcast(p: int, count: int, root: int = 0):
    """van de Geijn: binomial scatter of p chunks (v ends with chunk v), then a ring all-gather.

    lg p alpha + (p-1)/p n/B for the scatter plus (p-1)(alpha + n/(pB)) for the all-gather: the
    bandwidth term is 2(p-1)/p n/B instead of lg p * n/B.
    """
    offsets, lengths = chunk_bounds(count, p)
    v = np.arange(p)
    for k in reversed(range(rounds(p))):
        senders = v[(v % (2 << k) == 0) & (v + (1 << k) < p)]
        first = senders + (1 << k)                      # receiver's subtree: chunks first..last-1
        last = np.minimum(senders + (2 << k), p)
        off, length = span(offsets, lengths, first, last)
        yield _to_ranks(Step(senders, first, off, length, reduce=False), p, root)
    for step in all_gather(p, count, owner_shift=0):    # v owns chunk v (relative ranks)
        yield _to_ranks(step, p, root)

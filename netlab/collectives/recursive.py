"""Recursive doubling and halving: lg p rounds of pairwise exchanges between ranks 2^k apart.

* all-reduce by recursive doubling: every round both partners exchange the whole vector and add:
  lg p (alpha + n/B). Fewest rounds, most bytes: the small-message algorithm.
* reduce-scatter by recursive halving: each round a rank sends the half of its current range it
  will not keep: lg p alpha + (p-1)/p n/B.
* all-gather by recursive doubling: the reverse, ranges doubling: lg p alpha + (p-1)/p n/B.
* all-reduce by halving-doubling (Rabenseifner): the two above back to back,
  2 lg p alpha + 2 (p-1)/p n/B -- the ring's bandwidth with logarithmic latency.

Non-powers of two (MPICH's fold): with p' = 2^floor(lg p) and r = p - p', the first 2r ranks pair
up; each even rank 2i hands its data to 2i+1 and sits out; the p' survivors run the algorithm;
2i+1 hands the result back. Survivor j is rank 2j+1 for j < r, rank j + r otherwise, and owns
the contiguous chunks of itself and its folded partner, so every range stays contiguous.

Source: Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005; Rabenseifner, "Optimization of
collective reduction operations", ICCS 2004.
"""
from __future__ import annotations

import numpy as np

from .schedule import Step, chunk_bounds, span


def fold_layout(p: int):
    """(p', r, survivor ranks): p' = largest power of two <= p, r = p - p' ranks folded away."""
    p2 = 1 << (p.bit_length() - 1)
    r = p - p2
    j = np.arange(p2)
    return p2, r, np.where(j < r, 2 * j + 1, j + r)


def _fold(p: int, count: int, reduce: bool, offsets=None, lengths=None):
    """Even ranks 2i < 2r give their data to 2i+1: the whole vector, or (with chunks) chunk 2i."""
    _, r, _ = fold_layout(p)
    if r:
        evens = 2 * np.arange(r)
        if offsets is None:
            yield Step(evens, evens + 1, 0, count, reduce=reduce)
        else:
            yield Step(evens, evens + 1, offsets[evens], lengths[evens], reduce=reduce)


def _unfold(p: int, count: int, offsets=None, lengths=None):
    """2i+1 hands 2i the result: the whole vector, or (with chunks) chunk 2i."""
    _, r, _ = fold_layout(p)
    if r:
        evens = 2 * np.arange(r)
        if offsets is None:
            yield Step(evens + 1, evens, 0, count, reduce=False)
        else:
            yield Step(evens + 1, evens, offsets[evens], lengths[evens], reduce=False)


def _halving(p2: int, alive, offsets, lengths, bounds, reduce: bool = True):
    """Recursive halving over survivors: each round send the half of your block you will not keep.

    `bounds[j]` is the first chunk survivor j owns (bounds[p2] = number of chunks).
    """
    j = np.arange(p2)
    d = p2 // 2
    while d >= 1:
        lo = (j // (2 * d)) * (2 * d)                     # current block: survivors lo..lo+2d-1
        keep_low = (j & d) == 0
        first = np.where(keep_low, lo + d, lo)            # the half to send, in survivor units
        off, length = span(offsets, lengths, bounds[first], bounds[first + d])
        yield Step(alive, alive[j ^ d], off, length, reduce=reduce)
        d //= 2


def _doubling(p2: int, alive, offsets, lengths, bounds):
    """Recursive doubling over survivors: each round send your whole block to the partner d away."""
    j = np.arange(p2)
    d = 1
    while d < p2:
        lo = (j // d) * d                                 # current block: survivors lo..lo+d-1
        off, length = span(offsets, lengths, bounds[lo], bounds[lo + d])
        yield Step(alive, alive[j ^ d], off, length, reduce=False)
        d *= 2


def allreduce_doubling(p: int, count: int):
    """Recursive doubling all-reduce: lg p rounds of whole-vector exchanges (+ fold/unfold)."""
    p2, _, alive = fold_layout(p)
    yield from _fold(p, count, reduce=True)
    j = np.arange(p2)
    d = 1
    while d < p2:
        yield Step(alive, alive[j ^ d], 0, count, reduce=True)
        d *= 2
    yield from _unfold(p, count)


def allreduce_halving_doubling(p: int, count: int):
    """Rabenseifner: fold, reduce-scatter by halving over p' equal chunks, all-gather by doubling, unfold."""
    p2, _, alive = fold_layout(p)
    offsets, lengths = chunk_bounds(count, p2)
    bounds = np.arange(p2 + 1)
    yield from _fold(p, count, reduce=True)
    yield from _halving(p2, alive, offsets=offsets, lengths=lengths, bounds=bounds)
    yield from _doubling(p2, alive, offsets=offsets, lengths=lengths, bounds=bounds)
    yield from _unfold(p, count)


def _survivor_bounds(p: int):
    p2, r, _ = fold_layout(p)
    j = np.arange(p2 + 1)
    return np.where(j < r, 2 * j, j + r)                  # first of the p chunks survivor j owns


def reduce_scatter_halving(p: int, count: int):
    """Recursive halving reduce-scatter: rank q ends with the sum of chunk q (of p chunks)."""
    p2, _, alive = fold_layout(p)
    offsets, lengths = chunk_bounds(count, p)
    yield from _fold(p, count, reduce=True)
    yield from _halving(p2, alive, offsets=offsets, lengths=lengths, bounds=_survivor_bounds(p))
    yield from _unfold(p, count, offsets, lengths)


def all_gather_doubling(p: int, count: int):
    """Recursive doubling all-gather: rank q starts with chunk q and ends with all p chunks."""
    p2, _, alive = fold_layout(p)
    offsets, lengths = chunk_bounds(count, p)
    yield from _fold(p, count, reduce=False, offsets=offsets, lengths=lengths)
    yield from _doubling(p2, alive, offsets=offsets, lengths=lengths, bounds=_survivor_bounds(p))
    yield from _unfold(p, count)

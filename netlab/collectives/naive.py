"""The naive all-reduce: every rank sends its whole vector to rank 0, which sums and sends it back.

Rank 0 receives p-1 full vectors one after another through its single port, then sends p-1 full
vectors back: 2(p-1)(alpha + n/B). The bandwidth term grows linearly with p -- the contrast that
makes the ring's 2(p-1)/p * n/B worth a chapter. (A parameter server with one server has the
same shape.)
"""
from __future__ import annotations

from .schedule import Step


def reduce(p: int, count: int, root: int = 0):
    """Each rank in turn sends its vector to the root, which adds it."""
    for r in range(p):
        if r != root:
            yield Step(r, root, 0, count, reduce=True)


def broadcast(p: int, count: int, root: int = 0):
    """The root sends its vector to each rank in turn."""
    for r in range(p):
        if r != root:
            yield Step(root, r, 0, count, reduce=False)


def allreduce(p: int, count: int):
    yield from reduce(p, count)
    yield from broadcast(p, count)

"""One definition of each algorithm: a schedule of steps, run by real ranks and by the simulator.

A collective algorithm is written once, as a generator of ``Step``s over all ranks. A step is a
set of transfers that may happen at once; transfer i moves elements
``[offset[i], offset[i] + length[i])`` of the flat buffer from rank ``src[i]`` to rank ``dst[i]``,
which adds them into its own copy of that range (``reduce``) or overwrites it. Every algorithm
here keeps each element at the same position on every rank, so one range describes both ends.

* Real ranks (``execute``): each rank takes the transfers it is part of, posts its sends and
  receives through ``comm`` (real tensors, the emulated network's clock), waits, then reduces or
  copies. A rank that has nothing to do in a step does not wait for it.
* The simulator (``netlab.sim``) consumes the same steps as arrays, at thousands of ranks.

Arrays, not per-rank Python objects: a ring on 1,024 ranks is 2,046 steps of 1,024 transfers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from netlab.lazy import lazy
torch = lazy("torch", globals())


@dataclass
class Step:
    src: np.ndarray       # (m,) sending rank of each transfer
    dst: np.ndarray       # (m,) receiving rank
    offset: np.ndarray    # (m,) first element of the range
    length: np.ndarray    # (m,) elements in the range
    reduce: bool          # True: receiver adds the range into its own; False: receiver copies it

    def __post_init__(self):
        m = max(np.size(self.src), np.size(self.dst), np.size(self.offset), np.size(self.length))
        self.src, self.dst, self.offset, self.length = (
            np.broadcast_to(np.asarray(a,
                                       dtype=np.int64), (m,)) for a in (self.src, self.dst, self.offset, self.length))


def chunk_bounds(count: int, parts: int) -> tuple[np.ndarray, np.ndarray]:
    """Split `count` elements into `parts` contiguous chunks, the first ``count % parts`` one longer.

    Returns (offsets, lengths), each of shape (parts,); chunks may be empty when count < parts.
    """
    lengths = np.full(parts, count // parts, dtype=np.int64)
    lengths[: count % parts] += 1
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    return offsets, lengths


def span(offsets: np.ndarray, lengths: np.ndarray, first, last):
    """Offset and length of chunks first..last-1 taken together (arrays allowed): a contiguous range."""
    first, last = np.asarray(first), np.asarray(last)
    start = offsets[first]
    end = np.where(last > first, offsets[np.maximum(last - 1, 0)] + lengths[np.maximum(last - 1, 0)], start)
    return start, end - start


@dataclass
class RankStep:
    """One step as one rank sees it: (offset, length, peer) of its sends and receives."""
    sends: list[tuple[int, int, int]]
    recvs: list[tuple[int, int, int]]
    reduce: bool
    scratch: int            # elements of receive space the step's sums need
    in_place: list[bool]    # per receive (copy steps): may it land straight in the buffer?


def rank_plan(steps, rank: int) -> list[RankStep]:
    """The steps this rank takes part in, as plain tuples (cheap to replay run after run)."""
    plan = []
    for step in steps:
        out = np.flatnonzero(step.src == rank)
        inc = np.flatnonzero(step.dst == rank)
        if out.size == 0 and inc.size == 0:
            continue                                   # not part of this step: do not wait for it
        sends = [(int(step.offset[i]), int(step.length[i]), int(step.dst[i])) for i in out]
        recvs = [(int(step.offset[i]), int(step.length[i]), int(step.src[i])) for i in inc]
        # a copy may land in place unless it overlaps what this rank sends in the same step
        in_place = [not step.reduce and not any(so < o + n and o < so + sn for so, sn, _ in sends)
                    for o, n, _ in recvs]
        plan.append(RankStep(sends=sends, recvs=recvs, reduce=step.reduce,
                             scratch=sum(n for _, n, _ in recvs) if step.reduce else 0, in_place=in_place))
    return plan


def execute(comm, buf: torch.Tensor | None, steps, element_size: int | None = None,
            *, plan: list[RankStep] | None = None) -> None:
    """Run a schedule (or this rank's precomputed `plan` of it) on this rank; `buf` changes in place.

    With ``buf=None`` the run is size-only (virtual time only): messages carry just their size
    (their elements times ``element_size`` bytes), for timing sweeps that would not fit in memory;
    the times are identical to a real payload's.
    """
    plan = plan if plan is not None else rank_plan(steps, comm.rank)
    if buf is None:
        for step in plan:
            recvs = [comm.irecv(None, src, nbytes=n * element_size) for _, n, src in step.recvs]
            sends = [comm.isend(None, dst, nbytes=n * element_size) for _, n, dst in step.sends]
            comm.wait(*sends, *recvs)
            if step.reduce:
                for _, n, _ in step.recvs:
                    comm.reduce_cost(n * element_size)
        return
    if buf.dim() != 1 or not buf.is_contiguous():
        raise ValueError("buf: collectives work on a flat contiguous tensor (use tensor.view(-1))")
    element_size = buf.element_size()
    need = max((step.scratch for step in plan), default=0)
    scratch = torch.empty(need, dtype=buf.dtype)                      # receive space for sums, reused
    for step in plan:
        # receives first: gloo moves data once the receive is posted
        if step.reduce:
            recvs, used = [], 0
            for o, n, src in step.recvs:               # sums land in scratch, then add into place
                into = scratch[used:used + n]
                used += n
                recvs.append((o, n, into, comm.irecv(into, src)))
        else:                                          # copies land in place when they can
            recvs = []
            for (o, n, src), here in zip(step.recvs, step.in_place):
                into = None if here else torch.empty(n, dtype=buf.dtype)
                recvs.append((o, n, into, comm.irecv(buf[o:o + n] if here else into, src)))
        sends = [comm.isend(buf[o:o + n], dst) for o, n, dst in step.sends]
        comm.wait(*sends, *(r[3] for r in recvs))
        for o, n, into, _ in recvs:
            if step.reduce:
                buf[o:o + n] += into
                comm.reduce_cost(n * element_size)
            elif into is not None:
                buf[o:o + n].copy_(into)

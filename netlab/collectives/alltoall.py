"""All-to-all (全交换): rank r's block j goes to rank j, which keeps it as its block r.

Expert parallelism (专家并行) in a mixture-of-experts layer sends every token to the rank that
holds its expert and the expert's output back: two all-to-alls per layer, forward, and two more
backward (GShard, Lepikhin et al. 2020; Switch Transformer, Fedus et al. 2021). Each rank's buffer
of S bytes is p blocks of S/p; rank r sends block j to rank j and receives rank j's block r. The
result is a transpose: unlike every other collective here, an element does not keep its position,
so a ``Step`` of this schedule names the *sender's* block (``offset``) and the receiver puts it at
block ``src`` (``all_to_all`` below does; the simulator needs only the sizes).

Two schedules, both written as steps:

* ``pairwise``: p-1 rounds; in round s rank r sends its block r+s to rank r+s and receives block
  r from rank r-s (mod p). Every round is a permutation, so each port carries one block of S/p
  each way: (p-1)(alpha + S/(p B)). This is MPICH's long-message all-to-all (Thakur, Rabenseifner
  & Gropp, IJHPCA 2005, "pairwise exchange").
* ``concurrent``: every send and receive posted at once, one step of p(p-1) messages, in the same
  shifted order. NCCL's all-to-all is this: a group of p send/recv pairs (nccl-tests'
  ``alltoall.cu``: ``ncclSend``/``ncclRecv`` to every peer inside ``ncclGroupStart/End``), which
  NCCL schedules in rounds where each rank sends to rank+delta and receives from rank-delta
  (``init.cc``, ``p2pSchedule``). netlab's ports take their messages one at a time, so on its
  network the time is the same (p-1)(alpha + S/(p B)); on a fabric with a bisection (the flow
  simulator) every flow is in flight together and shares the core with all the others.

Each rank's port sends (p-1)/p of S and receives as much, whatever the schedule: nccl-tests'
busbw factor for all-to-all is (p-1)/p, so busbw -> B at large S. What the port does not show is
where the blocks go: (p-1)/p of every rank's bytes go to other ranks, most of them behind other
switches, which is why all-to-all needs the fabric's full bisection bandwidth and a ring all-reduce,
whose neighbours sit next to each other, does not (``netlab.sim.alltoall``).

Left out: uneven splits (real MoE dispatch sends as many tokens as the router chose, ``all_to_all_v``),
hierarchical all-to-all (gather inside a host first), and the expert computation itself.
"""
from __future__ import annotations

import numpy as np

from netlab.lazy import lazy
torch = lazy("torch", globals())

from .schedule import Step


def _blocks(p: int, count: int) -> int:
    if count % p:
        raise ValueError(f"count: an all-to-all needs p equal blocks; {count} elements do not split into {p}")
    return count // p


def pairwise(p: int, count: int):
    """p-1 rounds; in round s every rank r sends block (r+s) mod p to rank (r+s) mod p."""
    m = _blocks(p, count)
    r = np.arange(p)
    for s in range(1, p):
        dst = (r + s) % p
        yield Step(r, dst, dst * m, m, reduce=False)


def concurrent(p: int, count: int):
    """One step: every rank sends its p-1 blocks at once (to r+1, r+2, ... in that order)."""
    m = _blocks(p, count)
    r = np.arange(p)
    src = np.repeat(r, p - 1)
    dst = (src + np.tile(np.arange(1, p), p)) % p
    yield Step(src, dst, dst * m, m, reduce=False)


def execute(comm, inp, out, plan, *, element_size: int) -> None:
    """Run this rank's part of an all-to-all schedule: sends from `inp`'s blocks, receives into `out`'s.

    A receive of length m from rank `src` lands in ``out[src*m:(src+1)*m]``; with ``inp=None`` the run
    is size-only (virtual time only), as ``schedule.execute``'s."""
    for step in plan:
        if inp is None:
            recvs = [comm.irecv(None, src, nbytes=n * element_size) for _, n, src in step.recvs]
            sends = [comm.isend(None, dst, nbytes=n * element_size) for _, n, dst in step.sends]
        else:
            recvs = [comm.irecv(out[src * n:(src + 1) * n], src) for _, n, src in step.recvs]
            sends = [comm.isend(inp[o:o + n], dst) for o, n, dst in step.sends]
        comm.wait(*sends, *recvs)



"""How compressed gradients travel: all-reduce where payloads add up, all-gather where they do not.

``Compression(compressor, memory).sync(comm, grad, step)`` is a ``sync`` for ``netlab.dataparallel.train``-style
loops: it takes this rank's gradient contribution and returns the sum over ranks, as the plain
all-reduce would, after

    1. compensate   p = memory.compensate(g)               (error feedback; identity without it)
    2. compress     payload = C(p)                         (int8 first agrees on a shared scale)
    3. remember     memory.update(p, D(payload))           (what was not sent waits)
    4. communicate  summable:  all-reduce each payload tensor in its own dtype, then D(sum)
                    otherwise: all-gather every rank's payload bytes, D(each), aggregate
                               (sum, or majority vote)

Everything goes through ``netlab.collectives`` on ``comm``, so the emulated network charges the real
compressed bytes: fixed-size payloads use ``collectives.all_gather``; variable-size ones (threshold)
first all-gather their sizes, then run a ring all-gather with per-rank chunk lengths built from
the same ``Step`` schedule type (``allgatherv_steps``). A rank with nothing to send sends an empty
message (it costs alpha), never a hang (GRACE's gloo hang, sands-lab/grace#16).

Compute cost: the encode (steps 1-3) and each decode run for real; under virtual time they advance
the clock by ``encode_s`` and ``decode_s`` per decoded payload (measured, see ``codec_cost.py``).
"""
from __future__ import annotations

import numpy as np
from netlab.lazy import lazy
torch = lazy("torch", globals())

from .. import collectives
from ..collectives.schedule import Step
from .base import Compressor, Payload
from .error_feedback import NoMemory, ResidualMemory


def allgatherv_steps(lengths):
    """Ring all-gather with chunk r of lengths[r] elements at offset sum(lengths[:r]); p - 1 steps.

    Step k: rank r sends chunk (r - k) mod p to rank r + 1 (the ring all-gather of equal chunks,
    with the chunk bounds taken from `lengths`).
    """
    p = len(lengths)
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    ranks = np.arange(p)
    for k in range(p - 1):
        chunk = (ranks - k) % p
        yield Step(ranks, (ranks + 1) % p, offsets[chunk], lengths[chunk], reduce=False)


def allgatherv(comm, mine: torch.Tensor, lengths) -> torch.Tensor:
    """Every rank's `mine` (lengths[r] elements on rank r), concatenated in rank order, on every rank."""
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    buf = torch.empty(int(sum(lengths)), dtype=mine.dtype)
    o = int(offsets[comm.rank])
    buf[o:o + mine.numel()] = mine
    if comm.world_size > 1:
        with comm.region("allgatherv:ring"):
            collectives.execute(comm, buf, allgatherv_steps(list(lengths)))
    return buf


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().reshape(-1).view(torch.uint8)


def allgather_payloads(comm, payload: Payload, fixed_size: bool = True) -> list[Payload]:
    """Every rank's payload, on every rank, as the exact bytes it put on the wire."""
    p, parts = comm.world_size, payload.tensors
    counts = torch.tensor([t.numel() for t in parts], dtype=torch.int32)        # elements per part
    if fixed_size or p == 1:
        all_counts = counts.repeat(p, 1)                                         # (p, parts)
    else:                                                                        # sizes first: 4 B per part
        all_counts = collectives.all_gather(comm, counts).view(p, len(parts))
    sizes = [t.element_size() for t in parts]
    lengths = [int(sum(int(c) * s for c, s in zip(row, sizes))) for row in all_counts]
    mine = torch.cat([_as_bytes(t) for t in parts]) if parts else torch.empty(0, dtype=torch.uint8)
    if fixed_size and p > 1:
        gathered = collectives.all_gather(comm, mine)
    else:
        gathered = allgatherv(comm, mine, lengths)
    out, offset = [], 0
    for r in range(p):
        tensors = []
        for t, c, s in zip(parts, all_counts[r], sizes):
            n = int(c) * s
            tensors.append(gathered[offset:offset + n].clone().view(t.dtype))    # clone: aligned storage
            offset += n
        out.append(Payload(tensors, payload.numel, payload.meta))
    return out


def allreduce_payload(comm, payload: Payload, algo: str = "ring") -> Payload:
    """Sum every payload tensor across ranks, in its own dtype (fp16 sums in fp16, int8 in int8)."""
    summed = [collectives.allreduce(comm, t.contiguous().clone(), algo=algo) for t in payload.tensors]
    return Payload(summed, payload.numel, payload.meta)


class Compression:
    """A compressor, a memory and a way to communicate: the ``sync`` of a compressed training step."""
    handles_momentum = False         # True for DGC: momentum lives in its memory, not the optimizer

    def __init__(self, compressor: Compressor, memory=None, algo: str = "ring",
                 *, encode_s: float = 0.0, decode_s: float = 0.0):
        self.compressor = compressor
        self.memory = memory if memory is not None else NoMemory()
        self.algo = algo
        self.encode_s, self.decode_s = encode_s, decode_s
        self.payload_bytes = 0       # this rank's payload of the last step (bytes)

    @classmethod
    def of(cls, compressor: Compressor, error_feedback: bool = False, **kwargs) -> "Compression":
        return cls(compressor, ResidualMemory() if error_feedback else NoMemory(), **kwargs)

    @property
    def error_feedback(self) -> bool:
        return self.memory.error_feedback

    @property
    def communicator(self) -> str:
        return "allreduce" if self.compressor.summable else "allgather"

    def describe(self) -> str:
        return f"{self.compressor.describe()}, {self.communicator}" + (", error feedback" if self.error_feedback else "")

    def _cost(self, comm, seconds, label):
        return comm.compute(seconds=seconds if comm.virtual else None, label=label)

    def encode(self, comm, grad: torch.Tensor, step: int) -> Payload:
        """Compensate, compress and remember: this rank's payload for this step."""
        with self._cost(comm, 0.0, "compress"):
            p = self.memory.compensate(grad, step)
        shared = self.compressor.agree(comm, p)            # int8: one scale for all ranks (communicates)
        with self._cost(comm, self.encode_s, "compress"):
            payload = self.compressor.compress(p, step, shared)
            if self.memory.error_feedback:
                self.memory.update(p, self.compressor.decompress(payload), step, payload)
        return payload

    def sync(self, comm, grad: torch.Tensor, step: int) -> torch.Tensor:
        """This rank's contribution in, the sum over ranks out (fp32, same shape)."""
        payload = self.encode(comm, grad, step)
        self.payload_bytes = payload.nbytes
        if self.compressor.summable:
            summed = allreduce_payload(comm, payload, self.algo)
            with self._cost(comm, self.decode_s, "decompress"):
                return self.compressor.decompress(summed).view_as(grad)
        gathered = allgather_payloads(comm, payload, self.compressor.fixed_size)
        with self._cost(comm, self.decode_s * len(gathered), "decompress"):
            return self.compressor.aggregate([self.compressor.decompress(q) for q in gathered]).view_as(grad)

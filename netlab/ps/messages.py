"""Push and pull messages: a small header of int64 fields in front of the fp32 values, and their order.

Message layout (one fp32 tensor per chunk, so one ``comm`` message):

    [ key, step, version, flags  (4 x int64 = 32 bytes, stored in 8 fp32 slots) | values (fp32) ]

* key: when the message was sent, in integer picoseconds of virtual time: the worker's clock at
  the start of its push phase plus the nominal send offset of the chunk (the messages before it on
  the worker's NIC). Servers apply pushes in key order, ties broken by worker rank, then chunk
  (on the port model and the wall clock; on a packet fabric, in arrival order).
* step: the worker's step (its clock); version: on a push, the version of the chunk the worker
  computed on; on a pull reply, the chunk's version now. flags: LAST on a worker's final push.

Why keys, and not the order messages happen to arrive: arrival order on a real machine depends on
its load, so an asynchronous server would give different answers on every run. A server instead
waits until every worker that could still send it something earlier has a message pending, then
applies the one with the smallest key (conservative discrete-event simulation, Chandy-Misra-Bryant).
All keys of a worker's step are its start time plus offsets common to all workers, so the keys
order every server's messages consistently and the rule cannot deadlock (proof in
``server.py``). With the wall clock (no emulated network) offsets are zero and the order is the
workers' real start times. On a packet fabric keys order nothing: servers take pushes in the order
the fabric delivers them (``server.py``, ``Comm.wait_first``), which is just as deterministic.
"""
from __future__ import annotations

import math

from netlab.lazy import lazy
torch = lazy("torch", globals())

META_SLOTS = 8                     # fp32 slots holding 4 int64 fields
META_BYTES = 4 * META_SLOTS
LAST = 1                           # flags: the worker's final push
PS_PER_S = 10**12                  # keys count picoseconds


def pack(values: torch.Tensor | None, length: int, key: int, step: int, *, version: int,
         flags: int = 0) -> torch.Tensor:
    """One message: header + `length` fp32 values (zeros when `values` is None)."""
    buf = torch.empty(META_SLOTS + length, dtype=torch.float32)
    buf[:META_SLOTS].view(torch.int64).copy_(torch.tensor([key, step, version, flags], dtype=torch.int64))
    if values is None:
        buf[META_SLOTS:].zero_()
    else:
        buf[META_SLOTS:].copy_(values.reshape(-1))
    return buf


def empty(length: int) -> torch.Tensor:
    return torch.empty(META_SLOTS + length, dtype=torch.float32)


def header(buf: torch.Tensor) -> tuple[int, int, int, int]:
    """(key, step, version, flags) of a received message."""
    key, step, version, flags = buf[:META_SLOTS].view(torch.int64).tolist()
    return key, step, version, flags


def values(buf: torch.Tensor) -> torch.Tensor:
    return buf[META_SLOTS:]


def to_ps(seconds: float) -> int:
    """Seconds -> integer picoseconds, rounded down (a key never claims a message left later than it did)."""
    return int(math.floor(seconds * PS_PER_S))


def send_offsets(comm, lengths: list[int], peers: list[int]) -> list[int]:
    """Nominal picoseconds from the start of a push phase to the start of each chunk's message.

    The messages leave the worker's NIC back to back, each holding it for alpha + bytes/B. With
    the wall clock the offsets are all zero (keys are then the workers' real start times).
    """
    if comm.network is None:
        return [0] * len(lengths)
    offsets, at = [], 0
    for n, peer in zip(lengths, peers):
        offsets.append(at)
        at += to_ps(comm.network.link(comm.rank, peer).time(META_BYTES + 4 * n))
    return offsets


def arrived(request) -> None:
    """Block until a posted message's data has moved, without touching the clock or the NIC ports
    (``comm.wait(request)`` later books the port and moves the clock, as if it had waited itself)."""
    request.arrive()

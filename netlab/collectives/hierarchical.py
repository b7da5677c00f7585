"""Hierarchical all-reduce for ranks grouped on hosts: fast links inside a host, a NIC between hosts.

Rank h*g + l is local rank l on host h (g ranks per host, N = p / g hosts).

* ``leader`` (the classic two-level scheme): inside each host a ring reduce-scatter and a gather
  put the host's sum on its leader (local rank 0); the N leaders run a ring all-reduce over the
  NICs; each leader scatters the result and a ring all-gather spreads it inside the host. Only one
  NIC per host carries traffic:
      4(g-1)(a_i + (n/g)/B_i) + 2(N-1) a_o + 2(N-1)/N n/B_o
* ``rail`` (NCCL-style, one NIC per rank): intra-host ring reduce-scatter leaves local rank l with
  chunk l+1 of the host's sum; the g "rails" (ranks with the same l on every host) each run a ring
  all-reduce of their n/g chunk across hosts, all at once; an intra-host ring all-gather finishes:
      2(g-1)(a_i + (n/g)/B_i) + 2(N-1) a_o + 2(N-1)/N (n/g)/B_o
  Every NIC carries 1/g of the data: the inter-host term shrinks g-fold.

Source: the two-level scheme of MPI libraries and Horovod's hierarchical all-reduce; the rail
form follows NCCL's rings across NVLink and NICs (see simulation notes, "Hierarchical").
"""
from __future__ import annotations

import numpy as np

from . import ring
from .schedule import Step, chunk_bounds


def _hosts(p: int, ranks_per_host: int) -> tuple[int, int]:
    g = ranks_per_host
    if not isinstance(g, (int, np.integer)) or g < 1 or p % g:
        raise ValueError(f"ranks_per_host: must divide the world size {p}, got {g!r}")
    return p // g, g


def _in_every_host(step: Step, hosts: int, g: int) -> Step:
    """A step written for local ranks 0..g-1, repeated on every host at once."""
    base = np.repeat(np.arange(hosts) * g, step.src.size)
    tile = lambda a: np.tile(a, hosts)  # noqa: E731
    return Step(src=base + tile(step.src), dst=base + tile(step.dst), offset=tile(step.offset),
                length=tile(step.length), reduce=step.reduce)


def allreduce_leader(p: int, count: int, ranks_per_host: int = 1):
    hosts, g = _hosts(p, ranks_per_host)
    offsets, lengths = chunk_bounds(count, g)
    local = np.arange(1, g)
    for step in ring.reduce_scatter(g, count, owner_shift=1):   # local l ends with chunk (l+1) mod g
        yield _in_every_host(step, hosts, g)
    if g > 1:                                                    # gather the host's sum on its leader
        c = (local + 1) % g
        yield _in_every_host(Step(local, 0, offsets[c], lengths[c], reduce=False), hosts, g)
    for step in ring.allreduce(hosts, count):                    # leaders: one ring over the NICs
        yield Step(src=step.src * g, dst=step.dst * g, offset=step.offset, length=step.length, reduce=step.reduce)
    if g > 1:                                                    # leader scatters chunk l to local l
        yield _in_every_host(Step(0, local, offsets[local], lengths[local], reduce=False), hosts, g)
    for step in ring.all_gather(g, count, owner_shift=0):
        yield _in_every_host(step, hosts, g)


def allreduce_rail(p: int, count: int, ranks_per_host: int = 1):
    hosts, g = _hosts(p, ranks_per_host)
    offsets, lengths = chunk_bounds(count, g)
    for step in ring.reduce_scatter(g, count, owner_shift=1):
        yield _in_every_host(step, hosts, g)
    rails = [ring.allreduce(hosts, int(lengths[(l + 1) % g])) for l in range(g)]   # rail l: chunk l+1
    for per_rail in zip(*rails):                                 # the g rails step together
        src, dst, off, length = [], [], [], []
        for l, step in enumerate(per_rail):
            src.append(step.src * g + l)
            dst.append(step.dst * g + l)
            off.append(step.offset + offsets[(l + 1) % g])
            length.append(step.length)
        yield Step(src=np.concatenate(src), dst=np.concatenate(dst), offset=np.concatenate(off),
                   length=np.concatenate(length), reduce=per_rail[0].reduce)
    for step in ring.all_gather(g, count, owner_shift=1):
        yield _in_every_host(step, hosts, g)

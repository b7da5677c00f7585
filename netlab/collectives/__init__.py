"""Collective algorithms written against ``comm``, one family per file, run from one schedule.

    from netlab import collectives
    collectives.allreduce(comm, grad, algo="ring")      # in place, on every rank

``ALGORITHMS[collective][algo]`` is the schedule generator ``(p, count) -> steps``; the simulator
uses the same table.
"""
from __future__ import annotations

import torch

from . import naive, ring
from .schedule import Step, chunk_bounds, execute

ALGORITHMS = {
    "allreduce": {"naive": naive.allreduce, "ring": ring.allreduce},
}


def schedule(collective: str, algo: str, p: int, count: int):
    if collective not in ALGORITHMS:
        raise ValueError(f"collective: unknown {collective!r}; choose one of {', '.join(ALGORITHMS)}")
    table = ALGORITHMS[collective]
    if algo not in table:
        raise ValueError(f"algo: {collective} has no algorithm {algo!r}; choose one of {', '.join(table)}")
    return table[algo](p, count)


def allreduce(comm, tensor: torch.Tensor | None, algo: str = "ring", op: str = "sum",
              count: int | None = None, dtype=torch.float32) -> torch.Tensor | None:
    """Sum (or average, ``op='avg'``) `tensor` across all ranks, in place.

    ``tensor=None, count=n`` runs size-only (virtual time only, no payload), for timing sweeps.
    """
    if op not in ("sum", "avg"):
        raise ValueError(f"op: must be 'sum' or 'avg', got {op!r}")
    flat = None if tensor is None else tensor.view(-1)
    n = flat.numel() if flat is not None else count
    if n is None:
        raise ValueError("count: give a tensor, or count= for a size-only run")
    element_size = flat.element_size() if flat is not None else torch.empty(0, dtype=dtype).element_size()
    if comm.world_size > 1:
        with comm.region(f"allreduce:{algo}"):
            execute(comm, flat, schedule("allreduce", algo, comm.world_size, n), n, element_size)
    if op == "avg" and tensor is not None:
        tensor /= comm.world_size
    return tensor


__all__ = ["ALGORITHMS", "schedule", "allreduce", "execute", "Step", "chunk_bounds"]

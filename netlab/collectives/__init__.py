"""Collective algorithms written against ``comm``, one family per file, run from one schedule.

    from netlab import collectives
    collectives.allreduce(comm, grad, algo="ring")            # in place, on every rank
    out = collectives.all_gather(comm, shard, algo="recursive_doubling")
    out = collectives.all_to_all(comm, tokens, algo="pairwise")   # block j to rank j (expert parallelism)

``ALGORITHMS[collective][algo]`` is the schedule generator ``(p, count, **options) -> steps``;
the cost model (``netlab.collectives.cost``) and the simulator use the same table.
"""
from __future__ import annotations

import functools
import inspect
from functools import partial

from netlab.lazy import lazy
torch = lazy("torch", globals())

from .. import validate
from . import alltoall, hierarchical, naive, recursive, ring, tree
from .schedule import Step, chunk_bounds, execute, rank_plan

ALGORITHMS = {
    "allreduce": {
        "naive": naive.allreduce,
        "ring": ring.allreduce,
        "tree": tree.allreduce,
        "recursive_doubling": recursive.allreduce_doubling,
        "halving_doubling": recursive.allreduce_halving_doubling,
        "hierarchical": hierarchical.allreduce_leader,
        "hierarchical_rail": hierarchical.allreduce_rail,
    },
    "broadcast": {
        "naive": naive.broadcast,
        "tree": tree.broadcast,
        "scatter_allgather": tree.scatter_allgather_broadcast,
    },
    "reduce": {"naive": naive.reduce, "tree": tree.reduce},
    "allgather": {"ring": partial(ring.all_gather, owner_shift=0), "recursive_doubling": recursive.all_gather_doubling},
    "reduce_scatter": {"ring": partial(ring.reduce_scatter, owner_shift=0),
                       "recursive_halving": recursive.reduce_scatter_halving},
    "alltoall": {"pairwise": alltoall.pairwise, "concurrent": alltoall.concurrent},
}
ALIASES = {"rd": "recursive_doubling", "hd": "halving_doubling", "rabenseifner": "halving_doubling",
           "rh": "recursive_halving", "binomial": "tree", "hier": "hierarchical", "rail": "hierarchical_rail",
           "all_gather": "allgather", "all_reduce": "allreduce", "reducescatter": "reduce_scatter",
           "all_to_all": "alltoall", "a2a": "alltoall"}


def resolve_collective(collective: str) -> str:
    """The canonical name of a collective ('all_reduce' -> 'allreduce'), or one clear error."""
    collective = ALIASES.get(collective, collective)
    return validate.choice(collective, "collective", ALGORITHMS)


def resolve(collective: str, algo: str) -> tuple[str, str]:
    """Canonical (collective, algorithm) names, or one clear error naming the parameter."""
    collective = resolve_collective(collective)
    algo = ALIASES.get(algo, algo)
    if algo not in ALGORITHMS[collective]:
        raise ValueError(f"algo: {collective} has no algorithm {algo!r}; choose one of "
                         f"{', '.join(ALGORITHMS[collective])}")
    return collective, algo


def schedule(collective: str, algo: str, p: int, count: int, **options):
    """The steps of one collective; options (root, ranks_per_host) go to the algorithms that take them."""
    collective, algo = resolve(collective, algo)
    fn = ALGORITHMS[collective][algo]
    accepted = inspect.signature(fn).parameters
    return fn(p, count, **{k: v for k, v in options.items() if k in accepted and v is not None})


def _run(comm, collective, algo, flat, count, dtype, **options):
    if flat is not None:
        count, element_size = flat.numel(), flat.element_size()
    elif count is None:
        raise ValueError("count: give a tensor, or count= for a size-only run")
    else:
        element_size = torch.empty(0, dtype=torch.float32 if dtype is None else dtype).element_size()
    if options.get("ranks_per_host") is None and comm.network is not None:
        options["ranks_per_host"] = comm.network.ranks_per_host      # hosts as the network defines them
    root = options.get("root", 0)
    validate.whole(root, "root", 0, comm.world_size - 1, int_only=True)       # a rank
    if comm.world_size > 1:
        plan = _plan(collective, algo, p=comm.world_size, count=count, rank=comm.rank,
                     options=tuple(sorted(options.items())))
        with comm.region(f"{collective}:{algo}"):
            execute(comm, flat, None, element_size, plan=plan)


@functools.lru_cache(maxsize=256)
def _plan(collective, algo, p, count, rank, options):
    """This rank's part of a schedule, kept: a training loop replays the same all-reduce every step."""
    return rank_plan(schedule(collective, algo, p, count, **dict(options)), rank)


def _flat(tensor):
    if tensor is None:
        return None
    if not tensor.is_contiguous():
        raise ValueError("tensor: must be contiguous")
    return tensor.view(-1)


def allreduce(comm, tensor, algo: str = "ring", op: str = "sum", *, count: int | None = None,
              dtype=None, ranks_per_host: int | None = None):
    """Sum (or average, ``op='avg'``) `tensor` across all ranks, in place.

    ``tensor=None, count=n`` runs size-only (virtual time only, no payload), for timing sweeps.
    """
    validate.choice(op, "op", ("sum", "avg"))
    _run(comm, "allreduce", algo=algo, flat=_flat(tensor), count=count, dtype=dtype, ranks_per_host=ranks_per_host)
    if op == "avg" and tensor is not None:
        tensor /= comm.world_size
    return tensor


def broadcast(comm, tensor, root: int = 0, algo: str = "tree", *, count: int | None = None, dtype=None):
    """Copy root's `tensor` to every rank, in place."""
    _run(comm, "broadcast", algo=algo, flat=_flat(tensor), count=count, dtype=dtype, root=root)
    return tensor


def reduce(comm, tensor, root: int = 0, algo: str = "tree", *, count: int | None = None, dtype=None):
    """Sum `tensor` onto `root` (in place there; other ranks' tensors hold partial sums afterwards)."""
    _run(comm, "reduce", algo=algo, flat=_flat(tensor), count=count, dtype=dtype, root=root)
    return tensor


def all_gather(comm, tensor, algo: str = "ring", count: int | None = None, *, dtype=None):
    """Every rank's `tensor` (m elements each), concatenated in rank order: p*m elements on every rank."""
    p = comm.world_size
    if tensor is None:
        _run(comm, "allgather", algo=algo, flat=None, count=None if count is None else p * count, dtype=dtype)
        return None
    m = tensor.numel()
    out = torch.empty(p * m, dtype=tensor.dtype)
    out[comm.rank * m:(comm.rank + 1) * m] = tensor.reshape(-1)
    _run(comm, "allgather", algo=algo, flat=out, count=None, dtype=dtype)
    return out


def all_gather_chunks(comm, chunk, count: int, algo: str = "ring"):
    """The inverse of ``reduce_scatter``: rank r holds chunk r of a `count`-element vector (chunks as
    ``chunk_bounds``, lengths may differ by one); every rank ends with the whole vector."""
    offsets, lengths = chunk_bounds(count, comm.world_size)
    o, n = int(offsets[comm.rank]), int(lengths[comm.rank])
    if chunk.numel() != n:
        raise ValueError(f"chunk: rank {comm.rank} must hold {n} of the {count} elements, got {chunk.numel()}")
    out = torch.empty(count, dtype=chunk.dtype)
    out[o:o + n] = chunk.reshape(-1)
    _run(comm, "allgather", algo=algo, flat=out, count=None, dtype=chunk.dtype)
    return out


def reduce_scatter(comm, tensor, algo: str = "ring", count: int | None = None, *, dtype=None):
    """Sum `tensor` across ranks and keep chunk `rank` of the result (chunks as ``chunk_bounds``).

    Works on a copy; returns this rank's chunk (lengths differ by at most one element).
    """
    if tensor is None:
        _run(comm, "reduce_scatter", algo=algo, flat=None, count=count, dtype=dtype)
        return None
    buf = tensor.reshape(-1).clone()
    _run(comm, "reduce_scatter", algo=algo, flat=buf, count=None, dtype=dtype)
    offsets, lengths = chunk_bounds(buf.numel(), comm.world_size)
    o, n = int(offsets[comm.rank]), int(lengths[comm.rank])
    return buf[o:o + n].clone()


def all_to_all(comm, tensor, algo: str = "pairwise", count: int | None = None, *, dtype=None):
    """Block j of `tensor` (p equal blocks) to rank j; returns a new tensor whose block r came from rank r.

    As ``torch.distributed.all_to_all_single(out, tensor)`` with even splits. ``tensor=None, count=n``
    runs size-only (virtual time only; n elements in all, p blocks) and returns None.
    """
    _, algo = resolve("alltoall", algo)
    p = comm.world_size
    flat = _flat(tensor)
    if flat is not None:
        count, element_size = flat.numel(), flat.element_size()
    elif count is None:
        raise ValueError("count: give a tensor, or count= for a size-only run")
    else:
        element_size = torch.empty(0, dtype=torch.float32 if dtype is None else dtype).element_size()
    if count % p:
        raise ValueError(f"tensor: an all-to-all needs {p} equal blocks, and {count} elements do not split into {p}")
    if comm.network is not None and comm.network.ranks_per_host > 1:
        raise ValueError("network: the all-to-all runs on one rank per host (ranks_per_host=1)")
    m = count // p
    out = None
    if flat is not None:
        out = torch.empty_like(flat)
        out[comm.rank * m:(comm.rank + 1) * m] = flat[comm.rank * m:(comm.rank + 1) * m]   # its own block stays
    if p > 1:
        plan = _plan("alltoall", algo, p=p, count=count, rank=comm.rank, options=())
        with comm.region(f"alltoall:{algo}"):
            alltoall.execute(comm, flat, out, plan, element_size=element_size)
    return None if out is None else out.view(tensor.shape)


CALLS = {"allreduce": allreduce, "broadcast": broadcast, "reduce": reduce, "allgather": all_gather,
         "reduce_scatter": reduce_scatter, "alltoall": all_to_all}


def counts(collective: str, nbytes: int, p: int, element_size: int = 4) -> tuple[int, int, int]:
    """S = `nbytes` of `collective` on p ranks in whole elements, as the bench, the simulator and the
    cost comparisons all round it: (elements each rank passes in, elements in the schedule, S used).
    All-gather's S is the gathered result, p equal parts; all-to-all's is one rank's buffer, p equal
    blocks (nccl-tests' convention for both); every other collective's is one rank's buffer."""
    if collective in ("allgather", "alltoall"):
        part = max(1, nbytes // (p * element_size))
        return part if collective == "allgather" else part * p, part * p, part * p * element_size
    count = max(1, nbytes // element_size)
    return count, count, count * element_size


__all__ = ["ALGORITHMS", "ALIASES", "CALLS", "resolve", "resolve_collective", "schedule", "execute", "Step",
           "chunk_bounds", "counts", "allreduce", "broadcast", "reduce", "all_gather", "all_gather_chunks",
           "reduce_scatter", "all_to_all"]

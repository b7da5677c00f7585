"""An nccl-tests-style benchmark of netlab's collectives on real ranks: time, algbw, busbw, formula.

    rows = bench("allreduce", "ring", ranks=8, sizes=parse_size_range("1K:256M"),
                 network=network("100Gbit/s", "5us"))

Conventions are nccl-tests' (doc/PERFORMANCE.md): S is the collective's whole buffer (the
all-gather's output, the reduce-scatter's input), algbw = S / t, busbw = algbw x 2(p-1)/p for
all-reduce, (p-1)/p for all-gather, reduce-scatter and all-to-all, 1 for broadcast and reduce;
GB = 1e9 B.

Under an emulated network the time is virtual (one iteration: it is deterministic) and the payload
is size-only unless ``check`` asks for real data -- the clock is identical either way. Without a
network the wall clock times ``iters`` iterations after ``warmup`` ones on the real transport
(loopback here, the cluster's network under torchrun), and algo ``torch`` times torch's own
collective for comparison.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from netlab.lazy import lazy
torch = lazy("torch", globals())
dist = lazy("torch.distributed", globals())

from .. import collectives, seeds, validate
from . import cost
from ..net.network import Network

MAX_ITERS = 10_000              # nccl-tests runs 20; more only adds time (and memory: one buffer each)

# a dtype's names -> torch's name for it (the ranks look it up, so the kernel need not import torch)
DTYPES = {"float": "float32", "float32": "float32", "half": "float16", "float16": "float16",
          "bfloat16": "bfloat16", "double": "float64", "float64": "float64",
          "int32": "int32", "int64": "int64"}
TYPE_NAMES = {"float32": "float", "float16": "half", "bfloat16": "bfloat16", "float64": "double",
              "int32": "int32", "int64": "int64"}
def _torch_collective(comm, collective, x):
    """torch's own collective on the same data (the reference, and algo 'torch' on the wall clock)."""
    grp, p = comm.group, comm.world_size
    if collective == "allreduce":
        dist.all_reduce(x, group=grp)
        return x
    if collective in ("broadcast", "reduce"):
        (dist.broadcast(x, src=0, group=grp) if collective == "broadcast" else dist.reduce(x, dst=0, group=grp))
        return x
    if collective == "allgather":
        parts = [torch.empty_like(x) for _ in range(p)]
        dist.all_gather(parts, x, group=grp)
        return torch.cat(parts)
    if collective == "alltoall":                    # gloo has all_to_all_single (even splits here)
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x, group=grp)
        return out
    dist.all_reduce(x, group=grp)                   # reduce-scatter: the sum, sliced like ours
    offsets, lengths = collectives.chunk_bounds(x.numel(), p)
    return x[int(offsets[comm.rank]):int(offsets[comm.rank] + lengths[comm.rank])]


def _once(comm, collective, algo, x, count, dtype):
    if algo == "torch":
        return _torch_collective(comm, collective, x)
    return collectives.CALLS[collective](comm, x, algo=algo, count=count, dtype=dtype)


def _bench_rank(comm, collective: str, algo: str, sizes, *, dtype, real: bool, check: bool, iters: int, warmup: int):
    """Runs on every rank: per size, (S, count, seconds, check result); `dtype` is torch's name for it."""
    dtype = getattr(torch, dtype)
    out = []
    element_size = torch.empty(0, dtype=dtype).element_size()
    for nbytes in sizes:
        count, _, s = collectives.counts(collective, nbytes, comm.world_size, element_size)
        make = (lambda: torch.randint(-8, 9, (count,), generator=seeds.torch_generator(0, seeds.BENCH, comm.rank))
                .to(dtype)) if real else (lambda: None)
        verdict = None
        if check:
            mine = _once(comm, collective, algo=algo, x=make(), count=count, dtype=dtype)
            reference = _torch_collective(comm, collective, make())
            root_only = collective == "reduce" and comm.rank != 0
            verdict = True if root_only else bool(torch.equal(mine.to(torch.float64), reference.to(torch.float64)))
        if comm.virtual:
            comm.restart_clock()
            _once(comm, collective, algo=algo, x=make(), count=count, dtype=dtype)
            seconds = comm.now()
        else:
            for _ in range(warmup):
                _once(comm, collective, algo=algo, x=make(), count=count, dtype=dtype)
            data = [make() for _ in range(iters)]
            dist.barrier(group=comm.group)
            start = time.perf_counter()
            for x in data:
                _once(comm, collective, algo=algo, x=x, count=count, dtype=dtype)
            seconds = (time.perf_counter() - start) / iters
        out.append((s, s // element_size, seconds, verdict))
    return out


@dataclass(frozen=True, kw_only=True)
class Timing:
    """How ``bench`` times a size on the wall clock: ``warmup`` calls untimed, then the mean of ``iters``
    calls (on the virtual clock one call is timed); ``timeout``: seconds the whole run may take."""
    iters: int = 5
    warmup: int = 1
    timeout: float = 600.0

    def __post_init__(self):
        validate.whole(self.iters, "iters", 1, MAX_ITERS)
        validate.whole(self.warmup, "warmup", 0, MAX_ITERS)
        validate.positive(self.timeout, "timeout")


def check_bench(collective: str, algo: str, ranks: int, sizes, *, network: Network | None = None,
                dtype: str = "float", check: bool = False, timing: Timing = Timing()) -> tuple[str, str]:
    """Every setting of ``bench``, checked before a rank starts; returns (collective, algorithm) resolved.

    Refuses, with the estimate, what would not fit in memory: on the wall clock (or with ``check``)
    every rank holds ``iters`` buffers of the largest size, plus three for the check and the warm-up.
    """
    from ..runtime import launch, memory, pool
    if algo == "torch":
        if network is not None:
            raise ValueError("algo: 'torch' (torch's own collective) can only be timed on the wall clock")
        collective = collectives.resolve_collective(collective)
    else:
        collective, algo = collectives.resolve(collective, algo)
    validate.choice(dtype, "dtype", DTYPES)
    validate.instance(timing, "timing", Timing, "a netlab.collectives.bench.Timing")
    pool.check_ranks(ranks)
    if not sizes:
        raise ValueError("sizes: no size given")
    if network is not None and network.ranks_per_host > 1:
        if collective == "alltoall":
            raise ValueError("ranks_per_host: the all-to-all runs on one rank per host")
        if network.ranks_per_host > ranks:
            raise ValueError(f"ranks_per_host: {network.ranks_per_host} ranks per host but only {ranks} ranks")
        if algo.startswith("hierarchical") and ranks % network.ranks_per_host:
            raise ValueError(f"ranks_per_host: {algo} needs whole hosts: {ranks} ranks are not a multiple of "
                             f"{network.ranks_per_host}")
    if (check or network is None) and not launch.under_torchrun():
        buffers = (timing.iters if network is None else 0) + 3
        validate.too_big("sizes", ranks * buffers * max(sizes), 0.9 * memory.memory_limit(),
                         f"{ranks} ranks x {buffers} buffers x {max(sizes):.3g} B of memory", unit=" B")
    return collective, algo


def bench(collective: str, algo: str, ranks: int, sizes, *, network: Network | None = None, dtype: str = "float",
          check: bool = False, timing: Timing = Timing()) -> list[dict]:
    """One row per size: collective, algo, ranks, bytes, count, type, time_s, predicted_s, algbw/busbw (GB/s)."""
    from ..runtime import launch, memory, shared
    collective, algo = check_bench(collective, algo, ranks, sizes, network=network, dtype=dtype, check=check,
                                   timing=timing)
    real = check or network is None
    if real and not launch.under_torchrun():
        shared.check_memory(ranks, memory.rank_bytes(max(sizes), 4, memory.LIGHT_RANK_BASE), "this benchmark")
    torch_dtype = DTYPES[dtype]
    res = launch.run(_bench_rank, collective, algo, list(sizes), dtype=torch_dtype, real=real, check=check,
                     iters=timing.iters, warmup=timing.warmup, ranks=ranks, network=network, timeout=timing.timeout)
    rows = []
    for i, (s, count, _, _) in enumerate(res.values[0]):
        seconds = max(v[i][2] for v in res.values)       # the slowest rank ends the collective
        verdicts = [v[i][3] for v in res.values]
        predicted = cost.time(collective, algo, ranks, s,
                              network=network) if network is not None and algo != "torch" else None
        rows.append({"collective": collective, "algo": algo, "ranks": ranks, "bytes": s, "count": count,
                     "type": TYPE_NAMES[torch_dtype], "time_s": seconds, "predicted_s": predicted,
                     "algbw_GBps": cost.algbw(s, seconds) / 1e9, "busbw_GBps": cost.busbw(collective, ranks, s, seconds) / 1e9,
                     "check": None if not check else ("ok" if all(verdicts) else "WRONG"),
                     "clock": "virtual" if network is not None else "wall"})
    return rows

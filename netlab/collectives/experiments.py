"""Chapter 2's experiments on real ranks: each collective on a small example, the ring all-reduce
step by step, and every all-reduce algorithm timed over sizes and world sizes beside its formula.

Everything comes from runs on real ranks: the examples move real tensors; the ring's steps are
snapshots taken on the ranks between steps; the times are virtual times of size-only runs
(identical to real payloads', see tests), with the formula next to them (``netlab.collectives.bench``).
Left out: drawing (``netlab.figures.collectives``) and the chapter's panels (``netlab.ui.ch2``).
"""
from __future__ import annotations

from netlab.lazy import lazy
torch = lazy("torch", globals())

from .. import collectives
from ..runtime import launch, shared
from .bench import bench
from ..net.network import network
from .schedule import execute, rank_plan

FLAT = ["naive", "ring", "tree", "recursive_doubling", "halving_doubling"]


def _example(comm, collective, algo, n):
    x = torch.arange(n, dtype=torch.int64) + 10 * (comm.rank + 1)       # rank r holds 10(r+1), 10(r+1)+1, ...
    before = x.tolist()
    if collective == "allgather":
        after = collectives.all_gather(comm, x[:1], algo=algo)
        before = x[:1].tolist()
    elif collective == "reduce_scatter":
        after = collectives.reduce_scatter(comm, x, algo=algo)
    elif collective == "alltoall":                                        # element j to rank j
        after = collectives.all_to_all(comm, x, algo=algo)
    else:
        after = getattr(collectives, collective)(comm, x, algo=algo)
    return before, after.tolist()


def example(collective: str, algo: str | None = None, ranks: int = 4, n: int = 4) -> list[tuple[list, list]]:
    """Run one collective on real ranks with small integers; print and return (before, after) per rank."""
    algo = algo or {"broadcast": "tree", "reduce": "tree", "alltoall": "pairwise"}.get(collective, "ring")
    res = launch.run(_example, collective, algo, n, ranks=ranks)
    print(f"{collective} ({algo}) on {ranks} ranks")
    for r, (before, after) in enumerate(res.values):
        note = ("" if collective != "reduce" or r == 0 else
                "   (not the root: a partial sum)" if after != before else "   (not the root: only sent, unchanged)")
        print(f"  rank {r}: before {before!s:<22} after {after}{note}")
    return res.values


def _ring_snapshots(comm, n):
    x = torch.full((n,), 1 << comm.rank, dtype=torch.int64)             # rank r contributes bit r
    plan = rank_plan(collectives.schedule("allreduce", "ring", comm.world_size, n), comm.rank)
    offsets, lengths = collectives.chunk_bounds(n, comm.world_size)
    first = lambda t: [int(t[o]) for o in offsets]                      # noqa: E731 -- one value per chunk
    shots = [first(x)]
    for step in plan:
        execute(comm, x, None, plan=[step])
        shots.append(first(x))
    return shots


def ring_snapshots(ranks: int = 4) -> list[list[list[int]]]:
    """[step][rank][chunk] -> bitmask of the ranks whose data is summed there, taken on real ranks."""
    res = launch.run(_ring_snapshots, ranks, ranks=ranks)
    return [[res.values[r][s] for r in range(ranks)] for s in range(len(res.values[0]))]


def measure(ranks: int, sizes, bandwidth: str, latency: str, *, algos=FLAT) -> list[dict]:
    """bench() of every algorithm over the sizes: virtual time, formula, algbw, busbw."""
    net = network(bandwidth, latency)
    return [row for algo in algos for row in bench("allreduce", algo, ranks, sizes, network=net)]


def latency_sweep(ranks_list=(2, 4, 8, 16), algos=("ring", "tree", "recursive_doubling"), size: int = 1024,
                  bandwidth: str = "100Gbit/s", *, latency: str = "5us") -> list[dict]:
    """One small message on growing worlds: where the alpha terms of each algorithm show."""
    net = network(bandwidth, latency)
    shared.get_cluster(max(ranks_list))                                 # one pool for the whole sweep
    return [row for p in ranks_list for algo in algos for row in bench("allreduce", algo, p, [size], network=net)]

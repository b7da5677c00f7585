"""In-network aggregation (在网聚合): an all-reduce in which a switch sums the workers' data.

SwitchML (Sapio et al., "Scaling Distributed Machine Learning with In-Network Aggregation",
NSDI'21) and SHARP (Graham et al., "Scalable Hierarchical Aggregation Protocol", COMHPC 2016)
put the reduction in the switch: each of p workers sends its buffer of S bytes up once, the switch
adds the workers' packets slot by slot and multicasts the sum back, so each worker sends S and
receives S -- at the same time, on the two directions of its port -- instead of the ring's
2(p-1)/p S each way. At large S that is S/B against the ring's ~2S/B: twice the bus bandwidth.

On real ranks the switch is one extra rank (the last): ``world_size = p + 1``. ``SwitchNetwork``
gives it one full-duplex port per worker (a switch's ports, not one NIC), each like a worker's
NIC: a chunk of c bytes holds it alpha + c/B. The buffer is cut into `chunks` chunks that stream
through the switch as a pipeline: up, aggregate (c / capacity seconds on the switch's one
aggregator), down; the switch multicasts chunk j while chunk j+1 comes in. ``netlab.collectives.cost.
ina_allreduce`` is the closed form (a test holds the two to 1 %).

Left out: SwitchML's packet-level details (a pool of aggregator slots reused by sequence number,
loss recovery, the fixed-point conversion of floats: here the switch sums the tensors exactly as
the workers would), SHARP's tree of switches (one switch aggregates here; the flow simulator,
``netlab.sim.ina``, places it anywhere in a fabric), and a switch memory limit on chunks in flight.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from netlab.lazy import lazy
torch = lazy("torch", globals())

from .. import validate
from ..net.network import Network
from ..collectives.schedule import chunk_bounds


@dataclass(frozen=True)
class SwitchNetwork(Network):
    """A ``Network`` whose rank `switch` is a switch: one port per peer, each as fast as a NIC."""
    switch: int = -1

    def __post_init__(self):
        super().__post_init__()
        if self.ranks_per_host != 1 or self.congestion is not None:
            raise ValueError("network: in-network aggregation runs on one rank per host, without congestion=")
        validate.whole(self.switch, "switch", 0, int_only=True)

    def link_class(self, a: int, b: int) -> str:
        if self.switch in (a, b):                        # the switch side: a port of its own per worker
            return f"switch-port-{b if a == self.switch else a}"
        return super().link_class(a, b)


def switch_network(network: Network, workers: int) -> SwitchNetwork:
    """`network`'s NIC, with rank `workers` (after workers 0..workers-1) as the aggregating switch."""
    validate.whole(workers, "workers", 1, int_only=True)
    return SwitchNetwork(nic=network.nic, ranks_per_host=network.ranks_per_host, intra=network.intra,
                         gamma=network.gamma, congestion=network.congestion, switch=workers)


def allreduce(comm, tensor, *, chunks: int = 1, capacity: float = math.inf, op: str = "sum",
              count: int | None = None, dtype=None):
    """Sum `tensor` over the workers (ranks 0..world_size-2) through the switch (the last rank).

    Every rank calls it with the same shape; on the switch the tensor is its work space and ends
    holding the sum too. ``tensor=None, count=n`` runs size-only (virtual time only).
    `capacity`: bytes/s the switch sums (inf: it keeps up with any line rate).
    """
    validate.choice(op, "op", ("sum", "avg"))
    if not capacity == math.inf:
        validate.positive(capacity, "capacity")
    if tensor is not None:
        if not tensor.is_contiguous():
            raise ValueError("tensor: must be contiguous")
        flat, count, element_size = tensor.view(-1), tensor.numel(), tensor.element_size()
    elif count is None:
        raise ValueError("count: give a tensor, or count= for a size-only run")
    else:
        flat, element_size = None, torch.empty(0, dtype=torch.float32 if dtype is None else dtype).element_size()
    validate.whole(chunks, "chunks", 1, max(count, 1), int_only=True)
    workers = comm.world_size - 1
    if workers < 1:
        raise ValueError("ranks: in-network aggregation needs at least one worker and the switch (2 ranks)")
    net = comm.network
    if net is not None and getattr(net, "switch", None) != workers:    # else the switch would have one NIC
        raise ValueError(f"network: the switch is rank {workers}; run on ina.switch_network(network, {workers})")
    offsets, lengths = chunk_bounds(count, chunks)
    with comm.region("allreduce:ina"):
        if comm.rank == workers:
            _switch(comm, flat, offsets=offsets, lengths=lengths, element_size=element_size, capacity=capacity)
        else:
            _worker(comm, flat, offsets=offsets, lengths=lengths, element_size=element_size)
    if op == "avg" and tensor is not None:
        tensor /= workers
    return tensor


def _worker(comm, flat, offsets, lengths, element_size):
    """Stream every chunk up, then take the sums back as the switch sends them."""
    switch = comm.world_size - 1
    if flat is None:
        sends = [comm.isend(None, switch, nbytes=int(n) * element_size) for n in lengths]
        recvs = [comm.irecv(None, switch, nbytes=int(n) * element_size) for n in lengths]
        comm.wait(*sends, *recvs)
        return
    out = [flat[o:o + n].clone() for o, n in zip(offsets, lengths)]   # what goes up, before the sums land
    sends = [comm.isend(x, switch) for x in out]
    recvs = [comm.irecv(flat[o:o + n], switch) for o, n in zip(offsets, lengths)]
    comm.wait(*sends, *recvs)


def _switch(comm, flat, offsets, lengths, element_size, capacity):
    """Per chunk: every worker's part in, summed on the aggregator, multicast back without waiting."""
    workers = comm.world_size - 1
    posted = []
    for o, n in zip(offsets.tolist(), lengths.tolist()):
        nbytes = n * element_size
        if flat is None:
            comm.wait(*[comm.irecv(None, w, nbytes=nbytes) for w in range(workers)])
        else:
            parts = [torch.empty(n, dtype=flat.dtype) for _ in range(workers)]
            comm.wait(*[comm.irecv(x, w) for w, x in enumerate(parts)])
            total = flat[o:o + n]
            total.copy_(parts[0])
            for x in parts[1:]:
                total += x
        if capacity != math.inf:
            comm.compute_for(seconds=nbytes / capacity, label="aggregate")   # the aggregator is busy
        for w in range(workers):                     # sends book the ports now; waited for at the end
            posted.append(comm.isend(None if flat is None else flat[o:o + n], w,
                                     nbytes=nbytes if flat is None else None))
    comm.wait(*posted)


def _timed(comm, count, chunks, capacity, algo):
    """Runs on every rank: one size-only all-reduce (ring on the workers' own ranks, or through the switch)."""
    from ..collectives import allreduce as ring_allreduce
    comm.restart_clock()
    if algo == "ina":
        allreduce(comm, None, chunks=chunks, capacity=capacity, count=count)
    else:
        ring_allreduce(comm, None, algo=algo, count=count)
    return comm.now()


def measure(workers: int, nbytes: int, network: Network, *, chunks: int = 1, capacity: float = math.inf,
            algo: str = "ina") -> float:
    """Virtual seconds of one all-reduce of `nbytes` over `workers` real ranks: through a switch rank
    (``algo='ina'``, workers + 1 ranks) or one of the lab's own algorithms on the workers alone."""
    from ..runtime import launch
    validate.whole(workers, "workers", 1, int_only=True)
    count = max(1, validate.whole(nbytes, "size", 1, int_only=True) // 4)
    if algo == "ina":
        res = launch.run(_timed, count, chunks=chunks, capacity=capacity, algo=algo, ranks=workers + 1,
                         network=switch_network(network, workers))
    else:
        res = launch.run(_timed, count, chunks=chunks, capacity=capacity, algo=algo, ranks=workers, network=network)
    return max(res.values)


def _bench_rank(comm, counts, chunks, check):
    """Runs on every rank: per size, (virtual seconds, equal to torch's all-reduce or None)."""
    import torch.distributed as dist
    out = []
    workers = comm.world_size - 1
    for count in counts:
        verdict = None
        if check:
            g = torch.Generator().manual_seed(comm.rank)
            x = (torch.randint(-8, 9, (count,), generator=g).float() if comm.rank < workers
                 else torch.zeros(count))
            ref = x.clone()
            dist.all_reduce(ref, group=comm.group)              # the switch adds zeros
            allreduce(comm, x, chunks=min(chunks, count))
            verdict = bool(torch.equal(x, ref))
        comm.restart_clock()
        allreduce(comm, None, chunks=min(chunks, count), count=count)
        out.append((comm.now(), verdict))
    return out


def bench(workers: int, sizes, network: Network, *, chunks: int = 16, check: bool = False) -> list[dict]:
    """``netlab.collectives.bench``'s rows for in-network aggregation: `workers` ranks and a switch rank, virtual time."""
    from ..collectives import cost
    from ..runtime import launch, memory, pool, shared
    validate.whole(workers, "ranks", 1, pool.MAX_RANKS - 1, int_only=True)
    validate.whole(chunks, "chunks", 1, int_only=True)
    if network is None:
        raise ValueError("algo: 'ina' runs on an emulated network: give --bandwidth, --latency or --preset")
    net = switch_network(network, workers)
    counts = [max(1, int(s) // 4) for s in sizes]
    if check:
        shared.check_memory(workers + 1, memory.rank_bytes(4 * max(counts), 3 + workers, memory.LIGHT_RANK_BASE),
                             "this benchmark")
    res = launch.run(_bench_rank, counts, chunks, check, ranks=workers + 1, network=net)
    rows = []
    for i, count in enumerate(counts):
        s, k = 4 * count, min(chunks, count)
        seconds = max(v[i][0] for v in res.values)
        rows.append({"collective": "allreduce", "algo": "ina", "ranks": workers, "bytes": s, "count": count,
                     "type": "float", "time_s": seconds,
                     "predicted_s": cost.ina_allreduce(workers, s, network.nic, chunks=k),
                     "algbw_GBps": cost.algbw(s, seconds) / 1e9,
                     "busbw_GBps": cost.busbw("allreduce", workers, s, seconds) / 1e9,
                     "check": None if not check else ("ok" if all(v[i][1] for v in res.values) else "WRONG"),
                     "clock": "virtual"})
    return rows

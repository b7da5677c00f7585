"""BytePS's summation service, BSP: CPU-only servers beside workers that are servers too (colocated).

BytePS (Jiang et al., OSDI 2020) splits the parameter server in two: a Summation Service that only
adds gradients (cheap, CPU-only machines can do it) and the optimizer, which stays on the workers.
Its partitions go partly to k extra CPU servers and partly to servers colocated on the p workers
(``sharding.mixed_map``): with the share x = 2k(p-1)/(p(p+k) - 2k) on the CPU servers, every NIC
is equally busy and one step costs 2p(p-1)M / ((p^2 + kp - 2k) B) -- less than all-reduce
(2(p-1)M/(pB)) and less than a PS on the same k servers (pM/(kB) once k < p).

Two special cases use the same code: x = 0 is a colocated PS (every worker serves 1/p of the
model: the traffic of an all-reduce, BytePS issue #60), x = 1 a plain summation PS on k servers.

One step on worker rank r (each rank serves its own partitions, possibly none):

    push every partition r does not serve to its server        (isend, round robin over servers)
    for each partition r serves, in order:
        receive it from every other worker (rank order), add them and r's own, send the sum back
    receive the sums of the other partitions; momentum SGD on the full summed gradient

BSP only, by construction: a server answers a partition when all p pushes of it are in. Since the
workers apply the optimizer, the model trained is the all-reduce one (a test checks it).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from netlab.lazy import lazy
torch = lazy("torch", globals())
parameters_to_vector = lazy("torch.nn.utils:parameters_to_vector", globals())

from ..dataparallel import train
from .. import validate
from . import messages
from .config import Training, training_of
from .roles import Roles
from .sharding import ShardMap, check_servers


@dataclass(frozen=True, kw_only=True)
class HybridConfig(Training):
    workers: int
    cpu_servers: int
    smap: ShardMap                  # servers 0..k-1: CPU ranks p..p+k-1; servers k..k+p-1: workers 0..p-1
    steps: int = 1
    eval_every: int = 0

    def __post_init__(self):
        super().__post_init__()
        Roles.of(self.workers, max(self.cpu_servers, 1))         # the rank-count check, one message
        validate.whole(self.steps, "steps", 1, 100_000)

    def server_rank(self, server: int) -> int:
        k = self.cpu_servers
        return self.workers + server if server < k else server - k

    def served_by(self, rank: int) -> list:
        return [c for c in self.smap.chunks if self.server_rank(c.server) == rank]


def _post_pushes(comm, cfg: HybridConfig) -> list:
    """Receives for every push this rank will sum, posted before anything else from the same peers.

    A colocated worker sends a peer its pushes first and its sums afterwards, over one channel;
    gloo matches receives in the order they are posted, so pushes must be posted first here too.
    """
    me, posted = comm.rank, []
    for c in cfg.served_by(me):
        bufs = {}
        for u in range(cfg.workers):
            if u != me:
                buf = messages.empty(c.length)
                bufs[u] = (comm.irecv(buf, u), buf)
        posted.append((c, bufs))
    return posted


def _serve(comm, cfg: HybridConfig, step: int, grad, posted: list, results: dict, outbox: list) -> None:
    """Sum this rank's partitions over all workers and send each sum back to every worker."""
    me = comm.rank
    for c, bufs in posted:
        total = torch.zeros(c.length)
        for u in range(cfg.workers):                             # worker-rank order: a fixed sum
            if u == me:
                total += grad[c.offset:c.offset + c.length]
            else:
                comm.wait(bufs[u][0])
                total += messages.values(bufs[u][1])
        comm.reduce_cost(4 * c.length * (cfg.workers - 1))
        if me < cfg.workers:
            results[c.index] = total
        reply = messages.pack(total, c.length, 0, step, version=0)
        outbox.extend((comm.isend(reply, u), reply) for u in range(cfg.workers) if u != me)


def exchange(comm, cfg: HybridConfig, step: int, grad: torch.Tensor | None) -> torch.Tensor | None:
    """One push/sum/pull of the flat gradient; the summed gradient on workers, None on CPU servers."""
    me, outbox, results = comm.rank, [], {}
    worker = me < cfg.workers
    order = [c for c in cfg.smap.send_order() if cfg.server_rank(c.server) != me] if worker else []
    incoming = _post_pushes(comm, cfg)
    for c in order:                                              # push (round robin over servers)
        buf = messages.pack(grad[c.offset:c.offset + c.length], c.length, 0, step, version=0)
        outbox.append((comm.isend(buf, cfg.server_rank(c.server)), buf))
    pulls = []
    for c in order:
        buf = messages.empty(c.length)
        pulls.append((c, comm.irecv(buf, cfg.server_rank(c.server)), buf))
    _serve(comm, cfg, step=step, grad=grad, posted=incoming, results=results, outbox=outbox)
    comm.wait(*[r for _, r, _ in pulls])
    for req, _ in outbox:
        messages.arrived(req)
    if not worker:
        return None
    total = torch.empty(cfg.smap.numel)
    for c in cfg.smap.chunks:
        if c.index in results:
            total[c.offset:c.offset + c.length] = results[c.index]
    for c, _, buf in pulls:
        total[c.offset:c.offset + c.length] = messages.values(buf)
    return total


class SummationSync(train.Sync):
    """``exchange`` as ``train.fit``'s sync: the workers get the summed gradient and step the optimizer."""
    returns, region = "gradient", "push/pull"

    def __init__(self, cfg: HybridConfig):
        self.cfg = cfg

    def __call__(self, comm, flat: torch.Tensor, step: int) -> torch.Tensor:
        return exchange(comm, self.cfg, step, flat)


def rank_main(comm, cfg: HybridConfig) -> dict:
    """Workers train chapter 1's MLP with the summation service; CPU servers only add."""
    if comm.rank >= cfg.workers:
        for t in range(cfg.steps):
            exchange(comm, cfg, t, None)
        return {"role": "server"}
    fit = train.FitConfig(steps=cfg.steps, width=cfg.width, layers=cfg.layers, batch=cfg.batch, lr=cfg.lr,
                          momentum=cfg.momentum, seed=cfg.seed, eval_every=cfg.eval_every)
    res = train.fit(comm, fit, sync=SummationSync(cfg), batch_slice=lambda t: (comm.rank, cfg.workers))
    return {"role": "worker", "comm_s": res.comm_s, "history": res.evaluated(comm.rank),
            "params": parameters_to_vector(res.model.parameters()).detach().numpy() if comm.rank == 0 else None}


@dataclass(frozen=True, kw_only=True)
class HybridLayout:
    """The summation service's shape: `workers` GPU workers, `cpu_servers` CPU servers, and how the model's
    partitions split between them (``sharding.mixed_map``: `fraction` to the CPU servers, BytePS's optimum
    when None; `partition_bytes` a partition, the default when None; `method` 'balanced' or 'hash')."""
    workers: int = 8
    cpu_servers: int = 2
    fraction: float | None = None
    partition_bytes: int | None = None
    method: str = "balanced"

    def __post_init__(self):
        check_servers(self.workers, "workers")
        validate.whole(self.cpu_servers, "cpu_servers", 0, self.workers, int_only=True)
        validate.choice(self.method, "method", ("balanced", "hash"))
        x = self.fraction if self.fraction is None else validate.number(self.fraction, "fraction")
        if x is not None and (not 0 <= x <= 1 or (x > 0 and self.cpu_servers == 0)):
            raise ValueError(f"fraction: must be in [0, 1] (and 0 without CPU servers), got {x!r}")


def run_hybrid(layout: HybridLayout | None = None, *, bandwidth="10Gbit/s", latency="5us", device="cpu-core",
               efficiency=0.5, timeout=120.0, **settings) -> dict:
    """Run the summation service on real ranks: step and push/pull time, per-rank bytes, accuracy.

    `layout`: a ``HybridLayout``, or its fields as keywords (workers, cpu_servers, fraction,
    partition_bytes, method). The other settings are HybridConfig's own fields (steps, width, layers,
    batch, lr, momentum, seed, eval_every).
    """
    from ..runtime import launch, memory, shared
    from ..net.network import network as make_network
    from ..net.presets import device as make_device
    from .sharding import DEFAULT_PARTITION_BYTES, mixed_map
    names = {f.name for f in fields(HybridLayout)}
    training = {k: v for k, v in settings.items() if k not in names}
    model = training_of(training)                                # the MLP, checked before its size is used
    lay = validate.config(HybridLayout, layout, {k: v for k, v in settings.items() if k in names})
    workers, cpu_servers = lay.workers, lay.cpu_servers
    smap = mixed_map(train.parameter_count(model.width, model.layers), workers, cpu_servers,
                     lay.partition_bytes or DEFAULT_PARTITION_BYTES, fraction=lay.fraction, method=lay.method)
    cfg = HybridConfig(workers=workers, cpu_servers=cpu_servers, smap=smap, **training)
    net = make_network(bandwidth, latency)
    ranks = workers + cpu_servers
    shared.check_memory(ranks, memory.rank_bytes(train.grad_bytes(cfg.width, cfg.layers), 6), "this BytePS run")
    res = launch.run(rank_main, cfg, ranks=ranks, network=net, device=make_device(device, efficiency),
                      timeout=timeout)
    steps = cfg.steps
    w = res.values[:workers]
    comm_s = sum(max(v["comm_s"][t] for v in w) for t in range(steps)) / steps
    nic = [c[0] + c[1] for c in res.counters]                   # bytes through each rank's NIC, in + out
    hist = w[0]["history"]
    return {"step_s": res.trace.makespan / steps, "comm_s": comm_s, "worker_bytes": nic[:workers],
            "server_bytes": nic[workers:], "cpu_share": sum(smap.elements_per_server()[:cpu_servers]) / smap.numel,
            "accuracy": hist["accuracy"][-1] if hist["accuracy"] else None, "history": hist,
            "params": w[0]["params"], "model_bytes": 4 * smap.numel, "chunks": len(smap.chunks), "trace": res.trace}

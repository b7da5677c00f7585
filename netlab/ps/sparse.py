"""Sparse embedding rows on parameter servers: Zipf-skewed lookups, the hot shard, and two remedies.

Recommendation models keep huge embedding tables; a batch touches a few rows, so a worker pulls
and pushes only those (ps-lite's sparse ``Pull(keys)`` / ``Push(keys, vals)``). Which rows are
popular follows a power law: row r (rows numbered by popularity) is looked up with probability
proportional to 1 / (r+1)^a (Zipf; a = 1 here by default). Placement decides who pays for it:

* ``range``: server s holds rows [s R/k, (s+1) R/k) -- ps-lite's contiguous key ranges on raw
  row ids. The popular rows are the small ids, so server 0 gets most of the traffic.
* ``hash``: row r lives on server djb2(r) % k (BytePS's hash). Popular rows spread out, but the
  single hottest row still lands on one server.
* ``replicate``: hash, plus the `hot` most-looked-up rows (counted in an access log sampled
  beforehand) copied on every server; worker w reads and writes them on server w % k. The copies
  must agree: after each step the servers send each other their partial sums of the hot rows
  (k(k-1) small messages) and all apply the total. FlexShard (arXiv 2301.02959) replicates
  rows by access probability the same way.

One BSP step, worker w: sample `lookups` row ids; for each server, send the unique ids it must
serve (a 32-byte count message, then the ids as int64) and receive their values (dim fp32 each);
compute the gradient of the toy loss 0.5 ||e_row - target_row||^2 summed over lookups / global
lookups; push (ids, gradients). Servers answer pulls in worker-rank order, sum pushes in
worker-rank order, and update with SGD. The table therefore ends exactly where a single process
applying the same steps ends (a test checks it).

Left out: model-parallel all-to-all sharding (DLRM/TorchRec), caches on workers, async.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from netlab.lazy import lazy
torch = lazy("torch", globals())

from .. import seeds, validate
from . import messages
from .roles import Roles
from .sharding import djb2

PLACEMENTS = ("range", "hash", "replicate")


@dataclass(frozen=True, kw_only=True)
class SparseConfig:
    """One embedding run: the layout, the table, the lookups and their skew, the placement, SGD.

    Keyword-only and frozen, checked when built (one ValueError naming the field), so a bad value
    fails before any rank starts."""
    workers: int = 8
    servers: int = 4
    rows: int = 20_000
    dim: int = 16
    lookups: int = 512             # row ids per worker per step
    zipf: float = 1.0              # the Zipf exponent
    placement: str = "range"
    hot: int = 0                   # replicated rows (placement 'replicate'; 0 under the others)
    steps: int = 3
    lr: float = 0.5
    seed: int = 0

    def __post_init__(self):
        Roles.of(self.workers, self.servers)
        validate.choice(self.placement, "placement", PLACEMENTS)
        for name, low in (("hot", 0), ("rows", 2), ("dim", 1), ("lookups", 1), ("steps", 1)):
            validate.whole(getattr(self, name), name, low, int_only=True)
        object.__setattr__(self, "zipf", validate.number(self.zipf, "zipf", 0, 4))
        if self.placement != "replicate":
            object.__setattr__(self, "hot", 0)

    def server_rank(self, s: int) -> int:
        return self.workers + s


def popularity(rows: int, a: float) -> np.ndarray:
    """P(row r) proportional to 1/(r+1)^a: row 0 is the most popular."""
    weights = 1.0 / np.arange(1, rows + 1, dtype=np.float64) ** a
    return weights / weights.sum()


def lookups(cfg: SparseConfig, worker: int, step: int, stream: int = seeds.LOOKUPS) -> np.ndarray:
    """The row ids worker `worker` looks up at `step` (seeded: identical in every process)."""
    rng = seeds.generator(cfg.seed, stream, worker, step)
    return rng.choice(cfg.rows, size=cfg.lookups, p=popularity(cfg.rows, cfg.zipf))


def hot_rows(cfg: SparseConfig, log_steps: int = 4) -> np.ndarray:
    """The `hot` most frequent rows of an access log sampled before training (other seeds, same law)."""
    log = np.concatenate([lookups(cfg, w, t, seeds.ACCESS_LOG) for w in range(cfg.workers) for t in range(log_steps)])
    counts = np.bincount(log, minlength=cfg.rows)
    return np.sort(np.argsort(-counts, kind="stable")[:cfg.hot])


def owners(cfg: SparseConfig) -> np.ndarray:
    """owners[r] = the server holding row r (its home; replicated rows have copies everywhere)."""
    if cfg.placement == "range":
        return (np.arange(cfg.rows) * cfg.servers // cfg.rows).astype(np.int64)
    return np.array([djb2(r) % cfg.servers for r in range(cfg.rows)], dtype=np.int64)


def route(cfg: SparseConfig, home: np.ndarray, hot: np.ndarray, worker: int, *, ids: np.ndarray) -> np.ndarray:
    """Which server worker `worker` asks for each of `ids`: the home, or its replica server for hot rows."""
    where = home[ids]
    if cfg.placement == "replicate" and len(hot):
        where = np.where(np.isin(ids, hot), worker % cfg.servers, where)
    return where


def initial_table(cfg: SparseConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """(table, targets), both (rows, dim) fp32, seeded: the same on every rank."""
    g = torch.Generator().manual_seed(cfg.seed)
    return torch.randn(cfg.rows, cfg.dim, generator=g) * 0.1, torch.randn(cfg.rows, cfg.dim, generator=g)


def _ints(ids: np.ndarray) -> torch.Tensor:
    """int64 ids travelling inside an fp32 message (two slots each)."""
    return torch.from_numpy(ids.astype(np.int64)).view(torch.float32)


def worker_main(comm, cfg: SparseConfig, home, hot) -> dict:
    table, targets = initial_table(cfg)          # only `targets` is used: the values come from the servers
    sent, routed = 0, np.zeros(cfg.servers, dtype=np.int64)
    for t in range(cfg.steps):
        ids = lookups(cfg, comm.rank, t)
        uniq, counts = np.unique(ids, return_counts=True)
        where = route(cfg, home, hot, comm.rank, ids=uniq)
        per = [uniq[where == s] for s in range(cfg.servers)]
        routed += np.bincount(where, weights=counts, minlength=cfg.servers).astype(np.int64)   # lookups, not rows
        reqs, bufs = [], []
        for s, rows in enumerate(per):               # pull: count, then ids
            meta = messages.pack(None, 0, 0, t, version=len(rows))   # the count travels as 'version'
            reqs.append(comm.isend(meta, cfg.server_rank(s)))
            bufs.append(meta)
            if len(rows):
                keys = _ints(rows)
                reqs.append(comm.isend(keys, cfg.server_rank(s)))
                bufs.append(keys)
        values = [torch.empty(len(rows), cfg.dim) for rows in per]
        reqs += [comm.irecv(values[s], cfg.server_rank(s)) for s, rows in enumerate(per) if len(rows)]
        comm.wait(*reqs)
        with comm.compute(flops=6 * cfg.lookups * cfg.dim, label="embedding"):
            grads = []
            for s, rows in enumerate(per):
                n = torch.from_numpy(counts[np.isin(uniq, rows)]).float().unsqueeze(1)   # lookups per row
                grads.append(n * (values[s] - targets[torch.from_numpy(rows)]) / (cfg.workers * cfg.lookups))
        reqs, bufs = [], []
        for s, rows in enumerate(per):               # push: count, then ids and gradients
            meta = messages.pack(None, 0, 0, t, version=len(rows))   # the count travels as 'version'
            reqs.append(comm.isend(meta, cfg.server_rank(s)))
            bufs.append(meta)
            if len(rows):
                body = torch.cat([_ints(rows), grads[s].reshape(-1)])
                reqs.append(comm.isend(body, cfg.server_rank(s)))
                bufs.append(body)
                sent += len(rows)
        comm.wait(*reqs)
    return {"role": "worker", "rows_pushed": sent, "lookups": routed}


def _recv_rows(comm, src: int, with_values: bool, dim: int):
    """A count message, then (ids[, gradients]) from `src`: (ids as int64 numpy, gradients or None)."""
    meta = messages.empty(0)
    comm.recv(meta, src)
    n = messages.header(meta)[2]                       # the count
    if n == 0:
        return np.zeros(0, dtype=np.int64), None
    body = torch.empty(2 * n + (n * dim if with_values else 0))
    comm.recv(body, src)
    ids = body[:2 * n].view(torch.int64).numpy().copy()
    return ids, body[2 * n:].view(n, dim) if with_values else None


def server_main(comm, cfg: SparseConfig, home, hot) -> dict:
    s = comm.rank - cfg.workers
    table, _ = initial_table(cfg)
    rows_served = 0
    hot_t = torch.from_numpy(hot)
    for t in range(cfg.steps):
        outbox = []
        for w in range(cfg.workers):                 # pulls, in worker-rank order
            ids, _ = _recv_rows(comm, w, False, cfg.dim)
            if len(ids):
                reply = table[torch.from_numpy(ids)].contiguous()
                outbox.append((comm.isend(reply, w), reply))
                rows_served += len(ids)
        total = torch.zeros(cfg.rows, cfg.dim)
        for w in range(cfg.workers):                 # pushes, summed in worker-rank order
            ids, grads = _recv_rows(comm, w, True, cfg.dim)
            if len(ids):
                total.index_add_(0, torch.from_numpy(ids), grads)
                comm.reduce_cost(grads.numel() * 4)
        if cfg.placement == "replicate" and len(hot) and cfg.servers > 1:
            mine = total[hot_t].contiguous()         # this server's partial sums of the hot rows
            outbox += [(comm.isend(mine, cfg.server_rank(o)), mine) for o in range(cfg.servers) if o != s]
            parts = {s: mine}
            for o in range(cfg.servers):
                if o != s:
                    parts[o] = torch.empty_like(mine)
                    comm.recv(parts[o], cfg.server_rank(o))
            total[hot_t] = sum(parts[o] for o in range(cfg.servers))   # server order: equal on every copy
        table -= cfg.lr * total
        comm.wait(*[r for r, _ in outbox])
    owned = torch.from_numpy(home == s)
    return {"role": "server", "server": s, "rows": torch.nonzero(owned).squeeze(1).numpy(),   # numpy: the kernel
            "values": table[owned].numpy(), "rows_served": rows_served}                        # needs no torch


def rank_main(comm, cfg: SparseConfig, home, hot) -> dict:
    if comm.rank < cfg.workers:
        return worker_main(comm, cfg, home, hot)
    return server_main(comm, cfg, home, hot)


def run_sparse(config: SparseConfig | None = None, *, bandwidth="1Gbit/s", latency="5us", timeout=120.0,
               **settings) -> dict:
    """Run the embedding on real ranks (a ``SparseConfig``, or its fields as keywords: workers=8, servers=4,
    placement, hot, rows, dim, lookups, zipf, steps=3, lr, seed); per-server bytes and rows, the hottest
    server's share, step time."""
    from ..runtime import launch, memory, shared
    from ..net.network import network as make_network
    from ..net.presets import device as make_device
    cfg = validate.config(SparseConfig, config, settings)
    workers, servers, placement = cfg.workers, cfg.servers, cfg.placement
    rows, dim, steps = cfg.rows, cfg.dim, cfg.steps
    home, hot_ids = owners(cfg), hot_rows(cfg) if cfg.hot else np.zeros(0, dtype=np.int64)
    net = make_network(bandwidth, latency)
    shared.check_memory(workers + servers, memory.rank_bytes(4 * rows * dim, 3), "this embedding run")
    res = launch.run(rank_main, cfg, home, hot_ids, ranks=workers + servers, network=net,
                      device=make_device("cpu-core"), timeout=timeout)
    srv = res.values[workers:]
    table = np.empty((rows, dim), dtype=np.float32)
    for v in srv:
        table[v["rows"]] = v["values"]
    nic = [res.counters[cfg.server_rank(s)][0] + res.counters[cfg.server_rank(s)][1] for s in range(servers)]
    served = [v["rows_served"] for v in srv]
    looked = sum(v["lookups"] for v in res.values[:workers])
    return {"placement": placement, "server_bytes": nic, "hottest_share": max(nic) / sum(nic),
            "rows_served": served, "lookups": looked.tolist(),
            "hottest_lookup_share": float(looked.max() / looked.sum()), "step_s": res.trace.makespan / steps,
            "table": table, "hot_rows": hot_ids, "trace": res.trace}

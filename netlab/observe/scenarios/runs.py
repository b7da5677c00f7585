"""How each scenario runs on real ranks: the workload, its network and where the culprit sits.

Two workloads: chapter 7's data-parallel step (``overlap.overlapped_step``: DDP-style buckets
ring all-reduced during the backward pass) and chapter 3's sparse embedding on parameter servers
(``ps.sparse.rank_main``: pull rows, compute, push gradients, 2 BSP steps). The culprit is put in
by the network (``links``), the step's ``slowdown``, the bucket cap, where the popular keys
live, or a host that pauses its switch port (``netlab.fabric.storm`` on the live fabric). Left out:
anything not decided by the plan (``netlab.observe.scenarios.plan``).
"""
from __future__ import annotations

import numpy as np

from ...dataparallel import overlap
from ...runtime import launch
from ...net.network import network
from ...net.presets import device
from . import links
from .nominal import NETWORK, PS_LAYOUT, RANKS, SHAPE, storm_network


def _allreduce(net, timeout, bucket_bytes, slowdown=None):
    return launch.run(overlap.overlapped_step, ranks=RANKS, network=net, device=device("cpu-core"),
                       timeout=timeout, bucket_bytes=bucket_bytes, overlap=True, slowdown=slowdown, **SHAPE).trace


def hot_home(servers: int, rows: int, hot_server: int) -> np.ndarray:
    """ps-lite's contiguous key ranges, rotated so the popular first range lives on `hot_server`."""
    return ((np.arange(rows) * servers // rows + hot_server) % servers).astype(np.int64)


def _ps(net, timeout, zipf=1.0, hot_server=None):
    from ...ps import sparse
    w, k = PS_LAYOUT
    placement = "hash" if hot_server is None else "range"
    cfg = sparse.SparseConfig(workers=w, servers=k, rows=20_000, dim=64, lookups=512, zipf=zipf, placement=placement,
                              steps=2)
    home = sparse.owners(cfg) if hot_server is None else hot_home(k, cfg.rows, hot_server)
    return launch.run(sparse.rank_main, cfg, home, np.zeros(0, dtype=np.int64), ranks=w + k, network=net,
                       device=device("cpu-core"), timeout=timeout).trace


def run(plan, timeout: float = 120.0):
    """The trace of `plan` (a ``netlab.observe.scenarios.Plan``), run on real ranks."""
    base, knobs = network(*NETWORK), plan.knobs
    if plan.name == "slow_link":
        net = links.slow_nic(base, plan.truth["rank"], knobs["fraction"], plan.setup["ranks"])
        if plan.setup["workload"] == "ps":
            return _ps(net, timeout)
        return _allreduce(net, timeout, knobs["bucket_bytes"])
    if plan.name == "straggler":
        return _allreduce(base, timeout, knobs["bucket_bytes"], {plan.truth["rank"]: knobs["slowdown"]})
    if plan.name == "hot_shard":
        return _ps(base, timeout, knobs["zipf"], knobs["server"])
    if plan.name == "pfc_storm":
        from ...fabric.storm import Storm
        storm = Storm(plan.truth["rank"], knobs["fraction"], knobs["period"])
        return _allreduce(storm_network(storm), timeout, knobs["bucket_bytes"])
    if plan.name == "spine":
        return _allreduce(links.spine(base, knobs["leaf"], knobs["ratio"]), timeout, knobs["bucket_bytes"])
    return _allreduce(base, timeout, knobs["bucket_bytes"])

"""Pipeline parallelism (流水线并行), GPipe-style, on real ranks: each rank holds consecutive layers.

The p stages split the layers where the activations are `width` wide (the split with the smallest
slowest stage, by FLOPs). The global batch is cut into m micro-batches; every stage runs all m
forwards, sending each micro-batch's activations (micro x width floats) to the next stage, then all
m backwards, sending the activation gradients back, then its optimizer step (Huang et al., "GPipe",
NeurIPS 2019). Sends are asynchronous, so a stage computes the next micro-batch while the last one
is on the wire. Per step the network carries 2(p-1) x batch x width x 4 bytes in all: the least of
the three parallelisms, paid for with the bubble: with equal stages, (p-1) of the m+p-1 slots each
stage idles.

The step time has a closed form (``step_time``): the forward is a flow shop of identical jobs (the
micro-batches) through the machines stage 0, link, stage 1, ..., stage p-1, so the last job leaves
stage k at the sum of the machine times up to k plus (m-1) times the slowest of them; the backward
is the same shop in reverse, starting when the last stage has finished its forwards. A link is
busy alpha + bytes/B per message (netlab's ports). With equal stages and fast links this is
(m+p-1)(f+b) + 2(p-1)(alpha + bytes/B).
Left out: 1F1B and interleaved schedules, activation recomputation, stage placement on a topology.
"""
from __future__ import annotations

import itertools

from netlab.lazy import lazy
torch = lazy("torch", globals())

from ...dataparallel import train
from ...net.network import Network
from ...net.presets import Device
from . import mlp

MAX_MICRO = 64


def partition(width: int, layers: int, stages: int) -> list[tuple[int, int]]:
    """[start, end) layer ranges of the stages: cut only between layers, minimise the slowest stage's FLOPs."""
    d = mlp.dims(width, layers)
    cost = [n_in * n_out for n_in, n_out in d]
    best = None
    for cuts in itertools.combinations(range(1, len(d)), stages - 1):
        bounds = (0, *cuts, len(d))
        worst = max(sum(cost[a:b]) for a, b in zip(bounds, bounds[1:]))
        if best is None or worst < best[0]:
            best = (worst, bounds)
    return list(zip(best[1], best[1][1:]))


def stage_flops(width: int, layers: int, micro: int, stages: int) -> list[tuple[int, int]]:
    """(forward, backward) FLOPs of each stage on one micro-batch of `micro` samples."""
    d = mlp.dims(width, layers)
    return [(sum(mlp.forward_flops(micro, *d[i]) for i in range(a, b)),
             sum(mlp.backward_flops(micro, *d[i], i > 0) for i in range(a, b)))
            for a, b in partition(width, layers, stages)]


def stage_params(width: int, layers: int, stages: int) -> list[int]:
    d = mlp.dims(width, layers)
    return [sum((n_in + 1) * n_out for n_in, n_out in d[a:b]) for a, b in partition(width, layers, stages)]


def traffic(width: int, batch: int, ranks: int) -> int:
    """Bytes all ranks send in one step: each of the p-1 cuts carries the batch's activations and their gradients."""
    return 2 * (ranks - 1) * batch * width * 4


def bubble(ranks: int, micro_batches: int) -> float:
    """The idle fraction of equal stages in a GPipe step: (p-1)/(m+p-1)."""
    return (ranks - 1) / (micro_batches + ranks - 1)


def _shop(times: list[float], jobs: int) -> float:
    """When the last of `jobs` identical jobs leaves a flow shop whose machines take `times` each."""
    return sum(times) + (jobs - 1) * max(times)


def step_time(width: int, layers: int, batch: int, ranks: int, *, micro_batches: int, network: Network,
              device: Device) -> float:
    """Closed form of a GPipe step (see the module's docstring), optimizer included."""
    m, p = micro_batches, ranks
    link = network.nic.time(4 * (batch // m) * width) if p > 1 else 0.0
    f, b = zip(*[(device.seconds(fw), device.seconds(bw)) for fw, bw in stage_flops(width, layers, batch // m, p)])
    opt = [device.seconds(2 * n) for n in stage_params(width, layers, p)]

    def machines(times):                          # stage, link, stage, ..., stage
        return [x for t in times for x in (t, link)][:-1]

    forward_done = _shop(machines(f), m)          # the last stage's last forward
    finish = []
    for s in range(p):                             # backward: a shop through stages p-1, ..., s
        shop = machines(b[s:][::-1])
        finish.append(forward_done + _shop(shop, m) + opt[s])                # its optimizer ...
        if s > 0:                                                            # ... and its last send
            finish.append(forward_done + _shop(shop + [link], m))
    return max(finish)


def check(width: int, layers: int, ranks: int, micro_batches: int, *, batch: int) -> None:
    train.check_model(width, layers)
    if ranks > layers + 1:
        raise ValueError(f"ranks: a pipeline of {layers + 1} layers has at most {layers + 1} stages, got {ranks}")
    mlp.check_batch(batch, micro_batches)


def pp_step(comm, *, width: int = 256, layers: int = 4, batch: int = 256, micro_batches: int = 4, seed: int = 0,
            lr: float = 0.1, return_grads: bool = False) -> dict:
    """One GPipe training step on this rank, stage ``comm.rank`` (the rank function).

    Returns this stage's share of the global-batch loss (non-zero on the last stage only) and, with
    `return_grads`, its gradients by layer ``{i: (dW, db)}``.
    """
    p, s, m = comm.world_size, comm.rank, micro_batches
    check(width, layers, p, m, batch=batch)
    d = mlp.dims(width, layers)
    start, end = partition(width, layers, p)[s]
    last = len(d) - 1
    own = {i: w for i, w in enumerate(mlp.weights(width, layers, seed)) if start <= i < end}
    x, y = mlp.global_batch(batch, seed)
    mb = batch // m
    fwd = sum(mlp.forward_flops(mb, *d[i]) for i in own)
    bwd = sum(mlp.backward_flops(mb, *d[i], i > 0) for i in own)
    sends, saved, loss = [], [], 0.0
    grads = {i: (torch.zeros_like(w), torch.zeros_like(b)) for i, (w, b) in own.items()}
    for j in range(m):                                         # all forwards
        if s == 0:
            h = x[j * mb:(j + 1) * mb]
        else:
            h = torch.empty(mb, width)
            comm.recv(h, s - 1)
        keep = []
        with comm.compute(flops=fwd, label="forward"):
            for i in range(start, end):
                pre = mlp.linear(h, *own[i])
                keep.append((h, pre))
                h = pre.clamp(min=0) if i < last else pre
        saved.append(keep)
        if s < p - 1:
            sends.append(comm.isend(h.contiguous(), s + 1))
        else:
            part, dlogits = mlp.loss_and_grad(h, y[j * mb:(j + 1) * mb], batch)
            loss += part
            keep.append(dlogits)
    for j in range(m):                                         # all backwards
        if s == p - 1:
            dy = saved[j].pop()
        else:
            dy = torch.empty(mb, width)
            comm.recv(dy, s + 1)
        with comm.compute(flops=bwd, label="backward"):
            for i in range(end - 1, start - 1, -1):
                h, pre = saved[j][i - start]
                if i < last:
                    dy = mlp.relu_grad(dy, pre)
                dw, db, dy = mlp.linear_grads(dy, h, own[i][0], i > 0)
                grads[i][0].add_(dw)
                grads[i][1].add_(db)
        if s > 0:
            sends.append(comm.isend(dy.contiguous(), s - 1))
    keys = sorted(own)
    mlp.sgd(comm, [t for i in keys for t in own[i]], [g for i in keys for g in grads[i]], lr)
    comm.wait(*sends)
    out = {"loss": loss}
    if return_grads:
        out["grads"] = grads
    return out

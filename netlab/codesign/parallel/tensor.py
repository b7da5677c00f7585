"""Tensor parallelism (张量并行), Megatron-style, on real ranks: every rank holds a slice of every layer.

The linear layers are taken in pairs (Shoeybi et al., "Megatron-LM", 2019, section 3): the first of
a pair is split by columns (each of p ranks computes width/p of its outputs, and the ReLU after it
works on that slice alone), the second by rows (each rank multiplies its slice of the activations by
its rows of the weights, giving a partial sum of the full output). One all-reduce of the pair's
output, batch x out floats, completes the forward ("g" in the paper); in the backward pass the
input gradient of the pair, batch x in floats, is all-reduced ("f") -- except for the first pair,
whose input is the data. With an odd number of layers the last one (width -> 10) is not split:
every rank computes it whole on the same full activations, so its gradients agree without any
exchange. Every rank sees the whole global batch.

Per step each rank therefore sends, with the ring all-reduce, 2(p-1)/p of each all-reduced tensor
(``traffic``): the traffic grows with the batch and the number of layers, not with the parameters.
Left out: sequence parallelism, attention heads, fused kernels, overlapping the all-reduces with
compute.
"""
from __future__ import annotations

from ... import collectives
from ...collectives import cost
from ...dataparallel import train
from ...net.network import Network
from ...net.presets import Device
from . import mlp


def blocks(n_linear: int) -> list[tuple[int, ...]]:
    """Pairs (column-split, row-split) of layer indices, then a lone last layer when the count is odd."""
    out = [(i, i + 1) for i in range(0, n_linear - 1, 2)]
    return out + [(n_linear - 1,)] if n_linear % 2 else out


def allreduce_counts(width: int, layers: int, batch: int) -> list[int]:
    """Floats in each all-reduce of one step: per pair its output (forward) and, but for the first, its input
    (backward)."""
    d = mlp.dims(width, layers)
    pairs = [blk for blk in blocks(len(d)) if len(blk) == 2]
    forward = [batch * d[r][1] for _, r in pairs]
    backward = [batch * d[c][0] for c, _ in pairs[1:]]
    return forward + backward


def traffic(width: int, layers: int, batch: int, ranks: int) -> int:
    """Bytes all ranks send in one step: a ring all-reduce of n floats sends 2(p-1) n*4 bytes in all."""
    return sum(2 * (ranks - 1) * 4 * n for n in allreduce_counts(width, layers, batch)) if ranks > 1 else 0


def rank_flops(width: int, layers: int, batch: int, ranks: int) -> int:
    """Forward, backward and SGD FLOPs of one rank: 1/p of every split layer, the lone layer whole."""
    d = mlp.dims(width, layers)
    total = params = 0
    for blk in blocks(len(d)):
        share = ranks if len(blk) == 2 else 1
        for i in blk:
            n_in, n_out = d[i]
            total += (mlp.forward_flops(batch, n_in, n_out) + mlp.backward_flops(batch, n_in, n_out, i > 0)) // share
            params += n_in * n_out // share
        params += d[blk[0]][1] // share + (d[blk[-1]][1] if len(blk) == 2 else 0)      # biases
    return total + 2 * params


def step_time(width: int, layers: int, batch: int, ranks: int, *, network: Network, device: Device) -> float:
    """Closed form of a step: this rank's compute plus the alpha-beta cost of its all-reduces, back to back."""
    comm = sum(cost.ring_allreduce(ranks, 4 * n, network.nic, network.gamma)
               for n in allreduce_counts(width, layers, batch)) if ranks > 1 else 0.0
    return device.seconds(rank_flops(width, layers, batch, ranks)) + comm


def check(width: int, layers: int, ranks: int) -> None:
    train.check_model(width, layers)
    if width % ranks:
        raise ValueError(f"width: tensor parallelism splits each layer's {width} columns over {ranks} ranks; "
                         f"choose a width divisible by {ranks}")


def tp_step(comm, *, width: int = 256, layers: int = 4, batch: int = 256, seed: int = 0, lr: float = 0.1,
            return_grads: bool = False) -> dict:
    """One tensor-parallel training step on this rank (the rank function): forward, backward, SGD.

    Returns the global-batch loss, and with `return_grads` this rank's gradients by layer:
    ``{i: (dW, db)}``, column slices for a pair's first layer, row slices (and the whole bias) for its
    second, whole tensors for a lone layer.
    """
    p, r = comm.world_size, comm.rank
    check(width, layers, p)
    d = mlp.dims(width, layers)
    full = mlp.weights(width, layers, seed)
    x, y = mlp.global_batch(batch, seed)
    n = len(d)
    own = {}                                       # layer -> (W, b) held here
    for blk in blocks(n):
        if len(blk) == 1:
            own[blk[0]] = full[blk[0]]
            continue
        c, rr = blk
        k = d[c][1] // p                           # this rank's columns of c = its rows-of-input of rr
        own[c] = (full[c][0][r * k:(r + 1) * k].contiguous(), full[c][1][r * k:(r + 1) * k].clone())
        own[rr] = (full[rr][0][:, r * k:(r + 1) * k].contiguous(), full[rr][1])
    saved, h = [], x
    for blk in blocks(n):                          # forward
        if len(blk) == 1:
            i = blk[0]
            with comm.compute(flops=mlp.forward_flops(batch, *d[i]), label="forward"):
                out = mlp.linear(h, *own[i])
            saved.append((h, None, None))
        else:
            c, rr = blk
            with comm.compute(flops=(mlp.forward_flops(batch, d[c][0], d[c][1] // p)
                                     + mlp.forward_flops(batch, d[rr][0] // p, d[rr][1])), label="forward"):
                a = mlp.linear(h, own[c][0], own[c][1])
                z = a.clamp(min=0)
                part = mlp.linear(z, own[rr][0], None)
            with comm.region("tp all-reduce (forward)"):
                collectives.allreduce(comm, part)
            out = part + own[rr][1]
            saved.append((h, a, z))
        if blk[-1] < n - 1:
            saved[-1] += (out,)                    # pre-activation of the ReLU that follows
            h = out.clamp(min=0)
    loss, dy = mlp.loss_and_grad(out, y, batch)
    grads = {}
    for blk, keep in zip(reversed(blocks(n)), reversed(saved)):    # backward
        if blk[-1] < n - 1:
            dy = mlp.relu_grad(dy, keep[-1])
        h = keep[0]
        if len(blk) == 1:
            i = blk[0]
            with comm.compute(flops=mlp.backward_flops(batch, *d[i], i > 0), label="backward"):
                dw, db, dy = mlp.linear_grads(dy, h, own[i][0], i > 0)
            grads[i] = (dw, db)
            continue
        c, rr = blk
        a, z = keep[1], keep[2]
        with comm.compute(flops=(mlp.backward_flops(batch, d[rr][0] // p, d[rr][1])
                                 + mlp.backward_flops(batch, d[c][0], d[c][1] // p, c > 0)), label="backward"):
            dw, db, dz = mlp.linear_grads(dy, z, own[rr][0])
            grads[rr] = (dw, db)
            dw, db, dx = mlp.linear_grads(mlp.relu_grad(dz, a), h, own[c][0], c > 0)
            grads[c] = (dw, db)
        if c > 0:
            with comm.region("tp all-reduce (backward)"):
                collectives.allreduce(comm, dx)
        dy = dx
    keys = sorted(own)
    mlp.sgd(comm, [t for i in keys for t in own[i]], [g for i in keys for g in grads[i]], lr)
    out = {"loss": loss}
    if return_grads:
        out["grads"] = grads
    return out

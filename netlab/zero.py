"""ZeRO's view of the all-reduce: reduce-scatter, update your shard, all-gather (chapter 2).

A ring all-reduce *is* a reduce-scatter followed by an all-gather. ZeRO (Rajbhandari et al., SC
2020) stops in the middle: after the reduce-scatter each rank holds the summed gradient of 1/p of
the parameters, so it keeps the optimizer state (Adam's two moments) for that 1/p only, updates
that shard, and an all-gather of the *parameters* rebuilds the full model everywhere. The bytes on
the wire are the all-reduce's; the optimizer memory per rank falls by p.

``sharded_adam_step`` runs one such step on real ranks and returns what the chapter shows: bytes
sent, optimizer-state bytes held, and the updated parameters (equal to an unsharded Adam step on
the all-reduced gradient -- a test checks it). Left out: ZeRO-3's sharding of the parameters
themselves between steps, and bucketing.
"""
from __future__ import annotations

import torch

from . import collectives, data, train


def _adam(param, grad, m, v, lr, betas=(0.9, 0.999), eps=1e-8, step=1):
    """One Adam update of `param` in place (the textbook form, as torch.optim.Adam at step 1)."""
    m.mul_(betas[0]).add_(grad, alpha=1 - betas[0])
    v.mul_(betas[1]).addcmul_(grad, grad, value=1 - betas[1])
    m_hat, v_hat = m / (1 - betas[0] ** step), v / (1 - betas[1] ** step)
    param -= lr * m_hat / (v_hat.sqrt() + eps)


def sharded_adam_step(comm, width: int = 256, batch: int = 16, lr: float = 1e-3, sharded: bool = True) -> dict:
    """One data-parallel Adam step; ZeRO-sharded (reduce-scatter + all-gather) or plain (all-reduce)."""
    model = train.make_model(width, 2, seed=0)
    x, y = data.load("train")
    idx = train.batch_indices(0, comm.rank, comm.world_size, batch, len(y))
    train.local_step(comm, model, x, y, idx, comm.world_size * batch, flops=train.step_flops(width, 2, batch))
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])   # (P,) flat fp32
    grad = train.flat_grad(model)
    sent_before = comm.bytes_sent
    if sharded:
        shard = collectives.reduce_scatter(comm, grad, algo="ring")          # my 1/p of the summed gradient
        offsets, lengths = collectives.chunk_bounds(params.numel(), comm.world_size)
        lo, n = int(offsets[comm.rank]), int(lengths[comm.rank])
        mine = params[lo:lo + n].clone()
        m, v = torch.zeros_like(mine), torch.zeros_like(mine)                 # Adam state for 1/p only
        _adam(mine, shard, m, v, lr)
        params = collectives.all_gather_chunks(comm, mine, params.numel(), algo="ring")
    else:
        collectives.allreduce(comm, grad, algo="ring")
        m, v = torch.zeros_like(params), torch.zeros_like(params)            # Adam state for everything
        _adam(params, grad, m, v, lr)
    return {"bytes_sent": comm.bytes_sent - sent_before, "state_bytes": (m.numel() + v.numel()) * 4,
            "params": params}

"""ZeRO's view of the all-reduce: reduce-scatter, update your shard, all-gather (chapter 2).

A ring all-reduce *is* a reduce-scatter followed by an all-gather. ZeRO (Rajbhandari et al., SC
2020) stops in the middle: after the reduce-scatter each rank holds the summed gradient of 1/p of
the parameters, so it keeps the optimizer state (Adam's two moments) for that 1/p only, updates
that shard, and an all-gather of the *parameters* rebuilds the full model everywhere. The bytes on
the wire are the all-reduce's; the optimizer memory per rank falls by p.

``sharded_adam_step`` runs one such step on real ranks and returns what the chapter shows: bytes
sent, optimizer-state bytes held, and the updated parameters (a numpy array; equal to an unsharded Adam step on
the all-reduced gradient, and to ``torch.optim.Adam`` in one process on the full batch -- a test
checks it). Left out: ZeRO-3's sharding of the parameters themselves between steps, and bucketing.
"""
from __future__ import annotations

from netlab.lazy import lazy
torch = lazy("torch", globals())

import numpy as np

from .. import collectives, data
from ..dataparallel import train


class Params(np.ndarray):
    """The updated parameters, sent back as numpy (the kernel need not import torch to read them);
    ``.abs()`` as on a tensor, so ``(a - b).abs().max().item()`` reads the same for either."""

    def abs(self):
        return np.abs(self)


def _adam_step(flat: torch.Tensor, grad: torch.Tensor, lr: float) -> int:
    """One ``torch.optim.Adam`` step of the flat tensor `flat` in place; returns its state's bytes (two moments)."""
    opt = torch.optim.Adam([flat], lr=lr)
    flat.grad = grad
    opt.step()
    flat.grad = None
    state = opt.state[flat]
    return (state["exp_avg"].numel() + state["exp_avg_sq"].numel()) * 4


def sharded_adam_step(comm, width: int = 256, batch: int = 16, lr: float = 1e-3, *, sharded: bool = True) -> dict:
    """One data-parallel Adam step; ZeRO-sharded (reduce-scatter + all-gather) or plain (all-reduce)."""
    model = train.make_model(width, 2, seed=0)
    x, y = data.load("train")
    idx = train.batch_indices(0, comm.rank, comm.world_size, batch, n=len(y))
    train.local_step(comm, model, x, y, idx=idx, global_batch=comm.world_size * batch,
                     flops=train.step_flops(width, 2, batch))
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])   # (P,) flat fp32
    grad = train.flat_grad(model)
    sent_before = comm.bytes_sent
    if sharded:
        shard = collectives.reduce_scatter(comm, grad, algo="ring")          # my 1/p of the summed gradient
        offsets, lengths = collectives.chunk_bounds(params.numel(), comm.world_size)
        lo, n = int(offsets[comm.rank]), int(lengths[comm.rank])
        mine = params[lo:lo + n].clone()
        state_bytes = _adam_step(mine, shard, lr)                            # Adam state for 1/p only
        params = collectives.all_gather_chunks(comm, mine, params.numel(), algo="ring")
    else:
        grad = collectives.allreduce(comm, grad, algo="ring")
        state_bytes = _adam_step(params, grad, lr)                           # Adam state for everything
    return {"bytes_sent": comm.bytes_sent - sent_before, "state_bytes": state_bytes,
            "params": params.numpy().view(Params)}

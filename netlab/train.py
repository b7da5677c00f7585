"""Data-parallel training of a small MLP on the digits, with gradients synchronized through ``comm``.

Every rank holds the same model (same seed), takes its own slice of each global batch, computes
forward and backward for real, and the ranks then sum their gradients (an all-reduce, or any
``sync`` a later chapter plugs in: a parameter server, a compressor). Each rank's loss is its
summed loss over the *global* batch size, so the summed gradient equals the full-batch gradient
of a single process exactly -- a test checks it.

Time: under an emulated network the forward/backward advance the virtual clock by their FLOPs
(counted once per shape with ``torch.utils.flop_counter``) over the device's peak times its
efficiency; on the wall clock they take what they take.

Model size is the knob: two hidden layers of `width` give ~100 KB of fp32 gradients at width 128
and ~50 MB at width 3500.
"""
from __future__ import annotations

import copy
import functools
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from . import collectives, data, validate

MIN_WIDTH, MAX_WIDTH = 8, 4096


def make_model(width: int = 512, layers: int = 2, seed: int = 0) -> nn.Sequential:
    """MLP 64 -> width (x layers, ReLU) -> 10, initialized from `seed` (identical on every rank).

    Leaves torch's global RNG as ``torch.manual_seed(seed)`` followed by the initialisation would.
    Small models are built once per process and copied after that: initialising is most of a rank's
    work in chapter 1's one-step panel (3.5 ms of a 6 ms step at width 512)."""
    check_model(width, layers)
    key = (width, layers, seed)
    cached = _INITIAL.get(key)
    if cached is None:
        torch.manual_seed(seed)
        dims = [64] + [width] * layers + [10]
        mods: list[nn.Module] = []
        for i in range(len(dims) - 1):
            mods.append(nn.Linear(dims[i], dims[i + 1]))
            if i < len(dims) - 2:
                mods.append(nn.ReLU())
        model = nn.Sequential(*mods)
        if parameter_count(width, layers) > _CACHE_PARAMS:
            return model
        cached = _INITIAL[key] = (model, torch.get_rng_state())
        while len(_INITIAL) > 4:
            _INITIAL.pop(next(iter(_INITIAL)))
    model, rng = cached
    torch.set_rng_state(rng)
    return copy.deepcopy(model)


_INITIAL: dict = {}              # (width, layers, seed) -> (initial model, RNG state after building it)
_CACHE_PARAMS = 1 << 20          # models cached: up to 4 MB of fp32 weights each, 4 of them


def check_model(width, layers) -> None:
    validate.whole(width, "width", MIN_WIDTH, MAX_WIDTH, int_only=True)
    validate.whole(layers, "layers", 1, 8, int_only=True)


def parameter_count(width: int, layers: int = 2) -> int:
    """Weights and biases of make_model(width, layers)."""
    return (64 + 1) * width + (layers - 1) * (width + 1) * width + (width + 1) * 10


def grad_bytes(width: int, layers: int = 2) -> int:
    """Bytes of fp32 gradient one rank contributes per step."""
    return 4 * parameter_count(width, layers)


def width_for_bytes(nbytes: float, layers: int = 2) -> int:
    """The width whose fp32 gradient is closest to `nbytes` (inverse of grad_bytes)."""
    lo, hi = MIN_WIDTH, MAX_WIDTH
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if grad_bytes(mid, layers) < nbytes else (lo, mid)
    return min((max(lo - 1, MIN_WIDTH), lo), key=lambda w: abs(grad_bytes(w, layers) - nbytes))


@functools.lru_cache(maxsize=64)
def step_flops(width: int, layers: int, batch: int) -> int:
    """FLOPs of one forward + backward on `batch` samples, counted on a real pass."""
    model = make_model(width, layers)
    x, y = torch.zeros(batch, 64), torch.zeros(batch, dtype=torch.long)
    with FlopCounterMode(display=False) as counter:
        F.cross_entropy(model(x), y).backward()
    return counter.get_total_flops()


def batch_indices(step: int, rank: int, world_size: int, batch: int, n: int, seed: int = 0) -> torch.Tensor:
    """Rank `rank`'s `batch` samples of global batch `step` (world_size * batch samples, no overlap)."""
    per_epoch = n // (world_size * batch)
    if per_epoch == 0:
        raise ValueError(f"batch: {world_size} ranks x {batch} samples exceed the {n} training samples")
    epoch, i = divmod(step, per_epoch)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 100_003 + epoch))
    start = (i * world_size + rank) * batch
    return order[start:start + batch]


def flat_grad(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def set_flat_grad(model: nn.Module, flat: torch.Tensor) -> None:
    offset = 0
    for p in model.parameters():
        n = p.numel()
        p.grad.copy_(flat[offset:offset + n].view_as(p))
        offset += n


def allreduce_sync(algo: str = "ring"):
    """The default gradient synchronization: sum the flat gradient with an all-reduce."""
    def sync(comm, flat: torch.Tensor, step: int) -> torch.Tensor:
        return collectives.allreduce(comm, flat, algo=algo)
    sync.label = f"allreduce:{algo}"
    return sync


def local_step(comm, model, x, y, idx, global_batch: int, flops: int | None) -> float:
    """Forward and backward on this rank's samples; returns its share of the global mean loss."""
    model.zero_grad(set_to_none=False)
    with comm.compute(flops=flops, label="forward+backward"):
        loss = F.cross_entropy(model(x[idx]), y[idx], reduction="sum") / global_batch
        loss.backward()
    return loss.item()


def sgd_update(comm, model, lr: float, momentum: float = 0.0, buffers: list | None = None) -> None:
    """SGD (with heavy-ball momentum when `buffers` is a list to keep the velocities in)."""
    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    with comm.compute(flops=(4 if momentum else 2) * n, label="optimizer"), torch.no_grad():
        if momentum and buffers is not None and not buffers:
            buffers.extend(torch.zeros_like(p) for p in params)
        for i, p in enumerate(params):
            if momentum and buffers is not None:
                buffers[i].mul_(momentum).add_(p.grad)
                p -= lr * buffers[i]
            else:
                p -= lr * p.grad


def accuracy(model, x, y) -> float:
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def step(comm, width: int = 512, layers: int = 2, batch: int = 32, algo: str = "ring", lr: float = 0.1,
         seed: int = 0, return_grad: bool = False) -> dict:
    """One data-parallel training step from a fresh model; the rank function behind ``netlab step``."""
    model = make_model(width, layers, seed)
    x, y = data.load("train")
    idx = batch_indices(0, comm.rank, comm.world_size, batch, len(y), seed)
    flops = step_flops(width, layers, batch) if comm.virtual else None   # the wall clock measures instead
    loss = local_step(comm, model, x, y, idx, comm.world_size * batch, flops)
    t0 = comm.now()
    flat = flat_grad(model)
    allreduce_sync(algo)(comm, flat, 0)
    comm_s = comm.now() - t0
    set_flat_grad(model, flat)
    sgd_update(comm, model, lr)
    out = {"loss": loss, "comm_s": comm_s, "grad_bytes": flat.numel() * 4}
    if return_grad:
        out["grad"] = flat
    return out


def train(comm, steps: int = 100, width: int = 128, layers: int = 2, batch: int = 32, lr: float = 0.1,
          momentum: float = 0.9, seed: int = 0, sync=None, eval_every: int = 10) -> dict:
    """Train for `steps` steps with momentum SGD; history of (step, clock, loss share, test accuracy).

    `loss` is this rank's share of the global-batch loss: summed over ranks it is the global loss.

    `sync(comm, flat_grad, step) -> flat_grad` sums gradients across ranks (default: ring all-reduce).
    Evaluation is not charged to the clock: it is not part of training.
    """
    sync = sync or allreduce_sync("ring")
    model = make_model(width, layers, seed)
    x, y = data.load("train")
    xt, yt = data.load("test")
    flops = step_flops(width, layers, batch) if comm.virtual else None
    history = {"step": [], "time_s": [], "loss": [], "accuracy": []}
    velocities: list = []
    for s in range(steps):
        idx = batch_indices(s, comm.rank, comm.world_size, batch, len(y), seed)
        loss = local_step(comm, model, x, y, idx, comm.world_size * batch, flops)
        flat = sync(comm, flat_grad(model), s)
        set_flat_grad(model, flat)
        sgd_update(comm, model, lr, momentum, velocities)
        if (s + 1) % eval_every == 0 or s == steps - 1:
            history["step"].append(s + 1)
            history["time_s"].append(comm.now())
            history["loss"].append(loss)
            history["accuracy"].append(accuracy(model, xt, yt) if comm.rank == 0 else math.nan)
    return history

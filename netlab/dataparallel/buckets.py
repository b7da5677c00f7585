"""DDP's gradient buckets: which parameters are all-reduced together, and when each bucket is ready.

Follows PyTorch's DistributedDataParallel (Li et al., "PyTorch Distributed: Experiences on
Accelerating Data Parallel Training", VLDB'20, Algorithm 1; torch 2.13 ``distributed.py`` and the
C++ ``compute_bucket_assignment_by_size``):

* Parameters are walked in gradient-ready order (the order autograd's post-accumulate hooks fire;
  before the first step DDP approximates it by the reversed ``parameters()`` order). A bucket
  closes as soon as its bytes reach the current cap; a parameter is never split across buckets.
* The first bucket may have a smaller cap (``first_bucket_bytes``): DDP uses 1 MiB
  (``dist._DEFAULT_FIRST_BUCKET_BYTES``) only when ``bucket_cap_mb`` is left at its default of
  25 MiB; an explicit cap applies to every bucket.
* Iteration 0 uses one bucket holding every parameter (DDP does not trust the definition order
  until it has seen one backward pass); from iteration 1 the buckets are rebuilt in ready order.

``backward_profile`` measures, on a real forward and backward of the lab's model, the order in
which gradients become ready and how many FLOPs have been done by then (``torch.utils.flop_counter``),
which is what turns "ready after layer k's backward" into virtual time.

Left out: sparse gradients (DDP gives each its own bucket), several dtypes or devices (one
accumulator each in DDP; the lab's model is all fp32 on one device), unused parameters.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from netlab import validate
from netlab.lazy import lazy
torch = lazy("torch", globals())
F = lazy("torch.nn.functional", globals())
FlopCounterMode = lazy("torch.utils.flop_counter:FlopCounterMode", globals())

MIB = 1 << 20
DEFAULT_BUCKET_BYTES = 25 * MIB        # DDP's bucket_cap_mb default (MiB)
DEFAULT_FIRST_BUCKET_BYTES = 1 * MIB   # dist._DEFAULT_FIRST_BUCKET_BYTES


def ddp_caps(bucket_cap_mb: float | None = None) -> tuple[int, int]:
    """(first bucket cap, bucket cap) in bytes, as DDP chooses them from its ``bucket_cap_mb`` argument."""
    if bucket_cap_mb is None:
        return DEFAULT_FIRST_BUCKET_BYTES, DEFAULT_BUCKET_BYTES
    cap = int(bucket_cap_mb * MIB)
    return cap, cap


def check_bucket_bytes(bucket_bytes, name: str = "bucket") -> int:
    validate.number(bucket_bytes, name, 1)                 # bytes: a bucket holds at least one
    return int(bucket_bytes)


def assign_buckets(nbytes: list[int], bucket_bytes: int, first_bucket_bytes: int | None = None,
                   indices: list[int] | None = None) -> list[list[int]]:
    """Group tensors (bytes each, in ready order) into buckets; returns each bucket's tensor indices.

    ``indices`` names the tensors (default 0..n-1), as ``tensor_indices`` does in torch's
    ``_compute_bucket_assignment_by_size``. A bucket closes when its size reaches its cap; the first
    bucket's cap is ``first_bucket_bytes`` (default: the same as the others).
    """
    bucket_bytes = check_bucket_bytes(bucket_bytes)
    first = bucket_bytes if first_bucket_bytes is None else check_bucket_bytes(first_bucket_bytes, "first_bucket")
    indices = list(range(len(nbytes))) if indices is None else list(indices)
    buckets, current, size, cap = [], [], 0, first
    for i, n in zip(indices, nbytes):
        current.append(i)
        size += n
        if size >= cap:                    # torch: bucket.size >= bucket_size_limit closes the bucket
            buckets.append(current)
            current, size, cap = [], 0, bucket_bytes
    if current:
        buckets.append(current)
    return buckets


@dataclass(frozen=True)
class BackwardProfile:
    """Gradient-ready order of a model's parameters and the FLOPs done (from the forward's start) by then."""
    order: tuple[int, ...]           # parameter indices (in parameters() order), in the order grads are ready
    ready_flops: tuple[int, ...]     # FLOPs counted when each parameter in `order` became ready
    nbytes: tuple[int, ...]          # bytes of each parameter's gradient, in `order`
    forward_flops: int
    total_flops: int                 # forward + backward, equal to train.step_flops


def profile(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> BackwardProfile:
    """One real forward and backward under torch's FLOP counter, recording when each gradient is ready."""
    params = list(model.parameters())
    ready: list[tuple[int, int]] = []
    with FlopCounterMode(display=False) as counter:
        handles = [p.register_post_accumulate_grad_hook(
            lambda _p, i=i: ready.append((i, counter.get_total_flops()))) for i, p in enumerate(params)]
        try:
            out = model(x)
            forward = counter.get_total_flops()
            F.cross_entropy(out, y).backward()
        finally:
            for h in handles:
                h.remove()
    order = tuple(i for i, _ in ready)
    return BackwardProfile(order=order, ready_flops=tuple(f for _, f in ready),
                           nbytes=tuple(params[i].numel() * params[i].element_size() for i in order),
                           forward_flops=forward, total_flops=counter.get_total_flops())


@functools.lru_cache(maxsize=64)
def backward_profile(width: int, layers: int, batch: int) -> BackwardProfile:
    """The lab's MLP (``train.make_model``) on `batch` samples; FLOPs do not depend on the values.

    In a process that has not imported torch (a notebook kernel) the profile is taken on one rank
    of the pool and comes back as plain numbers, so the kernel need not import torch for it.
    """
    from ..runtime import launch
    return launch.where_torch_is(_profile_here, width, layers, batch)


def _profile_here(width: int, layers: int, batch: int) -> BackwardProfile:
    from .train import make_model
    return profile(make_model(width, layers), torch.zeros(batch, 64), torch.zeros(batch, dtype=torch.long))


def plan(prof: BackwardProfile, bucket_bytes: int, first_bucket_bytes: int | None = None,
         iteration: int = 1) -> list[list[int]]:
    """Buckets of parameter indices for a step: one bucket at iteration 0, ready-order buckets after."""
    if iteration == 0:
        return [list(prof.order)]
    return assign_buckets(list(prof.nbytes), bucket_bytes, first_bucket_bytes, list(prof.order))


def bucket_ready_flops(prof: BackwardProfile, buckets: list[list[int]]) -> list[int]:
    """FLOPs done when each bucket's last gradient is ready (a bucket waits for all of its parameters)."""
    at = dict(zip(prof.order, prof.ready_flops))
    return [max(at[i] for i in b) for b in buckets]

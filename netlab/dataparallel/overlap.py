"""Overlapping the gradient all-reduce with the backward pass, bucket by bucket, as DDP does.

A data-parallel step on real ranks: forward and backward run for real; autograd's
post-accumulate-grad hooks report each gradient the moment it is ready, and as soon as a bucket
(``netlab.dataparallel.buckets``, DDP's assignment) holds all of its gradients, the rank all-reduces it (in
bucket order, as DDP launches them) while the rest of the backward pass goes on.

Virtual time: the communication runs on its own stream. A bucket's all-reduce starts at
max(the time its last gradient is ready, the end of the previous bucket's all-reduce); the ready
time is the forward's start plus the FLOPs done by then (counted by ``torch.utils.flop_counter``
on a real pass, ``buckets.backward_profile``) over the device's rate. Compute is not slowed by
communication (a GPU's copy engines and NICs work beside its SMs). The step waits for the last
bucket, then runs the optimizer. The alpha-beta prediction of this pipeline is ``pipeline_time``:

    end_0 = ready_0 + T_ar(n_0),  end_k = max(ready_k, end_{k-1}) + T_ar(n_k),
    step  = max(compute, end_last) + optimizer

Wall time (torchrun on a real cluster): the same hooks run the same all-reduces at the same
moments, but on the backward's own thread, so nothing truly overlaps; the trace says so.

Left out: gradient-as-bucket-view copies, DDP's ``no_sync``, unused parameters, ZeRO and
compressed buckets.
"""
from __future__ import annotations

from dataclasses import dataclass

from netlab.lazy import lazy
torch = lazy("torch", globals())
F = lazy("torch.nn.functional", globals())

from . import buckets as bk
from .. import collectives, data, validate
from ..collectives import cost
from .train import batch_indices, check_model, flat_grad, make_model, sgd_update


class _CommStream:
    """A second clock for communication on one rank (virtual time): all-reduces queue on it in order."""

    def __init__(self, comm):
        self.comm, self.end = comm, 0.0

    def run(self, ready: float, fn) -> None:
        """Run ``fn()`` (an all-reduce) starting at max(ready, the stream's last end); the compute clock is kept."""
        comm = self.comm
        if not comm.virtual:
            fn()
            return
        clock = comm.clock                     # a VirtualClock: its time `t` may be set and put back
        saved = clock.t
        clock.t = max(ready, self.end)
        try:
            fn()
        finally:
            self.end = clock.t
            clock.t = saved


@dataclass(frozen=True, kw_only=True)
class OverlapConfig:
    """One bucketed step: the model, the batch, SGD, the buckets and whether they overlap the backward pass.

    ``overlap=False`` launches every bucket after the backward pass ends (the same buckets, no hiding).
    ``iteration`` picks DDP's buckets (0: one bucket; later: rebuilt in ready order); the data is step 0's,
    as in ``train.step``. ``slowdown={rank: factor}`` makes that rank's compute `factor` times slower (a
    straggler). ``return_grad``: the result carries the synced flat gradient too.
    """
    width: int = 512
    layers: int = 2
    batch: int = 32
    algo: str = "ring"
    lr: float = 0.1
    seed: int = 0
    bucket_bytes: int = bk.DEFAULT_BUCKET_BYTES
    first_bucket_bytes: int | None = None
    overlap: bool = True
    iteration: int = 1
    slowdown: dict | None = None
    return_grad: bool = False

    def __post_init__(self):
        check_model(self.width, self.layers)
        validate.whole(self.batch, "batch", 1, None, int_only=True)
        validate.positive(self.lr, "lr")
        validate.seed(self.seed)
        bk.check_bucket_bytes(self.bucket_bytes, "bucket_bytes")
        if self.first_bucket_bytes is not None:
            bk.check_bucket_bytes(self.first_bucket_bytes, "first_bucket_bytes")
        validate.whole(self.iteration, "iteration", 0, None)


def overlapped_step(comm, config: OverlapConfig | None = None, **settings) -> dict:
    """One data-parallel step with bucketed gradient all-reduces (the rank function): an ``OverlapConfig``,
    or its fields as keywords."""
    cfg = validate.config(OverlapConfig, config, settings)
    width, layers, batch, algo, lr, seed = cfg.width, cfg.layers, cfg.batch, cfg.algo, cfg.lr, cfg.seed
    bucket_bytes, first_bucket_bytes, overlap, iteration = (cfg.bucket_bytes, cfg.first_bucket_bytes, cfg.overlap,
                                                            cfg.iteration)
    slowdown, return_grad = cfg.slowdown, cfg.return_grad
    factor = float((slowdown or {}).get(comm.rank, 1.0))
    model = make_model(width, layers, seed)
    params = list(model.parameters())
    x, y = data.load("train")
    idx = batch_indices(0, comm.rank, comm.world_size, batch, n=len(y), seed=seed)
    prof = bk.backward_profile(width, layers, batch)
    plan = bk.plan(prof, bucket_bytes, first_bucket_bytes, iteration)
    ready_flops = bk.bucket_ready_flops(prof, plan)
    bucket_of = {i: k for k, b in enumerate(plan) for i in b}
    missing = [set(b) for b in plan]                  # gradients each bucket still waits for
    stream = _CommStream(comm)
    t0 = comm.now()
    seconds = (lambda f: comm.device.seconds(f) * factor) if comm.virtual else None
    launched = [0]                                     # buckets launched so far (DDP launches in order)
    log = []                                           # (bucket, bytes, ready, start, end)

    def allreduce_bucket(k: int) -> None:
        flat = torch.cat([params[i].grad.reshape(-1) for i in plan[k]])       # (bucket elements,)
        ready = t0 + seconds(ready_flops[k]) if comm.virtual else comm.now()
        box = {}

        def body():
            box["start"] = comm.now()
            with comm.region(f"bucket {k}"):
                collectives.allreduce(comm, flat, algo=algo)
            box["end"] = comm.now()
        stream.run(ready, body)
        log.append((k, flat.numel() * flat.element_size(), ready, box["start"], box["end"]))
        offset = 0
        for i in plan[k]:                               # the summed gradient back into .grad
            n = params[i].numel()
            params[i].grad.copy_(flat[offset:offset + n].view_as(params[i]))
            offset += n

    def launch_ready() -> None:
        while launched[0] < len(plan) and not missing[launched[0]]:
            launched[0] += 1
            allreduce_bucket(launched[0] - 1)

    def on_ready(p, i):
        missing[bucket_of[i]].discard(i)
        if overlap:
            launch_ready()

    hooks = [p.register_post_accumulate_grad_hook(lambda p, i=i: on_ready(p, i)) for i, p in enumerate(params)]
    wall_start = comm.now()
    try:
        loss = F.cross_entropy(model(x[idx]), y[idx], reduction="sum") / (comm.world_size * batch)
        loss.backward()
    finally:
        for h in hooks:
            h.remove()
    if comm.virtual:
        comm.compute_for(seconds=seconds(prof.forward_flops), label="forward")
        comm.compute_for(seconds=seconds(prof.total_flops - prof.forward_flops), label="backward")
    else:          # wall clock: the measured forward+backward (all-reduces included when overlapped)
        comm._event("compute", -1, 0, start=wall_start, end=comm.now(), label="forward+backward")
    compute_end = comm.now()
    if not overlap:
        stream.end = compute_end
        launch_ready()
    if comm.virtual:
        comm.clock.t = max(comm.clock.t, stream.end)   # wait for the last bucket
    exposed = comm.now() - compute_end
    sgd_update(comm, model, lr)
    out = {"loss": loss.item(), "comm_s": sum(e - s for _, _, _, s, e in log), "exposed_comm_s": exposed,
           "compute_end_s": compute_end - t0, "grad_bytes": sum(prof.nbytes),
           "buckets": [{"bucket": k, "bytes": n, "ready_s": r, "start_s": s, "end_s": e} for k, n, r, s, e in log]}
    if return_grad:
        out["grad"] = flat_grad(model)           # parameters() order, as train.step returns it
    return out


def pipeline_time(bucket_bytes: list[int], ready_s: list[float], compute_s: float, p: int, *, link,
                  optimizer_s: float = 0.0, overlap: bool = True) -> dict:
    """The alpha-beta prediction of a bucketed step: each bucket's ring all-reduce queued after its ready time.

    `ready_s[k]`: when bucket k's gradients are all ready (seconds from the forward's start);
    `compute_s`: forward + backward; `link`: the NIC (``Network.nic``). Returns total and exposed seconds.
    """
    end = 0.0 if overlap else compute_s
    for n, ready in zip(bucket_bytes, ready_s):
        end = max(ready if overlap else compute_s, end) + (cost.ring_allreduce(p, n, link) if p > 1 else 0.0)
    finish = max(compute_s, end)
    return {"total_s": finish + optimizer_s, "exposed_comm_s": finish - compute_s}

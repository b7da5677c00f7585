"""Step time against bucket capacity from the alpha-beta pipeline, with no ranks run: chapter 7's curve.

For each cap, ``buckets.plan`` cuts the chapter's MLP into buckets, ``buckets.bucket_ready_flops`` says
when each is ready on the device, and ``overlap.pipeline_time`` gives the step (overlapped or with every
bucket after the backward pass). The panel draws it beside the steps it measured on real ranks.
Left out: DDP's smaller first bucket (every bucket has the cap) and algorithms other than the ring.
"""
from __future__ import annotations

from . import buckets, train
from .overlap import pipeline_time
from ..net.network import network
from ..net.presets import device

SHAPE = dict(width=256, layers=4, batch=128)       # chapter 7's MLP; nodes x batch must fit the digits


def predicted_step_times(caps, *, ranks: int, bandwidth: str, latency: str, overlap: bool,
                         shape: dict = SHAPE, dev: str = "cpu-core") -> list[float]:
    """Step time (s) at every bucket cap in `caps` (bytes), from the alpha-beta pipeline."""
    d = device(dev)
    prof = buckets.backward_profile(shape["width"], shape["layers"], shape["batch"])
    compute = d.seconds(prof.total_flops)
    optimizer = d.seconds(2 * train.parameter_count(shape["width"], shape["layers"]))
    link = network(bandwidth, latency).nic
    size = dict(zip(prof.order, prof.nbytes))
    out = []
    for cap in caps:
        plan = buckets.plan(prof, cap)
        ready = [d.seconds(f) for f in buckets.bucket_ready_flops(prof, plan)]
        nbytes = [sum(size[i] for i in b) for b in plan]
        out.append(pipeline_time(nbytes, ready, compute, ranks, link=link, optimizer_s=optimizer,
                                 overlap=overlap)["total_s"])
    return out

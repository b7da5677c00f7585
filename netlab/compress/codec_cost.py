"""What compressing costs in compute: measured here, then scaled to the device preset.

Compression is not free: top-k must find the k largest of d values, PowerSGD multiplies matrices,
and every all-gathered payload must be decoded and added. Agarwal et al. (MLSys 2022) found this
overhead is a main reason compression rarely pays. netlab charges it to the virtual clock:

1. Measure, in this process with one torch thread (as the ranks run), median of `reps` runs each:
   * the model's forward + backward on one rank's batch (the same work ``train.local_step`` does):
     ``model_here_s``;
   * encode: error-feedback compensation + compress + the memory's update, on a real gradient of
     the model: ``encode_here_s``;
   * decode: decompress one payload and add it to a sum: ``decode_here_s`` (an all-gather method
     decodes p payloads per step, an all-reduce method one; PowerSGD's whole step is timed once and
     split evenly between the two).
   The three are measured interleaved, so a busy machine slows them alike.
2. Scale to the device: the device preset says the forward + backward takes
   ``model_device_s = FLOPs / (peak * efficiency)`` (the clock chapter 1 uses). The codec is charged
   the same *fraction of the model's compute* that it takes here:

       encode_s = encode_here_s * model_device_s / model_here_s      (likewise decode_s)

   The assumption, stated: compression code speeds up on a faster device as much as the model's
   own matrix multiplies do. Real top-k and sorting kernels are memory- and latency-bound and
   speed up less on GPUs, so this is, if anything, kind to compression.

Measured times vary a little from machine to machine and run to run; they are measured once per
setting per process and reused, so a chapter is consistent within itself. Pass ``codec="free"``
to ``run_training`` for times that do not depend on the machine at all.
"""
from __future__ import annotations

import functools
import statistics
import time

import torch

from .. import data, train
from ..comm import Comm
from ..net.presets import Device, device
from . import make
from .communicate import Compression


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@functools.lru_cache(maxsize=256)
def measure_here(method: str, ranks: int, width: int, layers: int, batch: int, error_feedback: bool,
                 options: tuple = (), reps: int = 15) -> dict:
    """Seconds on this machine (one thread): model forward+backward, encode, one decode; medians."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = train.make_model(width, layers, seed=0)
        x, y = data.load("train")
        idx = train.batch_indices(0, 0, ranks, batch, len(y))
        local = Comm(0, 1, device=device("cpu-core"))           # no network: wall clock, no messages
        flops = train.step_flops(width, layers, batch)
        train.local_step(local, model, x, y, idx, ranks * batch, flops)
        grad = train.flat_grad(model)
        shapes = [tuple(p.shape) for p in model.parameters()]

        def fresh():
            return make(method, error_feedback, shapes=shapes, world_size=ranks, **dict(options))

        model_t, enc_t, dec_t = [], [], []
        sync, step = fresh(), 0
        for rep in range(reps + 2):                              # two warm-up rounds, then measure
            m = _timed(lambda: train.local_step(local, model, x, y, idx, ranks * batch, flops))
            if isinstance(sync, Compression):
                payload = None

                def encode():
                    nonlocal payload
                    payload = sync.encode(local, grad, step)
                e = _timed(encode)
                acc = torch.zeros_like(grad)
                d = _timed(lambda: acc.add_(sync.compressor.decompress(payload)))
            else:                                                # PowerSGD: the whole step, split evenly
                total = _timed(lambda: sync.sync(local, grad, step))
                e = d = total / 2
            step += 1
            local.events.clear()
            if rep >= 2:
                model_t.append(m)
                enc_t.append(e)
                dec_t.append(d)
        return {"model_here_s": statistics.median(model_t), "encode_here_s": statistics.median(enc_t),
                "decode_here_s": statistics.median(dec_t), "model_flops": flops}
    finally:
        torch.set_num_threads(threads)


def codec_seconds(method: str, ranks: int, width: int, layers: int, batch: int, device: Device,
                  error_feedback: bool = False, **options) -> tuple[float, float]:
    """(encode_s, decode_s) to charge per step on `device`: measured here, scaled as the model's compute."""
    if method == "none":
        return 0.0, 0.0
    m = measure_here(method, ranks, width, layers, batch, error_feedback, tuple(sorted(options.items())))
    factor = device.seconds(m["model_flops"]) / m["model_here_s"]
    return m["encode_here_s"] * factor, m["decode_here_s"] * factor

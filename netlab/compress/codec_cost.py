"""What compressing costs in compute: measured here, then scaled to the device preset.

Compression is not free: top-k must find the k largest of d values, PowerSGD multiplies matrices,
and every all-gathered payload must be decoded and added. Agarwal et al. (MLSys 2022) found this
overhead is a main reason compression rarely pays. netlab charges it to the virtual clock:

1. Measure, in this process with one torch thread (as the ranks run), median of `reps` runs each:
   * encode: error-feedback compensation + compress + the memory's update, on a real gradient of
     the model: ``encode_here_s``;
   * decode: decompress one payload and add it to a sum: ``decode_here_s`` (an all-gather method
     decodes p payloads per step, an all-reduce method one; PowerSGD's whole step is timed once and
     split evenly between the two);
   * a reference fp32 matrix multiply (256 x 256 by 256 x 256, 2 * 256^3 FLOPs): this machine's
     speed, ``gemm_flops_per_s``.
   They are measured interleaved, so a busy machine slows them alike.
2. Scale to the device: the codec's time is turned into "FLOPs this machine would have done in
   that time", and the device preset runs those FLOPs as it runs the model's (chapter 1's clock):

       encode_s = encode_here_s * gemm_flops_per_s / (peak * efficiency)      (likewise decode_s)

   On ``cpu-core`` (96 GFLOP/s peak, 50 %) this is about the measured time itself; on a GPU preset
   it is thousands of times less. The assumption, stated: compression code speeds up on a faster
   device as much as dense matrix multiplies do. Real top-k and sorting kernels are memory- and
   latency-bound and speed up less on GPUs, so this is, if anything, kind to compression.

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
from ..net.presets import Device, device as make_device
from . import make
from .communicate import Compression


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@functools.lru_cache(maxsize=256)
def measure_here(method: str, ranks: int, width: int, layers: int, batch: int, error_feedback: bool,
                 options: tuple = (), reps: int = 15) -> dict:
    """Seconds on this machine (one thread): encode, one decode, and a reference matmul's FLOP/s."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = train.make_model(width, layers, seed=0)
        x, y = data.load("train")
        idx = train.batch_indices(0, 0, ranks, batch, len(y))
        local = Comm(0, 1, device=make_device("cpu-core"))         # no network: wall clock, no messages
        flops = train.step_flops(width, layers, batch)
        train.local_step(local, model, x, y, idx, ranks * batch, flops)
        grad = train.flat_grad(model)
        shapes = [tuple(p.shape) for p in model.parameters()]

        def fresh():
            return make(method, error_feedback, shapes=shapes, world_size=ranks, **dict(options))

        a, b = torch.randn(256, 256), torch.randn(256, 256)
        gemm_t, enc_t, dec_t = [], [], []
        sync, step = fresh(), 10**6                              # a late step: past DGC's warm-up
        for rep in range(reps + 2):                              # two warm-up rounds, then measure
            m = _timed(lambda: a @ b)
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
                gemm_t.append(m)
                enc_t.append(e)
                dec_t.append(d)
        return {"gemm_flops_per_s": 2 * 256 ** 3 / statistics.median(gemm_t),
                "encode_here_s": statistics.median(enc_t), "decode_here_s": statistics.median(dec_t)}
    finally:
        torch.set_num_threads(threads)


def codec_seconds(method: str, ranks: int, width: int, layers: int, batch: int, device: Device,
                  error_feedback: bool = False, **options) -> tuple[float, float]:
    """(encode_s, decode_s) to charge per step on `device`: measured here, scaled by matmul speed."""
    if method == "none":
        return 0.0, 0.0
    m = measure_here(method, ranks, width, layers, batch, error_feedback, tuple(sorted(options.items())))
    return (device.seconds(m["encode_here_s"] * m["gemm_flops_per_s"]),
            device.seconds(m["decode_here_s"] * m["gemm_flops_per_s"]))

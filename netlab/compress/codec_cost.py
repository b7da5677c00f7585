"""What compressing costs in compute: a per-element model by default, or measured here.

Compression is not free: top-k must find the k largest of d values, PowerSGD multiplies matrices,
and every all-gathered payload must be decoded and added. Agarwal et al. (MLSys 2022) found this
overhead is a main reason compression rarely pays. netlab charges it to the virtual clock, in one of
three ways (``codec=``, the same choice in ``run_training``, ``method_table``, ``pays.step_times``,
the chapter-4 panel and ``netlab compress --codec``):

* ``"model"`` (the default): deterministic. Each method costs a fixed number of FLOP-equivalents
  per gradient element for its encode (error-feedback compensation + compress + the memory's
  update) and for one decode (decompress one payload and add it), from ``codec_calibration.py``:

      encode_s = encode_flops_per_element * d / (peak * efficiency)          (likewise decode_s)

  with d the gradient's elements and the device preset's speed, exactly as the model's own FLOPs are
  charged (chapter 1's clock). Same config, same times, on any machine, loaded or idle.
* ``"measured"``: measure the codec in this process now (below) and scale it the same way. Useful to
  see this machine's codec, but it moves with the machine's load.
* ``"free"``: charge nothing (the network alone).

Measuring (``measure_here``), with one torch thread (as the ranks run), median (or min) of `reps` runs,
interleaved with a reference fp32 matrix multiply (256 x 256 by 256 x 256, 2 * 256^3 FLOPs), both
timed in this thread's CPU time (``time.thread_time``: time the thread spends descheduled on a busy
machine is not counted, and what is left -- caches shared with other processes -- slows both alike): the codec's seconds times the matmul's FLOP/s give its FLOP-
equivalents ("the FLOPs this machine would have done in that time"). The calibration file holds
those, divided by d, for the chapter's methods, measured once on a model of 1,126,410 parameters
(width 1024, 4.5 MB of gradient: large enough that per-call overheads are small against the
per-element work; the command that produced it is in that file).

Assumptions, stated: the codec speeds up on a faster device as much as dense matrix multiplies do
(real top-k and sort kernels are memory- and latency-bound and gain less on GPUs, so this is, if
anything, kind to compression); the cost is proportional to d (per-call overheads, kernel launches
and cache effects are left out), so the bytes saved and the codec's work grow together with the
model. Options other than the calibrated ones reuse the method's calibrated cost, except PowerSGD's
rank, which scales it linearly.
"""
from __future__ import annotations

import functools
import statistics
import time
from dataclasses import dataclass

from netlab.lazy import lazy
torch = lazy("torch", globals())

from .. import data, validate
from ..dataparallel import train
from ..runtime import pool
from ..runtime.comm import Comm
from ..net.presets import Device, device as make_device
from . import check_method, make
from .methods import SyncConfig
from .communicate import Compression


def _timed(fn) -> float:
    """CPU seconds this thread spent in fn: time descheduled by a busy machine is not counted."""
    start = time.thread_time()
    fn()
    return time.thread_time() - start


@dataclass(frozen=True, kw_only=True)
class CodecCase:
    """What ``measure_here`` times: a method with its options, on a model of `width` x `layers` whose
    gradient comes from one step of `batch` samples (the batch of one of `ranks` ranks).

    `options`: the method's knobs as sorted (name, value) pairs, so a case is hashable (cached)."""
    method: str
    ranks: int
    width: int
    layers: int
    batch: int
    error_feedback: bool = False
    options: tuple = ()

    def __post_init__(self):
        check_method(self.method)
        pool.check_ranks(self.ranks)
        train.check_model(self.width, self.layers)
        validate.whole(self.batch, "batch", 1, 4096)
        object.__setattr__(self, "options", tuple(self.options))


def measure_here(case: CodecCase | None = None, *, reps: int = 15, statistic: str = "median", **settings) -> dict:
    """Seconds on this machine (one thread): encode, one decode, and a reference matmul's FLOP/s.

    A ``CodecCase``, or its fields as keywords. statistic: "median" of the reps, or "min" (the least
    disturbed run: what a calibration on a shared, loaded machine should use).
    """
    validate.whole(reps, "reps", 1, 10_000)
    validate.choice(statistic, "statistic", ("median", "min"))
    return _measure(validate.config(CodecCase, case, settings), reps, statistic)


@functools.lru_cache(maxsize=256)
def _measure(case: CodecCase, reps: int, statistic: str) -> dict:
    method, ranks, width, layers, batch = case.method, case.ranks, case.width, case.layers, case.batch
    error_feedback, options = case.error_feedback, case.options
    pick = {"median": statistics.median, "min": min}[statistic]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = train.make_model(width, layers, seed=0)
        x, y = data.load("train")
        idx = train.batch_indices(0, 0, ranks, batch, n=len(y))
        local = Comm(0, 1, device=make_device("cpu-core"))         # no network: wall clock, no messages
        flops = train.step_flops(width, layers, batch)
        train.local_step(local, model, x, y, idx=idx, global_batch=ranks * batch, flops=flops)
        grad = train.flat_grad(model)
        shapes = [tuple(p.shape) for p in model.parameters()]

        def fresh():
            return make(SyncConfig(method=method, error_feedback=error_feedback, shapes=shapes, world_size=ranks,
                                   **dict(options)))

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
        return {"gemm_flops_per_s": 2 * 256 ** 3 / pick(gemm_t),
                "encode_here_s": pick(enc_t), "decode_here_s": pick(dec_t)}
    finally:
        torch.set_num_threads(threads)


CODECS = ("model", "measured", "free")
DEFAULT_CODEC = "model"


def check_codec(codec: str) -> str:
    return validate.choice(codec, "codec", CODECS)


def describe_codec(codec: str) -> str:
    """How the codec's compute is charged, in words for a figure's or a table's caption."""
    return {"model": "codec: per-element model", "measured": "codec: measured on this machine now",
            "free": "codec: not charged"}[check_codec(codec)]


def label(method: str, options: dict) -> str:
    """A method with its options as the tables and the calibration name it: "topk (ratio=0.01)"."""
    knobs = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in options.items())
    return f"{method} ({knobs})" if knobs else method


def flops_per_element(method: str, error_feedback: bool = False, **options) -> tuple[float, float]:
    """(encode, one decode) FLOP-equivalents per gradient element, from the committed calibration."""
    from .codec_calibration import FLOPS_PER_ELEMENT
    key = (label(method, options), bool(error_feedback))
    if key in FLOPS_PER_ELEMENT:
        return FLOPS_PER_ELEMENT[key]
    same = [(k, v) for k, v in FLOPS_PER_ELEMENT.items() if k[0].split(" (")[0] == method and k[1] == key[1]]
    if not same:
        raise ValueError(f"method: no codec calibration for {method!r}; run benchmarks/calibrate_codec.py")
    (calibrated, _), (enc, dec) = same[0]
    if method == "powersgd":                                 # matmuls with n x r and m x r factors: linear in r
        scale = options.get("rank", 1) / int(calibrated.split("rank=")[1].rstrip(")"))
        return enc * scale, dec * scale
    return enc, dec


def codec_seconds(method: str, ranks: int, width: int, layers: int, *, batch: int, device: Device,
                  error_feedback: bool = False, codec: str = DEFAULT_CODEC, **options) -> tuple[float, float]:
    """(encode_s, decode_s) to charge per step on `device`: from the model, measured here, or free."""
    if method == "none" or check_codec(codec) == "free":
        return 0.0, 0.0
    if codec == "model":
        enc, dec = flops_per_element(method, error_feedback, **options)
        d = train.parameter_count(width, layers)
        return device.seconds(enc * d), device.seconds(dec * d)
    m = measure_here(method=method, ranks=ranks, width=width, layers=layers, batch=batch,
                     error_feedback=error_feedback, options=tuple(sorted(options.items())))
    return (device.seconds(m["encode_here_s"] * m["gemm_flops_per_s"]),
            device.seconds(m["decode_here_s"] * m["gemm_flops_per_s"]))

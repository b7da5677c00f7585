"""The chapter's table of methods: accuracy with and without error feedback, bytes, compression ratio.

Every row comes from two training runs on real ranks (``run_training``), same model, data, seed and
learning rate as the fp32 baseline (the digits MLP 64-128-128-10, plain SGD, lr 0.1, 32 samples per
rank). DGC keeps its momentum of 0.9 in its memory (momentum correction), so it trains with
momentum where the others do not: compare it with that in mind.

The settings in ``TABLE`` are the chapter's: top-k and DGC keep 1 %, random-k keeps 10 % (at 1 %,
the d/k = 100 rescaling makes even plain random-k diverge at this learning rate), threshold sends
|g| >= 0.01, QSGD uses 4 bits (s = 7).
"""
from __future__ import annotations

import functools

from .codec_cost import DEFAULT_CODEC, describe_codec
from .pays import label
from .training import run_training

TABLE = [
    ("none", {}), ("fp16", {}), ("bf16", {}), ("int8", {}), ("qsgd", {"bits": 4}), ("terngrad", {}),
    ("sign", {}), ("majority", {}), ("topk", {"ratio": 0.01}), ("randomk", {"ratio": 0.1}),
    ("threshold", {"tau": 0.01}), ("dgc", {"ratio": 0.01, "warmup_steps": 40}), ("powersgd", {"rank": 1}),
    ("powersgd", {"rank": 2}),
]
TABLE_STEPS = 300                    # the chapter's length of training; DGC warms up over its first 40 steps


def for_steps(steps: int, methods=TABLE) -> list:
    """``methods`` for a run of ``steps`` steps: DGC's density warm-up keeps its share of training
    (40 of 300 steps: a shorter CI run is not mostly warm-up, which would make DGC look better)."""
    out = []
    for method, options in methods:
        if "warmup_steps" in options:
            options = {**options, "warmup_steps": max(1, round(options["warmup_steps"] * steps / TABLE_STEPS))}
        out.append((method, options))
    return out


def method_table(methods=TABLE, ranks: int = 4, steps: int = 300, codec: str = DEFAULT_CODEC, *,
                 progress: bool = False, **kwargs) -> list[dict]:
    """One row per method: accuracy without and with error feedback, payload, ratio, wire bytes, step time.

    kwargs go to ``run_training`` (bandwidth, latency, device, width, lr, seed ...).
    """
    from tqdm.auto import tqdm
    rows = []
    for method, options in tqdm(methods, desc="methods", disable=not progress):
        plain = run_training(method, ranks=ranks, steps=steps, error_feedback=False, codec=codec, **options, **kwargs)
        ef = plain if method == "none" else run_training(method, ranks=ranks, steps=steps, error_feedback=True,
                                                         codec=codec, **options, **kwargs)
        rows.append({"method": label(method, options), "accuracy": plain.final_accuracy,
                     "accuracy_ef": ef.final_accuracy, "diverged": plain.diverged, "diverged_ef": ef.diverged,
                     "payload_bytes": plain.payload_bytes, "payload_bytes_ef": ef.payload_bytes,
                     "compression_ratio": plain.compression_ratio, "compression_ratio_ef": ef.compression_ratio,
                     "bytes_per_step": plain.bytes_per_step, "bytes_per_step_ef": ef.bytes_per_step,
                     "step_s": plain.step_s, "step_s_ef": ef.step_s, "codec": codec,
                     "runs": (plain, ef)})
    return rows


def format_table(rows, baseline_accuracy: float | None = None) -> str:
    """A plain-text table under 100 characters wide (bytes in B; a dagger marks a diverged run)."""
    base = baseline_accuracy if baseline_accuracy is not None else next(
        (r["accuracy"] for r in rows if r["method"] == "none"), None)

    def acc(a, diverged):
        return f"{a:.3f}" + ("\u2020" if diverged is not None else " ")

    lines = [f"{'':34s} {'test accuracy':^15s} {'payload B/rank/step':^19s} {'fp32 / payload':^17s} {'wire B':>8s}",
             f"{'method':34s} {'no EF':>7s} {'EF':>7s} {'no EF':>9s} {'EF':>9s} {'no EF':>8s} {'EF':>8s} {'EF':>8s}"]
    for r in rows:
        lines.append(f"{r['method']:34s} {acc(r['accuracy'], r['diverged']):>7s} "
                     f"{acc(r['accuracy_ef'], r['diverged_ef']):>7s} {r['payload_bytes']:9.0f} "
                     f"{r['payload_bytes_ef']:9.0f} {r['compression_ratio']:7.1f}x {r['compression_ratio_ef']:7.1f}x "
                     f"{r['bytes_per_step_ef']:8.0f}")
    if base is not None:
        lines.append(f"fp32 baseline accuracy {base:.3f}; \u2020 diverged. payload: the compressed gradient, mean")
        lines.append("over steps; wire: bytes one rank really sent per step (EF runs).")
    if rows and "codec" in rows[0]:
        lines.append(describe_codec(rows[0]["codec"]))
    return "\n".join(lines)


def payload_table(methods=TABLE, width: int = 128, layers: int = 2, batch: int = 32, *, seed: int = 0) -> list[dict]:
    """What each method puts on the wire for one real gradient of the chapter's model (one process).

    Per method: the payload's tensors (dtype[count]), its bytes, the ratio to fp32, and the relative
    reconstruction error ||g - D(C(g))|| / ||g|| of a single compression (no error feedback).
    Runs here if torch is imported here, else on one rank of the pool (``runtime.launch.where_torch_is``),
    so a notebook kernel does not import torch for it.
    """
    from ..runtime.launch import where_torch_is
    return where_torch_is(functools.partial(_payload_rows, methods, width=width, layers=layers, batch=batch,
                                            seed=seed))


def _payload_rows(methods, width, layers, batch, seed) -> list[dict]:
    from .. import data
    from ..dataparallel import train
    from ..runtime.comm import Comm
    from ..net.presets import device
    from . import make
    from .methods import SyncConfig
    from .communicate import Compression

    model = train.make_model(width, layers, seed)
    x, y = data.load("train")
    local = Comm(0, 1, device=device("cpu-core"))
    idx = train.batch_indices(0, 0, 1, batch, n=len(y), seed=seed)
    train.local_step(local, model, x, y, idx=idx, global_batch=batch, flops=train.step_flops(width, layers, batch))
    grad = train.flat_grad(model)
    shapes = [tuple(p.shape) for p in model.parameters()]
    rows = []
    for method, options in methods:
        sync = make(SyncConfig(method=method, shapes=shapes, seed=seed, **options))
        if isinstance(sync, Compression):
            payload = sync.compressor.compress(grad, 10**6, None)   # a late step: DGC past its warm-up
            parts = " + ".join(f"{str(t.dtype).replace('torch.', '')}[{t.numel()}]" for t in payload.tensors)
            approx, nbytes = sync.compressor.decompress(payload), payload.nbytes
        else:                                              # PowerSGD: Ps, Qs and the uncompressed tensors
            approx = sync.sync(local, grad, 0)
            nbytes = sync.payload_bytes
            parts = f"float32[{nbytes // 4}] (P, Q, biases)"
        rows.append({"method": label(method, options), "payload": parts, "bytes": int(nbytes),
                     "ratio": 4 * grad.numel() / nbytes,
                     "error": float((grad - approx).norm() / grad.norm())})
    return rows

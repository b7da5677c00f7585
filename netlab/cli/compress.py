"""``netlab compress``: train with a compressed gradient exchange; accuracy, bytes and step time.

    python -m netlab compress --method topk --ratio 0.01 --error-feedback --ranks 4 --steps 300 --json
    python -m netlab compress --method powersgd --rank 2 --error-feedback --bandwidth 100Mbit/s
    python -m netlab compress --method qsgd --bits 4 --crossover        # + where it stops paying

Runs the method and the uncompressed fp32 baseline on the same ranks, data and seed, over an
emulated network, and reports both. ``bytes_per_step`` is what one rank really sent per step
(the network's byte counter); ``compression_ratio`` is fp32 gradient bytes over the compressed
payload's bytes (indices and scales included); ``wire_ratio`` compares the wire bytes with the
baseline's (an all-gather sends more than its payload). Step times are virtual seconds.
"""
from __future__ import annotations

from ..net.presets import DEVICES
from ..units import fmt_bytes, fmt_time
from . import emit

def add_parser(p) -> None:
    from ..compress import DEFAULTS, METHODS
    p.add_argument("--method", default="topk", help=f"one of {', '.join(METHODS)} (default topk)")
    p.add_argument("--ratio", type=float, default=None,
                   help=f"fraction of elements kept (topk, randomk, dgc; default {DEFAULTS['ratio']:g})")
    p.add_argument("--bits", type=int, default=None,
                   help=f"QSGD bits per element: 2, 4 or 8 (default {DEFAULTS['bits']})")
    p.add_argument("--tau", type=float, default=None,
                   help=f"threshold for --method threshold (default {DEFAULTS['tau']:g})")
    p.add_argument("--rank", type=int, default=None,
                   help=f"PowerSGD rank r (default {DEFAULTS['rank']})")
    p.add_argument("--error-feedback", action="store_true", help="keep what was not sent and add it next step")
    p.add_argument("--ranks", type=int, default=4, help="data-parallel ranks, 1-16 (default 4)")
    p.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    p.add_argument("--bandwidth", default="1Gbit/s", help="NIC bandwidth per direction (default 1Gbit/s)")
    p.add_argument("--latency", default="5us", help="one-way latency alpha (default 5us)")
    p.add_argument("--device", choices=sorted(DEVICES), default="cpu-core", help="compute device preset (default cpu-core)")
    p.add_argument("--efficiency", type=float, default=0.5, help="fraction of the device's peak reached (default 0.5)")
    p.add_argument("--width", type=int, default=128, help="hidden width of the MLP (default 128: ~110 KB of gradient)")
    p.add_argument("--batch", type=int, default=32, help="samples per rank per step (default 32)")
    p.add_argument("--lr", type=float, default=0.1, help="learning rate, plain SGD (default 0.1)")
    p.add_argument("--seed", type=int, default=0, help="model, data order and compressor seed (default 0)")
    p.add_argument("--codec", choices=["model", "measured", "free"], default="model",
                   help="compress/decompress compute: per-element model, the same on every machine (default), "
                        "measured on this machine now, or not charged")
    p.add_argument("--crossover", action="store_true", help="also sweep 100 Mbit/s..400 Gbit/s for the crossover")
    p.add_argument("--json", action="store_true", help="print JSON")


def options_for(method: str, args) -> dict:
    """The knob values given on the command line; one that `method` does not take is an error."""
    from ..compress import DEFAULTS, METHODS, check_method
    knob = METHODS[check_method(method)][0]
    options = {}
    for name in DEFAULTS:                                  # the knobs: ratio, bits, tau, rank
        value = getattr(args, name)
        if value is None:
            continue
        if name != knob:
            raise ValueError(f"{name}: --method {method} does not take --{name}"
                             + (f" (its knob is --{knob})" if knob else " (it has no knob)"))
        options[name] = value
    return options


def main(args) -> int:
    # A command line, unlike a notebook kernel, can afford torch: with it imported here the method's options
    # are checked in this process (compress/config.py), so a bad --ratio is refused before any rank starts.
    import torch  # noqa: F401
    from ..compress import pays
    from ..compress.codec_cost import describe_codec
    from ..compress.training import run_training
    options = options_for(args.method, args)
    common = dict(ranks=args.ranks, steps=args.steps, bandwidth=args.bandwidth, latency=args.latency,
                  device=args.device, efficiency=args.efficiency, width=args.width, batch=args.batch, lr=args.lr,
                  seed=args.seed, codec=args.codec)
    r = run_training(args.method, error_feedback=args.error_feedback, **common, **options)
    base = r if args.method == "none" and not args.error_feedback else run_training("none", **common)
    out = {"method": args.method, "options": options, "error_feedback": args.error_feedback,
           "accuracy": r.final_accuracy, "baseline_accuracy": base.final_accuracy,
           "bytes_per_step": r.bytes_per_step, "baseline_bytes_per_step": base.bytes_per_step,
           "payload_bytes": r.payload_bytes, "dense_bytes": r.dense_bytes,
           "compression_ratio": r.compression_ratio, "wire_ratio": base.bytes_per_step / r.bytes_per_step if r.bytes_per_step else None,
           "step_s": r.step_s, "baseline_step_s": base.step_s, "diverged_at_step": r.diverged,
           "encode_s": r.encode_s, "decode_s": r.decode_s, "steps": args.steps, "ranks": args.ranks,
           "bandwidth": args.bandwidth, "setup": r.setup,
           "curve": {"step": r.steps, "accuracy": r.accuracy, "time_s": r.time_s},
           "baseline_curve": {"step": base.steps, "accuracy": base.accuracy, "time_s": base.time_s}}
    if args.crossover:
        spec = (args.method, options, args.error_feedback)
        rows = pays.step_times(["none", spec], ranks=args.ranks, width=args.width, batch=args.batch,
                               latency=args.latency, device=args.device, efficiency=args.efficiency, codec=args.codec)
        out["crossover_bandwidth_Bps"] = pays.crossover(rows, pays.label(args.method, options))
    label = pays.label(args.method, options) + (" + error feedback" if args.error_feedback else "")
    lines = [
        f"netlab compress: {label}, {args.ranks} ranks, {args.steps} steps, MLP width {args.width}",
        f"  network   {r.setup['network']}",
        f"  accuracy  {r.final_accuracy:.3f}   (fp32 baseline {base.final_accuracy:.3f})"
        + (f"   DIVERGED at step {r.diverged}" if r.diverged is not None else ""),
        f"  payload   {fmt_bytes(r.payload_bytes)} per rank per step, {r.compression_ratio:.1f}x smaller than "
        f"fp32 ({fmt_bytes(r.dense_bytes)})",
        (f"  wire      {fmt_bytes(r.bytes_per_step)} sent per rank per step (baseline {fmt_bytes(base.bytes_per_step)}, "
         f"{out['wire_ratio']:.1f}x less)" if r.bytes_per_step else
         "  wire      nothing sent: one rank has no one to send its gradient to"),
        f"  step      {fmt_time(r.step_s)} (baseline {fmt_time(base.step_s)}), compress {fmt_time(r.encode_s)} "
        f"+ decompress {fmt_time(r.decode_s)} per payload, virtual time",
        f"  codec     {describe_codec(args.codec)}",
    ]
    if args.crossover:
        lines.append(f"  crossover compression stops paying above {pays.bandwidth_label(out['crossover_bandwidth_Bps'])}")
    emit(out, args.json, "\n".join(lines))
    return 0

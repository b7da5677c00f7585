"""``netlab parallel``: one training step of data, tensor or pipeline parallelism on real ranks.

    python -m netlab parallel --ranks 4 --mode tp --bandwidth 10Gbit/s --json
    python -m netlab parallel --ranks 4 --mode pp --micro-batches 8 --batch 512
    python -m netlab parallel --ranks 4 --mode all          # the three side by side
"""
from __future__ import annotations

from ..net.presets import DEVICES
from ..units import fmt_bytes, fmt_time
from . import emit


def add_parser(p) -> None:
    p.add_argument("--mode", default="dp", choices=["dp", "tp", "pp", "all"],
                   help="dp: data parallel (one gradient all-reduce); tp: tensor parallel (activation all-reduces); "
                        "pp: GPipe pipeline (micro-batches point to point); all: the three (default dp)")
    p.add_argument("--ranks", type=int, default=4, help="ranks, 1-16 (default 4; pp: at most layers + 1)")
    p.add_argument("--bandwidth", default="10Gbit/s", help="NIC bandwidth per direction (default 10Gbit/s)")
    p.add_argument("--latency", default="50us", help="one-way latency alpha (default 50us)")
    p.add_argument("--width", type=int, default=256,
                   help="hidden width of the MLP (default 256; tp: divisible by ranks)")
    p.add_argument("--layers", type=int, default=4, help="hidden layers (default 4)")
    p.add_argument("--batch", type=int, default=256, help="global batch, the same for every mode (default 256)")
    p.add_argument("--micro-batches", type=int, default=4, help="pp: micro-batches per step (default 4)")
    p.add_argument("--device", choices=sorted(DEVICES), default="cpu-core",
                   help="compute device preset (default cpu-core)")
    p.add_argument("--efficiency", type=float, default=0.5, help="fraction of the device's peak reached (default 0.5)")
    p.add_argument("--json", action="store_true", help="print JSON (virtual seconds, bytes)")


def main(args) -> int:
    from ..codesign.parallel import MODES, compare
    modes = MODES if args.mode == "all" else (args.mode,)
    rows = compare(modes=modes, ranks=args.ranks, bandwidth=args.bandwidth, latency=args.latency, width=args.width,
                   layers=args.layers, batch=args.batch, micro_batches=args.micro_batches, device=args.device,
                   efficiency=args.efficiency)
    names = {"dp": "data", "tp": "tensor", "pp": "pipeline"}
    text = "\n".join([
        f"netlab parallel: {args.ranks} ranks, MLP width {args.width} x {args.layers} layers, "
        f"global batch {args.batch}",
        f"  {'mode':<9} {'bytes/step':>11} {'step':>11} {'compute':>11}   (closed form: bytes, step)",
        *[f"  {names[r.mode]:<9} {fmt_bytes(r.bytes_per_step):>11} {fmt_time(r.step_s):>11} {fmt_time(r.compute_s):>11}"
          f"   ({fmt_bytes(r.formula_bytes)}, {fmt_time(r.formula_s)})"
          + (f"  bubble {r.setup['bubble']:.0%}" if "bubble" in r.setup else "") for r in rows],
    ])
    out = [r.as_dict() for r in rows]
    emit(out[0] if len(out) == 1 else out, args.json, text)
    return 0

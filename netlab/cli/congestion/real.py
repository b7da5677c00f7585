"""``netlab congestion`` off the packet model: ``incast --real``, the kernel's own TCP in network namespaces
(``linuxnet.linux.incast``), and ``jitter --real-steps``, real ranks training on the fabric
(``cosim.experiments.step_jitter``); each refuses the model's flags it has no counterpart for.
"""
from __future__ import annotations

from ...units import fmt_bandwidth, fmt_bytes, fmt_time, parse_bandwidth, parse_time
from .. import emit
from .settings import ecn, flag

REAL_ONLY = ("ranks", "steps", "latency")
MODEL_ONLY = {"senders": 16, "block": "256K", "rounds": None, "window": "64K", "ecn_k": None, "ecn_kmin": None,
              "ecn_kmax": None, "ecn_pmax": None, "pfc": False, "xoff": None, "xon": None, "pfc_headroom": None,
              "shared_buffer": False}


# the model's flags that the real Linux path has no counterpart for, with their defaults
MODEL_ONLY_REAL = {"window": "64K", "ecn_pmax": None, "pfc": False, "xoff": None, "xon": None, "pfc_headroom": None,
                   "shared_buffer": False, "background": None, "seed": 0}


def real_incast(args) -> int:
    """``incast --real``: the kernel's own TCP through a shaped Linux bridge (``linuxnet.linux.incast``).
    Ctrl-C on the command line: ``runtime/interrupt.py`` deletes the testbed's namespaces."""
    from ...linuxnet import linux
    if args.experiment != "incast":
        raise ValueError("real: only the incast experiment runs on the real Linux stack")
    for name, default in MODEL_ONLY_REAL.items():
        if getattr(args, name) != default:
            why = " (a Linux bridge drops, it never pauses)" if name in ("pfc", "xoff", "xon", "pfc_headroom") else ""
            raise ValueError(f"real: {flag(name)} applies to the model only{why}")
    # RED thresholds as the model reads them (the real port takes only kmin == kmax); --ecn-k goes as is
    red = args.ecn_kmin is not None or args.ecn_kmax is not None
    try:
        row = linux.incast(senders=args.senders, block=args.block, bandwidth=args.bandwidth,
                           buffer=args.buffer if args.buffer is not None else "64K",
                           transport=args.transport or "reno", rto_min=args.rto_min,
                           rounds=args.rounds if args.rounds is not None else 20,
                           ecn=ecn(args, None, None) if red else False, ecn_k=args.ecn_k,
                           nic_rate=args.nic_rate if args.nic_rate is not None else "link")
    except linux.Unavailable as exc:
        raise ValueError(f"real: {exc}") from None
    row = {k: v for k, v in row.items() if k != "round_s"}
    c = row["completion_s"]
    text = "\n".join([
        f"# netlab congestion incast --real: {row['senders']} senders x {fmt_bytes(row['block'])} into one "
        f"{fmt_bandwidth(row['bandwidth_Bps'])} tbf port, queue {fmt_bytes(row['buffer'])}, the kernel's "
        f"{row['transport']}, RTOmin {fmt_time(row['rto_min_s'])}, {row['rounds']} rounds, the wall clock",
        f"  goodput          {row['goodput_Bps'] * 8 / 1e9:.3f} Gbit/s ({row['link_fraction']:.0%} of the link's frames)",
        f"  round time       p50 {fmt_time(c['p50'])}, p99 {fmt_time(c['p99'])} (ideal {fmt_time(row['ideal_round_s'])})",
        f"  drops / marks    {row['drops']} / {row['marks']}",
        f"  timeouts         {row['timeouts']} ({row['retransmissions']} segments resent)",
        f"  PFC pause        {fmt_time(row['pause_s'])} (a Linux bridge never pauses)",
        f"  measured in      {row['wall_s']:.2f} s"])
    emit(row, args.json, text)
    return 0


def real_steps(args) -> int:
    """``jitter --real-steps``: real ranks' step times per transport (``cosim.experiments.step_jitter``)."""
    from ...cosim import experiments as real
    from ...validate import choice as validate_choice
    if args.experiment != "jitter":
        raise ValueError("real-steps: only the jitter experiment runs real training steps")
    for name, default in MODEL_ONLY.items():
        if getattr(args, name) != default:
            raise ValueError(f"real-steps: {flag(name)} does not apply: the ranks' gradients are the traffic")
    transports = ([t.strip() for t in args.transport.split(",")] if args.transport is not None
                  else list(real.TRANSPORTS))
    for t in transports:
        validate_choice(t, "transport", real.TRANSPORTS)
    background = args.background if args.background is not None else 0.5
    if not 0 <= background < 1:
        raise ValueError(f"background: must be a load in [0, 1), got {background!r}")
    ranks = args.ranks if args.ranks is not None else 3
    steps = args.steps if args.steps is not None else 12
    out = real.step_jitter(transports=tuple(transports), ranks=ranks, steps=steps,
                           bandwidth=parse_bandwidth(args.bandwidth, "bandwidth"),
                           latency=args.latency if args.latency is not None else "20us",
                           buffer=args.buffer if args.buffer is not None else "32K", background=background,
                           rto_min=parse_time(args.rto_min, "rto-min", allow_zero=False), seed=args.seed)
    rows = {t: {"times_s": [float(x) for x in r["times"]], "p50": r["p50"], "p99": r["p99"], "max": r["max"],
                "fabric": r["fabric"], "switch": r["describe"]} for t, r in out.items()}
    text = [f"# netlab congestion jitter --real-steps: {ranks} ranks x {steps} training steps, ring all-reduce, "
            f"background load {background:.0%} into rank 0's port"]
    for t, r in rows.items():
        f = r["fabric"]
        text.append(f"  {t:6s} p50 {fmt_time(r['p50'])}  p99 {fmt_time(r['p99'])}  max {fmt_time(r['max'])}; "
                    f"drops {f['drops']}, timeouts {f['timeouts']}, PFC pause {fmt_time(f['pause_s'])}")
    emit(rows, args.json, "\n".join(text))
    return 0

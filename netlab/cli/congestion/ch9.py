"""``netlab congestion incast`` on chapter 9's fabric (``fabric.ethernet.incast``): UET's transports,
trimming, multi-path topologies, planes, a link failure; each round a fresh fabric seeded --seed + round.
"""
from __future__ import annotations

from ...units import fmt_bandwidth, fmt_bytes, fmt_time, parse_time
from .. import emit, progress_bar
from . import settings
from .settings import flag, incomplete
from .settings import ecn as make_ecn

CH9 = {"trim": False, "multipath": None, "topology": None, "planes": None, "fail": None, "fail_at": None,
       "reroute": None, "credit_rate": None}


def wanted(args) -> bool:
    """Does this command ask for chapter 9's fabric (a UET transport or any of its flags)?"""
    return (args.transport or "").strip() in ("nscc", "rccc") or any(getattr(args, k) != v for k, v in CH9.items())


def ethernet_incast(args, *, rounds, block, bandwidth, buffer, rto_min, window, pfc) -> int:
    """``incast`` on chapter 9's fabric: ``fabric.ethernet.incast``, one round per --rounds."""
    from dataclasses import replace

    from ...fabric import ethernet
    from ...fabric.failure import Failure
    from ...net.network import Link
    transport = args.transport or "reno"
    if args.background not in (None, 0.0) or args.shared_buffer:
        name = "background" if args.background not in (None, 0.0) else "shared-buffer"
        raise ValueError(f"{name}: {flag(name)} runs on chapter 6's fabric only, not with chapter 9's options")
    for name in ("fail_at", "reroute"):
        if getattr(args, name) is not None and args.fail is None:
            raise ValueError(f"{name.replace('_', '-')}: {flag(name)} needs --fail")
    failure = None
    if args.fail is not None:
        if args.topology in (None, "star"):
            raise ValueError("fail: give a --topology with several paths (the one-switch star has none to fail over to)")
        failure = Failure(args.fail, parse_time(args.fail_at or 0, "fail-at"),
                          parse_time(args.reroute, "reroute") if args.reroute is not None else 10e-3)
    ecn = make_ecn(args, transport, bandwidth) if any(getattr(args, k) is not None for k in
                                                  ("ecn_k", "ecn_kmin", "ecn_kmax", "ecn_pmax")) else "default"
    runs = []
    with progress_bar(args.senders * block * rounds, "incast") as bar:
        for r in range(rounds):                        # a fresh fabric per round
            switch = replace(ethernet.INCAST, topology=args.topology or "star", transport=transport, trim=args.trim,
                             buffer=buffer, rto_min=rto_min, multipath=args.multipath or "ecmp", ecn=ecn, pfc=pfc,
                             window=window, credit_rate=args.credit_rate,
                             planes=1 if args.planes is None else args.planes, failure=failure, seed=args.seed + r)
            runs.append(ethernet.incast(args.senders, block, switch=switch, nic=Link(bandwidth, ethernet.LATENCY),
                                        event_limit=settings.STOP_EVENTS))
            if not runs[-1].complete:
                raise incomplete(r, rounds)
            bar.to((r + 1) * args.senders * block)
    times = [r.time_s for r in runs]
    totals = {k: sum(r.summary()[k] for r in runs) for k in ("drops", "marks", "trims", "timeouts", "retransmissions",
                                                              "nacks", "pause_s")}
    import numpy as np
    row = {"senders": args.senders, "block_bytes": block, "bandwidth_Bps": bandwidth, "buffer_bytes": buffer,
           "transport": transport, "rto_min_s": rto_min, "pfc": pfc is not None, "trim": args.trim,
           "topology": args.topology or "star", "multipath": args.multipath or "ecmp", "planes": 1 if args.planes is None else args.planes,
           "failure": failure.describe() if failure else None, "ideal_s": args.senders * block / bandwidth,
           "goodput_Bps": args.senders * block * rounds / sum(times),
           "completion_s": {"p50": float(np.percentile(times, 50)), "p99": float(np.percentile(times, 99)),
                            "max": max(times)}, "rounds": rounds, **totals,
           "max_queue_bytes": max(max(r.port.q_bytes) for r in runs),
           "events": sum(r.engine.events for r in runs), "wall_s": sum(r.wall_s for r in runs)}
    c = row["completion_s"]
    text = "\n".join([
        f"# netlab congestion incast: {args.senders} senders x {fmt_bytes(block)} into one {fmt_bandwidth(bandwidth)} "
        f"port over {row['topology']} ({row['multipath']}{', %d planes' % row['planes'] if row['planes'] > 1 else ''}), "
        f"buffer {fmt_bytes(buffer)}, {transport}{', trimming' if args.trim else ''}{', PFC' if pfc else ''}, "
        f"RTOmin {fmt_time(rto_min)}, {rounds} rounds" + (f"; {row['failure']}" if failure else ""),
        f"  goodput          {row['goodput_Bps'] * 8 / 1e9:.3f} Gbit/s ({row['goodput_Bps'] / bandwidth:.0%} of the link)",
        f"  round time       p50 {fmt_time(c['p50'])}, p99 {fmt_time(c['p99'])} (lossless ideal {fmt_time(row['ideal_s'])})",
        f"  drops / trims    {row['drops']} / {row['trims']} ({row['nacks']} NACKs), marks {row['marks']}",
        f"  timeouts         {row['timeouts']} ({row['retransmissions']} packets resent)",
        f"  receiver queue   at most {fmt_bytes(row['max_queue_bytes'])}",
        f"  simulated in     {row['wall_s']:.2f} s ({row['events']} events)"])
    emit(row, args.json, text)
    return 0

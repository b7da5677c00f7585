"""``netlab congestion``: incast rounds through a switch port with a buffer, ECN and PFC (chapter 6).

    python -m netlab congestion incast --senders 16 --block 256K --bandwidth 1Gbit/s --buffer 64K \
        --transport reno --rto-min 200ms --rounds 20 --json
    python -m netlab congestion incast --senders 16 --transport ideal --pfc          # lossless
    python -m netlab congestion incast --transport dctcp --ecn-k 30KB
    python -m netlab congestion jitter --background 0.3 --rounds 40                  # step-time tails
    python -m netlab congestion jitter --real-steps --ranks 3 --steps 12 --json      # real training steps
    sudo python -m netlab congestion incast --real --senders 8 --block 64K --bandwidth 100Mbit/s \
        --buffer 32K --transport cubic --rounds 20                                  # the kernel's own TCP
    python -m netlab congestion incast --transport nscc --trim --buffer 32K        # chapter 9: trimming
    python -m netlab congestion incast --transport rccc --topology fattree:4 --multipath spray --senders 15
    python -m netlab congestion incast --transport nscc --trim --topology spineleaf:2:4:1 --senders 7 \
        --multipath reps --fail leaf1->spine0 --fail-at 1ms --reroute 10ms        # a link failure

The command in four files: this one (the flags, the model's incast and jitter), ``settings.py`` (flags
to the model's ECN and PFC, the work bound), ``real.py`` (``--real``, ``--real-steps``), ``ch9.py``
(chapter 9's fabric).

Prints goodput (bytes/s, GB = 1e9 B), the round completion time p50/p99 over rounds, drops, ECN
marks, retransmission timeouts and PFC pause time, from the packet-level fabric (``netlab.fabric``).
``jitter --real-steps`` times real training instead of model rounds: ``--ranks`` gloo ranks train
(``cosim.experiments.step_jitter``) beside another job's traffic, once per transport, and it prints each
transport's step time p50/p99/max with the fabric's drops, timeouts and PFC pause.
``incast --real`` runs the same incast through the kernel's own TCP (``linuxnet.linux.incast``: network
namespaces behind a bridge whose port toward the receiver is a tbf with the buffer as its queue; the
senders' NICs at the port's rate unless ``--nic-rate`` says otherwise), on the wall clock, with the
same keys; it needs root (one line and exit status 2 where the machine cannot), and the model-only
flags (PFC, shared buffer, window, Pmax, background, seed) are refused with it.
``--transport nscc|rccc``, ``--trim``, ``--multipath``, ``--topology``, ``--planes`` and ``--fail`` run the
incast on chapter 9's fabric (``fabric.ethernet.incast``: UET's transports, trimming, multi-path topologies,
planes, a link failure), each round a fresh fabric seeded ``--seed`` + round.
"""
from __future__ import annotations

from ...units import fmt_bandwidth, fmt_bytes, fmt_time, parse_bandwidth, parse_bytes, parse_time
from .. import emit, progress_bar
from . import ch9, settings
from .real import REAL_ONLY, real_incast, real_steps
from .settings import (EVENTS_PER_PACKET, MAX_EVENTS, MAX_SENDERS,  # noqa: F401  (imported from here)
                       check_work, collapsed, ecn, flag, incomplete, pfc as make_pfc)


def add_parser(p) -> None:
    p.add_argument("experiment", choices=["incast", "jitter"],
                   help="incast: N senders x block into one port; jitter: step-time distribution per transport")
    p.add_argument("--senders", type=int, default=16, help="synchronized senders (default 16)")
    p.add_argument("--block", default="256K", help="bytes each sender sends per round (default 256K)")
    p.add_argument("--bandwidth", default="1Gbit/s", help="every link's rate (default 1Gbit/s)")
    p.add_argument("--buffer", default=None, help="the receiver port's buffer (default 64K; --real-steps 32K)")
    p.add_argument("--transport", default=None, help="reno, cubic, dctcp, dcqcn or ideal (default reno); "
                   "jitter: a comma-separated list (default reno,dctcp,dcqcn; --real-steps ideal,reno,dctcp,dcqcn)")
    p.add_argument("--rto-min", default="200ms", help="TCP's minimum retransmission timeout (default 200ms, Linux)")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 20 for incast, 40 for jitter)")
    p.add_argument("--window", default="64K", help="TCP receive window per sender (default 64K)")
    p.add_argument("--ecn-k", default=None, help="mark above K bytes (DCTCP's threshold)")
    p.add_argument("--ecn-kmin", default=None, help="RED marking: Kmin bytes")
    p.add_argument("--ecn-kmax", default=None, help="RED marking: Kmax bytes")
    p.add_argument("--ecn-pmax", type=float, default=None, help="RED marking: Pmax in (0, 1] (default 0.01)")
    p.add_argument("--pfc", action="store_true", help="lossless: PFC pauses the senders' ports")
    p.add_argument("--xoff", default=None, help="PFC Xoff per ingress (default: buffer - headroom)")
    p.add_argument("--xon", default=None, help="PFC Xon per ingress (default: Xoff - 2 packets)")
    p.add_argument("--pfc-headroom", default=None, help="PFC headroom per ingress (default: 2 x rate x delay + 2 MTU)")
    p.add_argument("--shared-buffer", action="store_true", help="the buffer is shared by the switch's ports")
    p.add_argument("--background", type=float, default=None, help="another job's load on the port, 0..1 "
                   "(default 0 for incast, 0.3 for jitter)")
    p.add_argument("--seed", type=int, default=0, help="seed of the background traffic and ECN marking")
    p.add_argument("--real-steps", action="store_true", help="jitter: real ranks train on the fabric (step times "
                   "of cosim.experiments.step_jitter) instead of model rounds")
    p.add_argument("--ranks", type=int, default=None, help="--real-steps: training ranks (default 3)")
    p.add_argument("--steps", type=int, default=None, help="--real-steps: training steps per transport (default 12)")
    p.add_argument("--latency", default=None, help="--real-steps: every link's latency (default 20us)")
    p.add_argument("--real", action="store_true", help="incast: the kernel's own TCP in network namespaces "
                   "(root; linuxnet.linux.incast) instead of the model")
    p.add_argument("--nic-rate", default=None, help="--real: each sender's NIC: link (the port's rate, default), "
                   "veth (unshaped) or a rate such as 50Mbit/s")
    # chapter 9: Ethernet for AI (fabric/ethernet.py)
    p.add_argument("--trim", action="store_true", help="incast: switches trim a packet that does not fit to its "
                   "header (needs --transport nscc or rccc)")
    p.add_argument("--multipath", default=None, help="incast: ecmp (default), spray or reps, over --topology's paths")
    p.add_argument("--topology", default=None, help="incast: star (default), spineleaf:L:S:R or fattree:K")
    p.add_argument("--planes", type=int, default=None, help="incast: N planes of the topology at 1/N of the rate each")
    p.add_argument("--fail", default=None, help="incast: a link that fails, e.g. leaf0->spine0 (needs --topology)")
    p.add_argument("--fail-at", default=None, help="--fail: when (default 0s), within the run")
    p.add_argument("--reroute", default=None, help="--fail: routing's reroute delay (default 10ms)")
    p.add_argument("--credit-rate", type=float, default=None, help="rccc: credits as a fraction of the receiver's link")
    p.add_argument("--json", action="store_true", help="print JSON")


def _text(row: dict) -> str:
    c = row["completion_s"]
    return "\n".join([
        f"# netlab congestion incast: {row['senders']} senders x {fmt_bytes(row['block_bytes'])} into one "
        f"{fmt_bandwidth(row['bandwidth_Bps'])} port, buffer {fmt_bytes(row['buffer_bytes'])}, {row['transport']}"
        f"{', PFC' if row['pfc'] else ''}, RTOmin {fmt_time(row['rto_min_s'])}, {row['rounds']} rounds",
        f"  goodput          {row['goodput_Bps'] * 8 / 1e9:.3f} Gbit/s ({row['goodput_Bps'] / row['bandwidth_Bps']:.0%} of the link)",
        f"  round time       p50 {fmt_time(c['p50'])}, p99 {fmt_time(c['p99'])} (lossless ideal {fmt_time(row['ideal_s'])})",
        f"  drops / marks    {row['drops']} / {row['marks']}",
        f"  timeouts         {row['timeouts']} ({row['retransmissions']} packets resent)",
        f"  PFC pause        {fmt_time(row['pause_s'])} (summed over ports)",
        f"  simulated in     {row['wall_s']:.2f} s ({row['events']} events)"])


def main(args) -> int:
    from ...fabric import Congestion, Incast, incast
    from ...fabric.experiments import check_settings, jitter
    from ...fabric.transport import TRANSPORTS
    from ...validate import choice as validate_choice
    if args.real and args.real_steps:
        raise ValueError("real: --real (the kernel's TCP) and --real-steps (training on the model) are two runs")
    if args.nic_rate is not None and not args.real:
        raise ValueError("nic-rate: --nic-rate needs --real")
    if (args.real or args.real_steps) and ch9.wanted(args):
        name = next((k for k, v in ch9.CH9.items() if getattr(args, k) != v), "transport")
        raise ValueError(f"{name.replace('_', '-')}: chapter 9's options run on the packet model's incast only, "
                         f"not with --real or --real-steps")
    if args.real_steps:
        return real_steps(args)
    for name in REAL_ONLY:
        if getattr(args, name) is not None:
            raise ValueError(f"{name}: {flag(name)} needs --real-steps")
    if args.real:
        return real_incast(args)
    rounds = args.rounds if args.rounds is not None else (20 if args.experiment == "incast" else 40)
    block = parse_bytes(args.block, "block")
    bandwidth = parse_bandwidth(args.bandwidth, "bandwidth")
    buffer = parse_bytes(args.buffer if args.buffer is not None else "64K", "buffer", allow_zero=True)
    rto_min = parse_time(args.rto_min, "rto-min", allow_zero=False)
    window = parse_bytes(args.window, "window")
    background = args.background if args.background is not None else (0.0 if args.experiment == "incast" else 0.3)
    if not 0 <= background < 1:
        raise ValueError(f"background: must be a load in [0, 1), got {background!r}")
    if args.experiment == "jitter":
        transports = [t.strip() for t in args.transport.split(",")] if args.transport else ["reno", "dctcp", "dcqcn"]
    else:
        transports = [args.transport or "reno"]
    for t in transports:                           # before ecn() picks a transport's default marking
        validate_choice(t, "transport", TRANSPORTS)
    pfc = make_pfc(args, buffer, bandwidth)
    if ch9.wanted(args):
        if args.experiment != "incast":
            name = next((k for k, v in ch9.CH9.items() if getattr(args, k) != v), "transport")
            raise ValueError(f"{name.replace('_', '-')}: chapter 9's options run with the incast experiment")
        check_settings(args.senders, block, bandwidth, Congestion(transports[0], buffer=buffer, rto_min=rto_min),
                       rounds=rounds)
        check_work(args, block, rounds, transports[:1])
        return ch9.ethernet_incast(args, rounds=rounds, block=block, bandwidth=bandwidth, buffer=buffer,
                                       rto_min=rto_min, window=window, pfc=pfc)
    for t in transports:                           # senders, rounds, sizes, ...: the library's own checks
        check_settings(args.senders, block, bandwidth, Congestion(t, buffer=buffer, ecn=ecn(args, t, bandwidth),
                                                                  pfc=pfc, rto_min=rto_min), rounds=rounds)
    check_work(args, block, rounds, transports)
    total = args.senders * block * rounds * len(transports)
    if args.experiment == "jitter":
        with progress_bar(total, "jitter") as bar:
            try:
                switch = Congestion("reno", buffer=buffer, rto_min=rto_min, background=background, seed=args.seed)
                config = Incast(senders=args.senders, block=block, rounds=rounds, bandwidth=bandwidth, switch=switch)
                out = jitter(transports, config=config, pfc=pfc is not None, event_limit=settings.STOP_EVENTS,
                             progress=bar.to)
            except RuntimeError as exc:
                raise collapsed(exc, args.senders, buffer) from None
        rows = {t: {k: v for k, v in r.items() if k not in ("run", "times")} for t, r in out.items()}
        text = [f"# netlab congestion jitter: {args.senders} x {fmt_bytes(block)} per step, background load "
                f"{background:.0%}, {rounds} steps; ideal step {fmt_time(next(iter(rows.values()))['ideal'])}"]
        text += [f"  {t:6s} p50 {fmt_time(r['p50'])}  p99 {fmt_time(r['p99'])}  max {fmt_time(r['max'])}"
                 for t, r in rows.items()]
        emit(rows, args.json, "\n".join(text))
        return 0
    transport = transports[0]
    with progress_bar(total, "incast") as bar:
        try:
            switch = Congestion(transport, buffer=buffer, ecn=ecn(args, transport, bandwidth), pfc=pfc,
                                rto_min=rto_min, window=window, seed=args.seed, background=background)
            config = Incast(senders=args.senders, block=block, rounds=rounds, bandwidth=bandwidth, switch=switch,
                            shared_buffer=args.shared_buffer)
            run = incast(config, event_limit=settings.STOP_EVENTS, progress=bar.to)
        except RuntimeError as exc:
            raise collapsed(exc, args.senders, buffer) from None
    if not run.complete:
        raise incomplete(len(run.step_times), rounds)
    row = {"senders": args.senders, "block_bytes": block, "bandwidth_Bps": bandwidth, "buffer_bytes": buffer,
           "transport": transport, "rto_min_s": rto_min, "pfc": pfc is not None,
           "ideal_s": args.senders * block / bandwidth, **run.summary()}
    emit(row, args.json, _text(row))
    return 0

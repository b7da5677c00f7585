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

from .. import validate as checks
from ..units import fmt_bandwidth, fmt_bytes, fmt_time, parse_bandwidth, parse_bytes, parse_time
from . import emit, progress_bar

# What one command may ask of the packet model, refused up front with the bound named. A packet costs
# the model about 5 events with a window-based transport (send, queue, transmit, deliver, ACK) and
# about 100 with a rate-based one (its pacing and rate timers), 2-7 us an event on one idle core
# (benchmarks/congestion_speed.py), more with many senders. A setting estimated above MAX_EVENTS
# (~1 min) is refused; one that needs more than STOP_EVENTS after all (timeouts resending whole
# blocks) stops there, ~5 min in, and says so.
MAX_SENDERS = 1024                  # hosts into the one port (the model's cost per event grows with them)
MAX_EVENTS = 20_000_000             # estimated events: senders x ceil(block / 1500 B) x rounds x events a packet
STOP_EVENTS = 100_000_000           # events one run may take
EVENTS_PER_PACKET = {False: 5, True: 100}     # window-based, rate-based


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


def _ecn(args, transport, bandwidth):
    from ..fabric import ECN
    from ..fabric.experiments import default_ecn
    if args.ecn_k is not None:
        if args.ecn_kmin is not None or args.ecn_kmax is not None:
            raise ValueError("ecn-k: give either --ecn-k or --ecn-kmin/--ecn-kmax, not both")
        return ECN.dctcp(parse_bytes(args.ecn_k, "ecn-k", allow_zero=True))
    if args.ecn_kmin is not None or args.ecn_kmax is not None or args.ecn_pmax is not None:
        kmin = parse_bytes(args.ecn_kmin or 0, "ecn-kmin", allow_zero=True)
        kmax = parse_bytes(args.ecn_kmax, "ecn-kmax", allow_zero=True) if args.ecn_kmax is not None else kmin
        return ECN(kmin, kmax, args.ecn_pmax if args.ecn_pmax is not None else 0.01)
    return default_ecn(transport, bandwidth)


def _pfc(args, buffer, bandwidth):
    from ..fabric import PFC
    from ..fabric.experiments import headroom
    given = [args.xoff, args.xon, args.pfc_headroom]
    if not args.pfc:
        if any(v is not None for v in given):
            raise ValueError("pfc: --xoff, --xon and --pfc-headroom need --pfc")
        return None
    room = parse_bytes(args.pfc_headroom, "pfc-headroom", allow_zero=True) if args.pfc_headroom is not None else None
    if args.xoff is not None:
        xoff = parse_bytes(args.xoff, "xoff")
    else:
        xoff = buffer - (room if room is not None else headroom(bandwidth))
        if xoff <= 0:
            raise ValueError(f"pfc: no headroom: a {buffer}-byte buffer cannot hold the "
                             f"{headroom(bandwidth):.0f} bytes of PFC headroom")
    xon = parse_bytes(args.xon, "xon", allow_zero=True) if args.xon is not None else None
    return PFC(xoff, xon, room)


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


REAL_ONLY = ("ranks", "steps", "latency")
MODEL_ONLY = {"senders": 16, "block": "256K", "rounds": None, "window": "64K", "ecn_k": None, "ecn_kmin": None,
              "ecn_kmax": None, "ecn_pmax": None, "pfc": False, "xoff": None, "xon": None, "pfc_headroom": None,
              "shared_buffer": False}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


# the model's flags that the real Linux path has no counterpart for, with their defaults
MODEL_ONLY_REAL = {"window": "64K", "ecn_pmax": None, "pfc": False, "xoff": None, "xon": None, "pfc_headroom": None,
                   "shared_buffer": False, "background": None, "seed": 0}


def real_incast(args) -> int:
    """``incast --real``: the kernel's own TCP through a shaped Linux bridge (``linuxnet.linux.incast``).
    Ctrl-C on the command line: ``runtime/interrupt.py`` deletes the testbed's namespaces."""
    from ..linuxnet import linux
    if args.experiment != "incast":
        raise ValueError("real: only the incast experiment runs on the real Linux stack")
    for name, default in MODEL_ONLY_REAL.items():
        if getattr(args, name) != default:
            why = " (a Linux bridge drops, it never pauses)" if name in ("pfc", "xoff", "xon", "pfc_headroom") else ""
            raise ValueError(f"real: {_flag(name)} applies to the model only{why}")
    # RED thresholds as the model reads them (the real port takes only kmin == kmax); --ecn-k goes as is
    red = args.ecn_kmin is not None or args.ecn_kmax is not None
    try:
        row = linux.incast(senders=args.senders, block=args.block, bandwidth=args.bandwidth,
                           buffer=args.buffer if args.buffer is not None else "64K",
                           transport=args.transport or "reno", rto_min=args.rto_min,
                           rounds=args.rounds if args.rounds is not None else 20,
                           ecn=_ecn(args, None, None) if red else False, ecn_k=args.ecn_k,
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
    from ..cosim import experiments as real
    from ..validate import choice as validate_choice
    if args.experiment != "jitter":
        raise ValueError("real-steps: only the jitter experiment runs real training steps")
    for name, default in MODEL_ONLY.items():
        if getattr(args, name) != default:
            raise ValueError(f"real-steps: {_flag(name)} does not apply: the ranks' gradients are the traffic")
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


CH9 = {"trim": False, "multipath": None, "topology": None, "planes": None, "fail": None, "fail_at": None,
       "reroute": None, "credit_rate": None}


def _ch9(args) -> bool:
    """Does this command ask for chapter 9's fabric (a UET transport or any of its flags)?"""
    return (args.transport or "").strip() in ("nscc", "rccc") or any(getattr(args, k) != v for k, v in CH9.items())


def ethernet_incast(args, rounds, block, bandwidth, buffer, rto_min, window, pfc) -> int:
    """``incast`` on chapter 9's fabric: ``fabric.ethernet.incast``, one round per --rounds."""
    from dataclasses import replace

    from ..fabric import ethernet
    from ..fabric.failure import Failure
    from ..net.network import Link
    transport = args.transport or "reno"
    if args.background not in (None, 0.0) or args.shared_buffer:
        name = "background" if args.background not in (None, 0.0) else "shared-buffer"
        raise ValueError(f"{name}: {_flag(name)} runs on chapter 6's fabric only, not with chapter 9's options")
    for name in ("fail_at", "reroute"):
        if getattr(args, name) is not None and args.fail is None:
            raise ValueError(f"{name.replace('_', '-')}: {_flag(name)} needs --fail")
    failure = None
    if args.fail is not None:
        if args.topology in (None, "star"):
            raise ValueError("fail: give a --topology with several paths (the one-switch star has none to fail over to)")
        failure = Failure(args.fail, parse_time(args.fail_at or 0, "fail-at"),
                          parse_time(args.reroute, "reroute") if args.reroute is not None else 10e-3)
    ecn = _ecn(args, transport, bandwidth) if any(getattr(args, k) is not None for k in
                                                  ("ecn_k", "ecn_kmin", "ecn_kmax", "ecn_pmax")) else "default"
    runs = []
    with progress_bar(args.senders * block * rounds, "incast") as bar:
        for r in range(rounds):                        # a fresh fabric per round
            switch = replace(ethernet.INCAST, topology=args.topology or "star", transport=transport, trim=args.trim,
                             buffer=buffer, rto_min=rto_min, multipath=args.multipath or "ecmp", ecn=ecn, pfc=pfc,
                             window=window, credit_rate=args.credit_rate,
                             planes=1 if args.planes is None else args.planes, failure=failure, seed=args.seed + r)
            runs.append(ethernet.incast(args.senders, block, switch=switch, nic=Link(bandwidth, ethernet.LATENCY),
                                        event_limit=STOP_EVENTS))
            if not runs[-1].complete:
                raise _incomplete(r, rounds)
            bar.to((r + 1) * args.senders * block)
    times = [r.completion_s for r in runs]
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
           "events": sum(r.fabric.events for r in runs), "wall_s": sum(r.wall_s for r in runs)}
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


def check_work(args, block: int, rounds: int, transports) -> float:
    """Refuse, naming the flag, a model run beyond MAX_SENDERS or MAX_EVENTS; returns the estimate."""
    from ..fabric.switch import MTU
    from ..fabric.transport import TRANSPORTS
    checks.whole(args.senders, "senders", 1, MAX_SENDERS)
    checks.whole(rounds, "rounds", 1)
    per_block = -(-block // MTU)
    packets = args.senders * per_block * rounds
    events = sum(packets * EVENTS_PER_PACKET[bool(getattr(TRANSPORTS.get(t), "rate_based", False))]
                 for t in transports)
    if events > MAX_EVENTS:
        # the flag furthest above its default is the one to lower
        excess = {"block": block / (256 * 1024), "rounds": rounds / (20 if args.experiment == "incast" else 40),
                  "senders": args.senders / 16}
        flag = max(excess, key=excess.get)
        what = (f"{args.senders} senders x {per_block:,} packets of {MTU} B x {rounds:,} rounds"
                + (f", {len(transports)} transports" if len(transports) > 1 else "") + ": simulated events")
        checks.too_big(flag, events, MAX_EVENTS, what)
    return events


def _incomplete(done: int, rounds: int) -> ValueError:
    return ValueError(f"rounds: only {done} of {rounds} rounds finished within {STOP_EVENTS:,} events, the most one "
                      "command may simulate (timeouts resend whole blocks); ask for fewer rounds or senders, "
                      "a smaller block or a larger buffer")


def _collapsed(exc: RuntimeError, senders: int, buffer: int) -> ValueError:
    return ValueError(f"senders: {senders} senders into a {fmt_bytes(buffer)} buffer did not finish "
                      f"({exc}; timeouts back off faster than the queue drains); fewer senders or a larger buffer")


def main(args) -> int:
    from ..fabric import Congestion, Incast, incast
    from ..fabric.experiments import check_settings, jitter
    from ..fabric.transport import TRANSPORTS
    from ..validate import choice as validate_choice
    if args.real and args.real_steps:
        raise ValueError("real: --real (the kernel's TCP) and --real-steps (training on the model) are two runs")
    if args.nic_rate is not None and not args.real:
        raise ValueError("nic-rate: --nic-rate needs --real")
    if (args.real or args.real_steps) and _ch9(args):
        name = next((k for k, v in CH9.items() if getattr(args, k) != v), "transport")
        raise ValueError(f"{name.replace('_', '-')}: chapter 9's options run on the packet model's incast only, "
                         f"not with --real or --real-steps")
    if args.real_steps:
        return real_steps(args)
    for name in REAL_ONLY:
        if getattr(args, name) is not None:
            raise ValueError(f"{name}: {_flag(name)} needs --real-steps")
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
    for t in transports:                           # before _ecn picks a transport's default marking
        validate_choice(t, "transport", TRANSPORTS)
    pfc = _pfc(args, buffer, bandwidth)
    if _ch9(args):
        if args.experiment != "incast":
            name = next((k for k, v in CH9.items() if getattr(args, k) != v), "transport")
            raise ValueError(f"{name.replace('_', '-')}: chapter 9's options run with the incast experiment")
        check_settings(args.senders, block, bandwidth, Congestion(transports[0], buffer=buffer, rto_min=rto_min),
                       rounds=rounds)
        check_work(args, block, rounds, transports[:1])
        return ethernet_incast(args, rounds, block, bandwidth, buffer, rto_min, window, pfc)
    for t in transports:                           # senders, rounds, sizes, ...: the library's own checks
        check_settings(args.senders, block, bandwidth, Congestion(t, buffer=buffer, ecn=_ecn(args, t, bandwidth),
                                                                  pfc=pfc, rto_min=rto_min), rounds=rounds)
    check_work(args, block, rounds, transports)
    total = args.senders * block * rounds * len(transports)
    if args.experiment == "jitter":
        with progress_bar(total, "jitter") as bar:
            try:
                switch = Congestion("reno", buffer=buffer, rto_min=rto_min, background=background, seed=args.seed)
                config = Incast(senders=args.senders, block=block, rounds=rounds, bandwidth=bandwidth, switch=switch)
                out = jitter(transports, config=config, pfc=pfc is not None, event_limit=STOP_EVENTS,
                             progress=bar.to)
            except RuntimeError as exc:
                raise _collapsed(exc, args.senders, buffer) from None
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
            switch = Congestion(transport, buffer=buffer, ecn=_ecn(args, transport, bandwidth), pfc=pfc,
                                rto_min=rto_min, window=window, seed=args.seed, background=background)
            config = Incast(senders=args.senders, block=block, rounds=rounds, bandwidth=bandwidth, switch=switch,
                            shared_buffer=args.shared_buffer)
            run = incast(config, event_limit=STOP_EVENTS, progress=bar.to)
        except RuntimeError as exc:
            raise _collapsed(exc, args.senders, buffer) from None
    if not run.complete:
        raise _incomplete(len(run.rounds), rounds)
    row = {"senders": args.senders, "block_bytes": block, "bandwidth_Bps": bandwidth, "buffer_bytes": buffer,
           "transport": transport, "rto_min_s": rto_min, "pfc": pfc is not None,
           "ideal_s": args.senders * block / bandwidth, **run.summary()}
    emit(row, args.json, _text(row))
    return 0

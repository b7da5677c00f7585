"""How ``netlab congestion``'s flags become the packet model's settings, and what one command may ask of it:
the ECN marking and PFC thresholds from their flags, the work bound (MAX_SENDERS, MAX_EVENTS) refused up
front with the flag named, and the errors for a run that did not finish.
"""
from __future__ import annotations

from ... import validate as checks
from ...units import fmt_bytes, parse_bytes

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


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def ecn(args, transport, bandwidth):
    from ...fabric import ECN
    from ...fabric.experiments import default_ecn
    if args.ecn_k is not None:
        if args.ecn_kmin is not None or args.ecn_kmax is not None:
            raise ValueError("ecn-k: give either --ecn-k or --ecn-kmin/--ecn-kmax, not both")
        return ECN.dctcp(parse_bytes(args.ecn_k, "ecn-k", allow_zero=True))
    if args.ecn_kmin is not None or args.ecn_kmax is not None or args.ecn_pmax is not None:
        kmin = parse_bytes(args.ecn_kmin or 0, "ecn-kmin", allow_zero=True)
        kmax = parse_bytes(args.ecn_kmax, "ecn-kmax", allow_zero=True) if args.ecn_kmax is not None else kmin
        return ECN(kmin, kmax, args.ecn_pmax if args.ecn_pmax is not None else 0.01)
    return default_ecn(transport, bandwidth)


def pfc(args, buffer, bandwidth):
    from ...fabric import PFC
    from ...fabric.experiments import headroom
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


def check_work(args, block: int, rounds: int, transports) -> float:
    """Refuse, naming the flag, a model run beyond MAX_SENDERS or MAX_EVENTS; returns the estimate."""
    from ...fabric.switch import MTU
    from ...fabric.transport import TRANSPORTS
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


def incomplete(done: int, rounds: int) -> ValueError:
    return ValueError(f"rounds: only {done} of {rounds} rounds finished within {STOP_EVENTS:,} events, the most one "
                      "command may simulate (timeouts resend whole blocks); ask for fewer rounds or senders, "
                      "a smaller block or a larger buffer")


def collapsed(exc: RuntimeError, senders: int, buffer: int) -> ValueError:
    return ValueError(f"senders: {senders} senders into a {fmt_bytes(buffer)} buffer did not finish "
                      f"({exc}; timeouts back off faster than the queue drains); fewer senders or a larger buffer")

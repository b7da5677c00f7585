"""Chapter 6's panel: senders, block size, bandwidth, buffer, transport, ECN threshold, PFC and RTOmin;
each change runs an incast round in the packet fabric and draws the flows' rates and the queue
(``netlab.figures.congestion.incast_run``). A round that needs more than ``PANEL_EVENTS`` events is
shown as far as it got, and says so, so every answer comes within about a second.

Built on :class:`netlab.ui.panel.Panel` like every chapter's panel: a new ``Figure`` per answer (no
pyplot state: the callback may run on another kernel thread), shown by replacing the output's
contents. ``last`` keeps the latest run for tests.
"""
from __future__ import annotations

import ipywidgets as widgets

from ..fabric import ECN, PFC, Congestion, Incast, incast
from ..fabric.experiments import default_ecn, headroom
from ..figures.congestion import incast_run
from ..units import fmt_time, parse_bandwidth, parse_bytes, parse_time
from .panel import Panel, choice, columns, dropdown, toggle

TRANSPORTS = ["reno", "cubic", "dctcp", "dcqcn", "ideal"]
SETTING = ("senders", "block", "bandwidth", "buffer", "transport", "ecn_k", "pfc", "rto_min")   # the controls
MARKED = ("dctcp", "dcqcn")                   # the transports that react to ECN marks


# Events the panel simulates per answer at most: 2-3.3 us each on one core (DCQCN's are the dearest)
# and about 0.2-0.3 s for the figure, an answer within 1 s (benchmarks/congestion_speed.py). Every
# Reno, CUBIC and DCTCP setting finishes well within it (32 x 1 MB into 16 KB: 163,000 events); the
# settings that need more (lossy RoCE or the ideal sender into a small buffer, where each timeout
# resends the rest of a block, go-back-N, millions of packets; or RoCE pausing 32 x 1 MB) show the
# round so far and say so, and ``python -m netlab congestion incast`` runs them to the end.
PANEL_EVENTS = 200_000


def run_setting(setting, *, rounds: int = 1, event_limit: int | None = None):
    """One panel setting as an incast run: `setting` maps each of the panel's controls (senders, block,
    bandwidth, buffer, transport, ecn_k, pfc, rto_min) to its value (sizes as text, e.g. '256K',
    '1Gbit/s', '200ms'); ``event_limit``: stop there, round finished or not (the result's ``complete``)."""
    senders, block, bandwidth, buffer, transport, ecn_k, pfc, rto_min = (setting[k] for k in SETTING)
    bw, buf = parse_bandwidth(bandwidth, "bandwidth"), parse_bytes(buffer, "buffer")
    ecn = ECN.dctcp(parse_bytes(ecn_k, "ecn-k")) if ecn_k != "default" else default_ecn(transport, bw)
    if pfc and buf <= headroom(bw):
        raise ValueError(f"pfc: no headroom: a {buf}-byte buffer cannot hold {headroom(bw):.0f} bytes of headroom")
    control = PFC(buf - headroom(bw)) if pfc else None
    switch = Congestion(transport, buffer=buf, ecn=ecn, pfc=control, rto_min=parse_time(rto_min, "rto-min", False))
    return incast(Incast(senders=senders, block=parse_bytes(block, "block"), rounds=rounds, bandwidth=bw, switch=switch),
                  event_limit=event_limit)


def panel_run(values):
    """What the panel runs for a setting: the incast round, at most ``PANEL_EVENTS`` events of it."""
    return run_setting(values, event_limit=PANEL_EVENTS)


def describe(run) -> str:
    s = run.summary()
    link = run.port.rate
    if not run.complete:
        done = sum(f.done_at is not None for f in run.flows)
        return (f"stopped after {s['events']:,} events, {fmt_time(run.engine.now)} into the round "
                f"(lossless: {fmt_time(run.payload / link)}): {done} of {len(run.flows)} flows finished, "
                f"{run.delivered() / run.payload:.0%} of the bytes delivered; drops {s['drops']}, marks {s['marks']}, "
                f"timeouts {s['timeouts']}, PFC pause {fmt_time(s['pause_s'])}; simulated in {s['wall_s']:.2f} s. "
                f"The panel stops at {PANEL_EVENTS:,} events; python -m netlab congestion incast --rounds 1 "
                f"runs this setting to the end")
    return (f"goodput {s['goodput_Bps'] * 8 / 1e9:.3f} Gbit/s ({s['goodput_Bps'] / link:.0%} of the link); "
            f"round {fmt_time(s['completion_s']['p50'])} (lossless: {fmt_time(run.payload / link)}); "
            f"drops {s['drops']}, marks {s['marks']}, timeouts {s['timeouts']}, PFC pause {fmt_time(s['pause_s'])}; "
            f"simulated in {s['wall_s']:.2f} s")


class CongestionPanel(Panel):
    """One incast round per change, on the chapter's :class:`Panel` (figure replaced, never appended;
    Kernel > Interrupt stops a long simulation); the ECN threshold is greyed out for transports that
    ignore marks."""

    min_height = "470px"

    def __init__(self, *, senders=16, block="256K", bandwidth="1Gbit/s", buffer="64K", transport="reno",
                 ecn_k="default", pfc=False, rto_min="200ms"):
        style = {"description_width": "110px"}
        controls = {
            "senders": choice([1, 2, 4, 8, 16, 32], senders, "senders"),
            "block": choice(["16K", "64K", "256K", "1M"], block, "block"),
            "bandwidth": toggle(["1Gbit/s", "10Gbit/s"], bandwidth, "bandwidth", style=style),
            "buffer": choice(["16K", "32K", "64K", "128K", "256K", "1M", "4M"], buffer, "buffer"),
            "transport": toggle(TRANSPORTS, transport, "transport", style=style),
            "ecn_k": dropdown(["default", "5K", "15K", "30K", "60K", "100K"], ecn_k, "ECN K"),
            "pfc": widgets.Checkbox(value=pfc, description="PFC (lossless)", style=style),
            "rto_min": toggle(["200ms", "10ms", "1ms", "200us"], rto_min, "RTOmin", style=style),
        }
        left, right = ("senders", "block", "buffer", "ecn_k"), ("bandwidth", "transport", "rto_min", "pfc")
        super().__init__(controls, layout=columns(controls, left, right,     # wide enough to show the readouts
                                                  left_layout={"width": "480px", "flex": "0 0 480px"}))

    def greyed(self, values):
        return {"ecn_k": values["transport"] not in MARKED}       # Reno, CUBIC, ideal ignore ECN marks

    def render(self, values):
        self.last = run = panel_run(values)          # a ValueError is shown as "cannot run this setting: ..."
        stopped = "" if run.complete else f" (stopped at {fmt_time(run.engine.now)})"
        title = f"{len(run.flows)} flows, {run.flows[0].sender.__class__.__name__}{stopped}"
        return describe(run), incast_run(run, title=title)

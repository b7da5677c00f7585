"""Chapter 9's panel: topology, traffic, multipath scheme, transport, trimming, buffer, senders, RTOmin and
a link failure; each change runs the packet fabric (``fabric.ethernet``) and draws the load on every
switch-to-switch link (on the one-switch star, every host link), the busiest port's queue and the rate
delivered (``figures.ethernet.fabric_run``).

Built on :class:`netlab.ui.panel.Panel`; a setting the fabric refuses (trimming for a TCP, say) shows its
one-line reason. A run that needs more than ``PANEL_EVENTS`` events is shown as far as it got, so every
answer comes within about a second (``benchmarks/ch9_speed.py`` measures it).
"""
from __future__ import annotations

from dataclasses import replace

import ipywidgets as widgets

from ..fabric import ethernet
from ..fabric.failure import Failure
from ..figures.ethernet import fabric_run
from ..units import fmt_bytes, fmt_time, parse_bytes, parse_time
from .panel import Panel, choice, columns, dropdown, start_values, toggle

TOPOLOGIES = {"one switch": "star", "spine-leaf (4 spines)": "spineleaf:2:4:1", "fat-tree k=4": "fattree:4"}
FAILED_LINK = {"spineleaf:2:4:1": "leaf0->spine0", "fattree:4": "edge0.0->agg0.0"}
TRANSPORTS = ["reno", "dctcp", "nscc", "rccc", "ideal"]
PANEL_EVENTS = 200_000
BLOCK = 256 * 1024


START = {"topology": "fat-tree k=4", "traffic": "ring step", "multipath": "ecmp", "transport": "nscc", "trim": False,
         "buffer": "64K", "senders": 15, "rto_min": "200ms", "failure": "none"}      # the controls' first values


def run_setting(setting=None, *, event_limit: int | None = None):
    """One panel setting as a fabric run: `setting` maps some of the panel's controls (``START``'s names)
    to values (sizes as text), the rest as ``START``; ``failure='a link'`` takes a switch link down at a
    fifth of the run's closed-form time, rerouted 10 ms later."""
    s = check_setting(setting or {})
    topology, traffic, multipath, transport, trim = s["topology"], s["traffic"], s["multipath"], s["transport"], s["trim"]
    buffer, senders, rto_min, failure = s["buffer"], s["senders"], s["rto_min"], s["failure"]
    spec = TOPOLOGIES.get(topology, topology)
    buf = parse_bytes(buffer, "buffer")
    rto = parse_time(rto_min, "rto-min", False)
    hosts = senders + 1
    ideal = senders * BLOCK / ethernet.GBIT if traffic == "incast" else BLOCK / ethernet.GBIT
    fail = None
    if failure != "none":
        if spec == "star":
            raise ValueError("failure: the one-switch star has no link between switches to fail")
        fail = Failure(FAILED_LINK[spec], at=0.2 * ideal, reroute=10e-3)
    common = dict(topology=spec, transport=transport, multipath=multipath, trim=trim, buffer=buf, rto_min=rto,
                  failure=fail, window=64 * 1024)
    if traffic == "incast":
        return ethernet.incast(senders, BLOCK, switch=replace(ethernet.INCAST, **common), event_limit=event_limit)
    topo = ethernet.topology(spec, hosts)
    return ethernet.ring_step(min(hosts, topo.size), BLOCK, switch=replace(ethernet.RING, placement="shuffled", **common),
                              event_limit=event_limit)


def check_setting(setting) -> dict:
    """The setting over ``START``, or one clear error naming a key that is not a control."""
    return dict(start_values(setting, START, "chapter 9's panel"))


def panel_run(values):
    """What the panel runs: the setting, without what its greyed-out controls say (they mean nothing there),
    at most ``PANEL_EVENTS`` events of it."""
    values = dict(values)
    if values["transport"] not in ("nscc", "rccc"):
        values["trim"] = False
    if TOPOLOGIES.get(values["topology"], values["topology"]) == "star":
        values["failure"] = "none"
    return run_setting(values, event_limit=PANEL_EVENTS)


def describe(run) -> str:
    s = run.summary()
    loads = sorted(run.path_bytes().values(), reverse=True)
    per_flow = run.payload / max(len(run.flows), 1)
    load = (f"; busiest switch link {loads[0] / per_flow:.2f} flows' bytes (mean {sum(loads) / len(loads) / per_flow:.2f})"
            if loads else "")
    counts = (f"drops {s['drops']}, trims {s['trims']}, timeouts {s['timeouts']}, resent {s['retransmissions']} "
              f"({s['duplicates']} the receiver already had), max queue {fmt_bytes(max(run.port.q_bytes))}")
    if not run.complete:
        done = sum(f.done_at is not None for f in run.flows)
        return (f"stopped after {s['events']:,} events at {fmt_time(run.engine.now)} ({done} of {len(run.flows)} "
                f"flows done; closed form {fmt_time(run.ideal_s)}): {counts}{load}. The panel stops at "
                f"{PANEL_EVENTS:,} events; python -m netlab congestion incast runs an incast to the end")
    return (f"done in {fmt_time(run.time_s)} (closed form {fmt_time(run.ideal_s)}: "
            f"{run.ideal_s / run.time_s:.0%} of it); {counts}{load}; simulated in {s['wall_s']:.2f} s")


class EthernetPanel(Panel):
    """One fabric run per change (figure replaced, never appended); trimming is greyed out for transports
    that cannot answer a trimmed header, the multipath scheme and the failure for the one-switch star."""

    min_height = "470px"

    def __init__(self, **start):
        """``start``: the controls' first values by name (``START``'s, which the rest keep)."""
        v = check_setting(start)
        topology, traffic, multipath, transport, trim = v["topology"], v["traffic"], v["multipath"], v["transport"], v["trim"]
        buffer, senders, rto_min, failure = v["buffer"], v["senders"], v["rto_min"], v["failure"]
        style = {"description_width": "100px"}
        controls = {
            "topology": dropdown(list(TOPOLOGIES), topology, "topology"),
            "traffic": toggle(["ring step", "incast"], traffic, "traffic", style=style),
            "multipath": toggle(["ecmp", "spray", "reps"], multipath, "multipath", style=style),
            "transport": toggle(TRANSPORTS, transport, "transport", style=style),
            "trim": widgets.Checkbox(value=trim, description="trimming", style=style),
            "buffer": choice(["16K", "32K", "64K", "256K", "1M"], buffer, "buffer"),
            "senders": choice([1, 3, 7, 15], senders, "senders"),
            "rto_min": toggle(["200ms", "1ms"], rto_min, "RTOmin", style=style),
            "failure": toggle(["none", "a link"], failure, "failure", style=style),
        }
        left, right = ("topology", "buffer", "senders", "trim"), ("traffic", "multipath", "transport", "rto_min",
                                                                  "failure")
        super().__init__(controls, layout=columns(controls, left, right,
                                                  left_layout={"width": "480px", "flex": "0 0 480px"}))

    def greyed(self, values):
        star = TOPOLOGIES.get(values["topology"]) == "star"
        return {"trim": values["transport"] not in ("nscc", "rccc"), "multipath": star, "failure": star}

    def render(self, values):
        self.last = run = panel_run(values)
        stopped = "" if run.complete else f" (stopped at {fmt_time(run.engine.now)})"
        title = f"{len(run.flows)} flows, {run.flows[0].sender.__class__.__name__}{stopped}"
        return describe(run), fabric_run(run, title=title)

"""How fast the chapter-6 fabric answers: a 16-sender incast, DCTCP's sawtooth, DCQCN's fluid model,
the chapter's panel after a slider change, and the real-step jitter run.

    .venv/bin/python benchmarks/congestion_speed.py [--no-real]

Prints wall time, events and microseconds per event; the targets are a 16-sender x 256 KB incast
round in under 1 s of wall time, and the chapter's panel answering a slider change (run, figure,
PNG: ``Panel.set`` on this thread) in under 1 s. Then the chapter's real-step jitter cell
(``fabric.steps.step_jitter``, 3 ranks x 12 steps x 4 transports), per transport (--no-real skips it).
Prints the load average beside the figures: on a busy machine read the ratios, not the times.
"""
import os
import statistics
import sys
import time

from netlab.fabric import ECN, PFC, incast, long_flows
from netlab.fabric.fluid import dcqcn_fluid
from netlab.fabric.scenarios import headroom


def timed(label, fn):
    t0 = time.perf_counter()
    run = fn()
    wall = time.perf_counter() - t0
    events = getattr(getattr(run, "fabric", None), "events", 0)
    per = f", {wall / events * 1e6:.1f} us/event" if events else ""
    print(f"{label:58s} {wall:6.3f} s  {events:7d} events{per}")


def panel_changes():
    """Chapter 6's panel: each slider change from the chapter's starting setting, timed end to end."""
    from netlab.ui.ch6 import CongestionPanel
    panel = CongestionPanel(senders=16, block="256K", buffer="64K", transport="reno")
    panel.refresh()
    changes = [("senders", 8), ("senders", 16), ("buffer", "32K"), ("buffer", "64K"), ("transport", "dctcp"),
               ("transport", "dcqcn"), ("transport", "reno"), ("rto_min", "200us"), ("rto_min", "200ms"),
               ("pfc", True), ("pfc", False), ("block", "1M"), ("block", "256K")]
    walls = []
    for name, value in changes:
        before = panel.last
        t0 = time.perf_counter()
        panel.set(**{name: value})
        walls.append(time.perf_counter() - t0)
        assert panel.last is not before, "the panel did not run"
        print(f"  panel: {name} -> {value!s:6s} {walls[-1]:6.3f} s")
    print(f"{'chapter 6 panel, slider change (run + figure + PNG)':58s} median {statistics.median(walls):.3f} s, "
          f"max {max(walls):.3f} s over {len(walls)} changes")


def real_steps():
    import netlab
    from netlab.fabric.steps import step_jitter
    t0 = time.perf_counter()
    netlab.run(lambda comm: comm.rank, ranks=3)                 # the rank pool starts once per kernel
    print(f"{'rank pool start (3 ranks), once per kernel':58s} {time.perf_counter() - t0:6.3f} s")
    for name in ("ideal", "reno", "dctcp", "dcqcn"):
        t0 = time.perf_counter()
        r = step_jitter(transports=(name,))[name]
        print(f"{'real steps 3 ranks x 12, ' + name:58s} {time.perf_counter() - t0:6.3f} s  "
              f"{r['fabric']['events']:7d} events, {r['fabric']['flows']} messages")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    B = 1e9 / 8
    timed("incast 16 x 256K, 1 Gbit/s, 64K buffer, reno, RTOmin 200ms", lambda: incast(16, 256 * 1024, B))
    timed("incast 16 x 256K, reno, RTOmin 200us", lambda: incast(16, 256 * 1024, B, rto_min=200e-6))
    timed("incast 16 x 256K, ideal + PFC", lambda: incast(16, 256 * 1024, B, transport="ideal",
                                                          pfc=PFC(64 * 1024 - headroom(B))))
    timed("incast 16 x 256K, dctcp K=30KB", lambda: incast(16, 256 * 1024, B, transport="dctcp", ecn=ECN.dctcp(30e3)))
    timed("DCTCP 2 long flows, 10 Gbit/s, 10 ms", lambda: long_flows(2, 10 * B, transport="dctcp",
                                                                     ecn=ECN.dctcp(65 * 1500), duration=0.01))
    timed("DCQCN fluid, 10 flows, 85 us delay, 60 ms (1 us steps)", lambda: dcqcn_fluid(10, 85e-6, 0.06, dt=1e-6))
    print(f"load average {os.getloadavg()[0]:.1f}")
    panel_changes()
    if "--no-real" not in sys.argv:
        real_steps()

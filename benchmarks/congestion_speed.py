"""How fast the chapter-6 fabric answers: a 16-sender incast, DCTCP's sawtooth, DCQCN's fluid model.

    .venv/bin/python benchmarks/congestion_speed.py

Prints wall time, events and microseconds per event; the target is a 16-sender x 256 KB incast
round in under 1 s of wall time (a slider answer in the chapter's panel).
"""
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

"""How fast the chapter-6 fabric answers: a 16-sender incast, DCTCP's sawtooth, DCQCN's fluid model,
the chapter's panel after a slider change and over its settings, and the real-step jitter run.

    .venv/bin/python benchmarks/congestion_speed.py [--no-real] [--no-sweep]

Prints wall time, events and microseconds per event; the targets are a 16-sender x 256 KB incast
round in under 1 s of wall time, and the chapter's panel answering every slider change (run, figure,
PNG: ``Panel.set`` on this thread) in under 1 s. The sweep sets the panel to each of its settings
below (every value of every control from the chapter's starting point; every transport x PFC x
RTOmin; the largest rounds, 32 x 1 MB, into the smallest and largest buffer at both rates) and
prints the median, the maximum and the slowest settings with their events: events do not depend on
the machine's load, wall times do; the process's CPU time is the nearer guide on a busy machine.
Then the chapter's real-step jitter cell (``cosim.experiments.step_jitter``, 3 ranks x 12 steps x 4
transports), per transport (--no-real skips it).
Prints the load average beside the figures: on a busy machine read the ratios, not the times.
"""
import os
import statistics
import sys
import time

from _harness import timed as harness_timed
from netlab.fabric import ECN, PFC, Congestion, Incast, incast, long_flows
from netlab.fabric.fluid import dcqcn_fluid
from netlab.fabric.rdma import DCQCN_RED
from netlab.fabric.experiments import headroom


def timed(label, fn):
    wall, run = harness_timed(fn)
    events = getattr(getattr(run, "engine", None), "events", 0)
    slept = getattr(getattr(run, "engine", None), "ghosts", 0)
    per = f", {wall / events * 1e6:.1f} us/event" if events else ""
    print(f"{label:58s} {wall:6.3f} s  {events:7d} events{per}" + (f" ({slept} timer firings slept)" if slept else ""))


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


def settings():
    """The panel's settings the sweep visits, as full dicts of control values."""
    from netlab.ui.ch6 import TRANSPORTS
    start = dict(senders=16, block="256K", bandwidth="1Gbit/s", buffer="64K", transport="reno", ecn_k="default",
                 pfc=False, rto_min="200ms")
    values = {"senders": [1, 2, 4, 8, 16, 32], "block": ["16K", "64K", "256K", "1M"],
              "bandwidth": ["1Gbit/s", "10Gbit/s"], "buffer": ["16K", "32K", "64K", "128K", "256K", "1M", "4M"],
              "transport": TRANSPORTS, "ecn_k": ["default", "5K", "15K", "30K", "60K", "100K"],
              "pfc": [False, True], "rto_min": ["200ms", "10ms", "1ms", "200us"]}
    out = [{**start, name: v} for name, vs in values.items() for v in vs]
    out += [{**start, "transport": t, "pfc": pfc, "rto_min": rto}
            for t in TRANSPORTS for pfc in (False, True) for rto in values["rto_min"]]
    out += [{**start, "senders": 32, "block": "1M", "transport": t, "pfc": pfc, "buffer": buf, "bandwidth": bw,
             "rto_min": rto} for t in TRANSPORTS for pfc in (False, True) for buf in ("16K", "4M")
            for bw in ("1Gbit/s", "10Gbit/s") for rto in ("200ms", "200us")]
    unique = {tuple(sorted(d.items())): d for d in out}
    return list(unique.values())


def panel_sweep():
    """Every setting of ``settings()``, each set on the panel at once and timed end to end."""
    from netlab.ui.ch6 import PANEL_EVENTS, CongestionPanel
    panel = CongestionPanel()
    rows = []
    for setting in settings():
        t0, c0 = time.perf_counter(), time.process_time()
        panel.set(**setting)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        run = panel.last
        if panel.text.startswith("cannot run this setting"):
            continue                                              # e.g. PFC without headroom: no run
        rows.append((wall, cpu, run.engine.events, run.summary()["wall_s"], run.complete, setting))
    walls, cpus = sorted(r[0] for r in rows), sorted(r[1] for r in rows)
    print(f"{'chapter 6 panel over ' + str(len(rows)) + ' settings (run + figure + PNG)':58s} "
          f"median {statistics.median(walls):.3f} s, max {walls[-1]:.3f} s (CPU time: median "
          f"{statistics.median(cpus):.3f} s, max {cpus[-1]:.3f} s); "
          f"{sum(not r[4] for r in rows)} stopped at the panel's {PANEL_EVENTS:,} events")
    events = sum(r[2] for r in rows)
    print(f"{'  simulation only, all settings':58s} {sum(r[3] for r in rows):6.3f} s  {events:7d} events, "
          f"{sum(r[3] for r in rows) / events * 1e6:.1f} us/event")
    for wall, cpu, ev, sim, complete, setting in sorted(rows, key=lambda r: -r[1])[:5]:
        changed = ", ".join(f"{k}={v}" for k, v in setting.items())
        print(f"  slowest: {wall:6.3f} s, CPU {cpu:.3f} s ({sim:.3f} s simulating {ev} events, "
              f"{sim / ev * 1e6:.1f} us/event{'' if complete else ', stopped'}): {changed}")


def real_steps():
    import netlab
    from netlab.cosim.experiments import step_jitter
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
    timed("incast 16 x 256K, 1 Gbit/s, 64K buffer, reno, RTOmin 200ms", lambda: incast(Incast(senders=16, block=256 * 1024, bandwidth=B)))
    timed("incast 16 x 256K, reno, RTOmin 200us", lambda: incast(Incast(senders=16, block=256 * 1024, bandwidth=B,
                                                                        switch=Congestion('reno', buffer=64 * 1024, rto_min=200e-6))))
    timed("incast 16 x 256K, ideal + PFC", lambda: incast(Incast(senders=16, block=256 * 1024, bandwidth=B,
                                                                 switch=Congestion("ideal", buffer=64 * 1024, pfc=PFC(64 * 1024 - headroom(B))))))
    timed("incast 16 x 256K, dcqcn, no PFC (drops, 200 ms timeouts)",
          lambda: incast(Incast(senders=16, block=256 * 1024, bandwidth=B,
                                switch=Congestion("dcqcn", buffer=64 * 1024, ecn=DCQCN_RED))))
    timed("incast 16 x 256K, dctcp K=30KB", lambda: incast(Incast(senders=16, block=256 * 1024, bandwidth=B,
                                                                  switch=Congestion("dctcp", buffer=64 * 1024, ecn=ECN.dctcp(30e3)))))
    timed("DCTCP 2 long flows, 10 Gbit/s, 10 ms", lambda: long_flows(2, 10 * B,
                                                                     switch=Congestion("dctcp", ecn=ECN.dctcp(65 * 1500)), duration=0.01))
    timed("DCQCN fluid, 10 flows, 85 us delay, 60 ms (1 us steps)", lambda: dcqcn_fluid(10, 85e-6, 0.06, dt=1e-6))
    print(f"load average {os.getloadavg()[0]:.1f}")
    panel_changes()
    if "--no-sweep" not in sys.argv:
        panel_sweep()
        print(f"load average {os.getloadavg()[0]:.1f}")
    if "--no-real" not in sys.argv:
        real_steps()

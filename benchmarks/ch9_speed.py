"""Chapter 9's speed: what a change of the panel costs in the kernel, and how long a 128-host fat-tree
with spraying and an incast takes to resolve.

    .venv/bin/python benchmarks/ch9_speed.py            # every panel setting below, then the fat-tree
    .venv/bin/python benchmarks/ch9_speed.py --quick    # 12 settings

The panel part builds ``ui.ch9.EthernetPanel`` headless and changes its controls one setting at a time
(``Panel.set``, on this thread, as a test does); ``panel.seconds`` is the run and the figure, what the
panel's grey line reports. The slider-to-figure time in a browser adds the widget messages:
``benchmarks/panel_latency.py labs/09_ethernet_for_ai.ipynb``. The fat-tree part is a k = 8 fat-tree
(128 hosts, 100 Gbit/s links, 2 us alpha): 127 senders x 64 KB into one host, sprayed, with RCCC's
credits and with NSCC and trimming, each timed on the wall clock with its event count. Times depend on
the machine's load (printed first): virtual times do not.
"""
from __future__ import annotations

from dataclasses import replace
import argparse
import itertools
import os
import statistics
import time

from netlab.fabric import ethernet
from netlab.net.network import Link
from netlab.ui.ch9 import TOPOLOGIES, EthernetPanel


def panel(quick: bool) -> None:
    p = EthernetPanel()
    settings = list(itertools.product(TOPOLOGIES, ["ring step", "incast"], ["ecmp", "spray", "reps"],
                                      ["reno", "nscc", "rccc"], ["none", "a link"]))
    if quick:
        settings = settings[::len(settings) // 12][:12]
    times = []
    for topo, traffic, scheme, transport, failure in settings:
        p.set(topology=topo, traffic=traffic, multipath=scheme, transport=transport,
              trim=transport != "reno", failure=failure)
        times.append((p.seconds, topo, traffic, scheme, transport, failure, p.last.complete,
                      p.last.summary()["events"]))
    secs = [t[0] for t in times]
    worst = max(times)
    most = max(times, key=lambda t: t[7])
    print(f"panel: {len(times)} settings, run + figure in the kernel: median {statistics.median(secs):.2f} s, "
          f"90th percentile {sorted(secs)[int(0.9 * len(secs))]:.2f} s, max {worst[0]:.2f} s ({', '.join(map(str, worst[1:6]))}); "
          f"{sum(not t[6] for t in times)} stopped at the event budget")
    print(f"panel: events per setting (the machine's load does not change them): median "
          f"{statistics.median(t[7] for t in times):,.0f}, max {most[7]:,} ({', '.join(map(str, most[1:6]))})")


def fat_tree() -> None:
    for transport, trim in (("rccc", False), ("nscc", True)):
        t0 = time.perf_counter()
        r = ethernet.incast(127, 64 * 1024,
                            switch=replace(ethernet.INCAST, topology="fattree:8", transport=transport, trim=trim, buffer=64 * 1024, multipath="spray"), nic=Link(100e9 / 8, 2e-6))
        wall = time.perf_counter() - t0
        s = r.summary()
        print(f"128-host fat-tree, 127 x 64 KB incast, sprayed, {transport}{' + trimming' if trim else ''}: "
              f"resolved in {wall:.2f} s of wall time ({r.engine.events:,} events, {wall / r.engine.events * 1e6:.1f} "
              f"us each); {r.time_s * 1e6:.1f} us of virtual time (N x block / B = {r.ideal_s * 1e6:.1f} us), "
              f"trims {s['trims']}, timeouts {s['timeouts']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    panel(args.quick)
    fat_tree()
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()

"""Kernel time of one change of chapter 7's scenario menu (headless: run, analysis, figure, PNG).

    .venv/bin/python benchmarks/ch7_scenario_panel.py          # every kind, seeds 0-2

Each change is one ``netlab.observe.scenarios.scenario`` on real ranks plus the panel's text and figure; the
first 4-rank and 7-rank runs start or enlarge the shared pool and are timed apart. Prints the load:
on a loaded machine the figures measure the load too.
"""
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import netlab  # noqa: E402
from netlab.observe import scenarios  # noqa: E402
from netlab.ui.ch7 import Ch7Panel  # noqa: E402

t = time.monotonic()
netlab.get_cluster(7)
print(f"pool of 7 ranks started: {time.monotonic() - t:.2f} s (load {os.getloadavg()[0]:.1f})")
panel = Ch7Panel()
print(f"panel built (one bucketed step): {panel.seconds:.2f} s")
for kind in scenarios.KINDS:
    times = []
    for seed in range(3):
        panel.set(scenario=kind, seed=seed)
        assert panel.error is None and not panel.text.startswith(("cannot", "error")), panel.text
        times.append(panel.seconds)
    print(f"{kind:>13}: " + ", ".join(f"{x:.2f}" for x in times)
          + f" s  (seeds 0-2; median {statistics.median(times):.2f})")
panel.set(scenario="none")
print(f"back to the step: {panel.seconds:.2f} s; load now {os.getloadavg()[0]:.1f}")

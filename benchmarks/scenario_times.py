"""Wall time of each "Find the bottleneck" scenario on real ranks, and of the notebook's two cells.

    .venv/bin/python benchmarks/scenario_times.py            # seeds 0-2 of every scenario

A scenario is one ``netlab.run`` on 4 ranks (the all-reduce step) or 7 (the parameter servers);
the first run of each size starts or enlarges the shared pool, which is timed apart. Chapter 7's
section must add under 10 s with CI=1 on an idle 2-core machine; a loaded machine measures the load.
"""
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from matplotlib.figure import Figure  # noqa: E402

import netlab  # noqa: E402
from netlab.observe import analysis, scenarios  # noqa: E402
from netlab.figures.trace import scenario_view  # noqa: E402

t = time.monotonic()
netlab.get_cluster(7)
print(f"pool of 7 ranks started: {time.monotonic() - t:.2f} s (load {os.getloadavg()[0]:.1f})")
for name in scenarios.KINDS:
    times = []
    for seed in range(3):
        t = time.monotonic()
        out = scenarios.scenario(name, seed)
        times.append(time.monotonic() - t)
    print(f"{name:>13}: " + ", ".join(f"{x:.2f}" for x in times) + " s  (seeds 0-2)")
out = scenarios.draw("student-3")
t = time.monotonic()
fig = scenario_view(out.trace, fig=Figure(figsize=(9, 6.5)), latency=out.setup["latency_s"],
                    bandwidth=out.setup["bandwidth_Bps"])
fig.savefig(os.devnull, format="png")
print(f"figure (timeline + pair maps) drawn and rendered: {time.monotonic() - t:.2f} s")
print(f"analysis of that trace: {len(analysis.peer_links(out.trace))} pairs; load now {os.getloadavg()[0]:.1f}")

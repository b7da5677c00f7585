"""Launch, slider and memory figures for chapter 1's targets (warm run < 1 s; 8 ranks + kernel < 1.5 GB).

    python benchmarks/launch.py            # make bench runs its warm-run figure among the speed set

Prints: the cold start of an 8-rank pool in this fresh process (fork server with torch preloaded,
8 forks, the gloo rendezvous), a warm run on the same pool, the time one slider change of chapter 1
takes to answer (a full training step on 8 real ranks plus the redraw), and the memory of 8 ranks
plus this process (which imports what a chapter's kernel imports), as the sum of proportional set
sizes (PSS: shared pages split between the processes sharing them).
"""
import contextlib
import io
import statistics
import time

t0 = time.perf_counter()
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import psutil  # noqa: E402

import netlab  # noqa: E402
from _harness import machine, seconds  # noqa: E402
from netlab.ui.ch1 import StepPanel  # noqa: E402

imported = time.perf_counter() - t0


def noop(comm):
    return comm.rank


def pss_total() -> tuple[float, int]:
    me = psutil.Process()
    procs = [me] + me.children(recursive=True)
    return sum(p.memory_full_info().pss for p in procs), len(procs)


start = time.perf_counter()
netlab.run(noop, ranks=8)
cold = time.perf_counter() - start
warm = seconds(lambda: netlab.run(noop, ranks=8), 20)

with contextlib.redirect_stdout(io.StringIO()):
    panel = StepPanel(ranks=8, bandwidth="10Gbit/s", width=512)
values = ["1Gbit/s", "25Gbit/s", "100Gbit/s", "400Gbit/s", "10Gbit/s"]
slider = []
for v in values:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):    # the panel prints into its (headless) output
        panel.controls["bandwidth"].value = v          # fires the panel's callback synchronously
    slider.append(time.perf_counter() - start)
    assert panel.last is not None and panel.last.ranks == 8
pss, nproc = pss_total()

print(f"{machine()}, torch threads per rank: 1")
print(f"import netlab + widgets + matplotlib:   {imported:6.2f} s")
print(f"cold launch, 8 ranks (first run):       {cold:6.2f} s")
print(f"warm run, 8 ranks (median of 20):       {statistics.median(warm) * 1e3:6.1f} ms   (max {max(warm) * 1e3:.1f} ms)")
print(f"slider change -> step on 8 ranks, drawn: {statistics.median(slider) * 1e3:6.1f} ms   (max {max(slider) * 1e3:.1f} ms)")
print(f"memory, 8 ranks + fork server + kernel:  {pss / 2**20:6.0f} MiB PSS over {nproc} processes")
print(f"targets: warm run < 1 s: {'met' if statistics.median(warm) < 1 else 'MISSED'}; "
      f"memory < 1.5 GB: {'met' if pss < 1.5e9 else 'MISSED'}")

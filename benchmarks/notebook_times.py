"""Wall time of each chapter run top to bottom with nbclient, and its slowest cells.

    .venv/bin/python benchmarks/notebook_times.py labs/0*.ipynb          # CI sizes (CI=1)
    .venv/bin/python benchmarks/notebook_times.py --full labs/04_gradient_compression.ipynb
    TOP=8 .venv/bin/python benchmarks/notebook_times.py labs/04_gradient_compression.ipynb
    CELL_TIMEOUT=1800 ...                                        # seconds per cell (default 600)

Each chapter must run in under a minute at CI sizes on an idle 2-core machine; run this on an idle
machine to check it (a loaded one measures the load). Beside each time: the machine's 1-minute load
average when the chapter started and when it ended (on 2 cores, a load of 2 is a busy machine).
"""
import os
import sys

from _harness import run_notebook

full = "--full" in sys.argv
nbs = [a for a in sys.argv[1:] if a.endswith(".ipynb")]
if not nbs:
    sys.exit(__doc__)
for path in nbs:
    run = run_notebook(path, ci=not full, timeout=float(os.environ.get("CELL_TIMEOUT", 600)))
    slow = run.slowest(int(os.environ.get("TOP", 3)))
    failed = f"   FAILED at {run.error}" if run.error else ""        # said, what ran is timed, on to the next
    print(f"{os.path.basename(path):36s} {run.total_s:6.1f} s  {'full' if full else 'CI=1'}  load {run.load_before:4.1f} -> "
          f"{run.load_after:4.1f}   slowest cells: " + ", ".join(f"[{i}] {s:.1f}s" for i, s in slow) + failed,
          flush=True)

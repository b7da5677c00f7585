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
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

full = "--full" in sys.argv
nbs = [a for a in sys.argv[1:] if a.endswith(".ipynb")]
if not nbs:
    sys.exit(__doc__)
if not full:
    os.environ["CI"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "1")
for path in nbs:
    nb = nbformat.read(path, 4)
    starts, secs = {}, {}
    client = NotebookClient(
        nb, timeout=float(os.environ.get("CELL_TIMEOUT", 600)), kernel_name="python3",
        resources={"metadata": {"path": os.path.dirname(path)}},
        on_cell_execute=lambda cell, cell_index: starts.__setitem__(cell_index, time.monotonic()),
        on_cell_executed=lambda cell, cell_index, execute_reply: secs.__setitem__(
            cell_index, time.monotonic() - starts[cell_index]))
    load0 = os.getloadavg()[0]
    t = time.monotonic()
    failed = ""
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError) as exc:     # say so, time what ran, go on with the next
        last = max(starts) if starts else "?"
        failed = f"   FAILED at cell [{last}]: {str(exc).strip().splitlines()[-1][:100]}"
    total = time.monotonic() - t
    slow = sorted(secs.items(), key=lambda kv: -kv[1])[:int(os.environ.get("TOP", 3))]
    print(f"{os.path.basename(path):36s} {total:6.1f} s  {'full' if full else 'CI=1'}  load {load0:4.1f} -> "
          f"{os.getloadavg()[0]:4.1f}   slowest cells: " + ", ".join(f"[{i}] {s:.1f}s" for i, s in slow) + failed,
          flush=True)

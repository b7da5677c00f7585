"""How much memory a rank really holds, against the estimate netlab's memory check uses for it.

    .venv/bin/python benchmarks/rank_memory.py

Ranks are forked from a fork server that has torch loaded, so most of a rank's resident pages are
shared copy-on-write with the fork server and its sibling ranks; what each rank adds is its private
memory (Private_Clean + Private_Dirty in /proc/PID/smaps_rollup). For each chapter-sized run below a
sampler thread reads every rank's private bytes every ~50 ms while the run goes and keeps each rank's
maximum. Printed per run: ranks, the largest private MB any rank reached, the estimate
(the per-rank bytes the run's launcher hands to `check_memory`, recorded as it calls it), their ratio, and the
fork server's private MB (counted once for the whole pool). Needs Linux (/proc).
"""
import os
import threading
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import netlab  # noqa: E402
from netlab.runtime import memory  # noqa: E402
from netlab.runtime import shared  # noqa: E402


class Sampler:
    def __init__(self):
        self.peak, self.stop = {}, threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.is_set():
            pool = shared._default
            for pid in (list(pool.pids) if pool is not None else []):
                b = memory.private_bytes(pid)
                self.peak[pid] = max(self.peak.get(pid, 0), b)
            time.sleep(0.05)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def forkserver_private() -> float:
    from multiprocessing import forkserver
    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    return memory.private_bytes(pid) if pid else 0.0


def main():
    from netlab import ps
    from netlab.compress.training import run_training
    from netlab.dataparallel.step import measure_step
    asked = []
    original = shared.check_memory

    def recording(ranks, per_rank_bytes, *args, **kwargs):
        asked.append((ranks, per_rank_bytes))
        return original(ranks, per_rank_bytes, *args, **kwargs)

    shared.check_memory = recording
    runs = [
        ("PS, 8 workers + 4 servers, 20 steps (chapter 3)",
         lambda: ps.run_ps(workers=8, servers=4, mode="bsp", steps=20, width=512, bandwidth="1Gbit/s", latency="5us")),
        ("compressed training, 4 ranks, 100 steps (chapter 4)",
         lambda: run_training("topk", ranks=4, steps=100, ratio=0.01)),
        ("a timed step, 8 ranks (chapter 1)",
         lambda: measure_step(ranks=8, bandwidth="10Gbit/s", latency="5us", width=256)),
    ]
    print(f"{'run':<52}{'ranks':>6}{'max private MB':>16}{'estimate MB':>13}{'estimate/max':>14}{'fork server MB':>16}")
    for name, fn in runs:
        netlab.shutdown()
        asked.clear()
        with Sampler() as s:
            fn()
            time.sleep(0.2)
        ranks, estimate = asked[-1]
        top = max(s.peak.values()) if s.peak else 0
        print(f"{name:<52}{ranks:>6}{top / 1e6:>16.1f}{estimate / 1e6:>13.1f}{estimate / max(top, 1):>14.2f}"
              f"{forkserver_private() / 1e6:>16.1f}", flush=True)
    netlab.shutdown()
    print(f"(load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()

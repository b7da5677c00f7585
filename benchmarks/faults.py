"""How fast failures are reported and cleaned up (README: "a clear error within seconds, nothing left").

    python benchmarks/faults.py

Prints, on a warm 4-rank pool: the seconds from a run's start to the RankDied error for a rank that
calls os._exit(3), one killed by SIGKILL, and one that segfaults (target: under 1 s); and the
seconds a teardown takes when every rank ignores SIGTERM (target: under 1 s for all ranks together;
it was 2 s per rank, one rank after another).
"""
import ctypes
import os
import signal
import statistics
import time

import torch

from _harness import machine

import netlab

NET = netlab.network("10Gbit/s", "5us")


def die(comm, how):
    if comm.rank == 1:
        if how == "exit":
            os._exit(3)
        if how == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        ctypes.string_at(0)
    comm.recv(torch.zeros(4), 1)


def ignore_sigterm(comm):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(600)


def main() -> None:
    print(f"# {machine()} at the start", flush=True)
    for how in ("exit", "sigkill", "segfault"):
        times = []
        for _ in range(3):
            netlab.run(lambda c: c.rank, ranks=4)              # a warm pool, so only the failure is timed
            start = time.perf_counter()
            try:
                netlab.run(die, how, ranks=4, network=NET)
            except netlab.RankDied as exc:
                times.append(time.perf_counter() - start)
                message = str(exc)
        print(f"{how:>9}: RankDied after {statistics.median(times):.3f} s (median of 3): {message}")
    netlab.run(lambda c: c.rank, ranks=4)
    start = time.perf_counter()
    try:
        netlab.run(ignore_sigterm, ranks=4, timeout=1)
    except netlab.RankTimeout:
        pass
    print(f"teardown of 4 ranks that ignore SIGTERM: {time.perf_counter() - start - 1:.3f} s after the 1 s timeout")
    print(f"# {machine()} at the end")


if __name__ == "__main__":
    main()

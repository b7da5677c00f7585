"""Wall time one message costs on real ranks: virtual time (header packed with the payload up to
``comm.PACK_BYTES``, a message of its own above) against the wall clock (no header), by size.

Two ranks ping-pong; the figure is the round trip over two, in microseconds of this machine's time
(the virtual clock's answer does not depend on it). What a panel or a CI-sized training run pays per
message on a busy 2-core machine is mostly this.

    .venv/bin/python benchmarks/message_cost.py            # 300 round trips per size
    .venv/bin/python benchmarks/message_cost.py -n 1000
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import netlab
from netlab.runtime.comm import PACK_BYTES

from _harness import machine


def ping_pong(comm, numel: int, rounds: int) -> float:
    t = torch.zeros(numel)
    t0 = time.perf_counter()
    for _ in range(rounds):
        if comm.rank == 0:
            comm.send(t, 1)
            comm.recv(t, 1)
        else:
            comm.recv(t, 0)
            comm.send(t, 0)
    return (time.perf_counter() - t0) / rounds / 2 * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--rounds", type=int, default=300, help="round trips per size (default 300)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds: must be at least 1")
    net = netlab.network("10Gbit/s", "5us")
    print(f"# {machine()} at the start", flush=True)
    netlab.run(ping_pong, 1, 10, ranks=2)                                    # start the pool
    print(f"# wall microseconds per message, 2 ranks, median of 3 runs of {args.rounds} round trips; "
          f"packed up to {PACK_BYTES:,} B")
    print(f"# {'bytes':>10s} {'virtual':>9s} {'wall':>9s}")
    for nbytes in (4, 4096, 65536, PACK_BYTES, 4 * PACK_BYTES):
        numel = max(1, nbytes // 4)
        rounds = max(1, args.rounds // max(1, nbytes // 65536))              # big messages: fewer rounds
        virtual = statistics.median(netlab.run(ping_pong, numel, rounds, ranks=2, network=net).values[0]
                                    for _ in range(3))
        wall = statistics.median(netlab.run(ping_pong, numel, rounds, ranks=2).values[0] for _ in range(3))
        print(f"  {numel * 4:>10,d} {virtual:9.0f} {wall:9.0f}", flush=True)
    print(f"# {machine()} at the end")


if __name__ == "__main__":
    main()

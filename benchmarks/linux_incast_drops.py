"""Where in an incast round the drops fall, on the kernel (a packet capture) and in the model.

    sudo .venv/bin/python benchmarks/linux_incast_drops.py [--senders 8] [--rounds 80] [--seed 0] [--nic veth]

The setup of `benchmarks/linux_incast.py --compare` (N x 64 KiB per round into a 100 Mbit/s tbf port with a
32 KB queue, the senders' NICs at the port's rate or, with `--nic veth`, unshaped; cubic, RTOmin 200 ms). On the kernel, tcpdump runs in the bridge's namespace on every port
(`-i any`): a data frame seen entering from a sender's port and never leaving through the shaped port was
dropped by tbf. In the model (`linux.model`), the shaped port's enqueues and drops are logged. For both it
prints the link fraction, the share of rounds that waited out an RTO, drops per round by time since the
round's start, and per service position (the order in which the senders' first frames reached the
switch in that round) the rounds in which that sender waited out an RTO, its drops per round and when its
first frame reached the switch (the median, from the round's start: the request on Linux). The
first and last captured rounds are left out (the capture starts and stops around them).

Needs root, network namespaces and tcpdump (`apt-get install tcpdump`); elsewhere it prints why and
exits 0. The capture costs CPU: compare its link fraction with a run without it (printed first).
"""
from __future__ import annotations

import argparse
import bisect
import collections
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from linux_incast import SLOW_ROUND_S, rto_rounds   # the compare table's rule for an RTO round
from netlab.linuxnet import linux
from netlab.fabric import switch
from netlab.linuxnet.netns import Testbed

BLOCK, RATE, BUFFER = 64 * 1024, 12.5e6, 32 * 1024
BINS_MS = (0, 1, 2, 5, 10, 20, 50, float("inf"))
LINE = re.compile(r"^(\d+\.\d+) \S+\s+(In|Out|P|M|B) +IP (\S+)\.\d+ > (\S+)\.\d+: Flags \[[^\]]*\]"
                  r"(?:, seq (\d+)(?::\d+)?)?.*length (\d+)")


def summarize(title: str, link: float, times: list[float], packets: dict, starts: list[float], n: int) -> None:
    """packets: (round, sender) -> [(time, seq, dropped)] in send order; starts: each round's start."""
    rounds = range(1, len(starts) - 1)
    print(f"\n{title}: {link:.1%} of the link, {rto_rounds(times):.0%} of the rounds waited out an RTO")
    hist, sent = [0] * (len(BINS_MS) - 1), [0] * (len(BINS_MS) - 1)
    rto, drops, seen = collections.Counter(), collections.Counter(), collections.Counter()
    firsts = collections.defaultdict(list)
    for r in rounds:
        order = sorted((packets[r, i][0][0], i) for i in range(n) if packets.get((r, i)))
        for pos, (_, i) in enumerate(order):
            pk = packets[r, i]
            seen[pos] += 1
            firsts[pos].append((pk[0][0] - starts[r]) * 1e3)
            rto[pos] += any(b[0] - a[0] > SLOW_ROUND_S for a, b in zip(pk, pk[1:]))   # a sender idle that long
            drops[pos] += sum(d for _, _, d in pk)
            for t, _, d in pk:
                k = bisect.bisect_right(BINS_MS, (t - starts[r]) * 1e3) - 1
                hist[k] += d
                sent[k] += 1
    m = len(rounds)
    print(f"  {'ms since the round began':<26}" + "".join(f"{f'{a:g}-{b:g}':>8}" for a, b in zip(BINS_MS, BINS_MS[1:])))
    print(f"  {'frames per round':<26}" + "".join(f"{x / m:>8.1f}" for x in sent))
    print(f"  {'drops per round':<26}" + "".join(f"{x / m:>8.2f}" for x in hist) + f"   (all: {sum(hist) / m:.1f})")
    print(f"  {'service position':<26}" + "".join(f"{p:>6}" for p in range(n)))
    print(f"  {'rounds with an RTO':<26}" + "".join(f"{rto[p]:>6}" for p in range(n)) + f"   of {m}")
    print(f"  {'drops per round':<26}" + "".join(f"{drops[p] / max(1, seen[p]):>6.1f}" for p in range(n)))
    print(f"  {'first frame, median ms':<26}" + "".join(f"{statistics.median(firsts[p]) if firsts[p] else 0:>6.2f}"
                                                         for p in range(n)))


def kernel(n: int, rounds: int, nic_rate="link") -> None:
    plain = linux.incast(senders=n, rounds=rounds, nic_rate=nic_rate)
    print(f"kernel without a capture: {plain['link_fraction']:.1%} of the link "
          f"(load {os.getloadavg()[0]:.2f})")
    with tempfile.TemporaryDirectory(prefix="netlab-cap-") as tmp, Testbed(n, RATE, BUFFER, cc="cubic",
                                                                               nic_rate=nic_rate) as tb:
        pcap = os.path.join(tmp, "incast.pcap")
        snd, rcv, listener = linux._connect(tb)
        dump = subprocess.Popen(["ip", "netns", "exec", tb.bridge_ns, "tcpdump", "-i", "any", "-nn", "-s", "96",
                                 "--time-stamp-precision=nano", "-w", pcap, "tcp"], stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.5)                                    # tcpdump is listening
            times = linux._rounds(snd, rcv, BLOCK, rounds, time.perf_counter() + linux.MAX_WALL_S)
            time.sleep(0.5)
        finally:
            dump.terminate()
            dump.wait(timeout=10)
            for s in snd + rcv + [listener]:
                s.close()
        text = subprocess.run(["tcpdump", "-r", pcap, "-nn", "-tt", "-S"], capture_output=True, text=True).stdout
    sender = {a: i for i, a in enumerate(tb.sender_addr)}
    entered, left, requests = collections.defaultdict(list), collections.defaultdict(list), []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        t, way, src, dst, seq, length = float(m[1]), m[2], m[3], m[4], m[5], int(m[6])
        if length == 1 and src not in sender and way == "Out":
            requests.append(t)                                 # the receiver asks a sender for its block
        elif length > 1 and src in sender:
            (left if way == "Out" else entered)[sender[src]].append((t, int(seq)))
    requests.sort()
    starts = requests[::n]
    packets = collections.defaultdict(list)
    for i in range(n):
        out = collections.defaultdict(list)
        for t, seq in left[i]:
            out[seq].append(t)
        used = collections.Counter()
        for t, seq in entered[i]:
            k, later = used[seq], out[seq]
            while k < len(later) and later[k] < t:
                k += 1
            dropped = not (k < len(later) and later[k] - t < 0.05)   # tbf holds a frame at most ~3 ms
            if not dropped:
                used[seq] = k + 1
            r = bisect.bisect_right(starts, t) - 1
            if r >= 0:
                packets[r, i].append((t, seq, dropped))
    link = n * BLOCK * len(times) / sum(times) * linux.WIRE_PER_SEGMENT / RATE
    summarize(f"kernel, captured ({len(starts)} rounds seen)", link, times, packets, starts, n)


def model(n: int, rounds: int, seed: int) -> None:
    log = []
    enqueue, drop = switch.Port.enqueue, switch.Port._drop

    def logged_enqueue(port, pkt):
        if port.switch is not None:                            # the shaped port, not a host's NIC
            log.append([port.fabric.now, pkt.flow.name, pkt.seq, False])
        return enqueue(port, pkt)

    def logged_drop(port, pkt):
        if port.switch is not None and log and log[-1][1:3] == [pkt.flow.name, pkt.seq]:
            log[-1][3] = True
        return drop(port, pkt)

    switch.Port.enqueue, switch.Port._drop = logged_enqueue, logged_drop
    try:
        m = linux.model(senders=n, rounds=rounds, seed=seed)
    finally:
        switch.Port.enqueue, switch.Port._drop = enqueue, drop
    packets, first = collections.defaultdict(list), {}
    for t, name, seq, dropped in log:
        r, h = (int(x[1:]) for x in name.split("."))
        packets[r, h].append((t, seq, dropped))
        first[r] = min(first.get(r, t), t)
    starts = [first[r] for r in range(len(first))]
    summarize(f"model, seed {seed}", m["link_fraction"], m["round_s"], packets, starts, n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--senders", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=80)
    ap.add_argument("--seed", type=int, default=0, help="the model's timing-noise seed")
    ap.add_argument("--nic", choices=("link", "veth"), default="link",
                    help="the senders' NICs at the port's rate (default) or unshaped veths")
    a = ap.parse_args()
    if a.senders < 1 or a.rounds < 3:
        sys.exit("linux_incast_drops: --senders must be at least 1 and --rounds at least 3")
    print(f"N = {a.senders} x 64 KiB per round, 100 Mbit/s tbf port, 32 KB queue, cubic, RTOmin 200 ms, "
          f"{a.rounds} rounds")
    ok, why = linux.available()
    if not ok:
        print(f"no kernel side here: {why}")
    elif shutil.which("tcpdump") is None:
        print("no kernel side here: tcpdump is not installed (apt-get install tcpdump)")
    else:
        kernel(a.senders, a.rounds, a.nic)
    model(a.senders, a.rounds, a.seed)


if __name__ == "__main__":
    main()

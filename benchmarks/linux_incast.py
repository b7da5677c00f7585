"""Incast on the real Linux stack (network namespaces, a bridge, a tbf port): the collapse and its fixes.

    sudo .venv/bin/python benchmarks/linux_incast.py [--senders 8,32] [--rounds 20] [--gloo-workers 8]
    sudo .venv/bin/python benchmarks/linux_incast.py --compare 4,8,16,32 [--repeats 2] [--compare-rounds 150] [--seeds 3]
                                                     [--nic veth]
    sudo .venv/bin/python benchmarks/linux_incast.py --spread 8 [--repeats 10] [--compare-rounds 150] [--nic veth]

0. (--compare) The model against the kernel, same setup: for each N and RTOmin 200 ms / 1 ms,
   `repeats` Linux runs of `compare-rounds` rounds (mean, and the spread min-max of the runs'
   link fractions) beside the packet model's prediction over as many rounds (netlab.linuxnet.linux.model:
   Linux's loss recovery, delayed ACKs, persistent connections, this kernel's HZ; mean and spread of
   `seeds` seeds of its timing noise), model / Linux mean - 1, the fraction of
   rounds that waited out an RTO (200 ms only) and the RTOs per round. At N = 8 and RTOmin 200 ms a
   round has an RTO or not (about 270 ms or 44 ms), so a 30-round mean swings by +-15 %: hence 150.
   The senders' NICs run at the port's rate, as the model's do; `--nic veth` leaves them unshaped
   (the testbed before, whose N = 8 row at 200 ms depended on the machine).
   (--spread N) `repeats` Linux runs at N and RTOmin 200 ms, one line each (link fraction, share of rounds
   with an RTO), then their mean and range beside the model's mean over `seeds` seeds: how far apart runs
   of one machine fall. Run it idle, beside busy loops, under `taskset -c 0`, to see what the machine moves.

1. Raw TCP incast (netlab.linuxnet.linux.incast): N senders x `block` per round into a 100 Mbit/s
   port with a 32 KB drop-tail queue, the kernel's cubic, for each N: the base (RTOmin 200 ms),
   rto_min 1 ms, a 4 MB queue, ECN marking at 16 KB, and reno and bbr in the base setup.
2. The same with real gloo ranks (netlab.linuxnet.linux.ps_push): workers push `block` shards to a
   server rank; the base, then rto_min 1 ms and a 4 MB queue on the same connections, and ECN in
   a separate launch (ECN is negotiated when gloo connects); then the kernel-aware model's prediction
   for the same incast (netlab.linuxnet.linux.model) at RTOmin 200 ms and 1 ms.
Every number is measured on the wall clock when the script runs: link = goodput x 1514/1448 / rate
(the share of the link's frames that carried the block), ideal = N x block x 1514/1448 / rate.
Units: KiB = 1024 B, Mbit/s = 1e6 bit/s. Needs root; elsewhere it prints why and exits 0.
"""
import argparse
import time

from netlab.linuxnet import linux, netns

COLUMNS = f"{'setup':<28}{'link':>7}{'p50 ms':>9}{'p99 ms':>9}{'ideal ms':>10}{'RTOs':>6}{'retx':>7}{'drops':>7}{'marks':>7}"


def row(label: str, r: dict) -> str:
    c = r["completion_s"]
    return (f"{label:<28}{r['link_fraction']:>7.0%}{c['p50'] * 1e3:>9.1f}{c['p99'] * 1e3:>9.1f}"
            f"{r['ideal_round_s'] * 1e3:>10.1f}{r['timeouts']:>6}{r['retransmissions']:>7}{r['drops']:>7}{r['marks']:>7}")


SLOW_ROUND_S = 0.15                   # a round longer than this waited out an RTO (RTOmin 200 ms)


def rto_rounds(times: list[float]) -> float:
    """The fraction of rounds that waited out a retransmission timeout: at RTOmin 200 ms a round takes
    either about N x block / rate or that plus about 200 ms (on Linux this split matched the per-round
    TcpExtTCPTimeouts deltas on 300 of 300 rounds at N = 8)."""
    return sum(t > SLOW_ROUND_S for t in times) / len(times)


def compare(ns, repeats: int, rounds: int, base: dict, seeds: int = 3, nic_rate="link") -> None:
    import os
    nic = "senders' NICs at the port's rate" if nic_rate == "link" else "senders' NICs unshaped veths"
    print(f"model vs Linux: {base['block']} per sender per round, {base['bandwidth']} port, {base['buffer']} queue, "
          f"{nic}, cubic, {repeats} Linux runs x {rounds} rounds each, the model over as many rounds with {seeds} seeds "
          f"of its timing noise (kernel HZ {linux.kernel_hz()}, load {os.getloadavg()[0]:.2f} at the start)")
    print(f"{'N':>3} {'RTOmin':>7} {'Linux mean':>11} {'Linux min-max':>14} {'model':>7} {'model min-max':>14}"
          f"{'model/Linux-1':>14}{'RTO rounds L/m':>16}{'RTOs per round L/m':>20}")
    for n in ns:
        for rto in ("200ms", "1ms"):
            runs = [linux.incast(senders=n, rto_min=rto, rounds=rounds, nic_rate=nic_rate, **base)
                    for _ in range(repeats)]
            models = [linux.model(senders=n, rto_min=rto, rounds=rounds, seed=k, **base) for k in range(seeds)]
            fr, mf = [r["link_fraction"] for r in runs], [m["link_fraction"] for m in models]
            mean, mmean = sum(fr) / len(fr), sum(mf) / len(mf)
            slow = "-" if rto != "200ms" else (f"{sum(rto_rounds(r['round_s']) for r in runs) / repeats:.2f} / "
                                               f"{sum(rto_rounds(m['round_s']) for m in models) / seeds:.2f}")
            rtos = f"{sum(r['timeouts'] for r in runs) / (repeats * rounds):.1f} / {sum(m['timeouts'] for m in models) / (seeds * rounds):.1f}"
            print(f"{n:>3} {rto:>7} {mean:>11.1%} {min(fr):>6.1%}-{max(fr):<7.1%} {mmean:>7.1%} {min(mf):>6.1%}-{max(mf):<7.1%}"
                  f"{mmean / mean - 1:>+14.0%}{slow:>16}{rtos:>20}", flush=True)
    print(f"(load {os.getloadavg()[0]:.2f} at the end)")


def spread(n: int, repeats: int, rounds: int, base: dict, seeds: int = 3, nic_rate="link") -> None:
    import os
    import statistics
    print(f"{repeats} Linux runs x {rounds} rounds at N = {n}, RTOmin 200 ms, {base['block']} per sender, "
          f"{base['bandwidth']} port, {base['buffer']} queue, senders' NICs "
          f"{'at the port rate' if nic_rate == 'link' else 'unshaped veths'}, cubic")
    fr, slow = [], []
    for k in range(repeats):
        r = linux.incast(senders=n, rounds=rounds, nic_rate=nic_rate, **base)
        fr.append(r["link_fraction"])
        slow.append(rto_rounds(r["round_s"]))
        print(f"  run {k + 1}: {fr[-1]:.1%} of the link, {slow[-1]:.0%} of the rounds with an RTO "
              f"(load {os.getloadavg()[0]:.2f})", flush=True)
    model = statistics.mean(linux.model(senders=n, rounds=rounds, seed=k, **base)["link_fraction"]
                            for k in range(seeds))
    mean = statistics.mean(fr)
    print(f"Linux mean {mean:.1%}, range {min(fr):.1%}-{max(fr):.1%}, RTO rounds {min(slow):.0%}-{max(slow):.0%}; "
          f"model {model:.1%} ({model / mean - 1:+.0%}; {model / min(fr) - 1:+.0%} against the lowest run, "
          f"{model / max(fr) - 1:+.0%} against the highest)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--senders", default="8,32")
    ap.add_argument("--block", default="64K")
    ap.add_argument("--bandwidth", default="100Mbit/s")
    ap.add_argument("--buffer", default="32K")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--gloo-workers", type=int, default=8, help="0 skips the gloo part")
    ap.add_argument("--compare", default="", help="N values for the model-vs-Linux table only, e.g. 4,8,16,32")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--compare-rounds", type=int, default=150)
    ap.add_argument("--seeds", type=int, default=3, help="the model's runs per cell, each a seed of its timing noise")
    ap.add_argument("--spread", type=int, default=0, help="N: repeated Linux runs at N and RTOmin 200 ms only")
    ap.add_argument("--nic", choices=("link", "veth"), default="link",
                    help="--compare, --spread: the senders' NICs at the port's rate (default) or unshaped veths")
    args = ap.parse_args()
    ok, why = linux.available()
    if not ok:
        print(why)
        return
    if args.spread:
        spread(args.spread, args.repeats, args.compare_rounds,
               dict(block=args.block, bandwidth=args.bandwidth, buffer=args.buffer), args.seeds,
               args.nic)
        return
    if args.compare:
        compare([int(x) for x in args.compare.split(",")], args.repeats, args.compare_rounds,
                dict(block=args.block, bandwidth=args.bandwidth, buffer=args.buffer), args.seeds,
                args.nic)
        return
    base = dict(block=args.block, bandwidth=args.bandwidth, buffer=args.buffer, rounds=args.rounds)
    print(f"raw TCP incast: {args.block} per sender per round, {args.bandwidth} port, {args.buffer} queue, "
          f"{args.rounds} rounds (kernel: {' '.join(linux.transports())})")
    for n in [int(x) for x in args.senders.split(",")]:
        start = time.perf_counter()
        print(f"\n{n} senders\n{COLUMNS}")
        variants = [("cubic, RTOmin 200 ms", {}), ("cubic, rto_min 1 ms", {"rto_min": "1ms"}),
                    ("cubic, 4 MB queue", {"buffer": "4M"}), ("cubic, ECN at 16 KB", {"ecn": True, "ecn_k": "16K"}),
                    ("reno, RTOmin 200 ms", {"transport": "reno"}), ("bbr, RTOmin 200 ms", {"transport": "bbr"})]
        for label, change in variants:
            if change.get("ecn") and netns.ecn_marker() is None:
                print(f"{label:<28}skipped: no ECN marker here (install iptables)")
                continue
            print(row(label, linux.incast(senders=n, **{**base, **change})), flush=True)
        print(f"[{time.perf_counter() - start:.0f} s]")
    if args.gloo_workers:
        start = time.perf_counter()
        n = args.gloo_workers
        print(f"\ngloo parameter-server push: {n} workers x {args.block} shards to one server rank, "
              f"{args.rounds} rounds per setup\n{COLUMNS}")
        r = linux.ps_push(workers=n, shard=args.block, bandwidth=args.bandwidth, buffer=args.buffer,
                          rounds=args.rounds, fixes=({"rto_min": "1ms"}, {"buffer": "4M"}))
        for label, res in zip(["gloo, RTOmin 200 ms", "gloo, rto_min 1 ms", "gloo, 4 MB queue"], [r] + r["fixes"]):
            print(row(label, res))
        if netns.ecn_marker() is not None:
            e = linux.ps_push(workers=n, shard=args.block, bandwidth=args.bandwidth, buffer=args.buffer,
                              rounds=args.rounds, ecn=True, ecn_k="16K")
            print(row("gloo, ECN at 16 KB", e))
        for label, rto in (("model, RTOmin 200 ms", "200ms"), ("model, rto_min 1 ms", "1ms")):
            print(row(label, linux.model(senders=n, block=args.block, bandwidth=args.bandwidth, buffer=args.buffer,
                                         rto_min=rto, rounds=args.rounds)))
        print(f"[{time.perf_counter() - start:.0f} s]")


if __name__ == "__main__":
    main()
